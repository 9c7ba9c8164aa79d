// Package plugins owns the WebAssembly engine: wazero runtimes per workspace, the compile cache, instance pools,
// hot reload, memory and time limits, and the host functions; it returns wasm-backed checks and conditions that
// satisfy guardrails' Check interface without importing guardrails. It imports hostapi and storage.
//
// Empty until the plugin-runtime issue fills it; plugin modules are already stored (with their SHA-256) from the
// bootstrap file.
package plugins
