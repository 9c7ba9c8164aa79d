package runtime

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

func TestPickSkipsZeroWeightsAndOpenTargets(t *testing.T) {
	e := &Engine{}
	seq := int64(0)
	e.jitter = func(n int64) int64 { seq = (seq + 7919) % n; return seq }
	counts := make([]int, 3)
	for i := 0; i < 1000; i++ {
		counts[e.pick([]float64{1, 0, 1}, 0)]++
	}
	if counts[1] != 0 || counts[0] == 0 || counts[2] == 0 {
		t.Fatalf("draws %v: weight 0 must never be picked, the others must", counts)
	}
	if got := e.pick([]float64{1, 0, 1}, 1|4); got != -1 {
		t.Fatalf("all skipped: picked %d", got)
	}
	if got := e.pick([]float64{1, 2}, 2); got != 0 {
		t.Fatalf("skip 1: picked %d", got)
	}
}

type ctxKey struct{}

// TestPluginConditionRunsUnderTheRequestContext: a $plugin condition is asked with the context given to Do (the
// state keeps none), and routes the request.
func TestPluginConditionRunsUnderTheRequestContext(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"`+r.Header.Get("Authorization")+`"}`)
	}))
	defer up.Close()
	var seen []any
	e, _ := boundsEngine(t, Options{PluginCondition: func(ctx context.Context, _, pluginID string, _ *hostapi.Input, _ hostapi.RequestView) (bool, error) {
		seen = append(seen, ctx.Value(ctxKey{}))
		return pluginID == "yes", nil
	}})
	tests := []struct {
		name, plugin, want string
	}{
		{"match", "yes", "Bearer sk-then"},
		{"no match", "no", "Bearer sk-default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			cfg := `{"strategy":{"mode":"conditional","conditions":[{"query":{"$plugin":"` + tc.plugin + `"},"then":"a"}],"default":"b"},"targets":[` +
				`{"name":"a","provider":"openai","api_key":"sk-then","custom_host":"` + up.URL + `"},` +
				`{"name":"b","provider":"openai","api_key":"sk-default","custom_host":"` + up.URL + `"}]}`
			ctx := context.WithValue(t.Context(), ctxKey{}, "request")
			resp, err := e.Do(ctx, chatRequest(cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Close()
			if got := string(resp.Body); got != `{"id":"`+tc.want+`"}` {
				t.Errorf("answer %s, want the target with %s", got, tc.want)
			}
			if len(seen) != 1 || seen[0] != "request" {
				t.Errorf("the plugin saw contexts carrying %v, want the request's", seen)
			}
		})
	}
}
