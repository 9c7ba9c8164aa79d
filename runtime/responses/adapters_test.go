package responses_test

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/providers/anthropic"
	"github.com/llmgw/gateway/runtime/providers/bedrock"
	"github.com/llmgw/gateway/runtime/providers/google"
	"github.com/llmgw/gateway/runtime/responses"
)

// translatingAdapter is what a translated provider's adapter offers the pipeline.
type translatingAdapter interface {
	providers.Adapter
	providers.ResponseTranslator
	providers.StreamTranslator
}

// translated are the providers without a responses API, each with an answer and a stream that call tools, taken
// from its adapter's own golden files.
var translated = []struct {
	name, model, answer, stream string
	adapter                     translatingAdapter
}{
	{"anthropic", "claude-sonnet-4-5", "../providers/anthropic/testdata/response.anthropic.json",
		"../internal/anthropicmsg/testdata/stream/tools.sse", anthropic.Adapter{}},
	{"gemini", "gemini-2.5-pro", "../providers/internal/gemini/testdata/response/tool_calls.gemini.json",
		"../providers/internal/gemini/testdata/stream/tools.sse", google.Adapter{}},
	{"bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "../providers/bedrock/testdata/chat/response/tool_use.converse.json",
		"../providers/bedrock/testdata/stream/tool.bin", bedrock.New()},
}

// randomIDs are the ids adapters make up (Gemini's tool call ids), replaced for the golden files.
var randomIDs = regexp.MustCompile(`call_[0-9a-f]{24}`)

func normalize(b []byte) []byte { return randomIDs.ReplaceAll(b, []byte("call_random")) }

func target() *providers.Target {
	return &providers.Target{APIKey: "test-key", BaseURL: "http://127.0.0.1:1", Header: func(string) string { return "" }}
}

// TestTranslatedProviders runs a response request with a tool call turn through each translating adapter's
// request translation, and the provider's answer and stream (both calling tools) back through the adapter and
// FromChat / Stream.
func TestTranslatedProviders(t *testing.T) {
	for _, p := range translated {
		t.Run(p.name, func(t *testing.T) {
			req := request(t, "tools")
			req.Model = p.model
			body, err := responses.ToChat(req)
			if err != nil {
				t.Fatal(err)
			}
			call := &providers.Call{Endpoint: providers.ChatCompletions, Body: body}
			hr, err := p.adapter.NewRequest(context.Background(), target(), call)
			if err != nil {
				t.Fatal(err)
			}
			sent, err := io.ReadAll(hr.Body)
			if err != nil {
				t.Fatal(err)
			}
			// The function_call turn and its output reach the provider as its own tool call and result.
			for _, want := range []string{"get_weather", "Paris", "sky", "clear", "Weather of a city"} {
				if !bytes.Contains(sent, []byte(want)) {
					t.Errorf("the provider's request lacks %s: %s", want, sent)
				}
			}
			golden(t, p.name+".request.json", indent(t, sent))

			chat, err := p.adapter.TranslateResponse(target(), call, readFile(t, p.answer))
			if err != nil {
				t.Fatal(err)
			}
			out, err := responses.FromChat(chat, req, testID, testCreated)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, []byte(`"type":"function_call"`)) {
				t.Errorf("no function_call item: %s", out)
			}
			golden(t, p.name+".response.json", indent(t, normalize(out)))

			streamReq := *req
			yes := true
			streamReq.Stream = &yes
			if body, err = responses.ToChat(&streamReq); err != nil {
				t.Fatal(err)
			}
			scall := &providers.Call{Endpoint: providers.ChatCompletions, Body: body, Stream: true}
			if _, err := p.adapter.NewRequest(context.Background(), target(), scall); err != nil {
				t.Fatal(err)
			}
			chatStream := p.adapter.TranslateStream(target(), scall, io.NopCloser(bytes.NewReader(readFile(t, p.stream))))
			events := readAll(t, responses.Stream(chatStream, &streamReq, testID, testCreated))
			parsed := parseEvents(t, events)
			resp := checkEvents(t, parsed)
			if resp["status"] != "completed" {
				t.Errorf("status %v: %s", resp["status"], parsed[len(parsed)-1].Data)
			}
			if !strings.Contains(string(events), "response.function_call_arguments.done") {
				t.Error("no function call in the stream")
			}
			golden(t, p.name+".stream.sse", normalize(events))
		})
	}
}
