package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func TestDecodeResponseRequestErrors(t *testing.T) {
	many := map[string]string{}
	for i := 0; i < 17; i++ {
		many[fmt.Sprint("k", i)] = "v"
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name, body, param string
	}{
		{"not json", `{`, ""},
		{"model missing", `{"input":"hi"}`, "model"},
		{"model not a string", `{"model":1,"input":"hi"}`, "model"},
		{"input missing", `{"model":"m"}`, "input"},
		{"input null", `{"model":"m","input":null}`, "input"},
		{"input number", `{"model":"m","input":3}`, "input"},
		{"input empty array", `{"model":"m","input":[]}`, "input"},
		{"input item not object", `{"model":"m","input":[{"role":"user","content":"a"},"b"]}`, "input[1]"},
		{"temperature high", `{"model":"m","input":"hi","temperature":2.5}`, "temperature"},
		{"temperature negative", `{"model":"m","input":"hi","temperature":-1}`, "temperature"},
		{"temperature string", `{"model":"m","input":"hi","temperature":"hot"}`, "temperature"},
		{"top_p high", `{"model":"m","input":"hi","top_p":1.5}`, "top_p"},
		{"max_output_tokens zero", `{"model":"m","input":"hi","max_output_tokens":0}`, "max_output_tokens"},
		{"metadata too many", `{"model":"m","input":"hi","metadata":` + string(manyJSON) + `}`, "metadata"},
		{"metadata key long", `{"model":"m","input":"hi","metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`, "metadata"},
		{"metadata value long", `{"model":"m","input":"hi","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata.k"},
		{"metadata value not string", `{"model":"m","input":"hi","metadata":{"k":1}}`, "metadata"},
		{"truncation", `{"model":"m","input":"hi","truncation":"middle"}`, "truncation"},
		{"tool_choice string", `{"model":"m","input":"hi","tool_choice":"any"}`, "tool_choice"},
		{"tool_choice type", `{"model":"m","input":"hi","tool_choice":{"type":"file_search"}}`, "tool_choice.type"},
		{"tool_choice name", `{"model":"m","input":"hi","tool_choice":{"type":"function"}}`, "tool_choice.name"},
		{"tool_choice number", `{"model":"m","input":"hi","tool_choice":1}`, "tool_choice"},
		{"tool not object", `{"model":"m","input":"hi","tools":["f"]}`, "tools[0]"},
		{"tool without type", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"name":"g"}]}`, "tools[1].type"},
		{"include value", `{"model":"m","input":"hi","include":["file_search_call.results","everything"]}`, "include[1]"},
		{"stream not bool", `{"model":"m","input":"hi","stream":"yes"}`, "stream"},
		{"store not bool", `{"model":"m","input":"hi","store":1}`, "store"},
		{"reasoning not object", `{"model":"m","input":"hi","reasoning":"high"}`, "reasoning"},
		{"text not object", `{"model":"m","input":"hi","text":[]}`, "text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeResponseRequest([]byte(tc.body))
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Status != http.StatusBadRequest || ge.Param != tc.param {
				t.Fatalf("got %d param %q (%s), want 400 param %q", ge.Status, ge.Param, ge.Message, tc.param)
			}
		})
	}
}

func TestDecodeResponseRequest(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","input":[{"role":"user","content":"hi"}],"instructions":"be brief",
		"temperature":0,"top_p":1,"max_output_tokens":100,"metadata":{"a":"b"},"truncation":"auto",
		"tool_choice":{"type":"function","name":"f"},"tools":[{"type":"function","name":"f"}],
		"include":["message.input_image.image_url"],"store":false,"stream":true,"reasoning":{"effort":"low"},
		"text":{"format":{"type":"text"}},"user":"u","previous_response_id":"resp_1","background":false}`
	r, err := DecodeResponseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "claude-sonnet-4-5" || *r.Instructions != "be brief" || *r.Temperature != 0 || *r.Store || !*r.Stream ||
		*r.Truncation != "auto" || r.Metadata["a"] != "b" || len(r.Tools) != 1 || *r.PreviousResponseID != "resp_1" {
		t.Fatalf("decoded %+v", r)
	}
	items, err := r.InputItems()
	if err != nil || len(items) != 1 || string(items[0]) != `{"role":"user","content":"hi"}` {
		t.Fatalf("items %s, %v", items, err)
	}
}

func TestInputItemsString(t *testing.T) {
	r, err := DecodeResponseRequest([]byte(`{"model":"m","input":"Say \"hi\" <b>"}`))
	if err != nil {
		t.Fatal(err)
	}
	items, err := r.InputItems()
	if err != nil {
		t.Fatal(err)
	}
	var item struct {
		Type, Role string
		Content    []struct{ Type, Text string }
	}
	if len(items) != 1 || json.Unmarshal(items[0], &item) != nil {
		t.Fatalf("items %s", items)
	}
	if item.Type != "message" || item.Role != "user" || len(item.Content) != 1 ||
		item.Content[0].Type != "input_text" || item.Content[0].Text != `Say "hi" <b>` {
		t.Fatalf("item %s", items[0])
	}
}

func TestResponseJSONFields(t *testing.T) {
	b, err := json.Marshal(&Response{ID: "resp_1", Object: "response"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for _, f := range []string{"id", "object", "created_at", "status", "error", "incomplete_details", "instructions",
		"max_output_tokens", "model", "output", "output_text", "parallel_tool_calls", "previous_response_id", "reasoning",
		"store", "temperature", "text", "tool_choice", "tools", "top_p", "truncation", "usage", "metadata"} {
		if _, ok := m[f]; !ok {
			t.Errorf("field %s missing from %s", f, b)
		}
	}
	if _, ok := m["user"]; ok {
		t.Errorf("user is written when unset: %s", b)
	}
}
