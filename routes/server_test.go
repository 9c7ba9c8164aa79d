package routes

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// fixture is a server over an in-memory store with two workspaces: "default" (an admin and a plain key) and
// "other" (an admin key).
type fixture struct {
	srv      *Server
	store    *storage.Store
	ws       *storage.Workspace
	other    *storage.Workspace
	admin    string
	plain    string
	otherKey string
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	return newFixtureWith(t, opts, nil)
}

// newFixtureWith is newFixture with engine options of the test's own (a rate limiter, a clock); engineOpts
// runs once the store is open.
func newFixtureWith(t testing.TB, opts Options, engineOpts func(*storage.Store) runtime.Options) *fixture {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{store: st}
	f.ws = &storage.Workspace{ID: uuid.NewString(), Slug: "default", OrganisationID: uuid.NewString()}
	f.other = &storage.Workspace{ID: uuid.NewString(), Slug: "other", OrganisationID: uuid.NewString()}
	for _, w := range []*storage.Workspace{f.ws, f.other} {
		if _, err := st.Workspaces.Put(w); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(ws *storage.Workspace, admin bool) string {
		secret, _, err := st.APIKeys.Create(ws.ID, "test", admin)
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	f.admin, f.plain, f.otherKey = mk(f.ws, true), mk(f.ws, false), mk(f.other, true)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var eo runtime.Options
	if engineOpts != nil {
		eo = engineOpts(st)
	}
	eo.Logger = opts.Logger
	if opts.Metrics == nil { // the engine reports breakers and verdicts to the server's metrics, as in main
		opts.Metrics = metrics.New()
	}
	if eo.Observer == nil {
		eo.Observer = opts.Metrics
	}
	f.srv = New(st, runtime.New(st, eo), opts)
	return f
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, a.body)
	}
	return m
}

// do sends a request through the fiber app. headers are name, value pairs.
func (f *fixture) do(t *testing.T, method, path, body string, headers ...string) answer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.srv.Handler().Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// checkError asserts an error answer: status, code, param, and exactly the OpenAI error shape.
func checkError(t *testing.T, a answer, status int, code string, param any) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status = %d, want %d; body %s", a.status, status, a.body)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("content-type = %q, want application/json", ct)
	}
	if a.header.Get(HeaderTraceID) == "" {
		t.Errorf("no %s header on a %d", HeaderTraceID, status)
	}
	var body struct {
		Error map[string]any `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(a.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %s: %v", a.body, err)
	}
	if len(body.Error) != 4 {
		t.Errorf("error object has keys %v, want message, type, code, param", body.Error)
	}
	if msg, _ := body.Error["message"].(string); msg == "" {
		t.Errorf("error.message is empty: %s", a.body)
	}
	if typ, _ := body.Error["type"].(string); typ == "" {
		t.Errorf("error.type is empty: %s", a.body)
	}
	if got := body.Error["code"]; got != code {
		t.Errorf("error.code = %v, want %s; body %s", got, code, a.body)
	}
	if got, ok := body.Error["param"]; !ok || got != param {
		t.Errorf("error.param = %v, want %v", got, param)
	}
}

func TestHealthNeedsNoKey(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.do(t, "GET", "/health", "")
	if a.status != 200 || a.json(t)["status"] != "ok" {
		t.Fatalf("GET /health = %d %s", a.status, a.body)
	}
	if a.header.Get(HeaderTraceID) == "" {
		t.Error("health answer has no trace id")
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		name   string
		key    string
		status int
		code   string
	}{
		{"missing key", "", 401, "missing_api_key"},
		{"unknown key", "gw-not-a-key-at-all", 401, "invalid_api_key"},
		{"provider key in the wrong header", "sk-proj-123", 401, "invalid_api_key"},
		{"valid admin key", f.admin, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a answer
			if tc.key == "" {
				a = f.do(t, "GET", "/v1/api-keys", "")
			} else {
				a = f.do(t, "GET", "/v1/api-keys", "", HeaderAPIKey, tc.key)
			}
			if tc.code == "" {
				if a.status != tc.status {
					t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.body)
				}
				return
			}
			checkError(t, a, tc.status, tc.code, HeaderAPIKey)
			if typ := a.json(t)["error"].(map[string]any)["type"]; typ != "authentication_error" {
				t.Errorf("type = %v", typ)
			}
		})
	}
}

func TestUnknownRoutesNeedAKeyUnderV1(t *testing.T) {
	f := newFixture(t, Options{})
	checkError(t, f.do(t, "GET", "/v1/nothing-here", ""), 401, "missing_api_key", HeaderAPIKey)
	checkError(t, f.do(t, "GET", "/v1/nothing-here", "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	checkError(t, f.do(t, "GET", "/nothing-here", ""), 404, "not_found", nil)
}

func TestTraceID(t *testing.T) {
	f := newFixture(t, Options{})
	t.Run("caller's is echoed", func(t *testing.T) {
		for _, path := range []string{"/health", "/v1/api-keys", "/nope"} {
			a := f.do(t, "GET", path, "", HeaderTraceID, "trace-abc-123")
			if got := a.header.Get(HeaderTraceID); got != "trace-abc-123" {
				t.Errorf("%s: trace id %q, want the caller's", path, got)
			}
		}
	})
	t.Run("generated when absent", func(t *testing.T) {
		a := f.do(t, "GET", "/health", "")
		b := f.do(t, "GET", "/health", "")
		ta, tb := a.header.Get(HeaderTraceID), b.header.Get(HeaderTraceID)
		if _, err := uuid.Parse(ta); err != nil {
			t.Errorf("generated trace id %q is not a UUID", ta)
		}
		if ta == tb {
			t.Errorf("two requests got the same trace id %q", ta)
		}
	})
	t.Run("invalid is refused with a new one", func(t *testing.T) {
		for _, bad := range []string{"has space", strings.Repeat("x", maxTraceIDLength+1)} {
			a := f.do(t, "GET", "/health", "", HeaderTraceID, bad)
			checkError(t, a, 400, "invalid_request", HeaderTraceID)
			if got := a.header.Get(HeaderTraceID); got == bad {
				t.Errorf("invalid trace id echoed back")
			}
		}
	})
}

func TestRequestErrors(t *testing.T) {
	f := newFixture(t, Options{BodyLimit: 1024})
	key := []string{HeaderAPIKey, f.admin}
	jsonKey := append([]string{"Content-Type", "application/json"}, key...)
	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		headers []string
		status  int
		code    string
		param   any
		mention string
	}{
		{"wrong method", "PATCH", "/v1/api-keys", "", key, 405, "method_not_allowed", nil, "PATCH"},
		{"wrong method on health", "DELETE", "/health", "", nil, 405, "method_not_allowed", nil, "DELETE"},
		{"malformed JSON", "POST", "/v1/api-keys", `{"name": "x",}`, jsonKey, 400, "invalid_json", nil, "line 1, column 15"},
		{"truncated JSON", "POST", "/v1/api-keys", `{"name": "x"`, jsonKey, 400, "invalid_json", nil, "unexpected end"},
		{"trailing data", "POST", "/v1/api-keys", `{"name": "x"} {}`, jsonKey, 400, "invalid_json", nil, "after the JSON value"},
		{"empty body", "POST", "/v1/api-keys", ``, jsonKey, 400, "invalid_json", nil, "empty"},
		{"not an object", "POST", "/v1/api-keys", `[1]`, jsonKey, 400, "invalid_json", nil, "object"},
		{"unknown field", "POST", "/v1/api-keys", `{"nmae": "x"}`, jsonKey, 400, "invalid_request", "nmae", "nmae"},
		{"wrong type", "POST", "/v1/api-keys", `{"admin": "yes"}`, jsonKey, 400, "invalid_request", "admin", "boolean"},
		{"not JSON content type", "POST", "/v1/api-keys", `{}`, append([]string{"Content-Type", "text/plain"}, key...), 415, "unsupported_media_type", "content-type", "text/plain"},
		{"no content type", "POST", "/v1/api-keys", `{}`, key, 415, "unsupported_media_type", "content-type", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, tc.method, tc.path, tc.body, tc.headers...)
			checkError(t, a, tc.status, tc.code, tc.param)
			msg := a.json(t)["error"].(map[string]any)["message"].(string)
			if !strings.Contains(msg, tc.mention) {
				t.Errorf("message %q does not mention %q", msg, tc.mention)
			}
		})
	}
}

func TestJSONContentTypeWithCharsetIsAccepted(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.do(t, "POST", "/v1/api-keys", `{"name": "ci"}`, HeaderAPIKey, f.admin, "Content-Type", "application/json; charset=utf-8")
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
}

func TestAccessLog(t *testing.T) {
	var buf bytes.Buffer
	f := newFixture(t, Options{AccessLog: true, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	checkError(t, f.do(t, "GET", "/v1/api-keys", "", HeaderTraceID, "trace-logged"), 401, "missing_api_key", HeaderAPIKey)
	if a := f.do(t, "GET", "/health", ""); a.status != 200 {
		t.Fatalf("health: %d", a.status)
	}
	out := buf.String()
	for _, want := range []string{`msg=request trace_id=trace-logged method=GET path=/v1/api-keys status=401`, `path=/health status=200`} {
		if !strings.Contains(out, want) {
			t.Errorf("access log lacks %q:\n%s", want, out)
		}
	}
}
