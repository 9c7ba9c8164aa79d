// Package conformance runs the ABI's golden table (hostapi/testdata/conformance.json) against a conformance
// guest, whatever language it is written in: every guest SDK's tests build their conformance guest and call Run
// with its module, so that one table holds every SDK to the same behaviour through the gateway's own engine
// (package plugins).
//
// A conformance guest implements these checks, switching on the text after the first dot of Input.CheckID:
// echo (a pass whose data repeats every input field), fail, transform (ASCII a-z made upper case), error,
// field (request_field of parameter "path"), any other name an error "unknown check <name>"; and a condition
// that matches when metadata "route" is "yes". internal/conformance/testdata/goguest is the Go one.
//
// A case's want compares, as parsed JSON where it is JSON:
//
//   - verdict: the Output's verdict; null: not compared (an error's verdict is the SDK's business);
//   - data: the Output's data; null: the Output has none;
//   - transformed_text: the transformed text; null: the Output has none;
//   - error_contains: a substring of the Output's error; null: the Output has no error;
//   - match: the condition's answer; null: not compared.
package conformance
