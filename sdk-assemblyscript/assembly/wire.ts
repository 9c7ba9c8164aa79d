// The wire encoding of ABI v1 (hostapi/wire.go): an Input or an Output is a sequence of fields
// [tag u8][len u32 little-endian][len bytes]. Decoding is strict where the encoder never varies (hostapi/doc.go,
// "Decoding rules"), and reports errors with hostapi's messages so that a log reads the same for every guest.

export const HEADER_SIZE: u32 = 5;

export const TAG_TEXT: u8 = 1;
export const TAG_MODEL: u8 = 2;
export const TAG_METADATA_KEY: u8 = 3;
export const TAG_METADATA_VALUE: u8 = 4;
export const TAG_PARAM_NAME: u8 = 5;
export const TAG_PARAM_VALUE: u8 = 6;
export const TAG_CHECK_ID: u8 = 7;
export const TAG_STAGE: u8 = 8;
export const TAG_ENDPOINT: u8 = 9;
export const TAG_TOOL: u8 = 10;
export const TAG_MCP_SERVER: u8 = 11;
/** ABI v1.1: the JSON body a transform call rewrites. */
export const TAG_BODY: u8 = 12;

export const TAG_VERDICT: u8 = 1;
export const TAG_DATA: u8 = 2;
export const TAG_TRANSFORMED_TEXT: u8 = 3;
export const TAG_ERROR: u8 = 4;
export const TAG_MATCH: u8 = 5;
/** ABI v1.1: a transform's replacement body, one JSON object. */
export const TAG_TRANSFORMED_BODY: u8 = 6;

export const KIND_CHECK: i32 = 1;
export const KIND_CONDITION: i32 = 2;
/** ABI v1.1: a call of gateway_transform. */
export const KIND_TRANSFORM: i32 = 3;

/** An Input as it travels; strings are decoded from UTF-8 (invalid sequences become U+FFFD). */
export class WireInput {
  text: string = "";
  model: string = "";
  checkId: string = "";
  stage: string = "";
  endpoint: string = "";
  tool: string = "";
  mcpServer: string = "";
  body: string = "";
  metadataKeys: string[] = [];
  metadataValues: string[] = [];
  paramNames: string[] = [];
  paramValues: string[] = [];
}

/** The result of decodeInput: the input, or hostapi's error message. */
export class Decoded {
  constructor(public input: WireInput | null, public error: string) {}
}

function decodeError(offset: u32, tag: u8, reason: string): Decoded {
  return new Decoded(null, "hostapi: decode input: " + reason + " (tag " + tag.toString() + " at offset " + offset.toString() + ")");
}

const TRUNCATED = "truncated field";
const DUPLICATE = "duplicate field";
const UNPAIRED = "unpaired key or value";

/**
 * Decodes UTF-8 as Go's range loop reads it: a byte that does not start a valid sequence (overlong, surrogate,
 * above U+10FFFF, cut) becomes one U+FFFD. std's decoder does not validate, and would read garbage instead.
 */
export function utf8(ptr: usize, len: u32): string {
  if (len == 0) return "";
  const str = __new(<usize>len << 1, idof<String>()); // at most one UTF-16 unit per byte
  let out = str;
  let i: u32 = 0;
  while (i < len) {
    const b0 = <u32>load<u8>(ptr + i);
    if (b0 < 0x80) {
      store<u16>(out, <u16>b0);
      out += 2;
      i++;
      continue;
    }
    let cp: u32 = 0xfffd;
    let size: u32 = 1;
    const rest = len - i;
    if (b0 >= 0xc2 && b0 <= 0xdf && rest >= 2) {
      const b1 = <u32>load<u8>(ptr + i + 1);
      if ((b1 & 0xc0) == 0x80) {
        cp = (b0 & 0x1f) << 6 | (b1 & 0x3f);
        size = 2;
      }
    } else if (b0 >= 0xe0 && b0 <= 0xef && rest >= 3) {
      const b1 = <u32>load<u8>(ptr + i + 1);
      const b2 = <u32>load<u8>(ptr + i + 2);
      const c = (b0 & 0x0f) << 12 | (b1 & 0x3f) << 6 | (b2 & 0x3f);
      if ((b1 & 0xc0) == 0x80 && (b2 & 0xc0) == 0x80 && c >= 0x800 && (c < 0xd800 || c > 0xdfff)) {
        cp = c;
        size = 3;
      }
    } else if (b0 >= 0xf0 && b0 <= 0xf4 && rest >= 4) {
      const b1 = <u32>load<u8>(ptr + i + 1);
      const b2 = <u32>load<u8>(ptr + i + 2);
      const b3 = <u32>load<u8>(ptr + i + 3);
      const c = (b0 & 0x07) << 18 | (b1 & 0x3f) << 12 | (b2 & 0x3f) << 6 | (b3 & 0x3f);
      if ((b1 & 0xc0) == 0x80 && (b2 & 0xc0) == 0x80 && (b3 & 0xc0) == 0x80 && c >= 0x10000 && c <= 0x10ffff) {
        cp = c;
        size = 4;
      }
    }
    if (cp >= 0x10000) {
      const v = cp - 0x10000;
      store<u16>(out, <u16>(0xd800 | (v >> 10)));
      store<u16>(out + 2, <u16>(0xdc00 | (v & 0x3ff)));
      out += 4;
    } else {
      store<u16>(out, <u16>cp);
      out += 2;
    }
    i += size;
  }
  return changetype<string>(__renew(str, out - str));
}

/**
 * Decodes len bytes at ptr strictly, as hostapi.DecodeInput does; it never traps on any input. The body (tag 12)
 * is checked like any singular field but decoded only when withBody is set: a check or a condition never reads
 * it, and a 64 KiB body would cost a check twice that in UTF-16.
 */
export function decodeInput(ptr: usize, len: u32, withBody: bool): Decoded {
  const input = new WireInput();
  let seen: u32 = 0;
  let off: u32 = 0;
  while (off < len) {
    if (len - off < HEADER_SIZE) return decodeError(off, 0, TRUNCATED);
    const tag = load<u8>(ptr + off);
    const n = load<u32>(ptr + off + 1); // wasm is little-endian, as the wire
    const start = off + HEADER_SIZE;
    if (n > len - start) return decodeError(off, tag, TRUNCATED);
    const end = start + n;
    let next = end;
    if (tag == TAG_METADATA_KEY || tag == TAG_PARAM_NAME) {
      if (end == len) return decodeError(off, tag, UNPAIRED);
      if (len - end < HEADER_SIZE) return decodeError(end, 0, TRUNCATED);
      const vtag = load<u8>(ptr + end);
      const vn = load<u32>(ptr + end + 1);
      const vstart = end + HEADER_SIZE;
      if (vn > len - vstart) return decodeError(end, vtag, TRUNCATED);
      if (vtag != tag + 1) return decodeError(off, tag, UNPAIRED);
      const key = utf8(ptr + start, n);
      const value = utf8(ptr + vstart, vn);
      if (tag == TAG_METADATA_KEY) {
        input.metadataKeys.push(key);
        input.metadataValues.push(value);
      } else {
        input.paramNames.push(key);
        input.paramValues.push(value);
      }
      next = vstart + vn;
    } else if (tag == TAG_METADATA_VALUE || tag == TAG_PARAM_VALUE) {
      return decodeError(off, tag, UNPAIRED);
    } else if (tag == TAG_TEXT || tag == TAG_MODEL || (tag >= TAG_CHECK_ID && tag <= TAG_BODY)) {
      const bit: u32 = 1 << tag;
      if (seen & bit) return decodeError(off, tag, DUPLICATE);
      seen |= bit;
      if (tag == TAG_BODY) {
        if (withBody) input.body = utf8(ptr + start, n);
        off = next;
        continue;
      }
      const v = utf8(ptr + start, n);
      switch (tag) {
        case TAG_TEXT: input.text = v; break;
        case TAG_MODEL: input.model = v; break;
        case TAG_CHECK_ID: input.checkId = v; break;
        case TAG_STAGE: input.stage = v; break;
        case TAG_ENDPOINT: input.endpoint = v; break;
        case TAG_TOOL: input.tool = v; break;
        default: input.mcpServer = v;
      }
    }
    // Any other tag is skipped: later versions add tags.
    off = next;
  }
  return new Decoded(input, "");
}

/**
 * A byte buffer outside the garbage-collected heap, reused from call to call: the host reads the output before
 * its next call into the guest, so one buffer serves every call and the steady state allocates nothing for it.
 */
export class ByteBuffer {
  ptr: usize = 0;
  len: u32 = 0;
  cap: u32 = 0;

  reset(): void {
    this.len = 0;
  }

  reserve(n: u32): void {
    const need = this.len + n;
    if (need <= this.cap) return;
    let cap = this.cap < 256 ? <u32>256 : this.cap;
    while (cap < need) cap <<= 1;
    this.ptr = this.ptr == 0 ? heap.alloc(cap) : heap.realloc(this.ptr, cap);
    this.cap = cap;
  }

  byte(b: u8): void {
    this.reserve(1);
    store<u8>(this.ptr + this.len, b);
    this.len++;
  }

  u32le(v: u32): void {
    this.reserve(4);
    store<u32>(this.ptr + this.len, v);
    this.len += 4;
  }

  /** Appends s as UTF-8 (an unpaired surrogate becomes U+FFFD). */
  utf8(s: string): void {
    const n = <u32>String.UTF8.byteLength(s, false);
    this.reserve(n);
    this.len += <u32>String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, this.ptr + this.len, false, String.UTF8.ErrorMode.REPLACE);
  }

  /** Appends an ASCII string byte by byte (for JSON punctuation and numbers). */
  ascii(s: string): void {
    this.reserve(<u32>s.length);
    for (let i = 0; i < s.length; i++) store<u8>(this.ptr + this.len + i, <u8>s.charCodeAt(i));
    this.len += <u32>s.length;
  }

  /** Appends a field header with a zero length and returns where it is, for patchLength. */
  openField(tag: u8): u32 {
    const at = this.len;
    this.byte(tag);
    this.u32le(0);
    return at;
  }

  patchLength(header: u32): void {
    store<u32>(this.ptr + header + 1, this.len - header - HEADER_SIZE);
  }

  field(tag: u8, s: string): void {
    const h = this.openField(tag);
    this.utf8(s);
    this.patchLength(h);
  }

  flag(tag: u8, v: bool): void {
    this.byte(tag);
    this.u32le(1);
    this.byte(v ? 1 : 0);
  }
}
