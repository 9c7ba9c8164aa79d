package anthropicmsg

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func TestRequestGolden(t *testing.T) {
	tests := []struct {
		name      string
		opts      RequestOptions
		wantModel string
	}{
		{"basic", RequestOptions{}, "claude-sonnet-4-5-20250929"},
		{"multimodal", RequestOptions{}, "claude-opus-4-1"},
		{"tools", RequestOptions{}, "claude-sonnet-4-5"},
		{"thinking", RequestOptions{}, "claude-3-7-sonnet-20250219"},
		{"vertex", RequestOptions{AnthropicVersion: "vertex-2023-10-16", OmitModel: true}, "claude-sonnet-4@20250514"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", "request", tc.name+".openai.json"))
			want := readFile(t, filepath.Join("testdata", "request", tc.name+".anthropic.json"))
			got, model, err := requestOf(in, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if model != tc.wantModel {
				t.Errorf("model = %q, want %q", model, tc.wantModel)
			}
			jsonEqual(t, got, want)
		})
	}
}

func TestRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, param string
		opts              RequestOptions
	}{
		{"not JSON", `{"model":`, "", RequestOptions{}}, // schema's decoding: invalid_json, naming no field
		{"messages not an array", `{"model":"m","messages":"hi"}`, "messages", RequestOptions{}},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model", RequestOptions{}},
		{"no messages", `{"model":"m","messages":[]}`, "messages", RequestOptions{}},
		{"only system", `{"model":"m","messages":[{"role":"system","content":"be nice"}]}`, "messages", RequestOptions{}},
		{"unknown role", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}`, "messages[1].role", RequestOptions{}},
		{"missing role", `{"model":"m","messages":[{"content":"b"}]}`, "messages[0].role", RequestOptions{}},
		{"role not a string", `{"model":"m","messages":[{"role":1,"content":"b"}]}`, "messages[0].role", RequestOptions{}},
		{"content a number", `{"model":"m","messages":[{"role":"user","content":1}]}`, "messages[0].content", RequestOptions{}},
		{"unsupported part", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"input_audio","input_audio":{}}]}]}`, "messages[2].content[1].type", RequestOptions{}},
		{"part without type", `{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type", RequestOptions{}},
		{"text part without text", `{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text", RequestOptions{}},
		{"system image", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},{"role":"user","content":"a"}]}`, "messages[0].content[0].type", RequestOptions{}},
		{"image ftp", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url", RequestOptions{}},
		{"image data not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url", RequestOptions{}},
		{"image without url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "messages[0].content[0].image_url", RequestOptions{}},
		{"image in assistant", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, "messages[0].content[0].type", RequestOptions{}},
		{"thinking in user", `{"model":"m","messages":[{"role":"user","content":[{"type":"thinking","thinking":"x"}]}]}`, "messages[0].content[0].type", RequestOptions{}},
		{"bad arguments", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments", RequestOptions{}},
		{"broken arguments", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}]}`, "messages[0].tool_calls[0].function.arguments", RequestOptions{}},
		{"tool call without id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].id", RequestOptions{}},
		{"tool call without name", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].function.name", RequestOptions{}},
		{"tool message without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", RequestOptions{}},
		{"n 2", `{"model":"m","n":2,"messages":[{"role":"user","content":"a"}]}`, "n", RequestOptions{}},
		{"max_tokens 0", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"a"}]}`, "max_tokens", RequestOptions{}},
		{"max_completion_tokens negative", `{"model":"m","max_completion_tokens":-1,"messages":[{"role":"user","content":"a"}]}`, "max_completion_tokens", RequestOptions{}},
		{"max_tokens string", `{"model":"m","max_tokens":"10","messages":[{"role":"user","content":"a"}]}`, "max_tokens", RequestOptions{}},
		{"stop number", `{"model":"m","stop":3,"messages":[{"role":"user","content":"a"}]}`, "stop", RequestOptions{}},
		{"tool not function", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"web_search"}]}`, "tools[1].type", RequestOptions{}},
		{"tool without name", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name", RequestOptions{}},
		{"tool parameters not object", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, "tools[0].function.parameters", RequestOptions{}},
		{"tool_choice unknown", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"always"}`, "tool_choice", RequestOptions{}},
		{"tool_choice object without name", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function"}}`, "tool_choice", RequestOptions{}},
		{"tool_choice required without tools", `{"model":"m","messages":[{"role":"user","content":"a"}],"tool_choice":"required"}`, "tool_choice", RequestOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, _, err := requestOf([]byte(tc.body), tc.opts)
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v (body %s), want a *gwerr.Error", err, body)
			}
			wantCode := gwerr.CodeInvalidRequest
			if tc.param == "" {
				wantCode = gwerr.CodeInvalidJSON
			}
			if ge.Status != http.StatusBadRequest || ge.Code != wantCode {
				t.Errorf("status %d code %s, want 400 %s", ge.Status, ge.Code, wantCode)
			}
			if ge.Param != tc.param {
				t.Errorf("param = %q, want %q (message %q)", ge.Param, tc.param, ge.Message)
			}
			if ge.Message == "" || strings.Contains(ge.Message, "%!") {
				t.Errorf("message = %q", ge.Message)
			}
		})
	}
}

func TestRequestEdges(t *testing.T) {
	tests := []struct {
		name, body, want string
		opts             RequestOptions
	}{
		{"empty texts dropped, roles merged",
			`{"model":"m","messages":[{"role":"user","content":""},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":""}]},{"role":"assistant","content":"b"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, RequestOptions{}},
		{"parallel_tool_calls without tool_choice",
			`{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"parallel_tool_calls":false,"stop":null,"tool_choice":null}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`, RequestOptions{}},
		{"tool_choice none keeps tools",
			`{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none","parallel_tool_calls":false}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"}}`, RequestOptions{}},
		{"tool_choice auto without tools dropped, image_url as a string, refusal",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"http://example.com/a.jpg"}]},{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}],"tool_choice":"auto","thinking":null}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://example.com/a.jpg"}}]},{"role":"assistant","content":[{"type":"text","text":"no"}]}]}`, RequestOptions{}},
		{"tool result before the user's text, stream forced off",
			`{"model":"m","stream":true,"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"1"},{"role":"user","content":"hm"},{"role":"tool","tool_call_id":"b","content":"2"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"},{"type":"tool_result","tool_use_id":"b","content":"2"},{"type":"text","text":"hm"}]}]}`,
			RequestOptions{Stream: new(false)}},
		{"stream forced on",
			`{"model":"m","messages":[{"role":"user","content":"a"}]}`,
			`{"model":"m","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
			RequestOptions{Stream: new(true)}},
		{"no model with OmitModel",
			`{"messages":[{"role":"user","content":"a"}],"max_tokens":5}`,
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
			RequestOptions{AnthropicVersion: "vertex-2023-10-16", OmitModel: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := requestOf([]byte(tc.body), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, []byte(tc.want))
		})
	}
}
