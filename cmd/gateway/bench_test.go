package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// BenchmarkChatWithWasmCheck is a non-streamed chat completion through the whole gateway with one wasm input
// guardrail (examples/denylist): compare with routes' BenchmarkChatCompletionGateway for what the plugin adds.
func BenchmarkChatWithWasmCheck(b *testing.B) {
	module := buildExample(b, "denylist")
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ws := &storage.Workspace{ID: storage.NewUUID(), Slug: "default", OrganisationID: storage.NewUUID()}
	st.Workspaces.Put(ws)
	key, _, _ := st.APIKeys.Create(ws.ID, "bench", false)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wasm, err := plugins.New(plugins.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer wasm.Close(context.Background())
	if _, _, err := st.Plugins.Put(ws.ID, "denylist", module); err != nil { // checks name stored plugins only
		b.Fatal(err)
	}
	if err := wasm.Load(context.Background(), ws.ID, "denylist", module); err != nil {
		b.Fatal(err)
	}
	engine := runtime.New(st, runtime.Options{Logger: quiet,
		PluginChecks: func(w, p, c string, params json.RawMessage) (guardrails.Check, error) {
			return wasm.CheckFor(w, p, c, params)
		}})
	srv := routes.New(st, engine, routes.Options{Logger: quiet, Plugins: wasm})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	cfg := `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1",` +
		`"input_guardrails":[{"id":"words","deny":true,"denylist.check":{"words":["forbidden"]}}]}`
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"a harmless question about the weather"}]}`)
	handler := srv.Handler().Handler()
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/chat/completions")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set("x-gateway-api-key", key)
		ctx.Request.Header.Set("x-gateway-config", cfg)
		ctx.Request.SetBody(body)
		handler(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
