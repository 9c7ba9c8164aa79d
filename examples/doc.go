// Package examples holds example plugins built with sdk-guest (denylist and pii, guardrails on text; router, a
// routing condition; toolguard, a check on MCP tool calls' arguments), example configs, an example bootstrap
// file (bootstrap.json, checked by a test), the mock provider of the README's walkthrough (mockprovider), and a
// test that builds a plugin as its own module outside the tree, as sdk-guest's README says. Each example gets its
// own directory with main.go, README.md and a test that runs it, natively and built for wasm with
// internal/wasmtest.
package examples
