// Package examples holds example plugins built with sdk-guest (denylist and pii, guardrails on text; router, a
// routing condition; toolguard, a check on MCP tool calls' arguments; sysprompt, a transform for mutator
// hooks), example configs, an example bootstrap
// file (bootstrap.json, checked by a test), the mock provider of the README's walkthrough (mockprovider), and
// outside, a plugin in a module of its own that requires only the SDK's module (the folder's go.mod keeps it out
// of the gateway's module), which a test builds outside the tree as sdk-guest's README says; another runs vet
// and the tests of the nested modules (sdk-guest, outside) that go test ./... does not enter. Each example gets its
// own directory with main.go, README.md and a test that runs it, natively and built for wasm with
// internal/wasmtest.
package examples
