package anthropicmsg

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/gateway/internal/jsonstr"
)

func TestParseDelta(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
		index    int
		typ      string
		value    string
	}{
		{"text", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`, true, 0, "text_delta", "Hello"},
		{"spaces and order", ` { "delta" : { "text" : "a\"b\\c\/\n\u00e9\ud83d\ude00" , "type" : "text_delta" } , "index" : 12 , "type" : "content_block_delta" } `, true, 12, "text_delta", "a\"b\\c/\né😀"},
		{"json", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San"}}`, true, 1, "input_json_delta", `{"location": "San`},
		{"thinking", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, true, 0, "thinking_delta", "hmm"},
		{"signature", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`, true, 0, "signature_delta", "EqQB"},
		{"empty value", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`, true, 0, "input_json_delta", ""},
		{"lone surrogate", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800x"}}`, true, 0, "text_delta", "\ufffdx"},
		{"other event", `{"type":"content_block_stop","index":0}`, false, 0, "", ""},
		{"citations", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}`, false, 0, "", ""},
		{"field of another type", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","thinking":"x"}}`, false, 0, "", ""},
		{"capitalised key", `{"Type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`, false, 0, "", ""},
		{"duplicate key", `{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"x"}}`, false, 0, "", ""},
		{"float index", `{"type":"content_block_delta","index":1.0,"delta":{"type":"text_delta","text":"x"}}`, false, 0, "", ""},
		{"leading zero", `{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}`, false, 0, "", ""},
		{"trailing garbage", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} x`, false, 0, "", ""},
		{"control character", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\nb\"}}", false, 0, "", ""},
		{"bad escape", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\x"}}`, false, 0, "", ""},
		{"missing index", `{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}`, false, 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := parseDelta([]byte(tc.in), nil)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (d.index != tc.index || d.typ != tc.typ || string(d.value) != tc.value) {
				t.Errorf("got %d %s %q, want %d %s %q", d.index, d.typ, d.value, tc.index, tc.typ, tc.value)
			}
		})
	}
}

// FuzzParseDelta checks the fast path against encoding/json: whatever parseDelta accepts, encoding/json must
// read the same way.
func FuzzParseDelta(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\\u0022: 1"}}`))
	f.Add([]byte(`{"delta":{"thinking":"\ud83d\ude00\ud800","type":"thinking_delta"},"type":"content_block_delta","index":7}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, ok := parseDelta(in, nil)
		if !ok {
			return
		}
		var ev event
		if err := json.Unmarshal(in, &ev); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %s", err, in)
		}
		var want string
		switch ev.Delta.Type {
		case "text_delta":
			want = ev.Delta.Text
		case "input_json_delta":
			want = ev.Delta.PartialJSON
		case "thinking_delta":
			want = ev.Delta.Thinking
		case "signature_delta":
			want = ev.Delta.Signature
		}
		if ev.Type != "content_block_delta" || ev.Index != d.index || ev.Delta.Type != d.typ ||
			decoded(t, jsonstr.AppendString(nil, d.value)) != decoded(t, jsonstr.AppendString(nil, want)) {
			t.Fatalf("fast path %d %s %q, encoding/json %s %d %s %q: %s", d.index, d.typ, d.value, ev.Type, ev.Index, ev.Delta.Type, want, in)
		}
	})
}

// decoded reads back a JSON string jsonstr.AppendString wrote.
func decoded(t *testing.T, b []byte) string {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("jsonstr.AppendString wrote %s: %v", b, err)
	}
	return s
}
