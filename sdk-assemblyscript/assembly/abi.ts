// The guest's side of ABI v1.1: the exports the gateway calls, the buffers behind them and the dispatch to the
// handlers a plugin registers. A plugin's entry file re-exports the four exports (see index.ts), and
// gateway_transform too when it registers a transform.
import { ByteBuffer, Decoded, KIND_CHECK, KIND_CONDITION, KIND_TRANSFORM, TAG_DATA, TAG_ERROR, TAG_MATCH, TAG_TRANSFORMED_BODY, TAG_TRANSFORMED_TEXT, TAG_VERDICT, decodeInput } from "./wire";
import { Input } from "./input";
import { Outcome } from "./outcome";
import { Rewrite, TransformFn } from "./transform";
import { writeJson } from "./json";
import { Level, log } from "./host";

/** ABI v1.1 (major<<16 | minor), returned by gateway_abi_version. */
export const ABI_VERSION: i32 = 0x00010001;

/** The smallest input buffer, so that small inputs share one buffer from the first call on. */
const MIN_INPUT_BUFFER: u32 = 1024;

export type CheckFn = (input: Input) => Outcome;
export type ConditionFn = (input: Input) => bool;

let checkHandler: CheckFn | null = null;
let conditionHandler: ConditionFn | null = null;
let transformHandler: TransformFn | null = null;

/** Makes fn the plugin's check (guardrail, hook check or transformer). Call it at the top level of the entry. */
export function registerCheck(fn: CheckFn): void {
  checkHandler = fn;
}

/** Makes fn the plugin's routing condition: true when the request matches. */
export function registerCondition(fn: ConditionFn): void {
  conditionHandler = fn;
}

/**
 * Makes fn the plugin's transform, what a mutator hook calls to rewrite the body. Call it at the top level of the
 * entry, and re-export gateway_transform from the entry too: the gateway refuses a mutator hook naming a plugin
 * that does not export it, so an entry without a transform must not export it.
 */
export function registerTransform(fn: TransformFn): void {
  transformHandler = fn;
}

// A wasm instance runs one call at a time: these are touched only from the exports. Both live outside the
// garbage-collected heap, so a collection never frees or moves them.
let inputPtr: usize = 0;
let inputCap: u32 = 0;
const output = new ByteBuffer();

/** Marks the module as a gateway plugin; never called. */
export function gateway_abi_v1(): void {}

/** The ABI version the plugin speaks, v1.1. */
export function gateway_abi_version(): i32 {
  return ABI_VERSION;
}

/**
 * The buffer for the next input. ABI v1.1: it stays valid, untouched by the guest, until the next gateway_alloc,
 * so the host writes every input that fits there and calls only gateway_call. A larger request replaces it (the
 * old one is freed first: the host no longer uses it). A negative size gets 0, which the host reports.
 */
export function gateway_alloc(size: i32): usize {
  if (size < 0) return 0;
  if (<u32>size > inputCap || inputPtr == 0) {
    if (inputPtr != 0) heap.free(inputPtr);
    const cap = <u32>size < MIN_INPUT_BUFFER ? MIN_INPUT_BUFFER : <u32>size;
    inputPtr = heap.alloc(cap);
    inputCap = cap;
  }
  return inputPtr;
}

/**
 * Decodes the input at ptr, runs the handler for kind and returns the encoded output as out_ptr<<32 | out_len.
 * The output stays valid until the next call. Garbage is collected before returning, when nothing of the call
 * is on the stack any more: the minimal runtime never collects on its own.
 */
export function gateway_call(kind: i32, ptr: u32, len: u32): u64 {
  return answer(kind, ptr, len, false);
}

/**
 * ABI v1.1's optional export for mutator hooks: as gateway_call, for calls of kind 3 (KIND_TRANSFORM), whose
 * input carries the body to rewrite. Re-export it from the entry only when the plugin registers a transform.
 */
export function gateway_transform(kind: i32, ptr: u32, len: u32): u64 {
  return answer(kind, ptr, len, true);
}

function answer(kind: i32, ptr: u32, len: u32, transform: bool): u64 {
  output.reset();
  const p = <usize>ptr;
  if (inputPtr == 0 || p < inputPtr || <u64>p + <u64>len > <u64>inputPtr + <u64>inputCap) {
    errorOutput("sdk: the input is not in the buffer gateway_alloc returned");
  } else if (transform) {
    dispatchTransform(kind, decodeInput(p, len, kind == KIND_TRANSFORM));
  } else {
    dispatch(kind, decodeInput(p, len, false));
  }
  __collect();
  return (<u64>output.ptr << 32) | <u64>output.len;
}

function errorOutput(msg: string): void {
  output.flag(TAG_VERDICT, true);
  output.field(TAG_ERROR, msg);
}

function dispatch(kind: i32, decoded: Decoded): void {
  const w = decoded.input;
  if (w == null) {
    errorOutput("sdk: " + decoded.error);
    return;
  }
  const input = new Input(w);
  if (kind == KIND_CHECK) {
    const check = checkHandler;
    if (check == null) {
      errorOutput("sdk: the plugin registers no check (call registerCheck)");
      return;
    }
    writeOutcome(check(input));
  } else if (kind == KIND_CONDITION) {
    const condition = conditionHandler;
    if (condition == null) {
      errorOutput("sdk: the plugin registers no condition (call registerCondition)");
      return;
    }
    const matched = condition(input);
    output.flag(TAG_VERDICT, true);
    if (matched) output.flag(TAG_MATCH, true);
  } else {
    errorOutput("sdk: unknown call kind " + kind.toString());
  }
}

function dispatchTransform(kind: i32, decoded: Decoded): void {
  if (kind != KIND_TRANSFORM) {
    errorOutput("sdk: gateway_transform called with kind " + kind.toString());
    return;
  }
  const w = decoded.input;
  if (w == null) {
    errorOutput("sdk: " + decoded.error);
    return;
  }
  const transform = transformHandler;
  if (transform == null) {
    errorOutput("sdk: the plugin exports gateway_transform but registers no transform (call registerTransform)");
    return;
  }
  writeRewrite(transform(new Input(w)));
}

/** Encodes an Outcome, writing the data's JSON straight into its field. */
function writeOutcome(o: Outcome): void {
  writeVerdict(o);
  const t = o.transformedText;
  if (t != null) output.field(TAG_TRANSFORMED_TEXT, t);
  writeError(o);
}

/** Encodes a Rewrite: a transform answers with a body, never a transformed text, and an error drops the body. */
function writeRewrite(r: Rewrite): void {
  const o = r.outcome;
  writeVerdict(o);
  writeError(o);
  const body = r.body;
  if (body != null && o.error == null) output.field(TAG_TRANSFORMED_BODY, body);
}

function writeVerdict(o: Outcome): void {
  output.flag(TAG_VERDICT, o.pass);
  const data = o.data;
  if (data != null) {
    const h = output.openField(TAG_DATA);
    writeJson(output, data);
    output.patchLength(h);
  }
}

function writeError(o: Outcome): void {
  const e = o.error;
  if (e != null) output.field(TAG_ERROR, e);
}

// @ts-ignore: decorator (the abort handler may run before the module's globals are initialized)
@lazy let aborting = false;

/**
 * The abort handler (build with --use abort=assembly/abi/gatewayAbort): the host offers no env.abort, so an
 * assertion, an out-of-bounds access or an allocation failure writes "abort: ..." to the request's log at
 * error level and traps. The gateway reports a check error and replaces the instance.
 */
export function gatewayAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (!aborting) {
    aborting = true; // logging allocates: an abort inside it must not recurse
    const msg = message == null ? "" : message;
    const file = fileName == null ? "" : fileName;
    log(Level.Error, "abort: " + msg + " at " + file + ":" + line.toString() + ":" + column.toString());
  }
  unreachable();
}
