package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/providers"
)

// xlate is an adapter with every optional translator, recording that each was used.
type xlate struct{}

func (xlate) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, "POST", t.BaseURL+"/native", bytes.NewReader(c.Body))
}

func (xlate) TranslateResponse(t *providers.Target, c *providers.Call, body []byte) ([]byte, error) {
	if bytes.Contains(body, []byte("untranslatable")) {
		return nil, errors.New("no choices")
	}
	return []byte(`{"translated":` + string(body) + `,"strict":` + map[bool]string{true: "true", false: "false"}[c.Strict] + `}`), nil
}

func (xlate) TranslateStream(t *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	b, _ := io.ReadAll(body) // fine for a test; real translators stream
	body.Close()
	return io.NopCloser(strings.NewReader("data: " + strings.ToUpper(string(b)) + "\n\ndata: [DONE]\n\n"))
}

func (xlate) TranslateError(t *providers.Target, c *providers.Call, status int, body []byte) []byte {
	return []byte(`{"error":{"message":"translated","provider_error":` + string(body) + `}}`)
}

func TestAttemptAppliesTranslators(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch string(body) {
		case "fail":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(429)
			io.WriteString(w, `{"message":"slow down"}`)
		case "odd":
			io.WriteString(w, `{"untranslatable":true}`)
		default:
			w.Header().Set("Content-Type", "application/x-native")
			io.WriteString(w, `{"native":1}`)
		}
	}))
	defer srv.Close()
	e := New(nil, Options{Transport: http.DefaultTransport})
	target := &providers.Target{Provider: "fake", BaseURL: srv.URL, Header: noHeader}
	call := func(body string, stream, strict bool) *outcome {
		return e.attempt(context.Background(), xlate{}, target,
			&providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(body), Stream: stream, Strict: strict}, 5*time.Second)
	}

	out := call("ok", false, true)
	if string(out.body) != `{"translated":{"native":1},"strict":true}` || out.header.Get("Content-Type") != "application/json" {
		t.Errorf("response: %s %v", out.body, out.header)
	}
	out = call("fail", false, false)
	if out.status != 429 || !strings.Contains(string(out.body), `"provider_error":{"message":"slow down"}`) || out.header.Get("Content-Type") != "application/json" {
		t.Errorf("error: %d %s %v", out.status, out.body, out.header)
	}
	out = call("odd", false, false)
	if out.err == nil || out.err.Status != 502 || out.err.Code != "upstream_error" {
		t.Errorf("untranslatable answer: %+v", out)
	}
	out = call("ok", true, false)
	if out.stream == nil {
		t.Fatalf("stream: %+v", out)
	}
	got, _ := io.ReadAll(out.stream)
	out.stream.Close()
	if string(got) != "data: {\"NATIVE\":1}\n\ndata: [DONE]\n\n" {
		t.Errorf("stream: %q", got)
	}
}
