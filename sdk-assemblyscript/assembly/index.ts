// Write gateway plugins (hooks, guardrails, routing conditions) in AssemblyScript. A plugin speaks the gateway's
// ABI v1.1 (hostapi/doc.go); this SDK does the ABI (exports, host imports, wire encoding), reads parameters and
// writes JSON data. See README.md.
//
// A plugin's entry file:
//
//   import { Input, Outcome, registerCheck } from "<sdk>/assembly";
//   export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "<sdk>/assembly";
//   registerCheck((input: Input): Outcome => Outcome.pass());
export { ABI_VERSION, CheckFn, ConditionFn, gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call, gatewayAbort, registerCheck, registerCondition } from "./abi";
export { Input } from "./input";
export { Outcome } from "./outcome";
export { Json, JsonKind, Some, jsonBool, jsonFloat, jsonInt, jsonNumber, jsonString, jsonStrings } from "./json";
export { Level, log, nowUnixMs, requestField } from "./host";
export { kvGet } from "./kv";
export { Compiled, Regexp, RegexpResult, compileRegexp } from "./regexp";
export { isDigit, isLatin, isLetter, isMark, isNumber, isSpaceRune, toLowerRune, toUpperRune } from "./unicode";
