package hostapi

import (
	"strings"
	"testing"
)

// benchInput is a typical check input with 1 KB of text.
func benchInput() Input {
	return Input{
		Text:     strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1024],
		Model:    "gpt-4o-mini",
		Metadata: []KV{{"user", "u-123"}, {"team", "search"}},
		Params:   []KV{{"action", `"redact"`}, {"words", `["alpha","beta"]`}},
		CheckID:  "pii.detect",
		Stage:    "before",
		Endpoint: "chat",
	}
}

func BenchmarkAppendInput1KB(b *testing.B) {
	in := benchInput()
	buf := make([]byte, 0, InputLen(&in))
	b.ReportAllocs()
	b.SetBytes(int64(InputLen(&in)))
	for b.Loop() {
		buf = AppendInput(buf[:0], &in)
	}
}

func BenchmarkDecodeInput1KB(b *testing.B) {
	in := benchInput()
	buf := AppendInput(nil, &in)
	var got Input
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if err := DecodeInput(buf, &got); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendOutput(b *testing.B) {
	out := Output{Data: []byte(`{"reason":"PII detected","found":{"email":1}}`), TransformedText: strings.Repeat("x", 1024), HasTransformedText: true}
	buf := make([]byte, 0, OutputLen(&out))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendOutput(buf[:0], &out)
	}
}

func BenchmarkDecodeOutputVerdict(b *testing.B) {
	buf := AppendOutput(nil, &Output{Verdict: false})
	var got Output
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeOutput(buf, &got); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeOutput1KB(b *testing.B) {
	out := Output{Verdict: true, Data: []byte(`{"redacted":{"email":1}}`), TransformedText: strings.Repeat("x", 1024), HasTransformedText: true}
	buf := AppendOutput(nil, &out)
	var got Output
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if err := DecodeOutput(buf, &got); err != nil {
			b.Fatal(err)
		}
	}
}
