package sdkas_test

import (
	"context"
	"log/slog"
	"strings"
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
