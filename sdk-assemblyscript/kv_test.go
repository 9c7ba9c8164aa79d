package sdkas_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

// TestKVGet builds testdata/kvguest.ts, runs it in the gateway's engine and proves kvGet: a present value comes back whole (UTF-8 included, and
// past the first 4 KiB buffer), an absent key is null, and the module imports kv_get only because it calls it
// (the examples, which do not, keep their imports: TestModules).
func TestKVGet(t *testing.T) {
	wasm := wasmtest.BuildAssemblyScript(t, ".", "testdata/kvguest.ts")
	long := strings.Repeat("wörd\n", 2000)
	const ws = "11111111-1111-4111-8111-111111111111"
	values := map[string]string{"banned": "apollo\nartémis", "long": long}
	e, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler), CallTimeout: wasmtest.CallTimeout, KV: func(workspaceID, key string) ([]byte, bool, error) {
		v, ok := values[key]
		return []byte(v), ok && workspaceID == ws, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { e.Close(ctx) })
	if err := e.Load(ctx, ws, "kvguest", wasm); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		pass bool
		want string
	}{
		{"banned", false, "apollo\nartémis"},
		{"long", false, long},
		{"absent", true, ""},
	} {
		in := &hostapi.Input{Text: "x", Params: []hostapi.KV{{Key: "key", Value: `"` + tc.key + `"`}}}
		out, err := e.Call(ctx, ws, "kvguest", hostapi.KindCheck, in, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		if out.Error != "" || out.Verdict != tc.pass {
			t.Fatalf("%s: %+v", tc.key, out)
		}
		if tc.pass {
			continue
		}
		if !strings.Contains(string(out.Data), `"value":`) || !strings.Contains(strings.ReplaceAll(string(out.Data), `\n`, "\n"), tc.want) {
			t.Errorf("%s: data %.200s", tc.key, out.Data)
		}
	}
}

// TestDenylistKV runs the AssemblyScript denylist in the gateway's engine with its "kv" parameter: the words of
// the plugin key-value store's value (one per line, trimmed) are denied beside "words", a changed value changes
// the next verdict, and an absent key holds no words, as the Go and Rust denylists do.
func TestDenylistKV(t *testing.T) {
	wasm := module(t, "denylist")
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
