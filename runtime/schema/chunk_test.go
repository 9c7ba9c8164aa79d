package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestChunkWriter(t *testing.T) {
	var w ChunkWriter
	if w.Started() {
		t.Fatal("a zero ChunkWriter says it started")
	}
	w.Start("msg_1", 7, "claude <x>")
	w.Start("ignored", 8, "ignored")
	const head = `data: {"id":"msg_1","object":"chat.completion.chunk","created":7,"model":"claude <x>","choices":[{"index":0,"delta":`
	const tail = `,"finish_reason":null}]}` + "\n\n"
	u := &Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7, PromptTokensDetails: &PromptTokensDetails{CachedTokens: 2}}
	for _, tt := range []struct {
		name string
		got  []byte
		want string
	}{
		{"role", w.Role(nil), head + `{"role":"assistant","content":""}` + tail},
		{"content", Content(&w, nil, "a\"<b>"), head + `{"content":"a\"<b>"}` + tail},
		{"content bytes", Content(&w, nil, []byte("é")), head + `{"content":"é"}` + tail},
		{"content json", w.ContentJSON(nil, []byte(`"q\n"`)), head + `{"content":"q\n"}` + tail},
		{"tool start", w.ToolCallStart(nil, 1, "call_1", "get"), head + `{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"get","arguments":""}}]}` + tail},
		{"tool args", ToolCallArgs(&w, nil, 1, `{"a":`), head + `{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\":"}}]}` + tail},
		{"tool args json", w.ToolCallArgsJSON(nil, 0, []byte(`"{}"`)), head + `{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}` + tail},
		{"block", BlockPiece(&w, nil, 2, "thinking", "hm"), head + `{"content_blocks":[{"index":2,"delta":{"thinking":"hm"}}]}` + tail},
		{"block json", w.BlockPieceJSON(nil, 2, "signature", []byte(`"sig"`)), head + `{"content_blocks":[{"index":2,"delta":{"signature":"sig"}}]}` + tail},
		{"redacted", w.RedactedThinking(nil, 3, "opaque"), head + `{"content_blocks":[{"index":3,"delta":{"type":"redacted_thinking","data":"opaque"}}]}` + tail},
		{"finish", w.Finish(nil, FinishStop, nil), head + `{},"finish_reason":"stop"}]}` + "\n\n"},
		{"finish usage", w.Finish(nil, FinishLength, u), head + `{},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}}` + "\n\n"},
		{"usage", w.UsageChunk(nil, u), `data: {"id":"msg_1","object":"chat.completion.chunk","created":7,"model":"claude <x>","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}}` + "\n\n"},
	} {
		if string(tt.got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
		data, ok := strings.CutPrefix(string(tt.got), "data: ")
		if !ok || !strings.HasSuffix(data, "\n\n") || !json.Valid([]byte(data)) {
			t.Errorf("%s: not one server-sent event of valid JSON: %q", tt.name, tt.got)
		}
	}
	// AppendUsage writes what encoding/json writes for the same Usage.
	u.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: 1}
	want, _ := json.Marshal(u)
	if got := AppendUsage(nil, u); string(got) != string(want) {
		t.Errorf("AppendUsage = %s, encoding/json = %s", got, want)
	}
	text := "<b>&"
	got, err := w.Encode([]byte("x"), &Chunk{ID: "c", Object: "chat.completion.chunk", Choices: []ChunkChoice{{Delta: Delta{Content: &text}}}})
	if err != nil || string(got) != `xdata: {"id":"c","object":"chat.completion.chunk","created":0,"model":"","choices":[{"index":0,"delta":{"content":"<b>&"},"logprobs":null,"finish_reason":null}]}`+"\n\n" {
		t.Errorf("Encode = %s, %v", got, err)
	}
}

func BenchmarkChunkWriterContent(b *testing.B) {
	var w ChunkWriter
	w.Start("msg_01XFDUDYJgAACzvnptvVoYEL", 1700000000, "claude-sonnet-4-5")
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = Content(&w, buf[:0], "Hello, world")
	}
}
