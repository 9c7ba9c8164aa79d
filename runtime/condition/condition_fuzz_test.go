package condition

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// FuzzCompile checks that Compile never panics, that its errors are 400 invalid_config errors naming a path
// below the query's, and that a compiled query matches any Env without panicking, the same way twice. The
// seed corpus is testdata/fuzz/FuzzCompile.
func FuzzCompile(f *testing.F) {
	for _, q := range []string{
		`{}`,
		`{"metadata.tier": "gold"}`,
		`{"params.model": {"$in": ["gpt-4o", "gpt-4o-mini"]}, "params.max_tokens": {"$gt": 10, "$lte": 4096}}`,
		`{"$or": [{"url.pathname": {"$regex": "^/v1/chat", "$options": "i"}}, {"metadata.n": {"$ne": 5}}]}`,
		`{"$expr": "metadata.tier == 'gold' && len(params.messages) > 1"}`,
	} {
		f.Add([]byte(q))
	}
	env := sampleEnv(f)
	const path = "cfg.query"
	f.Fuzz(func(t *testing.T, query []byte) {
		m, err := Compile(json.RawMessage(query), path)
		if err != nil {
			if m != nil {
				t.Fatalf("Compile returned a Matcher with error %v", err)
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("error %T %v is not a *gwerr.Error", err, err)
			}
			if ge.Status != 400 || ge.Code != codeInvalidConfig {
				t.Fatalf("error %v: status %d code %q, want 400 invalid_config", err, ge.Status, ge.Code)
			}
			if !strings.HasPrefix(ge.Param, path) {
				t.Fatalf("Param %q is not below %q", ge.Param, path)
			}
			if !strings.HasPrefix(ge.Message, "invalid config: "+ge.Param+": ") {
				t.Fatalf("Message %q does not name Param %q", ge.Message, ge.Param)
			}
			return
		}
		for _, e := range []*Env{env, {}, nil} {
			if a, b := m.Match(e), m.Match(e); a != b {
				t.Fatalf("Match is not deterministic on %+v", e)
			}
		}
	})
}
