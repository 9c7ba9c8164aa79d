package gemini

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func TestChatRequestGolden(t *testing.T) {
	for _, name := range caseNames(t, "testdata/request", ".openai.json") {
		t.Run(name, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata/request", name+".openai.json"))
			body, model, err := chatRequest(in)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(decodeChat(t, in).Model, "models/"); model != want || strings.HasPrefix(model, "models/") {
				t.Errorf("model = %q, want %q", model, want)
			}
			jsonEqual(t, body, readFile(t, filepath.Join("testdata/request", name+".gemini.json")))
		})
	}
}

func TestChatRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"not JSON", `{`, ""}, // a malformed body is the whole request's problem: schema.DecodeError names no field
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, "model"},
		{"no messages", `{"model":"m","messages":[]}`, "messages"},
		{"messages not an array", `{"model":"m","messages":{}}`, "messages"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role"},
		{"missing role", `{"model":"m","messages":[{"content":"x"}]}`, "messages[0].role"},
		{"content a number", `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{"unknown part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"video","video":{}}]}]}`, "messages[0].content[1].type"},
		{"image in system", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, "messages[0].content[0].type"},
		{"image without url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "messages[0].content[0].image_url.url"},
		{"image ftp", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"data url not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"file id", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"bad arguments", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"call without name", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].function.name"},
		{"orphan tool message", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"zz","content":"r"}]}`, "messages[1].tool_call_id"},
		{"max_tokens a string", `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"many"}`, "max_tokens"},
		{"stop a number", `{"model":"m","messages":[{"role":"user","content":"x"}],"stop":1}`, "stop"},
		{"stop with numbers", `{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a",1]}`, "stop"},
		{"response_format type", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, "response_format.type"},
		{"schema not an object", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":[1]}}}`, "response_format.json_schema.schema"},
		{"schema bad ref", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}}}}`, "response_format.json_schema.schema"},
		{"schema recursive ref", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}}}}`, "response_format.json_schema.schema"},
		{"tool type", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"tool without name", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{"tool params not object", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]}`, "tools[0].function.parameters"},
		{"tool_choice word", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"sometimes"}`, "tool_choice"},
		{"tool_choice object", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function"}}`, "tool_choice.function.name"},
		{"thinking type", `{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"maybe"}}`, "thinking.type"},
		{"reasoning_effort", `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"extreme"}`, "reasoning_effort"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := chatRequest([]byte(tc.body))
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Status != 400 || ge.Param != tc.param {
				t.Errorf("err = %d %q (%s), want 400 %q", ge.Status, ge.Param, ge.Message, tc.param)
			}
		})
	}
}

func TestChatRequestEdges(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"empty contents are skipped", `{"model":"m","messages":[{"role":"user","content":""},{"role":"assistant","content":null},{"role":"user","content":"x"}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`},
		{"tool named by message name", `{"model":"m","messages":[{"role":"tool","name":"f","tool_call_id":"?","content":"[1,2]"}]}`,
			`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"content":"[1,2]"}}}]}]}`},
		{"tool_choice none without tools is dropped", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"none"}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`},
		{"tool_choice with tools", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`},
		{"thinking disabled", `{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`},
		{"reasoning none", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`},
		{"logprobs false is not sent", `{"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":false,"top_logprobs":2}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`},
		{"legacy function role", `{"model":"m","messages":[{"role":"function","name":"f","content":"{\"a\":1}"}]}`,
			`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"a":1}}}]}]}`},
		{"response_format text", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"text"}}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`},
		{"schema oneOf, allOf and tuple items", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]},"w":{"allOf":[{"type":"integer","format":"int64"}]},"t":{"type":"array","items":[{"type":"boolean"}]},"e":{"type":"integer","enum":[1,2]}}}}}}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]},"w":{"type":"integer","format":"int64"},"t":{"type":"array","items":{"type":"boolean"}},"e":{"type":"integer"}}}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, _, err := chatRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, body, []byte(tc.want))
		})
	}
}

func TestChatResponseGolden(t *testing.T) {
	model := ModelOf(decodeChat(t, []byte(`{"model":"models/gemini-test","messages":[{"role":"user","content":"x"}]}`)))
	for _, name := range caseNames(t, "testdata/response", ".gemini.json") {
		for _, strict := range []bool{false, true} {
			wantFile := name + ".openai.json"
			if strict {
				wantFile = name + ".openai.strict.json"
			}
			t.Run(wantFile, func(t *testing.T) {
				pin(t)
				got, err := ChatResponse(readFile(t, filepath.Join("testdata/response", name+".gemini.json")), model, strict)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata/response", wantFile), got)
			})
		}
	}
}

func TestChatResponseErrors(t *testing.T) {
	tests := []struct{ name, body string }{
		{"not JSON", `{"candidates":`},
		{"candidates not an array", `{"candidates":{}}`},
		{"error object", `{"error":{"code":500,"message":"boom","status":"INTERNAL"}}`},
		{"no candidates", `{"usageMetadata":{"promptTokenCount":1}}`},
		{"another API's answer", `{"choices":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ChatResponse([]byte(tc.body), "", false); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		in    string
		calls bool
		want  string
	}{
		{"STOP", false, "stop"}, {"STOP", true, "tool_calls"}, {"", true, "tool_calls"}, {"MAX_TOKENS", true, "length"},
		{"SAFETY", false, "content_filter"}, {"RECITATION", false, "content_filter"}, {"BLOCKLIST", false, "content_filter"},
		{"PROHIBITED_CONTENT", false, "content_filter"}, {"SPII", false, "content_filter"}, {"OTHER", false, "stop"},
		{"MALFORMED_FUNCTION_CALL", false, "stop"}, {"FINISH_REASON_UNSPECIFIED", false, "stop"},
	}
	for _, tc := range tests {
		if got := finishReason(tc.in, tc.calls); got != tc.want {
			t.Errorf("finishReason(%q, %v) = %q, want %q", tc.in, tc.calls, got, tc.want)
		}
	}
}

func TestCheckModel(t *testing.T) {
	for _, ok := range []string{"gemini-2.5-flash", "claude-sonnet-4@20250514", "text-embedding-004", "gemini_1.5"} {
		if err := CheckModel(ok); err != nil {
			t.Errorf("CheckModel(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "..", "a/b", "a:generateContent", "a?x=1", "a#b", "a b", "ä"} {
		if err := CheckModel(bad); err == nil {
			t.Errorf("CheckModel(%q) = nil, want an error", bad)
		}
	}
}

func TestIsGemini3(t *testing.T) {
	for model, want := range map[string]bool{"gemini-3-pro-preview": true, "gemini-3.1-flash": true, "gemini-3": true,
		"gemini-30": false, "gemini-2.5-pro": false, "my-gemini-3": false} {
		if got := isGemini3(model); got != want {
			t.Errorf("isGemini3(%q) = %v", model, got)
		}
	}
}
