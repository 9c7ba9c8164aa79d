package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

func replayAll(t testing.TB, answer []byte) []byte {
	t.Helper()
	rc, err := Replay(answer)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplayRecordRoundTrip: an answer assembled from a stream, replayed and recorded again, is the same answer.
func TestReplayRecordRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/streams/*.json")
	if len(files) == 0 {
		t.Fatal("no golden answers")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			json.Compact(&want, raw)
			stream := replayAll(t, raw) // indented on purpose: replay compacts
			_, answers, err := record(t, stream, 0)
			if err != nil || len(answers) != 1 {
				t.Fatalf("record: %v, %d answers\n%s", err, len(answers), stream)
			}
			if !bytes.Equal(answers[0], want.Bytes()) {
				t.Fatalf("round trip\n%s\nwant\n%s\nstream\n%s", answers[0], want.Bytes(), stream)
			}
		})
	}
}

// openaiAnswer is a non-streamed answer as OpenAI sends it, indented, with fields Replay leaves out.
const openaiAnswer = `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "The image shows a wooden boardwalk\nextending through a lush green marshland.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    },
    {
      "index": 1,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Boston\"}"}},
          {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
        ],
        "refusal": null
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}`

func TestReplayFormat(t *testing.T) {
	stream := string(replayAll(t, []byte(openaiAnswer)))
	if !strings.HasSuffix(stream, "data: [DONE]\n\n") {
		t.Fatalf("stream does not end with [DONE]:\n%s", stream)
	}
	events := strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n\n")
	type chunk struct {
		ID                string `json:"id"`
		Object            string `json:"object"`
		Created           int64  `json:"created"`
		Model             string `json:"model"`
		SystemFingerprint string `json:"system_fingerprint"`
		Choices           []struct {
			Index        int                        `json:"index"`
			Delta        map[string]json.RawMessage `json:"delta"`
			Logprobs     json.RawMessage            `json:"logprobs"`
			FinishReason *string                    `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	var finished [2]bool
	var usage int
	for i, ev := range events[:len(events)-1] {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("event %d is not one data line: %q", i, ev)
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if c.ID != "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG" || c.Object != "chat.completion.chunk" || c.Created != 1741570283 ||
			c.Model != "gpt-4o-2024-08-06" || c.SystemFingerprint != "fp_fc9f1d7035" {
			t.Fatalf("event %d has the wrong envelope: %s", i, data)
		}
		if len(c.Choices) == 0 {
			if i != len(events)-2 || len(c.Usage) == 0 {
				t.Fatalf("event %d has no choice but is not the final usage chunk: %s", i, data)
			}
			usage++
			continue
		}
		ch := c.Choices[0]
		if string(ch.Logprobs) != "null" {
			t.Fatalf("event %d: logprobs %s", i, ch.Logprobs)
		}
		if finished[ch.Index] {
			t.Fatalf("event %d: choice %d goes on after its finish_reason", i, ch.Index)
		}
		if ch.FinishReason != nil {
			finished[ch.Index] = true
		}
		if i == 0 && (string(ch.Delta["role"]) != `"assistant"` || string(ch.Delta["content"]) != `""`) {
			t.Fatalf("first delta %v, want role assistant and content \"\"", ch.Delta)
		}
	}
	if !finished[0] || !finished[1] || usage != 1 {
		t.Fatalf("finished %v, usage chunks %d", finished, usage)
	}
	// Without usage, no usage chunk.
	noUsage := strings.Replace(openaiAnswer, `"usage"`, `"x_usage"`, 1)
	if s := string(replayAll(t, []byte(noUsage))); strings.Contains(s, `"usage"`) || strings.Contains(s, `"choices":[]`) {
		t.Fatalf("a usage chunk without usage:\n%s", s)
	}
}

// TestReplaySDK reads a replayed stream with the OpenAI Go SDK's stream decoder and accumulator.
func TestReplaySDK(t *testing.T) {
	rc, err := Replay([]byte(openaiAnswer))
	if err != nil {
		t.Fatal(err)
	}
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: rc}
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("the accumulator refused chunk %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 2 {
		t.Fatalf("%d choices", len(acc.Choices))
	}
	c0, c1 := acc.Choices[0], acc.Choices[1]
	if c0.Message.Content != "The image shows a wooden boardwalk\nextending through a lush green marshland." || c0.FinishReason != "stop" {
		t.Fatalf("choice 0: %q, %q", c0.Message.Content, c0.FinishReason)
	}
	if len(c1.Message.ToolCalls) != 2 || c1.Message.ToolCalls[0].Function.Name != "get_weather" ||
		c1.Message.ToolCalls[0].Function.Arguments != `{"location": "Boston"}` || c1.Message.ToolCalls[1].ID != "call_2" || c1.FinishReason != "tool_calls" {
		t.Fatalf("choice 1: %+v", c1.Message.ToolCalls)
	}
	if acc.Usage.TotalTokens != 1163 || acc.Usage.PromptTokens != 1117 {
		t.Fatalf("usage %+v", acc.Usage)
	}
}

// TestReplayProviderRoundTrip: a provider's non-streamed answer, replayed and recorded, keeps its content,
// role, tool calls, finish reasons and usage.
func TestReplayProviderRoundTrip(t *testing.T) {
	_, answers, err := record(t, replayAll(t, []byte(openaiAnswer)), 0)
	if err != nil || len(answers) != 1 {
		t.Fatalf("%v, %d answers", err, len(answers))
	}
	type msg struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []struct {
			ID, Type string
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	type answer struct {
		ID      string
		Model   string
		Created int64
		Choices []struct {
			Index        int
			Message      msg
			FinishReason string `json:"finish_reason"`
		}
		Usage             json.RawMessage
		ServiceTier       string `json:"service_tier"`
		SystemFingerprint string `json:"system_fingerprint"`
	}
	var want, got answer
	if err := json.Unmarshal([]byte(openaiAnswer), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(answers[0], &got); err != nil {
		t.Fatal(err)
	}
	var wu, gu bytes.Buffer
	json.Compact(&wu, want.Usage)
	json.Compact(&gu, got.Usage)
	want.Usage, got.Usage = wu.Bytes(), gu.Bytes()
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Fatalf("round trip\n%s\nwant\n%s", gj, wj)
	}
}

func TestReplayRefuses(t *testing.T) {
	for _, a := range []string{
		``, `nope`, `[]`,
		`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"m"}`,
		`{"error":{"message":"x","type":"server_error"}}`,
		`{"object":"chat.completion","choices":[]}`,
		`{"object":"chat.completion","choices":[{"index":0,"finish_reason":"stop"}]}`,
		`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"x"}]},"finish_reason":"stop"}]}`,
	} {
		if _, err := Replay([]byte(a)); err == nil {
			t.Errorf("Replay(%s) succeeded", a)
		}
	}
	if _, err := Replay([]byte(`{"object":"list","data":[]}`)); !errors.Is(err, ErrNotReplayable) {
		t.Errorf("Replay of a list: %v, want ErrNotReplayable", err)
	}
}

func TestReplayText(t *testing.T) {
	answer := `{"id":"cmpl-1","object":"text_completion","created":5,"model":"davinci-002","choices":[{"text":"Hello\nworld","index":0,"logprobs":null,"finish_reason":"length"}]}`
	stream := string(replayAll(t, []byte(answer)))
	want := `data: {"id":"cmpl-1","object":"text_completion","created":5,"model":"davinci-002","choices":[{"index":0,"text":"Hello\nworld","logprobs":null,"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"cmpl-1","object":"text_completion","created":5,"model":"davinci-002","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	if stream != want {
		t.Fatalf("stream\n%s\nwant\n%s", stream, want)
	}
}

// FuzzReplay replays arbitrary answers: no panic, and what it writes is SSE events of one line of JSON each,
// ending with [DONE], that the recorder reads back to the same content.
func FuzzReplay(f *testing.F) {
	files, _ := filepath.Glob("testdata/streams/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Add([]byte(openaiAnswer))
	f.Add([]byte(`{"choices":[{"text":"x","finish_reason":"stop"}]}`))
	f.Add([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"a\u0000\"","x":"y"},"finish_reason":"stop","index":3}],"usage":{ "a" : [ 1 , 2 ] }}`))
	f.Fuzz(func(t *testing.T, answer []byte) {
		rc, err := Replay(answer)
		if err != nil {
			return
		}
		out, _ := io.ReadAll(rc)
		events := strings.Split(string(out), "\n\n")
		if events[len(events)-1] != "" || events[len(events)-2] != "data: [DONE]" {
			t.Fatalf("stream does not end with [DONE]: %q", out)
		}
		for _, ev := range events[:len(events)-2] {
			data, ok := strings.CutPrefix(ev, "data: ")
			if !ok || strings.ContainsAny(data, "\r\n") || !json.Valid([]byte(data)) {
				t.Fatalf("bad event %q", ev)
			}
		}
		_, answers, err := record(t, out, 0)
		if err != nil || len(answers) > 1 {
			t.Fatalf("record: %v, %d answers", err, len(answers))
		}
	})
}

// bench1KAnswer is a chat.completion of about 1 KB.
var bench1KAnswer = []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10) +
	`","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":117,"completion_tokens":146,"total_tokens":263,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
	`"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}`)

var sinkN int64

func BenchmarkReplay(b *testing.B) {
	if len(bench1KAnswer) < 900 || len(bench1KAnswer) > 1200 {
		b.Fatalf("answer is %d bytes, want about 1 KB", len(bench1KAnswer))
	}
	b.SetBytes(int64(len(bench1KAnswer)))
	b.ReportAllocs()
	for b.Loop() {
		rc, err := Replay(bench1KAnswer)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, rc)
		sinkN += n
	}
}

// BenchmarkRecorder records a replayed 1 KB answer: the cost a cached stream adds per answer.
func BenchmarkRecorder(b *testing.B) {
	rc, err := Replay(bench1KAnswer)
	if err != nil {
		b.Fatal(err)
	}
	stream, _ := io.ReadAll(rc)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	buf := make([]byte, 32<<10)
	for b.Loop() {
		calls := 0
		rec := NewRecorder(io.NopCloser(bytes.NewReader(stream)), func([]byte) { calls++ })
		for {
			if _, err := rec.Read(buf); err != nil {
				break
			}
		}
		if calls != 1 {
			b.Fatal("no answer")
		}
	}
}
