// Write gateway plugins (hooks, guardrails, routing conditions, body transforms) in AssemblyScript. A plugin
// speaks the gateway's ABI v1.1 (hostapi/doc.go); this SDK does the ABI (exports, host imports, wire encoding),
// reads parameters and writes JSON data. See README.md.
//
// A plugin's entry file:
//
//   import { Input, Outcome, registerCheck } from "<sdk>/assembly";
//   export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "<sdk>/assembly";
//   registerCheck((input: Input): Outcome => Outcome.pass());
//
// A plugin with a transform (a mutator hook's) also calls registerTransform and re-exports gateway_transform;
// one without must not export it, so that the gateway refuses a mutator hook naming it.
export { ABI_VERSION, CheckFn, ConditionFn, gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call, gateway_transform, gatewayAbort, registerCheck, registerCondition, registerTransform } from "./abi";
export { Input } from "./input";
export { Outcome } from "./outcome";
export { Rewrite, TransformFn } from "./transform";
export { Json, JsonKind, Some, jsonBool, jsonFloat, jsonInt, jsonNumber, jsonString, jsonStrings } from "./json";
export { Level, log, nowUnixMs, requestField } from "./host";
export { kvGet } from "./kv";
export { Compiled, Regexp, RegexpResult, compileRegexp } from "./regexp";
export { isDigit, isLatin, isLetter, isMark, isNumber, isSpaceRune, toLowerRune, toUpperRune } from "./unicode";
