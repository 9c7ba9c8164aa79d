// The host functions of module gateway_v1 (hostapi/abi.go). They are the only imports besides WASI a plugin may
// have, which is why the SDK's abort handler logs through log instead of importing env.abort.
import { utf8 } from "./wire";

@external("gateway_v1", "log")
declare function hostLog(level: i32, ptr: usize, len: u32): void;

@external("gateway_v1", "now_unix_ms")
declare function hostNowUnixMs(): i64;

@external("gateway_v1", "request_field")
declare function hostRequestField(pathPtr: usize, pathLen: u32, outPtr: usize, outCap: u32): i32;

/** Log levels of log. */
export enum Level {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
}

/** Writes msg to the request's log (the host keeps 4 KiB of a line and limits lines per call and second). */
export function log(level: Level, msg: string): void {
  const b = String.UTF8.encode(msg, false, String.UTF8.ErrorMode.REPLACE);
  hostLog(level, changetype<usize>(b), <u32>b.byteLength);
}

/** The host's clock, in milliseconds since the Unix epoch (a guest has no other clock). */
export function nowUnixMs(): i64 {
  return hostNowUnixMs();
}

/** The first request_field buffer: most fields (numbers, short strings) fit, larger ones cost a second call. */
const FIELD_BUFFER = 512;

/**
 * One field of the request as JSON text, by path ("params.temperature", "params.messages.0.role",
 * "metadata.user", "url.pathname"), or null when the request has no such field.
 */
export function requestField(path: string): string | null {
  return askHost(path, FIELD_BUFFER, (namePtr: usize, nameLen: u32, outPtr: usize, outCap: u32): i32 =>
    hostRequestField(namePtr, nameLen, outPtr, outCap));
}

/**
 * The guest side of the protocol request_field and kv_get share: ask fills the buffer when the value fits and
 * answers its length (-1: absent); a longer value gets a buffer of that length and another ask, a few times at
 * most (a value can change between two asks, and a misbehaving host must not keep us looping).
 */
export function askHost(name: string, first: i32, ask: (namePtr: usize, nameLen: u32, outPtr: usize, outCap: u32) => i32): string | null {
  const p = String.UTF8.encode(name, false, String.UTF8.ErrorMode.REPLACE);
  let cap: i32 = first;
  for (let attempt = 0; attempt < 3; attempt++) {
    const buf = heap.alloc(<usize>cap);
    const n = ask(changetype<usize>(p), <u32>p.byteLength, buf, <u32>cap);
    if (n < 0) {
      heap.free(buf);
      return null;
    }
    if (n <= cap) {
      const s = utf8(buf, <u32>n);
      heap.free(buf);
      return s;
    }
    heap.free(buf);
    cap = n;
  }
  return null;
}
