package runtime

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestResponsesShapesForChecksAndLimits(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   string
	}{
		{"string input", `{"input":"hello"}`, "hello"},
		{"items", `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"}]},` +
			`{"type":"message","role":"user","content":"b"},{"type":"function_call_output","call_id":"c","output":"c"}]}`, "a\nb\nc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var params map[string]any
			if err := json.Unmarshal([]byte(tc.params), &params); err != nil {
				t.Fatal(err)
			}
			if got := requestText(params); got != tc.want {
				t.Fatalf("requestText = %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ body, want string }{
		{`{"input":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"input_text","text":"c"}]},{"role":"assistant","content":"d"}]}`,
			`{"input":[{"content":"a","role":"user"},{"content":"b","role":"assistant"},{"content":"X","role":"user"},{"content":"d","role":"assistant"}]}`},
		{`{"input":"a"}`, `{"input":"X"}`},
		{`{"input":["a","b"]}`, `{"input":"X"}`},
	} {
		got, err := replaceRequestText([]byte(tc.body), "X")
		if err != nil || string(got) != tc.want {
			t.Errorf("replaceRequestText(%s) = %s, %v; want %s", tc.body, got, err, tc.want)
		}
	}
	answer := `{"object":"response","output":[{"type":"reasoning","summary":[]},{"type":"message","content":[{"type":"output_text","text":"Hi"},{"type":"output_text","text":"there"}]}],` +
		`"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
	if got := answerText([]byte(answer)); got != "Hi\nthere" {
		t.Errorf("answerText = %q", got)
	}
	if in, out, ok := AnswerTokens([]byte(answer)); !ok || in != 5 || out != 3 {
		t.Errorf("AnswerTokens = %d, %d, %v; want 5, 3", in, out, ok)
	}
	// A stream's usage is read from its response.completed event.
	events := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":2,\"total_tokens\":6}}}\n\n"
	var reported Usage
	u := newUsageStream(io.NopCloser(strings.NewReader(events)), 10, func(got Usage) { reported = got })
	io.Copy(io.Discard, u)
	u.Close()
	if reported != (Usage{InputTokens: 4, OutputTokens: 2, Known: true}) {
		t.Errorf("stream usage %+v, want 4 in, 2 out", reported)
	}
}

type fakeAdapter struct{ native bool }

func (fakeAdapter) NewRequest(context.Context, *providers.Target, *providers.Call) (*http.Request, error) {
	return nil, nil
}

func (a fakeAdapter) NativeResponses() bool { return a.native }

func TestResponsesStepPicksTheWay(t *testing.T) {
	e := New(nil, Options{})
	tap := func(rc io.ReadCloser) io.ReadCloser { return rc }
	tapped := WithResponsesTap(context.Background(), tap)
	tests := []struct {
		name       string
		ctx        context.Context
		adapter    providers.Adapter
		endpoint   providers.Endpoint
		same       bool
		translated bool
	}{
		{"chat is untouched", tapped, fakeAdapter{}, providers.ChatCompletions, true, false},
		{"native without a tap (fitted to its window)", context.Background(), fakeAdapter{native: true}, providers.Responses, false, false},
		{"native with a tap", tapped, fakeAdapter{native: true}, providers.Responses, false, false},
		{"not native", context.Background(), fakeAdapter{}, providers.Responses, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := e.responsesStep(tc.ctx, tc.adapter, &providers.Call{Endpoint: tc.endpoint})
			ra, decorated := got.(*responsesAdapter)
			if decorated == tc.same || (decorated && ra.native == tc.translated) {
				t.Fatalf("got %#v", got)
			}
		})
	}
}
