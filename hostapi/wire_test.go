package hostapi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// field builds one raw field for hand-made test buffers.
func rawField(tag byte, v string) []byte {
	b := []byte{tag}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// sameInput compares two Inputs, treating nil and empty slices alike.
func sameInput(a, b *Input) bool {
	norm := func(kv []KV) []KV {
		if len(kv) == 0 {
			return nil
		}
		return kv
	}
	x, y := *a, *b
	x.Metadata, x.Params, y.Metadata, y.Params = norm(x.Metadata), norm(x.Params), norm(y.Metadata), norm(y.Params)
	if len(x.Body) == 0 && len(y.Body) == 0 { // absent and empty decode the same
		x.Body, y.Body = nil, nil
	}
	return reflect.DeepEqual(x, y)
}

func TestInputRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Input
	}{
		{"empty", Input{}},
		{"text only", Input{Text: "hello"}},
		{"all fields", Input{
			Text: "line 1\nline 2 — ünïcödé", Model: "gpt-4o-mini",
			Metadata: []KV{{"user", "u1"}, {"team", ""}, {"", "empty key"}},
			Params:   []KV{{"action", `"redact"`}, {"limit", "10"}, {"words", `["a","b"]`}},
			CheckID:  "pii.detect", Stage: "before", Endpoint: "chat", Tool: "read_file", MCPServer: "files",
		}},
		{"tool call", Input{
			Text: `{"path":"/etc/passwd"}`, Params: []KV{{"argument", `"path"`}, {"deny", `["/etc/"]`}},
			CheckID: "toolguard.args", Stage: "before", Endpoint: "mcp", Tool: "read_file", MCPServer: "files",
		}},
		{"tool without server", Input{Tool: "search"}},
		{"repeated metadata keys kept in order", Input{Metadata: []KV{{"k", "1"}, {"k", "2"}}}},
		{"binary-ish text", Input{Text: "\x00\x01\xff\xfe"}},
		{"large text", Input{Text: strings.Repeat("x", 1<<20)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendInput(nil, &tc.in)
			if len(b) != InputLen(&tc.in) {
				t.Fatalf("len = %d, InputLen = %d", len(b), InputLen(&tc.in))
			}
			var got Input
			if err := DecodeInput(b, &got); err != nil {
				t.Fatalf("DecodeInput: %v", err)
			}
			if !sameInput(&got, &tc.in) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.in)
			}
			// The strings must not alias b.
			for i := range b {
				b[i] = 0xAA
			}
			if !sameInput(&got, &tc.in) {
				t.Fatal("decoded strings alias the buffer")
			}
		})
	}
}

// The tool-call tags are part of ABI v1: a guest decodes them by number, so their encoding is pinned.
func TestToolCallEncoding(t *testing.T) {
	in := Input{Stage: "before", Endpoint: "mcp", Tool: "read_file", MCPServer: "files"}
	want := cat(rawField(8, "before"), rawField(9, "mcp"), rawField(10, "read_file"), rawField(11, "files"))
	if got := AppendInput(nil, &in); !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %q\nwant %q", got, want)
	}
	// A guest that knows neither tag reads the rest of the input as before.
	var got Input
	if err := DecodeInput(cat(rawField(TagTool, "t"), rawField(TagText, "{}"), rawField(TagMCPServer, "s")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != "{}" || got.Tool != "t" || got.MCPServer != "s" {
		t.Fatalf("got %+v", got)
	}
}

func TestAppendInputKeepsPrefix(t *testing.T) {
	in := Input{Text: "t", Model: "m"}
	b := AppendInput([]byte("prefix"), &in)
	if !bytes.HasPrefix(b, []byte("prefix")) {
		t.Fatalf("prefix lost: %q", b)
	}
	var got Input
	if err := DecodeInput(b[len("prefix"):], &got); err != nil || !sameInput(&got, &in) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestDecodeInputReusesAndResets(t *testing.T) {
	got := Input{Text: "stale", Model: "stale", Metadata: make([]KV, 0, 8), Params: []KV{{"old", "1"}}, Stage: "after"}
	md := got.Metadata
	in := Input{Text: "new", Metadata: []KV{{"a", "b"}}}
	if err := DecodeInput(AppendInput(nil, &in), &got); err != nil {
		t.Fatal(err)
	}
	if !sameInput(&got, &in) {
		t.Fatalf("got %+v, want %+v", got, in)
	}
	if &got.Metadata[0] != &md[:1][0] {
		t.Error("Metadata capacity not reused")
	}
}

func TestDecodeInputSkipsUnknownTags(t *testing.T) {
	b := cat(rawField(200, "future"), rawField(TagText, "hi"), rawField(0, ""), rawField(TagStage, "before"), rawField(77, strings.Repeat("z", 300)))
	var got Input
	if err := DecodeInput(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != "hi" || got.Stage != "before" {
		t.Fatalf("got %+v", got)
	}
}

func TestDecodeInputMalformed(t *testing.T) {
	full := rawField(TagText, "hello")
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"header cut at 1", full[:1], ErrTruncated},
		{"header cut at 4", full[:4], ErrTruncated},
		{"value cut", full[:len(full)-1], ErrTruncated},
		{"length 2^32-1", cat([]byte{TagText, 0xff, 0xff, 0xff, 0xff}, []byte("abc")), ErrTruncated},
		{"trailing garbage", cat(full, []byte{1, 2}), ErrTruncated},
		{"unknown tag truncated", []byte{99, 10, 0, 0, 0, 'x'}, ErrTruncated},
		{"duplicate text", cat(full, full), ErrDuplicate},
		{"duplicate endpoint", cat(rawField(TagEndpoint, "chat"), rawField(TagEndpoint, "chat")), ErrDuplicate},
		{"duplicate tool", cat(rawField(TagTool, "a"), rawField(TagTool, "b")), ErrDuplicate},
		{"duplicate mcp server", cat(rawField(TagMCPServer, "s"), full, rawField(TagMCPServer, "s")), ErrDuplicate},
		{"tool truncated", rawField(TagTool, "read_file")[:7], ErrTruncated},
		{"metadata key at end", cat(full, rawField(TagMetadataKey, "k")), ErrUnpaired},
		{"metadata key then text", cat(rawField(TagMetadataKey, "k"), full), ErrUnpaired},
		{"metadata key then param value", cat(rawField(TagMetadataKey, "k"), rawField(TagParamValue, "1")), ErrUnpaired},
		{"metadata value alone", rawField(TagMetadataValue, "v"), ErrUnpaired},
		{"param value alone", rawField(TagParamValue, "1"), ErrUnpaired},
		{"param name then truncated value", cat(rawField(TagParamName, "n"), rawField(TagParamValue, "10")[:6]), ErrTruncated},
		{"param name, unknown tag, value", cat(rawField(TagParamName, "n"), rawField(100, ""), rawField(TagParamValue, "1")), ErrUnpaired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Input
			err := DecodeInput(tc.b, &got)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.What != "input" || !strings.HasPrefix(err.Error(), "hostapi: decode input: ") {
				t.Fatalf("err = %#v, want a *DecodeError", err)
			}
		})
	}
}

func TestOutputRoundTrip(t *testing.T) {
	text := func(s string) Output { o := NewOutput(); o.SetTransformedText(s); return o }
	tests := []struct {
		name string
		out  Output
	}{
		{"pass", NewOutput()},
		{"fail", Output{}},
		{"fail with data", Output{Data: []byte(`{"reason":"pii"}`)}},
		{"empty data", Output{Verdict: true, Data: []byte{}}},
		{"transformed", text("[REDACTED]")},
		{"transformed to empty", text("")},
		{"error", Output{Verdict: true, Error: "boom"}},
		{"match", Output{Verdict: true, Match: true}},
		{"everything", Output{Data: []byte(`{}`), TransformedText: "t", HasTransformedText: true, Error: "e", Match: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendOutput(nil, &tc.out)
			if len(b) != OutputLen(&tc.out) {
				t.Fatalf("len = %d, OutputLen = %d", len(b), OutputLen(&tc.out))
			}
			var got Output
			if err := DecodeOutput(b, &got); err != nil {
				t.Fatalf("DecodeOutput: %v", err)
			}
			if !reflect.DeepEqual(got, tc.out) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.out)
			}
			for i := range b {
				b[i] = 0
			}
			if !reflect.DeepEqual(got, tc.out) {
				t.Fatal("decoded output aliases the buffer")
			}
			if s, ok := got.Transformed(); s != tc.out.TransformedText || ok != tc.out.HasTransformedText {
				t.Fatalf("Transformed() = %q, %v", s, ok)
			}
		})
	}
}

func TestDecodeOutputDefaults(t *testing.T) {
	got := Output{Data: []byte("stale"), Error: "stale", Match: true}
	if err := DecodeOutput(nil, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, NewOutput()) {
		t.Fatalf("empty output = %+v, want a pass", got)
	}
	// Unknown tags only: still the default.
	if err := DecodeOutput(rawField(42, "future"), &got); err != nil || !reflect.DeepEqual(got, NewOutput()) {
		t.Fatalf("got %+v, %v", got, err)
	}
	// Fields in any order.
	b := cat(rawField(TagError, "e"), rawField(TagMatch, "\x01"), rawField(TagVerdict, "\x00"))
	if err := DecodeOutput(b, &got); err != nil || got.Verdict || !got.Match || got.Error != "e" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestDecodeOutputMalformed(t *testing.T) {
	pass := rawField(TagVerdict, "\x01")
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"header cut", pass[:3], ErrTruncated},
		{"value missing", pass[:5], ErrTruncated},
		{"data cut", rawField(TagData, `{"a":1}`)[:8], ErrTruncated},
		{"huge length", []byte{TagData, 0xff, 0xff, 0xff, 0x7f}, ErrTruncated},
		{"trailing byte", cat(pass, []byte{0}), ErrTruncated},
		{"verdict empty", rawField(TagVerdict, ""), ErrBadFlag},
		{"verdict 2", rawField(TagVerdict, "\x02"), ErrBadFlag},
		{"verdict two bytes", rawField(TagVerdict, "\x01\x00"), ErrBadFlag},
		{"match ascii 1", rawField(TagMatch, "1"), ErrBadFlag},
		{"duplicate verdict", cat(pass, pass), ErrDuplicate},
		{"duplicate data", cat(rawField(TagData, "{}"), rawField(TagData, "{}")), ErrDuplicate},
		{"duplicate error", cat(rawField(TagError, "a"), rawField(TagError, "b")), ErrDuplicate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Output
			err := DecodeOutput(tc.b, &got)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.What != "output" {
				t.Fatalf("err = %#v, want a *DecodeError", err)
			}
		})
	}
}

func TestAllocations(t *testing.T) {
	in := benchInput()
	buf := make([]byte, 0, InputLen(&in))
	if n := testing.AllocsPerRun(100, func() { buf = AppendInput(buf[:0], &in) }); n != 0 {
		t.Errorf("AppendInput into a reused buffer: %v allocs, want 0", n)
	}
	tool := Input{Text: `{"path":"/tmp/x"}`, Params: in.Params, CheckID: "toolguard.args", Stage: "before", Endpoint: "mcp", Tool: "read_file", MCPServer: "files"}
	toolBuf := make([]byte, 0, InputLen(&tool))
	if n := testing.AllocsPerRun(100, func() { toolBuf = AppendInput(toolBuf[:0], &tool) }); n != 0 {
		t.Errorf("AppendInput of a tool call into a reused buffer: %v allocs, want 0", n)
	}
	var dec Input
	if n := testing.AllocsPerRun(100, func() { _ = DecodeInput(toolBuf, &dec) }); n != 1 {
		t.Errorf("DecodeInput of a tool call with reused slices: %v allocs, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = DecodeInput(buf, &dec) }); n != 1 {
		t.Errorf("DecodeInput with reused slices: %v allocs, want 1", n)
	}
	pass := AppendOutput(nil, &Output{Verdict: true, Match: true})
	var out Output
	if n := testing.AllocsPerRun(100, func() { _ = DecodeOutput(pass, &out) }); n != 0 {
		t.Errorf("DecodeOutput of a verdict: %v allocs, want 0", n)
	}
	full := AppendOutput(nil, &Output{Data: []byte(`{"reason":"x"}`), TransformedText: "t", HasTransformedText: true, Error: "e"})
	if n := testing.AllocsPerRun(100, func() { _ = DecodeOutput(full, &out) }); n != 1 {
		t.Errorf("DecodeOutput of data, text and error: %v allocs, want 1", n)
	}
	ob := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { ob = AppendOutput(ob[:0], &out) }); n != 0 {
		t.Errorf("AppendOutput into a reused buffer: %v allocs, want 0", n)
	}
}

// The transform tags are part of ABI v1.1: guests decode them by number, so their encoding is pinned.
func TestTransformEncoding(t *testing.T) {
	in := Input{CheckID: "sys.prompt", Body: []byte(`{"model":"m"}`)}
	want := cat(rawField(7, "sys.prompt"), rawField(12, `{"model":"m"}`))
	if got := AppendInput(nil, &in); !bytes.Equal(got, want) {
		t.Fatalf("input encoding\n got %q\nwant %q", got, want)
	}
	out := Output{Verdict: true, Body: []byte(`{}`)}
	if got, want := AppendOutput(nil, &out), cat(rawField(1, "\x01"), rawField(6, "{}")); !bytes.Equal(got, want) {
		t.Fatalf("output encoding\n got %q\nwant %q", got, want)
	}
	if KindTransform != 3 || ExportTransform != "gateway_transform" {
		t.Fatalf("KindTransform %d, ExportTransform %q", KindTransform, ExportTransform)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hé"}]}`)
	in := Input{Text: "t", CheckID: "sys.prompt", Stage: "before", Endpoint: "chat", Body: body}
	b := AppendInput(nil, &in)
	if len(b) != InputLen(&in) {
		t.Fatalf("len = %d, InputLen = %d", len(b), InputLen(&in))
	}
	var got Input
	if err := DecodeInput(b, &got); err != nil {
		t.Fatal(err)
	}
	if !sameInput(&got, &in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
	for i := range b {
		b[i] = 0xAA
	}
	if !bytes.Equal(got.Body, body) || got.Text != "t" {
		t.Fatal("decoded body aliases the buffer")
	}
	// Writing the decoded body leaves the strings decoded with it alone.
	for i := range got.Body {
		got.Body[i] = 'x'
	}
	if got.Text != "t" || got.CheckID != "sys.prompt" || got.Endpoint != "chat" {
		t.Fatalf("writing Body changed the strings: %+v", got)
	}
	if cap(got.Body) != len(got.Body) {
		t.Fatalf("Body has spare capacity %d: an append would write past it", cap(got.Body)-len(got.Body))
	}

	// A body is not sent when empty; a guest that does not know the tag skips it (rule 2).
	if n := InputLen(&Input{Body: []byte{}}); n != 0 {
		t.Fatalf("empty body encodes to %d bytes", n)
	}
	var old Input
	if err := DecodeInput(cat(rawField(TagBody, "{}"), rawField(TagText, "x")), &old); err != nil || old.Text != "x" {
		t.Fatalf("got %+v, %v", old, err)
	}
}

func TestOutputBodyRoundTrip(t *testing.T) {
	for _, out := range []Output{
		{Verdict: true, Body: []byte(`{"model":"m","max_tokens":10}`)},
		{Verdict: true, Body: []byte{}}, // present and empty: the host refuses it, the wire keeps it
		{Data: []byte(`{"a":1}`), Error: "e", Body: []byte(`{}`), TransformedText: "t", HasTransformedText: true},
	} {
		b := AppendOutput(nil, &out)
		if len(b) != OutputLen(&out) {
			t.Fatalf("len = %d, OutputLen = %d", len(b), OutputLen(&out))
		}
		var got Output
		if err := DecodeOutput(b, &got); err != nil {
			t.Fatal(err)
		}
		for i := range b {
			b[i] = 0
		}
		if !reflect.DeepEqual(got, out) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, out)
		}
	}
	var got Output
	if err := DecodeOutput(AppendOutput(nil, &Output{Verdict: true}), &got); err != nil || got.Body != nil {
		t.Fatalf("no body decodes to %q, %v", got.Body, err)
	}
}

func TestBodyDuplicates(t *testing.T) {
	var in Input
	if err := DecodeInput(cat(rawField(TagBody, "{}"), rawField(TagBody, "{}")), &in); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate input body: %v", err)
	}
	var out Output
	if err := DecodeOutput(cat(rawField(TagTransformedBody, "{}"), rawField(TagTransformedBody, "{}")), &out); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate output body: %v", err)
	}
	if err := DecodeOutput(rawField(TagTransformedBody, "{}")[:6], &out); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated output body: %v", err)
	}
}
