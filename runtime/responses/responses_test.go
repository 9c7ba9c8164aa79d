package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/responses"
	"github.com/llmgw/gateway/runtime/schema"
)

func TestToChatGolden(t *testing.T) {
	for _, name := range []string{"basic", "items", "tools"} {
		t.Run(name, func(t *testing.T) {
			body, err := responses.ToChat(request(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := schema.DecodeChat(body); err != nil {
				t.Fatalf("ToChat's body is no chat request: %v", err)
			}
			golden(t, name+".chat.json", indent(t, body))
		})
	}
}

func TestToChatErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"hosted tool", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"web_search_preview"}]}`, "tools[1].type"},
		{"function tool without name", `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name"},
		{"item reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type"},
		{"role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
		{"part type", `{"model":"m","input":[{"role":"user","content":[{"type":"input_video"}]}]}`, "input[0].content[0].type"},
		{"image without source", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "input[0].content[0].image_url"},
		{"file url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`, "input[0].content[0].file_url"},
		{"call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f"}]}`, "input[0].call_id"},
		{"output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{"output number", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":1}]}`, "input[0].output"},
		{"content number", `{"model":"m","input":[{"role":"user","content":1}]}`, "input[0].content"},
		{"text format", `{"model":"m","input":"hi","text":{"format":{"type":"xml"}}}`, "text.format.type"},
		{"json schema name", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema"}}}`, "text.format.name"},
		{"only reasoning", `{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, "input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := schema.DecodeResponseRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			_, err = responses.ToChat(req)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || ge.Param != tc.param {
				t.Fatalf("err = %v, want a 400 naming %s", err, tc.param)
			}
		})
	}
}

// chatAnswers are the chat answers of the adapters' own golden files that FromChat reads.
var chatAnswers = []struct{ name, path string }{
	{"text", "../internal/anthropicmsg/testdata/response/text.openai.json"},
	{"tool_use", "../providers/anthropic/testdata/response.openai.json"},
	{"thinking_length", "../internal/anthropicmsg/testdata/response/thinking.openai.json"},
	{"content_filter", "../providers/internal/gemini/testdata/response/blocked.openai.json"},
}

func TestFromChatGolden(t *testing.T) {
	req := request(t, "tools")
	for _, tc := range chatAnswers {
		t.Run(tc.name, func(t *testing.T) {
			out, err := responses.FromChat(readFile(t, tc.path), req, testID, testCreated)
			if err != nil {
				t.Fatal(err)
			}
			var r oresponses.Response
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("openai-go cannot read the response: %v", err)
			}
			golden(t, "fromchat."+tc.name+".json", indent(t, out))
		})
	}
}

func TestFromChatDefaults(t *testing.T) {
	req, err := schema.DecodeResponseRequest([]byte(`{"model":"m","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := responses.FromChat([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m-2024",
		"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":1}}}`), req, testID, testCreated)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Model, Status, Truncation string
		ToolChoice                string          `json:"tool_choice"`
		ParallelToolCalls         bool            `json:"parallel_tool_calls"`
		Store                     bool            `json:"store"`
		Text                      json.RawMessage `json:"text"`
		OutputText                string          `json:"output_text"`
		Usage                     schema.ResponseUsage
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != "m-2024" || r.Status != "completed" || r.Truncation != "disabled" || r.ToolChoice != "auto" ||
		!r.ParallelToolCalls || !r.Store || string(r.Text) != `{"format":{"type":"text"}}` || r.OutputText != "hello" ||
		r.Usage.InputTokens != 3 || r.Usage.OutputTokens != 2 || r.Usage.TotalTokens != 5 || r.Usage.OutputTokensDetails.ReasoningTokens != 1 {
		t.Fatalf("response %s", out)
	}
	if _, err := responses.FromChat([]byte(`{"choices":[]}`), req, testID, testCreated); err == nil {
		t.Fatal("an answer without choices was accepted")
	}
}

// chatStreams are the chat streams of the adapters' own golden files that Stream reads.
var chatStreams = []struct{ name, path, last string }{
	{"text", "../internal/anthropicmsg/testdata/stream/text.openai.sse", "response.completed"},
	{"tools", "../internal/anthropicmsg/testdata/stream/tools.openai.sse", "response.completed"},
	{"thinking", "../internal/anthropicmsg/testdata/stream/thinking.openai.sse", "response.incomplete"},
	{"gemini_tools", "../providers/internal/gemini/testdata/stream/tools.openai.sse", "response.completed"},
}

func TestStreamGolden(t *testing.T) {
	req := request(t, "tools")
	for _, tc := range chatStreams {
		t.Run(tc.name, func(t *testing.T) {
			out := readAll(t, responses.Stream(io.NopCloser(strings.NewReader(string(readFile(t, tc.path)))), req, testID, testCreated))
			events := parseEvents(t, out)
			checkEvents(t, events)
			if last := events[len(events)-1].Name; last != tc.last {
				t.Errorf("last event %s, want %s", last, tc.last)
			}
			final, ok := responses.FinalResponse(events[len(events)-1].Data)
			if !ok {
				t.Fatal("FinalResponse found no response")
			}
			var r oresponses.Response
			if err := json.Unmarshal(final, &r); err != nil {
				t.Fatal(err)
			}
			golden(t, "stream."+tc.name+".sse", out)
		})
	}
}

func TestStreamFailures(t *testing.T) {
	req := request(t, "tools")
	const first = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"
	tests := []struct {
		name string
		chat io.Reader
		msg  string
	}{
		{"read error", io.MultiReader(strings.NewReader(first), errReader{}), "connection reset"},
		{"early end", strings.NewReader(first), "ended before"},
		{"error chunk", strings.NewReader(first + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"), "overloaded"},
		{"not json", strings.NewReader(first + "data: {nope\n\n"), "not JSON"},
		{"too large", strings.NewReader(first + "data: " + strings.Repeat("x", 9<<20) + "\n\n"), "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events := parseEvents(t, readAll(t, responses.Stream(io.NopCloser(tc.chat), req, testID, testCreated)))
			resp := checkEvents(t, events)
			if last := events[len(events)-1].Name; last != "response.failed" {
				t.Fatalf("last event %s", last)
			}
			e, _ := resp["error"].(map[string]any)
			if resp["status"] != "failed" || e["code"] != "server_error" || !strings.Contains(e["message"].(string), tc.msg) {
				t.Fatalf("response %v", resp)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// TestStreamWritesAsItReads checks that each event is written once the chunk that makes it is read: with a
// chat stream that blocks after its first chunk, the first delta can still be read.
func TestStreamWritesAsItReads(t *testing.T) {
	pr, pw := io.Pipe()
	s := responses.Stream(pr, request(t, "tools"), testID, testCreated)
	defer s.Close()
	go func() {
		_, _ = io.WriteString(pw, `data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`+"\n\n")
	}()
	var got []byte
	buf := make([]byte, 512)
	for !strings.Contains(string(got), "response.output_text.delta") {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	_ = pw.CloseWithError(errors.New("done"))
}

func TestStreamClosesChat(t *testing.T) {
	c := &closer{Reader: strings.NewReader("")}
	_ = responses.Stream(c, request(t, "tools"), testID, testCreated).Close()
	if !c.closed {
		t.Fatal("chat not closed")
	}
}

type closer struct {
	io.Reader
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

// TestStreamOpenAISDK serves Stream's events to the official openai-go client and reads them back typed.
func TestStreamOpenAISDK(t *testing.T) {
	for _, tc := range chatStreams {
		t.Run(tc.name, func(t *testing.T) {
			chat := readFile(t, tc.path)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				req, err := schema.DecodeResponseRequest(body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.Copy(w, responses.Stream(io.NopCloser(strings.NewReader(string(chat))), req, responses.NewID(), testCreated))
			}))
			defer srv.Close()
			client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
			stream := client.Responses.NewStreaming(context.Background(), oresponses.ResponseNewParams{
				Model: "claude-sonnet-4-5", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
			})
			var deltas, args strings.Builder
			var final *oresponses.Response
			var seq int64
			for stream.Next() {
				ev := stream.Current()
				if ev.SequenceNumber != seq {
					t.Errorf("%s: sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
				}
				seq++
				switch ev.Type {
				case "response.output_text.delta":
					deltas.WriteString(ev.AsResponseOutputTextDelta().Delta)
				case "response.function_call_arguments.delta":
					args.WriteString(ev.AsResponseFunctionCallArgumentsDelta().Delta)
				case "response.completed", "response.incomplete":
					r := ev.Response
					final = &r
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if final == nil {
				t.Fatal("no final response")
			}
			if final.OutputText() != deltas.String() {
				t.Errorf("OutputText %q, deltas %q", final.OutputText(), deltas.String())
			}
			var finalArgs strings.Builder
			for _, item := range final.Output {
				if item.Type == "function_call" {
					finalArgs.WriteString(item.AsFunctionCall().Arguments)
				}
			}
			if finalArgs.String() != args.String() {
				t.Errorf("arguments %q, deltas %q", finalArgs.String(), args.String())
			}
		})
	}
}

func TestNewIDAndFinalResponse(t *testing.T) {
	a, b := responses.NewID(), responses.NewID()
	if a == b || !strings.HasPrefix(a, "resp_") || len(a) != len("resp_")+48 {
		t.Fatalf("ids %s %s", a, b)
	}
	if _, ok := responses.FinalResponse([]byte(`{"type":"response.output_text.delta","delta":"x"}`)); ok {
		t.Fatal("a delta is no final response")
	}
	if r, ok := responses.FinalResponse([]byte(`{"type":"response.failed","response":{"id":"resp_1"}}`)); !ok || string(r) != `{"id":"resp_1"}` {
		t.Fatalf("FinalResponse = %s, %v", r, ok)
	}
}

// A stored response (a cache hit) replays as a stream with the same invariants as a translated one, ending
// with the stored object itself; the SDK's types read it.
func TestReplay(t *testing.T) {
	req := request(t, "tools")
	for _, tc := range chatStreams {
		t.Run(tc.name, func(t *testing.T) {
			out := readAll(t, responses.Stream(io.NopCloser(strings.NewReader(string(readFile(t, tc.path)))), req, testID, testCreated))
			events := parseEvents(t, out)
			stored, ok := responses.FinalResponse(events[len(events)-1].Data)
			if !ok {
				t.Fatal("no final response")
			}
			r, err := responses.Replay(stored)
			if err != nil {
				t.Fatal(err)
			}
			replayed := parseEvents(t, readAll(t, r))
			checkEvents(t, replayed)
			last := replayed[len(replayed)-1]
			if last.Name != tc.last || !bytes.Equal(last.Head.Response, stored) {
				t.Errorf("replay ends with %s %s; want %s with the stored object", last.Name, last.Head.Response, tc.last)
			}
			var added, done int
			for _, ev := range replayed {
				switch ev.Name {
				case "response.output_item.added":
					added++
				case "response.output_item.done":
					done++
				}
			}
			var resp oresponses.Response
			if err := json.Unmarshal(stored, &resp); err != nil || added != len(resp.Output) || done != len(resp.Output) {
				t.Errorf("%d items added, %d done, %d stored (%v)", added, done, len(resp.Output), err)
			}
		})
	}
	if _, err := responses.Replay([]byte(`{"object":"chat.completion","id":"x"}`)); err == nil {
		t.Error("a chat completion replayed as a response")
	}
}
