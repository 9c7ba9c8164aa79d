// JSON for plugins: reading parameter values (a parameter is JSON text) and writing a result's data. The reader
// accepts exactly RFC 8259 for the shapes a parameter reader asks for; the writer writes as Go's encoding/json
// does (object keys sorted, <, > and & escaped), so that data reads the same from a plugin in any language.
import { ByteBuffer } from "./wire";

export enum JsonKind {
  Null,
  Bool,
  Int,
  Float,
  String,
  Raw,
  Array,
  Object,
}

/** A JSON value for a result's data. Build it with the static constructors or Json.from. */
export class Json {
  kind: JsonKind = JsonKind.Null;
  b: bool = false;
  i: i64 = 0;
  f: f64 = 0;
  s: string = "";
  items: Json[] = [];
  keys: string[] = [];
  values: Json[] = [];

  static null(): Json {
    return new Json();
  }

  static bool(v: bool): Json {
    const j = new Json();
    j.kind = JsonKind.Bool;
    j.b = v;
    return j;
  }

  static int(v: i64): Json {
    const j = new Json();
    j.kind = JsonKind.Int;
    j.i = v;
    return j;
  }

  static float(v: f64): Json {
    const j = new Json();
    j.kind = JsonKind.Float;
    j.f = v;
    return j;
  }

  static string(v: string): Json {
    const j = new Json();
    j.kind = JsonKind.String;
    j.s = v;
    return j;
  }

  /** JSON text written as it is (request_field's answer, a parameter's value); it must be valid JSON. */
  static raw(text: string): Json {
    const j = new Json();
    j.kind = JsonKind.Raw;
    j.s = text;
    return j;
  }

  static array(items: Json[] = []): Json {
    const j = new Json();
    j.kind = JsonKind.Array;
    j.items = items;
    return j;
  }

  static object(): Json {
    const j = new Json();
    j.kind = JsonKind.Object;
    return j;
  }

  /**
   * Converts a value: Json as is, strings, integers, floats, bools, arrays of any of these, Map<string, T>, and
   * null for a null reference.
   */
  static from<T>(v: T): Json {
    if (isReference<T>()) {
      if (isNullable<T>() && changetype<usize>(v) == 0) return Json.null();
      if (v instanceof Json) return changetype<Json>(v);
    }
    if (isString<T>()) return Json.string(changetype<string>(v));
    if (isBoolean<T>()) return Json.bool(<bool>v);
    if (isInteger<T>()) return Json.int(<i64>v);
    if (isFloat<T>()) return Json.float(<f64>v);
    if (isArray<T>()) {
      const items: Json[] = [];
      // @ts-ignore: T is an array here
      for (let i = 0; i < v.length; i++) items.push(Json.from(unchecked(v[i])));
      return Json.array(items);
    }
    if (v instanceof Map) {
      const o = Json.object();
      // @ts-ignore: T is a Map here
      const keys = v.keys();
      // @ts-ignore: T is a Map here
      for (let i = 0; i < keys.length; i++) o.set(keys[i], v.get(keys[i]));
      return o;
    }
    ERROR("Json.from: unsupported type");
    return Json.null();
  }

  /** Sets key in an object (replacing an earlier value) and returns the object. */
  set<T>(key: string, value: T): Json {
    const v = Json.from<T>(value);
    const at = this.keys.indexOf(key);
    if (at >= 0) {
      this.values[at] = v;
    } else {
      this.keys.push(key);
      this.values.push(v);
    }
    return this;
  }

  /** Appends to an array and returns the array. */
  push<T>(value: T): Json {
    this.items.push(Json.from<T>(value));
    return this;
  }

  /** The JSON text. */
  toString(): string {
    const b = new ByteBuffer();
    writeJson(b, this);
    const s = String.UTF8.decodeUnsafe(b.ptr, b.len, false);
    heap.free(b.ptr);
    return s;
  }
}

const HEX = "0123456789abcdef";

function writeUtf8CodePoint(b: ByteBuffer, c: u32): void {
  if (c < 0x800) {
    b.byte(<u8>(0xc0 | (c >> 6)));
    b.byte(<u8>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    b.byte(<u8>(0xe0 | (c >> 12)));
    b.byte(<u8>(0x80 | ((c >> 6) & 0x3f)));
    b.byte(<u8>(0x80 | (c & 0x3f)));
  } else {
    b.byte(<u8>(0xf0 | (c >> 18)));
    b.byte(<u8>(0x80 | ((c >> 12) & 0x3f)));
    b.byte(<u8>(0x80 | ((c >> 6) & 0x3f)));
    b.byte(<u8>(0x80 | (c & 0x3f)));
  }
}

/** Writes s as a JSON string, escaping as encoding/json does; an unpaired surrogate becomes \ufffd. */
export function writeJsonString(b: ByteBuffer, s: string): void {
  b.reserve(<u32>s.length + 2);
  b.byte(0x22);
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = <u32>s.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20 && c != 0x22 && c != 0x5c && c != 0x3c && c != 0x3e && c != 0x26) {
        b.byte(<u8>c);
        continue;
      }
      b.byte(0x5c);
      switch (c) {
        case 0x22: b.byte(0x22); break;
        case 0x5c: b.byte(0x5c); break;
        case 0x0a: b.byte(0x6e); break;
        case 0x0d: b.byte(0x72); break;
        case 0x09: b.byte(0x74); break;
        case 0x08: b.byte(0x62); break;
        case 0x0c: b.byte(0x66); break;
        default:
          b.ascii("u00");
          b.byte(<u8>HEX.charCodeAt(c >> 4));
          b.byte(<u8>HEX.charCodeAt(c & 0xf));
      }
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const lo = <u32>s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        writeUtf8CodePoint(b, 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00));
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c == 0x2028 || c == 0x2029) {
      b.ascii(c == 0x2028 ? "\\u2028" : "\\u2029"); // as encoding/json: they end lines in JavaScript
      continue;
    }
    writeUtf8CodePoint(b, c);
  }
  b.byte(0x22);
}

function writeFloat(b: ByteBuffer, f: f64): void {
  if (!isFinite(f)) {
    b.ascii("null"); // JSON has no NaN or infinity
  } else if (f == Math.floor(f) && Math.abs(f) < 1e21) {
    b.ascii((<i64>f).toString()); // encoding/json writes 3, not 3.0
  } else {
    b.ascii(f.toString()); // shortest round-trip form, exponent from 1e21 and below 1e-6, as encoding/json
  }
}

/** Writes v; object keys are sorted, as encoding/json writes a map. */
export function writeJson(b: ByteBuffer, v: Json): void {
  switch (v.kind) {
    case JsonKind.Null: b.ascii("null"); break;
    case JsonKind.Bool: b.ascii(v.b ? "true" : "false"); break;
    case JsonKind.Int: b.ascii(v.i.toString()); break;
    case JsonKind.Float: writeFloat(b, v.f); break;
    case JsonKind.String: writeJsonString(b, v.s); break;
    case JsonKind.Raw: b.utf8(v.s); break;
    case JsonKind.Array: {
      b.byte(0x5b);
      for (let i = 0; i < v.items.length; i++) {
        if (i > 0) b.byte(0x2c);
        writeJson(b, unchecked(v.items[i]));
      }
      b.byte(0x5d);
      break;
    }
    default: {
      // Insertion sort of the key indices: data objects are small, and AS comparators cannot capture keys.
      const keys = v.keys;
      const order = new Array<i32>(keys.length);
      for (let i = 0; i < order.length; i++) {
        let j = i;
        while (j > 0 && unchecked(keys[unchecked(order[j - 1])]) > unchecked(keys[i])) {
          unchecked(order[j] = order[j - 1]);
          j--;
        }
        unchecked(order[j] = i);
      }
      b.byte(0x7b);
      for (let i = 0; i < order.length; i++) {
        if (i > 0) b.byte(0x2c);
        const k = unchecked(order[i]);
        writeJsonString(b, unchecked(keys[k]));
        b.byte(0x3a);
        writeJson(b, unchecked(v.values[k]));
      }
      b.byte(0x7d);
    }
  }
}

// Reading parameter values.

function isSpace(c: i32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

function skipSpace(s: string, i: i32): i32 {
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return i;
}

function hexValue(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

function hex4(s: string, i: i32): i32 {
  if (i + 4 > s.length) return -1;
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const h = hexValue(s.charCodeAt(i + k));
    if (h < 0) return -1;
    v = v << 4 | h;
  }
  return v;
}

/** A string token read by readString: its value and the index after it; end < 0 when invalid. */
class StringToken {
  constructor(public value: string, public end: i32) {}
}

/** Reads the JSON string starting at s[i] (a quote). */
function readString(s: string, i: i32): StringToken {
  const bad = new StringToken("", -1);
  if (i >= s.length || s.charCodeAt(i) != 0x22) return bad;
  i++;
  // Fast path: no escapes.
  let j = i;
  while (j < s.length) {
    const c = s.charCodeAt(j);
    if (c == 0x22) return new StringToken(s.substring(i, j), j + 1);
    if (c == 0x5c || c < 0x20) break;
    j++;
  }
  const parts: string[] = [s.substring(i, j)];
  while (j < s.length) {
    const c = s.charCodeAt(j);
    if (c == 0x22) return new StringToken(parts.join(""), j + 1);
    if (c < 0x20) return bad;
    if (c != 0x5c) {
      let k = j;
      while (k < s.length && s.charCodeAt(k) != 0x22 && s.charCodeAt(k) != 0x5c && s.charCodeAt(k) >= 0x20) k++;
      parts.push(s.substring(j, k));
      j = k;
      continue;
    }
    if (j + 1 >= s.length) return bad;
    const e = s.charCodeAt(j + 1);
    j += 2;
    switch (e) {
      case 0x22: parts.push("\""); break;
      case 0x5c: parts.push("\\"); break;
      case 0x2f: parts.push("/"); break;
      case 0x62: parts.push("\b"); break;
      case 0x66: parts.push("\f"); break;
      case 0x6e: parts.push("\n"); break;
      case 0x72: parts.push("\r"); break;
      case 0x74: parts.push("\t"); break;
      case 0x75: {
        let u = hex4(s, j);
        if (u < 0) return bad;
        j += 4;
        // A surrogate pair is two escapes; an unpaired surrogate reads as U+FFFD, as in Go.
        if (u >= 0xd800 && u <= 0xdbff && j + 6 <= s.length && s.charCodeAt(j) == 0x5c && s.charCodeAt(j + 1) == 0x75) {
          const lo = hex4(s, j + 2);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            parts.push(String.fromCharCodes([u, lo]));
            j += 6;
            break;
          }
        }
        if (u >= 0xd800 && u <= 0xdfff) u = 0xfffd;
        parts.push(String.fromCharCode(u));
        break;
      }
      default:
        return bad;
    }
  }
  return bad;
}

/** The index after the JSON number starting at s[i], or -1 when there is none. */
function numberEnd(s: string, i: i32): i32 {
  const n = s.length;
  if (i < n && s.charCodeAt(i) == 0x2d) i++;
  if (i >= n) return -1;
  let c = s.charCodeAt(i);
  if (c == 0x30) {
    i++;
  } else if (c >= 0x31 && c <= 0x39) {
    while (i < n && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
  } else {
    return -1;
  }
  if (i < n && s.charCodeAt(i) == 0x2e) {
    i++;
    const start = i;
    while (i < n && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
    if (i == start) return -1;
  }
  if (i < n && (s.charCodeAt(i) | 0x20) == 0x65) {
    i++;
    if (i < n && (s.charCodeAt(i) == 0x2b || s.charCodeAt(i) == 0x2d)) i++;
    const start = i;
    while (i < n && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
    if (i == start) return -1;
  }
  return i;
}

/** The value of the JSON text when it is one string (surrounding white space allowed), else null. */
export function jsonString(text: string): string | null {
  const t = readString(text, skipSpace(text, 0));
  if (t.end < 0 || skipSpace(text, t.end) != text.length) return null;
  return t.value;
}

/** The JSON text's number, trimmed, when it is one number, else null. */
export function jsonNumber(text: string): string | null {
  const start = skipSpace(text, 0);
  const end = numberEnd(text, start);
  if (end < 0 || skipSpace(text, end) != text.length) return null;
  return text.substring(start, end);
}

/** A value that may be absent, for the parameter readers of numbers and booleans. */
export class Some<T> {
  constructor(public value: T) {}
}

/** The JSON text's number when it is an integer that fits an i64 (10 and 1e3 do, 1.5 and 1e30 do not). */
export function jsonInt(text: string): Some<i64> | null {
  const num = jsonNumber(text);
  if (num == null) return null;
  let plain = true;
  for (let i = 0; i < num.length; i++) {
    const c = num.charCodeAt(i);
    if (c == 0x2e || c == 0x65 || c == 0x45) plain = false;
  }
  if (plain) {
    // Exact, beyond 2^53: accumulate negatively so that -2^63 fits.
    const neg = num.charCodeAt(0) == 0x2d;
    let v: i64 = 0;
    for (let i = neg ? 1 : 0; i < num.length; i++) {
      const d = <i64>(num.charCodeAt(i) - 0x30);
      if (v < (i64.MIN_VALUE + d) / 10) return null;
      v = v * 10 - d;
    }
    if (!neg) {
      if (v == i64.MIN_VALUE) return null;
      v = -v;
    }
    return new Some<i64>(v);
  }
  const f = parseFloat(num);
  if (!isFinite(f) || f != Math.floor(f) || f < -9223372036854775808.0 || f >= 9223372036854775808.0) return null;
  return new Some<i64>(<i64>f);
}

/** The JSON text's number as an f64, or null. */
export function jsonFloat(text: string): Some<f64> | null {
  const num = jsonNumber(text);
  if (num == null) return null;
  const f = parseFloat(num);
  return isFinite(f) ? new Some<f64>(f) : null;
}

/** The JSON text's boolean, or null when it is not true or false. */
export function jsonBool(text: string): Some<bool> | null {
  const start = skipSpace(text, 0);
  let end = -1;
  let v = false;
  if (text.startsWith("true", start)) {
    end = start + 4;
    v = true;
  } else if (text.startsWith("false", start)) {
    end = start + 5;
  }
  if (end < 0 || skipSpace(text, end) != text.length) return null;
  return new Some<bool>(v);
}

/** The JSON text's strings when it is an array of strings, else null. */
export function jsonStrings(text: string): string[] | null {
  let i = skipSpace(text, 0);
  if (i >= text.length || text.charCodeAt(i) != 0x5b) return null;
  const out: string[] = [];
  i = skipSpace(text, i + 1);
  if (i < text.length && text.charCodeAt(i) == 0x5d) {
    return skipSpace(text, i + 1) == text.length ? out : null;
  }
  while (true) {
    const t = readString(text, i);
    if (t.end < 0) return null;
    out.push(t.value);
    i = skipSpace(text, t.end);
    if (i >= text.length) return null;
    const c = text.charCodeAt(i);
    if (c == 0x5d) break;
    if (c != 0x2c) return null;
    i = skipSpace(text, i + 1);
  }
  return skipSpace(text, i + 1) == text.length ? out : null;
}
