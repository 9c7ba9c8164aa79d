package vertex

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/providers"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// normalize decodes JSON and blanks created, which the translation takes from the clock.
func normalize(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["created"]; ok {
			m["created"] = 0.0
		}
	}
	return v
}

func jsonEqual(t testing.TB, got, want []byte) {
	t.Helper()
	if g, w := normalize(t, got), normalize(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

func sseEqual(t testing.TB, got, want string) {
	t.Helper()
	g := strings.Split(strings.TrimSuffix(got, "\n\n"), "\n\n")
	w := strings.Split(strings.TrimSuffix(want, "\n\n"), "\n\n")
	if len(g) != len(w) {
		t.Fatalf("%d events, want %d:\n%s", len(g), len(w), got)
	}
	for i := range w {
		gd, wd := strings.TrimPrefix(g[i], "data: "), strings.TrimPrefix(w[i], "data: ")
		if wd == "[DONE]" {
			if gd != wd {
				t.Errorf("event %d = %q, want [DONE]", i, gd)
			}
			continue
		}
		jsonEqual(t, []byte(gd), []byte(wd))
	}
}

type recorded struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// fakeVertex is a local Vertex AI: it records requests and answers with a fixed status and body.
type fakeVertex struct {
	*httptest.Server
	mu          sync.Mutex
	seen        []recorded
	status      int
	contentType string
	answer      []byte
}

func newFakeVertex(t *testing.T, status int, contentType string, answer []byte) *fakeVertex {
	t.Helper()
	f := &fakeVertex{status: status, contentType: contentType, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
		f.mu.Unlock()
		w.Header().Set("Content-Type", f.contentType)
		w.WriteHeader(f.status)
		_, _ = w.Write(f.answer)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeVertex) last(t testing.TB) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		t.Fatal("the fake Vertex AI saw no request")
	}
	return f.seen[len(f.seen)-1]
}

// headers makes a Target.Header from a map (names case-insensitive, as the caller's headers are).
func headers(m map[string]string) func(string) string {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h.Get
}

func fields(t testing.TB, kv ...any) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		b, err := json.Marshal(kv[i+1])
		if err != nil {
			t.Fatal(err)
		}
		out[kv[i].(string)] = b
	}
	return out
}

func newTarget(base string, f map[string]json.RawMessage, hdr map[string]string) *providers.Target {
	return &providers.Target{Provider: "vertex-ai", BaseURL: base, APIKey: "ya29.caller-token", Fields: f, Header: headers(hdr),
		Client: &http.Client{Timeout: 10 * time.Second}}
}

// fakeClock is a settable clock for token expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
