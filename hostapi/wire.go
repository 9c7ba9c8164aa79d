package hostapi

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"unsafe"
)

// HeaderSize is the size of a field header on the wire: a tag byte and a little-endian uint32 length.
const HeaderSize = 5

// KV is one metadata entry or one parameter of an Input. For a parameter, Value is the parameter's JSON text
// (`10`, `"abc"`, `true`, `["a","b"]`).
type KV struct {
	Key, Value string
}

// Input is what the host sends to gateway_call.
//
// The host fills one per call; an Input is not safe for concurrent use while it is being decoded into.
type Input struct {
	// Text is the text to check: for input checks the messages' text joined with "\n", for output checks the
	// answer's text.
	Text string
	// Model is the request's model.
	Model string
	// Metadata holds the request's metadata, in the order sent.
	Metadata []KV
	// Params holds the check's parameters, each value being JSON text, in the order sent.
	Params []KV
	// CheckID names the check, e.g. "pii.detect".
	CheckID string
	// Stage is "before" or "after".
	Stage string
	// Endpoint is "chat", "completions" or "embeddings" for a model request, "mcp" for a tool call.
	Endpoint string
	// Tool is the called tool's bare name, as the upstream MCP server knows it (without the "<server>__"
	// prefix /mcp lists it under). It is set only for a tool call, where Text is the call's arguments as JSON
	// text (Stage "before") or the result's text (Stage "after").
	Tool string
	// MCPServer is the registry ID of the upstream MCP server the tool call goes to. It is set only for a tool
	// call.
	MCPServer string
	// Body is the JSON body a transform call (KindTransform) rewrites: the request in OpenAI shape (Stage
	// "before") or the answer (Stage "after"). It is empty for checks and conditions (ABI v1.1, TagBody).
	Body []byte
}

// Output is what gateway_call returns to the host.
//
// The zero Output is a failed verdict; use NewOutput (or set Verdict) for the ABI's default, a pass.
type Output struct {
	// Verdict is true for pass, false for fail. It is true when the field is absent from the wire.
	Verdict bool
	// Data is a JSON object shown in hook_results, or nil.
	Data []byte
	// TransformedText replaces the checked text when HasTransformedText is true (an empty text is a valid
	// transformation).
	TransformedText    string
	HasTransformedText bool
	// Error is non-empty when the check errored; it is the message.
	Error string
	// Match is a condition's answer: true when matched. It is false when the field is absent from the wire.
	Match bool
	// Body is a transform's replacement body, one JSON object, or nil when the body is left as it was (ABI
	// v1.1, TagTransformedBody).
	Body []byte
}

// NewOutput returns the Output of an empty encoding: a pass, no data, no match.
func NewOutput() Output { return Output{Verdict: true} }

// SetTransformedText sets the transformed text.
func (o *Output) SetTransformedText(s string) {
	o.TransformedText, o.HasTransformedText = s, true
}

// Transformed returns the transformed text and whether there is one.
func (o *Output) Transformed() (string, bool) { return o.TransformedText, o.HasTransformedText }

// Errors of DecodeInput and DecodeOutput. They come wrapped in a *DecodeError; test them with errors.Is.
var (
	// ErrTruncated means a field header or value runs past the end of the buffer.
	ErrTruncated = errors.New("truncated field")
	// ErrDuplicate means a field that may appear once appears twice.
	ErrDuplicate = errors.New("duplicate field")
	// ErrUnpaired means a metadata key or parameter name is not directly followed by its value, or a value
	// comes without its key.
	ErrUnpaired = errors.New("unpaired key or value")
	// ErrBadFlag means a verdict or match field is not one byte of 0 or 1.
	ErrBadFlag = errors.New("flag field is not one byte of 0 or 1")
)

// DecodeError reports where a decoding failed.
type DecodeError struct {
	What   string // "input" or "output"
	Offset int    // offset of the offending field header in the buffer
	Tag    byte   // tag of the offending field (0 if the header itself is truncated)
	Err    error  // one of the Err* values
}

func (e *DecodeError) Error() string {
	return "hostapi: decode " + e.What + ": " + e.Err.Error() + " (tag " + strconv.Itoa(int(e.Tag)) +
		" at offset " + strconv.Itoa(e.Offset) + ")"
}

func (e *DecodeError) Unwrap() error { return e.Err }

// appendField appends one field: tag, length and value.
func appendField(dst []byte, tag byte, v string) []byte {
	dst = append(dst, tag)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

func appendBytesField(dst []byte, tag byte, v []byte) []byte {
	dst = append(dst, tag)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

func appendFlag(dst []byte, tag byte, v bool) []byte {
	b := byte(0)
	if v {
		b = 1
	}
	return append(dst, tag, 1, 0, 0, 0, b)
}

// InputLen returns the length of in's encoding, so that a caller can size a buffer (or a gateway_alloc request)
// before AppendInput.
func InputLen(in *Input) int {
	n := 0
	for _, s := range [...]string{in.Text, in.Model, in.CheckID, in.Stage, in.Endpoint, in.Tool, in.MCPServer} {
		if s != "" {
			n += HeaderSize + len(s)
		}
	}
	for _, kv := range in.Metadata {
		n += 2*HeaderSize + len(kv.Key) + len(kv.Value)
	}
	for _, kv := range in.Params {
		n += 2*HeaderSize + len(kv.Key) + len(kv.Value)
	}
	if len(in.Body) > 0 {
		n += HeaderSize + len(in.Body)
	}
	return n
}

// AppendInput appends the encoding of in to dst and returns the extended slice. Empty strings are left out
// (absent and empty decode the same); metadata and params are written as key/value pairs in order. It does not
// allocate when dst has room for InputLen(in) more bytes.
//
// Every string must be shorter than 4 GiB.
func AppendInput(dst []byte, in *Input) []byte {
	dst = slices.Grow(dst, InputLen(in))
	if in.Text != "" {
		dst = appendField(dst, TagText, in.Text)
	}
	if in.Model != "" {
		dst = appendField(dst, TagModel, in.Model)
	}
	for _, kv := range in.Metadata {
		dst = appendField(dst, TagMetadataKey, kv.Key)
		dst = appendField(dst, TagMetadataValue, kv.Value)
	}
	for _, kv := range in.Params {
		dst = appendField(dst, TagParamName, kv.Key)
		dst = appendField(dst, TagParamValue, kv.Value)
	}
	if in.CheckID != "" {
		dst = appendField(dst, TagCheckID, in.CheckID)
	}
	if in.Stage != "" {
		dst = appendField(dst, TagStage, in.Stage)
	}
	if in.Endpoint != "" {
		dst = appendField(dst, TagEndpoint, in.Endpoint)
	}
	if in.Tool != "" {
		dst = appendField(dst, TagTool, in.Tool)
	}
	if in.MCPServer != "" {
		dst = appendField(dst, TagMCPServer, in.MCPServer)
	}
	if len(in.Body) > 0 {
		dst = appendBytesField(dst, TagBody, in.Body)
	}
	return dst
}

// field reads the field header at off. It returns the tag, the value's bounds and the next offset.
func field(b []byte, off int) (tag byte, start, end int, err error) {
	if len(b)-off < HeaderSize {
		return 0, 0, 0, ErrTruncated
	}
	tag = b[off]
	n := uint64(binary.LittleEndian.Uint32(b[off+1:]))
	start = off + HeaderSize
	if n > uint64(len(b)-start) {
		return tag, 0, 0, ErrTruncated
	}
	return tag, start, start + int(n), nil
}

// DecodeInput decodes b into in, replacing every field of in. It reuses the capacity of in.Metadata and
// in.Params.
//
// The strings and the Body of in never alias b: DecodeInput makes one copy of b and slices every field out of
// it, so b may be reused at once and the fields may be kept. That copy is the only allocation once in.Metadata
// and in.Params have room. Body has no spare capacity, so appending to it copies.
//
// Unknown tags are skipped. A truncated field, a repeated text, model, check id, stage, endpoint, tool, MCP
// server or body, or a metadata key or param name not directly followed by its value (or a value without a key) is an
// error wrapped in a *DecodeError; on error in is left in an unspecified state. DecodeInput never panics.
func DecodeInput(b []byte, in *Input) error {
	md, params := in.Metadata[:0], in.Params[:0]
	*in = Input{}
	defer func() { in.Metadata, in.Params = md, params }()
	if len(b) == 0 {
		return nil
	}
	// The strings are made over parts of the copy that nothing writes; Body is the only view of its part.
	cp := make([]byte, len(b))
	copy(cp, b)
	s := bytesString(cp)
	var seen uint16 // bit per singular tag
	for off := 0; off < len(b); {
		tag, start, end, err := field(b, off)
		if err != nil {
			return &DecodeError{What: "input", Offset: off, Tag: tag, Err: err}
		}
		next := end
		switch tag {
		case TagText, TagModel, TagCheckID, TagStage, TagEndpoint, TagTool, TagMCPServer, TagBody:
			if seen&(1<<tag) != 0 {
				return &DecodeError{What: "input", Offset: off, Tag: tag, Err: ErrDuplicate}
			}
			seen |= 1 << tag
			v := s[start:end]
			switch tag {
			case TagText:
				in.Text = v
			case TagModel:
				in.Model = v
			case TagCheckID:
				in.CheckID = v
			case TagStage:
				in.Stage = v
			case TagEndpoint:
				in.Endpoint = v
			case TagTool:
				in.Tool = v
			case TagMCPServer:
				in.MCPServer = v
			case TagBody:
				if end > start {
					in.Body = cp[start:end:end]
				}
			}
		case TagMetadataKey, TagParamName:
			if end == len(b) {
				return &DecodeError{What: "input", Offset: off, Tag: tag, Err: ErrUnpaired}
			}
			vtag, vstart, vend, err := field(b, end)
			if err != nil {
				return &DecodeError{What: "input", Offset: end, Tag: vtag, Err: err}
			}
			if vtag != tag+1 {
				return &DecodeError{What: "input", Offset: off, Tag: tag, Err: ErrUnpaired}
			}
			kv := KV{Key: s[start:end], Value: s[vstart:vend]}
			if tag == TagMetadataKey {
				md = append(md, kv)
			} else {
				params = append(params, kv)
			}
			next = vend
		case TagMetadataValue, TagParamValue:
			return &DecodeError{What: "input", Offset: off, Tag: tag, Err: ErrUnpaired}
		}
		off = next
	}
	return nil
}

// OutputLen returns the length of out's encoding by AppendOutput.
func OutputLen(out *Output) int {
	n := HeaderSize + 1 // verdict
	if out.Data != nil {
		n += HeaderSize + len(out.Data)
	}
	if out.HasTransformedText {
		n += HeaderSize + len(out.TransformedText)
	}
	if out.Error != "" {
		n += HeaderSize + len(out.Error)
	}
	if out.Match {
		n += HeaderSize + 1
	}
	if out.Body != nil {
		n += HeaderSize + len(out.Body)
	}
	return n
}

// AppendOutput appends the encoding of out to dst and returns the extended slice. The verdict is always written;
// data when non-nil, the transformed text when HasTransformedText, the error when non-empty, the match when
// true and the body when non-nil. It does not allocate when dst has room for OutputLen(out) more bytes.
func AppendOutput(dst []byte, out *Output) []byte {
	dst = slices.Grow(dst, OutputLen(out))
	dst = appendFlag(dst, TagVerdict, out.Verdict)
	if out.Data != nil {
		dst = appendBytesField(dst, TagData, out.Data)
	}
	if out.HasTransformedText {
		dst = appendField(dst, TagTransformedText, out.TransformedText)
	}
	if out.Error != "" {
		dst = appendField(dst, TagError, out.Error)
	}
	if out.Match {
		dst = appendFlag(dst, TagMatch, true)
	}
	if out.Body != nil {
		dst = appendBytesField(dst, TagTransformedBody, out.Body)
	}
	return dst
}

// DecodeOutput decodes b into out, replacing every field of out. An empty b (gateway_call returned 0) decodes to
// NewOutput(): a pass with no data.
//
// out never aliases b, so b may be a view of guest memory. DecodeOutput allocates nothing for an output made of
// a verdict and a match only; otherwise it allocates one buffer that holds Data, TransformedText, Error and Body
// (Data and Body have no spare capacity, so appending to them copies).
//
// Unknown tags are skipped. A truncated field, a repeated field or a verdict or match that is not one byte of 0
// or 1 is an error wrapped in a *DecodeError; on error out is left in an unspecified state. DecodeOutput does
// not check that Data or Body is a JSON object. It never panics.
func DecodeOutput(b []byte, out *Output) error {
	*out = NewOutput()
	// First pass: validate and size the variable fields.
	var seen uint16
	var size int
	var data, text, msg, body [2]int // value bounds of the data, transformed text, error and body fields
	for off := 0; off < len(b); {
		tag, start, end, err := field(b, off)
		if err != nil {
			return &DecodeError{What: "output", Offset: off, Tag: tag, Err: err}
		}
		if tag >= TagVerdict && tag <= TagTransformedBody {
			if seen&(1<<tag) != 0 {
				return &DecodeError{What: "output", Offset: off, Tag: tag, Err: ErrDuplicate}
			}
			seen |= 1 << tag
		}
		switch tag {
		case TagVerdict, TagMatch:
			if end-start != 1 || b[start] > 1 {
				return &DecodeError{What: "output", Offset: off, Tag: tag, Err: ErrBadFlag}
			}
			if tag == TagVerdict {
				out.Verdict = b[start] == 1
			} else {
				out.Match = b[start] == 1
			}
		case TagData:
			data = [2]int{start, end}
			size += end - start
		case TagTransformedText:
			text = [2]int{start, end}
			size += end - start
		case TagError:
			msg = [2]int{start, end}
			size += end - start
		case TagTransformedBody:
			body = [2]int{start, end}
			size += end - start
		}
		off = end
	}
	if seen&(1<<TagData|1<<TagTransformedText|1<<TagError|1<<TagTransformedBody) == 0 {
		return nil
	}
	// Second pass: one allocation holds every variable field. The strings are made over parts of buf that
	// nothing else refers to or writes, so they stay immutable.
	buf := make([]byte, size)
	at := 0
	take := func(r [2]int) []byte {
		n := copy(buf[at:], b[r[0]:r[1]])
		v := buf[at : at+n : at+n]
		at += n
		return v
	}
	if seen&(1<<TagData) != 0 {
		out.Data = take(data)
	}
	if seen&(1<<TagTransformedText) != 0 {
		out.TransformedText, out.HasTransformedText = bytesString(take(text)), true
	}
	if seen&(1<<TagError) != 0 {
		out.Error = bytesString(take(msg))
	}
	if seen&(1<<TagTransformedBody) != 0 {
		out.Body = take(body)
	}
	return nil
}

// bytesString returns a string that shares v's memory; v must never be written afterwards.
func bytesString(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	return unsafe.String(&v[0], len(v))
}
