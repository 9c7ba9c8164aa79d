package sdkrust_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

// TestDenylistKV runs the Rust denylist in the gateway's engine with its "kv" parameter: the words of the
// plugin key-value store's value (one per line, trimmed) are denied beside "words", the workspace asked is the
// plugin's, a changed value changes the next verdict, and an absent key holds no words. It proves the SDK's
// kv_get end to end.
func TestDenylistKV(t *testing.T) {
	wasm := wasmtest.Guest(t, wasmtest.Rust, "denylist")
	const ws = "11111111-1111-4111-8111-111111111111"
	var mu sync.Mutex
	values := map[string]string{"banned": "  Alpha \r\n\nproject apollo\n"}
	e, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler), CallTimeout: wasmtest.CallTimeout,
		KV: func(workspaceID, key string) ([]byte, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			v, ok := values[key]
			return []byte(v), ok && workspaceID == ws, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { e.Close(ctx) })
	if err := e.Load(ctx, ws, "denylist", wasm); err != nil {
		t.Fatal(err)
	}
	check := func(text, kv, words string) *hostapi.Output {
		t.Helper()
		in := &hostapi.Input{Text: text, CheckID: "denylist.check", Params: []hostapi.KV{{Key: "kv", Value: kv}}}
		if words != "" {
			in.Params = append(in.Params, hostapi.KV{Key: "words", Value: words})
		}
		out, err := e.Call(ctx, ws, "denylist", hostapi.KindCheck, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct{ text, kv, words, data string }{
		{"secret alpha team", `"banned"`, `["secret"]`, `{"reason":"deny-listed content","words":["secret","Alpha"]}`},
		{"about Project Apollo", `"banned"`, "", `{"reason":"deny-listed content","words":["project apollo"]}`},
		{"alphabet", `"banned"`, "", ""},
		{"alpha", `"missing"`, "", ""},
	} {
		out := check(tc.text, tc.kv, tc.words)
		if out.Error != "" || out.Verdict != (tc.data == "") || string(out.Data) != tc.data {
			t.Errorf("%q: %+v, want data %s", tc.text, out, tc.data)
		}
	}
	if out := check("alpha", `["banned"]`, ""); out.Error == "" {
		t.Errorf("a kv parameter that is not a string: %+v", out)
	}
	mu.Lock()
	values["banned"] = "omega"
	mu.Unlock()
	if out := check("alpha omega", `"banned"`, ""); out.Verdict || string(out.Data) != `{"reason":"deny-listed content","words":["omega"]}` {
		t.Errorf("after the value changed: %+v", out)
	}
}
