package hostapi

import (
	"bytes"
	"reflect"
	"testing"
)

// The seed corpora are in testdata/fuzz/FuzzDecodeInput and testdata/fuzz/FuzzDecodeOutput; the seeds added
// here cover the same shapes from code.

func FuzzDecodeInput(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendInput(nil, &Input{Text: "hi", Metadata: []KV{{"k", "v"}}, Params: []KV{{"n", "1"}}, Stage: "before"}))
	f.Add([]byte{TagMetadataKey, 1, 0, 0, 0, 'k'})
	f.Add(AppendInput(nil, &Input{Text: `{"path":"/tmp/x"}`, Stage: "before", Endpoint: "mcp", Tool: "read_file", MCPServer: "files"}))
	f.Add([]byte{TagTool, 1, 0, 0, 0, 't', TagTool, 0, 0, 0, 0})
	f.Add(AppendInput(nil, &Input{CheckID: "sys.prompt", Stage: "before", Endpoint: "chat", Body: []byte(`{"model":"m"}`)}))
	f.Add([]byte{TagBody, 2, 0, 0, 0, '{', '}', TagBody, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var in Input
		if err := DecodeInput(b, &in); err != nil {
			return
		}
		// What decodes re-encodes canonically and decodes to the same Input.
		enc := AppendInput(nil, &in)
		var again Input
		if err := DecodeInput(enc, &again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !sameInput(&in, &again) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, in)
		}
		if !bytes.Equal(AppendInput(nil, &again), enc) {
			t.Fatal("encoding is not canonical")
		}
	})
}

func FuzzDecodeOutput(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendOutput(nil, &Output{Data: []byte(`{"a":1}`), Error: "e", Match: true}))
	f.Add([]byte{TagVerdict, 1, 0, 0, 0, 2})
	f.Add(AppendOutput(nil, &Output{Verdict: true, Body: []byte(`{"model":"m"}`)}))
	f.Add([]byte{TagTransformedBody, 0, 0, 0, 0, TagTransformedBody, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var out Output
		if err := DecodeOutput(b, &out); err != nil {
			return
		}
		enc := AppendOutput(nil, &out)
		var again Output
		if err := DecodeOutput(enc, &again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(out, again) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, out)
		}
	})
}

// FuzzInputRoundTrip checks that any Input encodes and decodes back to itself.
func FuzzInputRoundTrip(f *testing.F) {
	f.Add("text", "model", "key", "value", `"param"`, "check.id", "tool", "server")
	f.Add("", "", "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, text, model, key, value, param, check, tool, server string) {
		in := Input{Text: text, Model: model, Metadata: []KV{{key, value}}, Params: []KV{{key, param}, {value, param}}, CheckID: check,
			Tool: tool, MCPServer: server}
		var got Input
		if err := DecodeInput(AppendInput(nil, &in), &got); err != nil {
			t.Fatal(err)
		}
		if !sameInput(&in, &got) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
		}
	})
}
