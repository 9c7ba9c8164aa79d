package providers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

// TestPostJSONHeaders shows PostJSON's headers, and that the values it shares between requests stay each
// request's own: a forwarded header is kept, a forwarded Accept is replaced, and a header added to one
// request does not show on the next.
func TestPostJSONHeaders(t *testing.T) {
	ctx := context.Background()
	tg := &providers.Target{Forward: http.Header{"X-Team": {"a"}, "Accept": {"text/plain"}}}
	first, err := providers.PostJSON(ctx, tg, &providers.Call{}, "http://127.0.0.1:1/v1/chat/completions", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Header; got.Get("Content-Type") != "application/json" || got.Get("Accept") != "application/json" || got.Get("X-Team") != "a" {
		t.Fatalf("headers %v", got)
	}
	first.Header.Add("Accept", "text/html")
	first.Header.Add("Content-Type", "charset=utf-8")
	streamed, err := providers.PostJSON(ctx, &providers.Target{}, &providers.Call{Stream: true}, "http://127.0.0.1:1/v1/chat/completions", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := streamed.Header; len(got.Values("Accept")) != 1 || got.Get("Accept") != "text/event-stream" ||
		len(got.Values("Content-Type")) != 1 || got.Get("Content-Type") != "application/json" {
		t.Fatalf("streamed call's headers %v", got)
	}
	next, err := providers.PostJSON(ctx, &providers.Target{}, &providers.Call{}, "http://127.0.0.1:1/v1/chat/completions", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := next.Header.Values("Accept"); len(got) != 1 || got[0] != "application/json" {
		t.Fatalf("the next call's Accept %v: an earlier request's header changed it", got)
	}
}
