// Package hostapi is the ABI v1 (now v1.1) between the gateway and its wasm guests: the exported and imported
// function names and the version (abi.go), the call kinds and log levels, and the wire encoding of the Input the
// host passes to gateway_call and of the Output the guest returns (wire.go). The host (package plugins) and the guest SDK
// (package sdk, sdk-guest) both encode and decode with it, so the two sides cannot drift.
//
// It is pure Go and imports only the standard library, so it compiles for GOOS=wasip1 GOARCH=wasm and guests
// can import it. It must never import anything of the gateway's or outside the standard library. Changes only
// add things (constants, tags); a breaking change becomes ABI v2 with its own module name.
//
// # Protocol
//
// A guest exports ExportMarker (never called), ExportAlloc and ExportCall (and, from v1.1, ExportVersion and
// ExportMemory), and may import the host functions ImportLog, ImportNowUnixMs and ImportRequestField (and, from
// v1.1, ImportKVGet) from ModuleName; the import module name gateway_guard is reserved for the host (its runaway
// guard), and a guest importing from it is refused. Per call the host encodes an Input with AppendInput, asks the guest for at least InputLen bytes
// with gateway_alloc(size) -> ptr (a v1.1 guest: only when its last buffer is too small), writes them there,
// calls gateway_call(kind, ptr, len) -> (out_ptr<<32 | out_len), and decodes the bytes at out_ptr with
// DecodeOutput (0 decodes as NewOutput(), a pass with no data).
//
// A guest that rewrites bodies (a mutator hook's plugin, ABI v1.1) also exports ExportTransform,
// gateway_transform(kind, ptr, len) -> (out_ptr<<32 | out_len), with the same buffers, the same sandbox and
// the same deadline as gateway_call: the host calls it with KindTransform, an Input whose Body holds the body
// and an empty Text, and reads Output.Body, the replacement (absent: unchanged). The export is optional: the
// host calls it only for checks of a mutator hook, and refuses a mutator naming a plugin without it.
//
// # ABI v1.1
//
// v1.1 only adds to v1.0, and a v1.0 guest keeps working unchanged. A guest says it speaks v1.1 by exporting
// ExportVersion, gateway_abi_version: () -> i32, returning EncodeVersion(1, 1) = 0x00010001; without it, it
// speaks v1.0. The host calls it once, at load, and refuses a guest whose major version is not VersionMajor or
// whose minor version is above VersionMinor ("plugin speaks ABI v2.0; this gateway speaks v1.1"). A v1.1 guest:
//
//   - exports its linear memory as ExportMemory, "memory" (a module that does not is refused at load);
//   - keeps the buffer gateway_alloc(size) returned valid, and does not touch it, until its next gateway_alloc
//     call, not only until gateway_call returns as v1.0 asks. The host keeps the last buffer of each instance
//     (its pointer and the size it asked) and writes the next input there whenever it fits, calling only
//     gateway_call: one guest call per check. It calls gateway_alloc again only for a larger input, and asks
//     for sizes rounded up to a power of two, at least 1 KiB, so that the buffer is reused. A guest may hand
//     out a new buffer on every gateway_alloc (the old one may then be freed); it must not move or reuse the
//     current one for anything else, gateway_call included.
//
// The output gateway_call returns is read by the host before its next call into the guest, as in v1.0: a
// guest may reuse its output buffer from call to call.
//
// v1.1 adds the host function ImportKVGet, kv_get(key_ptr, key_len, out_ptr, out_cap) -> i32: the value stored
// under the key (bytes at key_ptr) in the plugin key-value store of the plugin's workspace, which admins fill
// through the admin API (/v1/plugin-kv). It answers -1 when the key is absent, otherwise the value's length,
// having written the value at out_ptr only when it fits in out_cap (nothing is written otherwise: the guest
// calls again with a buffer of that length). A key or buffer outside the guest's memory traps, as for
// ImportRequestField. A guest that imports kv_get does not load on a v1.0 host (the import is missing there).
//
// # Wire encoding
//
// Input and Output are sequences of fields, each [tag u8][len u32 little-endian][len bytes]. Unknown tags are
// skipped. Input fields: TagText, TagModel, TagMetadataKey immediately followed by TagMetadataValue (repeated),
// TagParamName immediately followed by TagParamValue (the parameter's JSON text, repeated), TagCheckID, TagStage,
// TagEndpoint, TagTool, TagMCPServer, TagBody (v1.1: the JSON body of a transform call). Output fields:
// TagVerdict (one byte, 1 pass, 0 fail; pass when absent), TagData (a JSON object), TagTransformedText,
// TagError, TagMatch (one byte; not matched when absent), TagTransformedBody (v1.1: a transform's replacement
// body, one JSON object; the body is unchanged when absent).
//
// # What an Input describes
//
// Endpoint says what is being checked. For a model request it is "chat", "completions" or "embeddings", Stage
// is "before" (Text is the messages' text) or "after" (Text is the answer's text), and Tool and MCPServer are
// empty. For an MCP tool call (hooks before_tool_call and after_tool_call) it is "mcp": Tool is the bare tool
// name the upstream server knows, MCPServer the server's registry ID, and Text the call's arguments as JSON text
// (Stage "before") or the result's text (Stage "after"). A routing condition has Stage "condition". TagTool and
// TagMCPServer were added within ABI v1: a guest built before them skips them as unknown tags.
//
// A transform call (KindTransform, gateway_transform) carries the body instead of the text: Body is the
// request in OpenAI's shape (Stage "before"; endpoints "chat", "completions" and "embeddings", a prompt's
// completion after rendering) or the non-streamed answer in OpenAI's shape (Stage "after"), Text is empty, and
// Model, Metadata, Params, CheckID and Endpoint are as for a check. The replacement (Output.Body) must be one
// JSON object of at most twice the input's size; for a request the host runs on it the validator the route ran
// on the caller's body, and it may not change "stream". A replacement the host refuses, or a transform of a
// streamed answer, is a check error (its failOnError decides). Verdict, data and error keep their meaning.
//
// # Decoding rules, for a guest in any language
//
// Decoding is strict where the encoder never varies, and a decoder in any language must follow these rules
// (DecodeInput and DecodeOutput do; conformance.json in testdata is the golden table every guest SDK runs):
//
//  1. A field is a tag byte, a length as 4 bytes little-endian unsigned, then that many bytes. A header shorter
//     than 5 bytes, or a length running past the end of the buffer, is an error (ErrTruncated).
//  2. Fields of an unknown tag are skipped, whatever their length: later versions add tags.
//  3. A singular field (Input: text, model, check id, stage, endpoint, tool, MCP server, body; Output: verdict,
//     data, transformed text, error, match, body) that appears twice is an error (ErrDuplicate), never "the
//     last one wins".
//  4. A metadata key is immediately followed by its metadata value, and a parameter name by its parameter
//     value; a key or name at the end of the buffer or followed by another tag, or a value not preceded by its
//     key, is an error (ErrUnpaired). Keys may repeat: metadata and parameters are lists in the order sent, and
//     a lookup by key finds the first.
//  5. An absent string field and an empty one mean the same (the host never writes empty ones); strings are
//     UTF-8 as sent, never normalised or re-encoded. A parameter value is the parameter's JSON text, verbatim.
//  6. Verdict and match are exactly one byte, 0 or 1 (otherwise ErrBadFlag). An absent verdict is a pass, an
//     absent match is no match; an empty output (gateway_call returning 0) is a pass with no data.
//  7. Output data, when present, must be one JSON object: the host fails the call otherwise; so must an output
//     body. An error field, when non-empty, makes the call a check error whatever the verdict.
//
// A decoding error is reported as a *DecodeError wrapping ErrTruncated, ErrDuplicate, ErrUnpaired or ErrBadFlag.
// Decoders never panic on any input.
//
// # Allocation
//
// AppendInput and AppendOutput do not allocate when dst has room (reuse a buffer, or size it with InputLen /
// OutputLen). DecodeInput makes one copy of its buffer and slices every string (and the body) out of it. DecodeOutput
// allocates nothing for a verdict or match alone and one buffer otherwise; its results never alias the buffer
// decoded, so it may be a view of guest memory.
//
// Example, the host side of one call:
//
//	buf = hostapi.AppendInput(buf[:0], &hostapi.Input{Text: text, Params: params, CheckID: "pii.detect"})
//	// ptr := gateway_alloc(size >= len(buf)), for v1.1 only when the last buffer is too small;
//	// write buf at ptr; r := gateway_call(hostapi.KindCheck, ptr, len(buf))
//	var out hostapi.Output
//	if err := hostapi.DecodeOutput(guestMemory[r>>32:][:uint32(r)], &out); err != nil { ... }
package hostapi

// The guest SDK's module keeps a copy of this package's files; regenerate it after every change here.
//go:generate go run ./internal/gensdkcopy
