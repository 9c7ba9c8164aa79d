package bedrock

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

func TestTranslateChatRequestGolden(t *testing.T) {
	tests := []struct {
		name  string
		model string
	}{
		{"basic", "anthropic.claude-3-5-sonnet-20240620-v1:0"},
		{"multimodal", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"},
		{"tools", "anthropic.claude-3-5-sonnet-20240620-v1:0"},
		{"named_tool_schema", "amazon.nova-pro-v1:0"},
		{"tool_choice_none", "mistral.mistral-large-2407-v1:0"},
		{"tool_choice_none_history", "anthropic.claude-3-haiku-20240307-v1:0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, model, err := translateChatBody(readTestdata(t, "chat", "request", tc.name+".openai.json"))
			if err != nil {
				t.Fatal(err)
			}
			if string(model) != tc.model {
				t.Errorf("model = %q, want %q", model, tc.model)
			}
			jsonEqual(t, body, readTestdata(t, "chat", "request", tc.name+".converse.json"))
		})
	}
}

func TestTranslateChatRequestErrors(t *testing.T) {
	const img = `data:image/png;base64,iVBORw0KGgo=`
	tests := []struct {
		name  string
		body  string
		param string
	}{
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no messages", `{"model":"m","messages":[]}`, "messages"},
		{"only system", `{"model":"m","messages":[{"role":"system","content":"x"}]}`, "messages"},
		{"unknown role", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"function","content":"x"}]}`, "messages[1].role"},
		{"remote image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`,
			"messages[0].content[0].image_url.url"},
		{"image without url", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}`,
			"messages[0].content[1].image_url.url"},
		{"image type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,AAAA"}}]}]}`,
			"messages[0].content[0].image_url.url"},
		{"image not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,rawbytes"}}]}]}`,
			"messages[0].content[0].image_url.url"},
		{"image bad base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,a$b="}}]}]}`,
			"messages[0].content[0].image_url.url"},
		{"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "messages[0].content[0].type"},
		{"image in system", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"` + img + `"}}]},{"role":"user","content":"x"}]}`,
			"messages[0].content[0].type"},
		{"content object", `{"model":"m","messages":[{"role":"user","content":{"text":"x"}}]}`, "messages[0].content"},
		{"tool call without id", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
			"messages[1].tool_calls[0].id"},
		{"tool call without name", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"arguments":"{}"}}]}]}`,
			"messages[1].tool_calls[0].function.name"},
		{"tool call bad arguments", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{city: Paris"}}]}]}`,
			"messages[1].tool_calls[0].function.arguments"},
		{"tool message without id", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"tool","content":"r"}]}`, "messages[1].tool_call_id"},
		{"temperature type", `{"model":"m","messages":[{"role":"user","content":"a"}],"temperature":"hot"}`, "temperature"},
		{"max_tokens type", `{"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":[1]}`, "max_tokens"},
		{"stop type", `{"model":"m","messages":[{"role":"user","content":"a"}],"stop":5}`, "stop"},
		{"stop array type", `{"model":"m","messages":[{"role":"user","content":"a"}],"stop":["a",1]}`, "stop"},
		{"tool choice word", `{"model":"m","messages":[{"role":"user","content":"a"}],"tool_choice":"any"}`, "tool_choice"},
		{"tool choice object", `{"model":"m","messages":[{"role":"user","content":"a"}],"tool_choice":{"type":"function"}}`, "tool_choice"},
		{"tool type", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"retrieval"}]}`, "tools[0].type"},
		{"tool name", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{"tool parameters", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`,
			"tools[0].function.parameters"},
		{"schema missing", `{"model":"m","messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`,
			"response_format.json_schema.schema"},
		{"messages type", `{"model":"m","messages":{"role":"user"}}`, "messages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := translateChatBody([]byte(tc.body))
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Status != 400 || ge.Param != tc.param {
				t.Errorf("got %d param %q (%s), want 400 param %q", ge.Status, ge.Param, ge.Message, tc.param)
			}
			if ge.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestTranslateChatRequestNotJSON(t *testing.T) {
	_, _, err := translateChatBody([]byte(`{"model":`))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != 400 || ge.Code != gwerr.CodeInvalidJSON {
		t.Fatalf("err = %v", err)
	}
}

func TestTranslateResponseGolden(t *testing.T) {
	a := testAdapter()
	for _, name := range []string{"text", "tool_use", "tool_only", "reasoning", "guardrail"} {
		for _, strict := range []bool{false, true} {
			want := name + ".openai.json"
			if strict {
				want = name + ".strict.json"
			}
			t.Run(want, func(t *testing.T) {
				c := &providers.Call{Endpoint: providers.ChatCompletions, Strict: strict,
					Body: []byte(`{"model":"` + testModel + `","messages":[{"role":"user","content":"hi"}]}`)}
				got, err := a.TranslateResponse(&providers.Target{Provider: ID}, c, readTestdata(t, "chat", "response", name+".converse.json"))
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, got, readTestdata(t, "chat", "response", want))
				if strict && strings.Contains(string(got), "content_blocks") {
					t.Error("strict answer carries content_blocks")
				}
			})
		}
	}
}

func TestTranslateResponseFinishReasons(t *testing.T) {
	tests := []struct{ stop, want string }{
		{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"max_tokens", "length"}, {"tool_use", "tool_calls"},
		{"guardrail_intervened", "content_filter"}, {"content_filtered", "content_filter"},
		{"model_context_window_exceeded", "length"}, {"malformed_model_output", "stop"}, {"", "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.stop, func(t *testing.T) {
			if got := finishReason(tc.stop); got != tc.want {
				t.Errorf("finishReason(%q) = %q, want %q", tc.stop, got, tc.want)
			}
		})
	}
}

func TestTranslateResponseBadBodies(t *testing.T) {
	a := testAdapter()
	c := &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"m"}`)}
	for _, body := range []string{`{}`, `{"output":{}}`, `[1]`, `{"output":{"message":{"content":"x"}}}`} {
		t.Run(body, func(t *testing.T) {
			if _, err := a.TranslateResponse(&providers.Target{}, c, []byte(body)); err == nil {
				t.Error("no error")
			}
		})
	}
}
