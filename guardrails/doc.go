// Package guardrails owns hook and guardrail semantics: before/after request hooks, input/output guardrails,
// deny, async, feedback, and the Check interface with the built-in default.* checks in native Go. It imports
// hostapi's wire types only; wasm-backed checks come from plugins through the Check interface, wired by cmd.
//
// Empty until the hooks-and-guardrails issue fills it; saved guardrails are already stored and validated by the
// bootstrap file (runtime/bootstrap).
package guardrails
