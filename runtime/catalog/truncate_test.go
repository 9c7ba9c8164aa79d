package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// msg is a user or assistant message item whose text is n bytes.
func msg(role string, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"message","role":%q,"content":[{"type":"input_text","text":%q}]}`, role, strings.Repeat("a", n)))
}

func call(id string, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"f","arguments":%q}`, id, strings.Repeat("b", n)))
}

func output(id string, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%q}`, id, strings.Repeat("c", n)))
}

// texts names the kept items by their role or type and call id, for comparison.
func texts(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		var h itemHead
		_ = json.Unmarshal(it, &h)
		out[i] = h.Type + ":" + h.Role + h.CallID
	}
	return out
}

func TestItemTokens(t *testing.T) {
	tests := []struct {
		name string
		item string
		want int
	}{
		{"text", `{"type":"message","role":"user","content":"` + strings.Repeat("x", 400) + `"}`, ItemOverhead + 100},
		{"keys and structure not counted", `{"type":"message","role":"user","content":[{"type":"input_text","text":"abcd"}]}`, ItemOverhead + 1},
		{"image data URL flat", `{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + strings.Repeat("A", 100000) + `"}]}`, ItemOverhead + AttachmentTokens},
		{"escapes as written", `{"content":"a\"b"}`, ItemOverhead + 1},
		{"not an object", `"hello"`, ItemOverhead + 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ItemTokens(json.RawMessage(tc.item)); got != tc.want {
				t.Errorf("ItemTokens = %d, want %d", got, tc.want)
			}
		})
	}
	if EstimateTokens(0) != 0 || EstimateTokens(1) != 1 || EstimateTokens(8) != 2 {
		t.Error("EstimateTokens is not bytes/4 rounded up")
	}
}

func TestTruncate(t *testing.T) {
	// Each 400-byte message is 104 tokens.
	u1, a1, u2, a2, u3 := msg("user", 400), msg("assistant", 400), msg("user", 400), msg("assistant", 400), msg("user", 400)
	sys := msg("system", 400)
	tests := []struct {
		name          string
		items         []json.RawMessage
		instructions  string
		window, reser int
		mode          string
		want          []string // nil: items returned unchanged
		wantErr       string   // param of the 400
	}{
		{"fits", []json.RawMessage{u1, a1}, "", 1000, 100, "disabled", nil, ""},
		{"window 0 passes anything", []json.RawMessage{u1, a1, u2}, "", 0, 0, "disabled", nil, ""},
		{"disabled refuses", []json.RawMessage{u1, a1, u2}, "", 300, 0, "disabled", nil, "input"},
		{"empty mode is disabled", []json.RawMessage{u1, a1, u2}, "", 300, 0, "", nil, "input"},
		{"reserve counts", []json.RawMessage{u1, a1}, "", 300, 100, "disabled", nil, "input"},
		{"instructions count", []json.RawMessage{u1}, strings.Repeat("i", 800), 300, 0, "disabled", nil, "input"},
		{"unknown mode", []json.RawMessage{u1}, "", 300, 0, "sometimes", nil, "truncation"},
		// 320 tokens hold three 104-token messages: of five, the two oldest go.
		{"auto drops oldest", []json.RawMessage{u1, a1, u2, a2, u3}, "", 320, 0, "auto",
			[]string{"message:user", "message:assistant", "message:user"}, ""},
		{"auto keeps the last even if too big", []json.RawMessage{u1, a1, u2}, "", 50, 0, "auto",
			[]string{"message:user"}, ""},
		{"auto keeps system messages", []json.RawMessage{sys, u1, a1, u2}, "", 320, 0, "auto",
			[]string{"message:system", "message:assistant", "message:user"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]json.RawMessage(nil), tc.items...)
			got, err := Truncate(tc.items, tc.instructions, tc.window, tc.reser, tc.mode)
			if tc.wantErr != "" {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || ge.Param != tc.wantErr {
					t.Fatalf("err = %v, want a 400 naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(got) != len(tc.items) {
					t.Fatalf("got %d items, want all %d", len(got), len(tc.items))
				}
				return
			}
			if g := texts(got); strings.Join(g, ",") != strings.Join(tc.want, ",") {
				t.Errorf("kept %v, want %v", g, tc.want)
			}
			for i := range orig {
				if string(orig[i]) != string(tc.items[i]) {
					t.Fatal("Truncate modified its input")
				}
			}
		})
	}
}

func TestTruncateKeepsCallPairs(t *testing.T) {
	u1 := msg("user", 400)                             // 104 tokens
	c1, o1 := call("c1", 400), output("c1", 400)       // 105 and 104: a pair
	c2, o2 := call("c2", 40), output("c2", 40)         // 15 and 14
	u2 := msg("user", 40)                              // 14
	items := []json.RawMessage{u1, c1, c2, o1, o2, u2} // parallel calls: outputs after both calls
	// Total 356. Budget 200: u1 goes (252 left), then c1 with o1 (43 left): c2, o2, u2 stay.
	got, err := Truncate(items, "", 200, 0, "auto")
	if err != nil {
		t.Fatal(err)
	}
	want := "function_call:c2,function_call_output:c2,message:user"
	if g := strings.Join(texts(got), ","); g != want {
		t.Errorf("kept %s, want %s", g, want)
	}
	// A pair whose output is the last item stays whole with everything after its call.
	items = []json.RawMessage{u1, c1, msg("assistant", 40), o1}
	got, _ = Truncate(items, "", 100, 0, "auto")
	want = "function_call:c1,message:assistant,function_call_output:c1"
	if g := strings.Join(texts(got), ","); g != want {
		t.Errorf("kept %s, want %s", g, want)
	}
}

func BenchmarkLookup(b *testing.B) {
	Default()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = Lookup("openai", "gpt-4o")
		_, _ = Lookup("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
	}
}

func BenchmarkTruncate(b *testing.B) {
	items := make([]json.RawMessage, 0, 40)
	for i := 0; i < 20; i++ {
		items = append(items, msg("user", 2000), msg("assistant", 2000))
	}
	b.Run("fits", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _ = Truncate(items, "be brief", 128000, 16384, "disabled")
		}
	})
	b.Run("auto drops half", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _ = Truncate(items, "be brief", 10000, 0, "auto")
		}
	})
}
