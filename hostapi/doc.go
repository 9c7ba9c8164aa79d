// Package hostapi is the ABI v1 between the gateway and its wasm guests: the exported and imported function
// names (abi.go), the call kinds and log levels, and the wire encoding of the Input the host passes to
// gateway_call and of the Output the guest returns (wire.go). The host (package plugins) and the guest SDK
// (package sdk, sdk-guest) both encode and decode with it, so the two sides cannot drift.
//
// It is pure Go and imports only the standard library, so it compiles for GOOS=wasip1 GOARCH=wasm and guests
// can import it. It must never import anything of the gateway's or outside the standard library. Changes only
// add things (constants, tags); a breaking change becomes ABI v2 with its own module name.
//
// # Protocol
//
// A guest exports ExportMarker (never called), ExportAlloc and ExportCall, and may import the host functions
// ImportLog, ImportNowUnixMs and ImportRequestField from ModuleName. Per call the host encodes an Input with
// AppendInput, asks the guest for InputLen bytes with gateway_alloc(size) -> ptr, writes them there, calls
// gateway_call(kind, ptr, len) -> (out_ptr<<32 | out_len), and decodes the bytes at out_ptr with DecodeOutput
// (0 decodes as NewOutput(), a pass with no data).
//
// # Wire encoding
//
// Input and Output are sequences of fields, each [tag u8][len u32 little-endian][len bytes]. Unknown tags are
// skipped. Input fields: TagText, TagModel, TagMetadataKey immediately followed by TagMetadataValue (repeated),
// TagParamName immediately followed by TagParamValue (the parameter's JSON text, repeated), TagCheckID, TagStage,
// TagEndpoint, TagTool, TagMCPServer. Output fields: TagVerdict (one byte, 1 pass, 0 fail; pass when absent),
// TagData (a JSON object), TagTransformedText, TagError, TagMatch (one byte; not matched when absent).
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
// Decoding is strict where the encoder never varies: a singular field that appears twice, a key without its
// value, a flag that is not one byte of 0 or 1, or a length running past the buffer is an error (a *DecodeError
// wrapping ErrDuplicate, ErrUnpaired, ErrBadFlag or ErrTruncated). Decoders never panic on any input.
//
// # Allocation
//
// AppendInput and AppendOutput do not allocate when dst has room (reuse a buffer, or size it with InputLen /
// OutputLen). DecodeInput makes one string copy of its buffer and slices every string out of it. DecodeOutput
// allocates nothing for a verdict or match alone and one buffer otherwise; its results never alias the buffer
// decoded, so it may be a view of guest memory.
//
// Example, the host side of one call:
//
//	buf = hostapi.AppendInput(buf[:0], &hostapi.Input{Text: text, Params: params, CheckID: "pii.detect"})
//	// ptr := gateway_alloc(len(buf)); write buf at ptr; r := gateway_call(hostapi.KindCheck, ptr, len(buf))
//	var out hostapi.Output
//	if err := hostapi.DecodeOutput(guestMemory[r>>32:][:uint32(r)], &out); err != nil { ... }
package hostapi
