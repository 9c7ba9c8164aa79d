package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/condition"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestMain replaces the query compiler with fakeCompile for the whole package, so that these tests pin this
// package's behaviour whatever runtime/condition's language does.
func TestMain(m *testing.M) {
	compileCondition = fakeCompile
	os.Exit(m.Run())
}

// fakeMatcher matches when the request's metadata has the key and value of its query's first pair.
type fakeMatcher struct{ query string }

func (f *fakeMatcher) Match(env *condition.Env) bool {
	var q map[string]string
	_ = json.Unmarshal([]byte(f.query), &q)
	for k, v := range q {
		if env.Metadata[k] == v {
			return true
		}
	}
	return false
}

// fakeCompile fails like the real compiler on an operator "$bad" (a *gwerr.Error naming it) and with a plain
// error on "$plain"; anything else compiles.
func fakeCompile(query json.RawMessage, path string) (condition.Matcher, error) {
	switch {
	case strings.Contains(string(query), `"$bad"`):
		return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: path + ".$bad",
			Message: "unsupported operator $bad"}
	case strings.Contains(string(query), `"$plain"`):
		return nil, errors.New("plain failure")
	}
	return &fakeMatcher{query: string(query)}, nil
}

func mustLoad(t testing.TB, raw string) *Plan {
	t.Helper()
	p, err := Load([]byte(raw))
	if err != nil {
		t.Fatalf("Load(%s): %v", raw, err)
	}
	return p
}

// asConfigError checks err is this package's 400 and returns it.
func asConfigError(t testing.TB, err error) *gwerr.Error {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T) is not a *gwerr.Error", err, err)
	}
	if ge.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %v", ge.Status, ge)
	}
	return ge
}

// nest returns a config whose targets nest depth levels below the top, each a fallback with one target.
func nest(depth int) string {
	s := `{"virtual_key": "leaf"}`
	for range depth {
		s = `{"strategy": {"mode": "fallback"}, "targets": [` + s + `]}`
	}
	return s
}

// manyTargets returns a fallback config with n targets.
func manyTargets(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"virtual_key": "vk-%d"}`, i)
	}
	return `{"strategy": {"mode": "fallback"}, "targets": [` + strings.Join(items, ",") + `]}`
}
