package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ingress with what the code writes")

// golden compares got with the golden file name, or rewrites it with -update. JSON files compare as values.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if *update {
		out := got
		if strings.HasSuffix(name, ".json") {
			var buf bytes.Buffer
			if err := json.Indent(&buf, got, "", "  "); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, got)
			}
			out = append(buf.Bytes(), '\n')
		}
		if err := os.WriteFile(name, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readFile(t, name)
	if strings.HasSuffix(name, ".json") {
		jsonEqual(t, got, want)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs\n got: %s\nwant: %s", name, got, want)
	}
}

// fixedIDs makes the ids the translation invents predictable: toolu_id1, toolu_id2, ...
func fixedIDs(t testing.TB) {
	t.Helper()
	old := randomID
	n := 0
	randomID = func() string { n++; return "id" + string(rune('0'+n)) }
	t.Cleanup(func() { randomID = old })
}

func TestToChatGolden(t *testing.T) {
	for _, name := range []string{"basic", "multimodal", "tools", "thinking"} {
		t.Run(name, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", "ingress", "request", name+".anthropic.json"))
			got, err := ToChat(in)
			if err != nil {
				t.Fatal(err)
			}
			// What ToChat writes is a chat request the gateway reads.
			if _, err := schema.DecodeChat(got); err != nil {
				t.Fatalf("DecodeChat: %v", err)
			}
			golden(t, filepath.Join("testdata", "ingress", "request", name+".openai.json"), got)
		})
	}
}

// TestToChatRoundTrip sends ToChat's translation back through Request, the adapters' translation to
// Anthropic: text, tools, tool calls and tool results come back as they were sent.
func TestToChatRoundTrip(t *testing.T) {
	in := readFile(t, filepath.Join("testdata", "ingress", "request", "tools.anthropic.json"))
	chat, err := ToChat(in)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := requestOf(chat, RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools      []toolParam      `json:"tools"`
		ToolChoice *toolChoiceParam `json:"tool_choice"`
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 3 || got.Messages[1].Role != "assistant" || got.Messages[2].Role != "user" {
		t.Fatalf("messages = %s", back)
	}
	if n := len(got.Messages[1].Content); n != 4 { // text and three tool_use; thinking dropped
		t.Errorf("assistant blocks = %d, want 4: %s", n, back)
	}
	results := 0
	for _, b := range got.Messages[2].Content {
		if bytes.Contains(b, []byte(`"tool_result"`)) {
			results++
		}
	}
	if results != 3 {
		t.Errorf("tool results = %d, want 3: %s", results, back)
	}
	if len(got.Tools) != 3 || got.Tools[0].Name != "get_weather" {
		t.Errorf("tools = %+v", got.Tools)
	}
	if tc := got.ToolChoice; tc == nil || tc.Type != "any" || !tc.DisableParallelToolUse {
		t.Errorf("tool_choice = %+v", tc)
	}
}

func TestToChatEffort(t *testing.T) {
	tests := []struct {
		thinking, want string
	}{
		{`{"type":"enabled","budget_tokens":1024}`, "low"},
		{`{"type":"enabled","budget_tokens":4095}`, "low"},
		{`{"type":"enabled","budget_tokens":4096}`, "medium"},
		{`{"type":"enabled","budget_tokens":16383}`, "medium"},
		{`{"type":"enabled","budget_tokens":32000}`, "high"},
		{`{"type":"disabled"}`, ""},
		{`{"type":"adaptive"}`, ""},
		{`null`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.thinking, func(t *testing.T) {
			body := `{"model":"m","max_tokens":64000,"messages":[{"role":"user","content":"hi"}],"thinking":` + tc.thinking + `}`
			got, err := ToChat([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				ReasoningEffort *string         `json:"reasoning_effort"`
				Thinking        json.RawMessage `json:"thinking"`
			}
			if err := json.Unmarshal(got, &out); err != nil {
				t.Fatal(err)
			}
			if out.Thinking != nil {
				t.Errorf("thinking kept: %s", got)
			}
			switch {
			case tc.want == "" && out.ReasoningEffort != nil:
				t.Errorf("reasoning_effort = %q, want none", *out.ReasoningEffort)
			case tc.want != "" && (out.ReasoningEffort == nil || *out.ReasoningEffort != tc.want):
				t.Errorf("reasoning_effort = %v, want %q: %s", out.ReasoningEffort, tc.want, got)
			}
		})
	}
}

func TestToChatErrors(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	req := func(extra string) string {
		return `{"model":"m","max_tokens":10,"messages":[` + user + `]` + extra + `}`
	}
	msgs := func(m string) string { return `{"model":"m","max_tokens":10,"messages":[` + m + `]}` }
	tests := []struct {
		name, body, param string
	}{
		{"not JSON", `{"model":`, ""},
		{"no max_tokens", `{"model":"m","messages":[` + user + `]}`, "max_tokens"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[` + user + `]}`, "max_tokens"},
		{"max_tokens a string", `{"model":"m","max_tokens":"10","messages":[` + user + `]}`, "max_tokens"},
		{"no messages", `{"model":"m","max_tokens":10}`, "messages"},
		{"messages not an array", `{"model":"m","max_tokens":10,"messages":{}}`, "messages"},
		{"only thinking", msgs(`{"role":"assistant","content":[{"type":"thinking","thinking":"t"}]}`), "messages"},
		{"role system", msgs(`{"role":"system","content":"x"}`), "messages[0].role"},
		{"no role", msgs(`{"content":"x"}`), "messages[0].role"},
		{"no content", msgs(user + `,{"role":"assistant"}`), "messages[1].content"},
		{"content a number", msgs(`{"role":"user","content":3}`), "messages[0].content"},
		{"content empty", msgs(`{"role":"user","content":[]}`), "messages[0].content"},
		{"block not an object", msgs(`{"role":"user","content":["x"]}`), "messages[0].content[0]"},
		{"block without type", msgs(`{"role":"user","content":[{"text":"x"}]}`), "messages[0].content[0].type"},
		{"unknown block", msgs(user + `,{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"search_result"}]}`), "messages[2].content[1].type"},
		{"image in assistant", msgs(user + `,{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://x"}}]}`), "messages[1].content[0].type"},
		{"tool_use in user", msgs(`{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}`), "messages[0].content[0].type"},
		{"thinking in user", msgs(`{"role":"user","content":[{"type":"thinking","thinking":"x"}]}`), "messages[0].content[0].type"},
		{"image without source", msgs(`{"role":"user","content":[{"type":"image"}]}`), "messages[0].content[0].source"},
		{"image file source", msgs(`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}`), "messages[0].content[0].source.type"},
		{"image base64 no media type", msgs(`{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"x"}}]}`), "messages[0].content[0].source.media_type"},
		{"image url empty", msgs(`{"role":"user","content":[{"type":"image","source":{"type":"url"}}]}`), "messages[0].content[0].source.url"},
		{"document url", msgs(`{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}`), "messages[0].content[0].source.type"},
		{"tool_use without id", msgs(user + `,{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}`), "messages[1].content[0].id"},
		{"tool_use without name", msgs(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"a","input":{}}]}`), "messages[1].content[0].name"},
		{"tool_use input an array", msgs(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[1]}]}`), "messages[1].content[0].input"},
		{"tool_result without id", msgs(`{"role":"user","content":[{"type":"tool_result","content":"x"}]}`), "messages[0].content[0].tool_use_id"},
		{"tool_result content a number", msgs(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":5}]}`), "messages[0].content[0].content"},
		{"tool_result unknown block", msgs(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"tool_use"}]}]}`), "messages[0].content[0].content[0].type"},
		{"system not text", `{"model":"m","max_tokens":10,"system":[{"type":"image"}],"messages":[` + user + `]}`, "system[0].type"},
		{"system a number", `{"model":"m","max_tokens":10,"system":1,"messages":[` + user + `]}`, "system"},
		{"server tool", req(`,"tools":[{"type":"web_search_20250305","name":"web_search"}]`), "tools[0].type"},
		{"tool without name", req(`,"tools":[{"input_schema":{"type":"object"}}]`), "tools[0].name"},
		{"tool schema not an object", req(`,"tools":[{"name":"f","input_schema":"x"}]`), "tools[0].input_schema"},
		{"tool name a number", req(`,"tools":[{"name":1}]`), "tools[0].name"},
		{"tool_choice unknown", req(`,"tools":[{"name":"f"}],"tool_choice":{"type":"some"}`), "tool_choice.type"},
		{"tool_choice no type", req(`,"tools":[{"name":"f"}],"tool_choice":{}`), "tool_choice.type"},
		{"tool_choice tool no name", req(`,"tools":[{"name":"f"}],"tool_choice":{"type":"tool"}`), "tool_choice.name"},
		{"tool_choice any no tools", req(`,"tool_choice":{"type":"any"}`), "tool_choice"},
		{"tool_choice a string", req(`,"tools":[{"name":"f"}],"tool_choice":"auto"`), "tool_choice"},
		{"thinking unknown type", req(`,"thinking":{"type":"maybe"}`), "thinking.type"},
		{"thinking no budget", req(`,"thinking":{"type":"enabled"}`), "thinking.budget_tokens"},
		{"thinking budget zero", req(`,"thinking":{"type":"enabled","budget_tokens":0}`), "thinking.budget_tokens"},
		{"thinking budget a string", req(`,"thinking":{"type":"enabled","budget_tokens":"1"}`), "thinking.budget_tokens"},
		{"stop_sequences a string", req(`,"stop_sequences":"x"`), "stop_sequences"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToChat([]byte(tc.body))
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Status != http.StatusBadRequest || ge.Param != tc.param {
				t.Errorf("status %d param %q (%s), want 400 naming %q", ge.Status, ge.Param, ge.Message, tc.param)
			}
		})
	}
}

func TestToChatDropsWhatHasNoTwin(t *testing.T) {
	body := `{"model":"m","max_tokens":10,"top_k":5,"tool_choice":{"type":"auto","disable_parallel_tool_use":true},` +
		`"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]},` +
		`{"role":"assistant","content":""},{"role":"user","content":[{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]}`
	got, err := ToChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"top_k", "tool_choice", "parallel_tool_calls", "thinking", "cache_control", `"assistant"`} {
		if bytes.Contains(got, []byte(absent)) {
			t.Errorf("%s kept: %s", absent, got)
		}
	}
	want := `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"max_completion_tokens":10}`
	jsonEqual(t, got, []byte(want))
}

func FuzzToChat(f *testing.F) {
	for _, name := range []string{"basic", "multimodal", "tools", "thinking"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ingress", "request", name+".anthropic.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Hostile shapes: blocks decoded one at a time (eachBlock), a tool result holding images and documents, a
	// malformed block after good ones, an array that never closes.
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":""},{"type":"tool_result",` +
		`"tool_use_id":"t","is_error":true,"content":[{"type":"image","source":{"type":"url","url":"u"}},{"type":"document",` +
		`"source":{"type":"text","data":"d"}},{"type":"text","text":"r"}]},{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"system":[{"type":"text","text":"s"},{"type":"text","text":1}],"messages":[{"role":"user","content":"x"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"thinking"},{"type":"tool_use","id":"a","name":"b"},2]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := ToChat(in)
		if err != nil {
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest {
				t.Fatalf("err = %v, want a 400", err)
			}
			return
		}
		if _, err := schema.DecodeChat(out); err != nil {
			t.Fatalf("ToChat wrote what DecodeChat refuses (%v): %s", err, out)
		}
		if _, err := CountTokens(in); err != nil {
			t.Fatalf("CountTokens refuses what ToChat takes: %v", err)
		}
	})
}
