package vertex

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

// rsaKey is a freshly generated key, shared by the tests of one run.
func rsaKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		testKey = k
	})
	return testKey
}

func serviceAccountJSON(t testing.TB, tokenURI, email string) map[string]any {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(rsaKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"type":           "service_account",
		"project_id":     "sa-project",
		"private_key_id": "kid-1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   email,
		"client_id":      "1234",
		"token_uri":      tokenURI,
	}
}

// tokenServer is a local OAuth token endpoint. It checks each JWT assertion against the test key and the
// expected claims, counts exchanges and answers access tokens "tok-1", "tok-2", ...
type tokenServer struct {
	*httptest.Server
	t         testing.TB
	clock     *fakeClock
	exchanges atomic.Int32
	delay     time.Duration
	refuse    atomic.Bool
	mu        sync.Mutex
	problems  []string
}

func newTokenServer(t testing.TB, clock *fakeClock) *tokenServer {
	ts := &tokenServer{t: t, clock: clock}
	ts.Server = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) fail(format string, args ...any) {
	ts.mu.Lock()
	ts.problems = append(ts.problems, fmt.Sprintf(format, args...))
	ts.mu.Unlock()
}

func (ts *tokenServer) check() {
	ts.t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, p := range ts.problems {
		ts.t.Error(p)
	}
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	if ts.delay > 0 {
		time.Sleep(ts.delay)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/token" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		ts.fail("token request %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if err := r.ParseForm(); err != nil {
		ts.fail("form: %v", err)
	}
	if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		ts.fail("grant_type = %q", g)
	}
	ts.verifyJWT(r.PostForm.Get("assertion"))
	if ts.refuse.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
		return
	}
	n := ts.exchanges.Add(1)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, `{"access_token":"tok-%d","expires_in":3599,"token_type":"Bearer"}`, n)
}

func (ts *tokenServer) verifyJWT(jwt string) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		ts.fail("assertion has %d parts", len(parts))
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		ts.fail("signature encoding: %v", err)
		return
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&rsaKey(ts.t).PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		ts.fail("signature does not verify: %v", err)
	}
	var header struct{ Alg, Typ, Kid string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	for i, v := range []any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			ts.fail("part %d encoding: %v", i, err)
			return
		}
		if err := json.Unmarshal(raw, v); err != nil {
			ts.fail("part %d: %v", i, err)
		}
	}
	if header.Alg != "RS256" || header.Typ != "JWT" || header.Kid != "kid-1" {
		ts.fail("header = %+v", header)
	}
	now := ts.clock.Now().Unix()
	if claims.Iss != "gateway@proj.iam.gserviceaccount.com" || claims.Scope != "https://www.googleapis.com/auth/cloud-platform" ||
		claims.Aud != ts.URL+"/token" || claims.Iat != now || claims.Exp != now+3600 {
		ts.fail("claims = %+v (now %d, aud %s)", claims, now, ts.URL+"/token")
	}
}

func saTarget(t *testing.T, base string, sa any) *providers.Target {
	tg := newTarget(base, fields(t, "cloudy_region", "us-central1", "cloudy_service_account_json", sa), nil)
	tg.APIKey = "" // the service account is the only credential
	return tg
}

var chatCall = &providers.Call{Endpoint: providers.ChatCompletions,
	Body: []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"x"}]}`)}

func TestServiceAccountTokenCachedAndRefreshed(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1750000000, 0)}
	ts := newTokenServer(t, clock)
	a := New()
	a.now = clock.Now
	tg := saTarget(t, "http://vertex.test", serviceAccountJSON(t, ts.URL+"/token", "gateway@proj.iam.gserviceaccount.com"))

	steps := []struct {
		advance       time.Duration
		wantToken     string
		wantExchanges int32
	}{
		{0, "tok-1", 1},
		{time.Minute, "tok-1", 1},
		{40 * time.Minute, "tok-1", 1},
		{13 * time.Minute, "tok-1", 1}, // 54 min: still fresh (refreshed 5 min before the 59:59 expiry)
		{time.Minute, "tok-2", 2},      // 55 min: inside the margin, refreshed
		{time.Minute, "tok-2", 2},
		{2 * time.Hour, "tok-3", 3}, // long expired
	}
	for i, s := range steps {
		clock.Add(s.advance)
		for j := 0; j < 3; j++ {
			req, err := a.NewRequest(context.Background(), tg, chatCall)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if got := req.Header.Get("Authorization"); got != "Bearer "+s.wantToken {
				t.Errorf("step %d: Authorization = %q, want Bearer %s", i, got, s.wantToken)
			}
			if !strings.Contains(req.URL.Path, "/projects/sa-project/") {
				t.Errorf("step %d: path %s does not use the service account's project", i, req.URL.Path)
			}
		}
		if n := ts.exchanges.Load(); n != s.wantExchanges {
			t.Errorf("step %d: %d exchanges, want %d", i, n, s.wantExchanges)
		}
	}
	ts.check()
}

// TestServiceAccountHammer calls concurrently with a cold cache: exactly one exchange runs, and everyone gets
// its token.
func TestServiceAccountHammer(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1750000000, 0)}
	ts := newTokenServer(t, clock)
	ts.delay = 50 * time.Millisecond
	a := New()
	a.now = clock.Now
	tg := saTarget(t, "http://vertex.test", serviceAccountJSON(t, ts.URL+"/token", "gateway@proj.iam.gserviceaccount.com"))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := a.NewRequest(context.Background(), tg, chatCall)
			if err != nil {
				errs <- err
				return
			}
			if got := req.Header.Get("Authorization"); got != "Bearer tok-1" {
				errs <- fmt.Errorf("Authorization = %q", got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.exchanges.Load(); n != 1 {
		t.Errorf("%d exchanges, want 1", n)
	}
	ts.check()
}

func TestServiceAccountAsString(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1750000000, 0)}
	ts := newTokenServer(t, clock)
	a := New()
	a.now = clock.Now
	raw, _ := json.Marshal(serviceAccountJSON(t, ts.URL+"/token", "gateway@proj.iam.gserviceaccount.com"))
	tg := saTarget(t, "http://vertex.test", string(raw))
	tg.APIKey = "ya29.ignored" // the service account wins over a bearer token
	req, err := a.NewRequest(context.Background(), tg, chatCall)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer tok-1" {
		t.Errorf("Authorization = %q", got)
	}
	ts.check()
}

func TestServiceAccountRefused(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1750000000, 0)}
	ts := newTokenServer(t, clock)
	ts.refuse.Store(true)
	a := New()
	a.now = clock.Now
	tg := saTarget(t, "http://vertex.test", serviceAccountJSON(t, ts.URL+"/token", "gateway@proj.iam.gserviceaccount.com"))
	for i := 0; i < 2; i++ { // a refusal is not cached
		_, err := a.NewRequest(context.Background(), tg, chatCall)
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Status != http.StatusUnauthorized || ge.Param != "cloudy_service_account_json" ||
			!strings.Contains(ge.Message, "Invalid JWT Signature.") {
			t.Fatalf("err = %v, want 401 naming cloudy_service_account_json", err)
		}
	}
	ts.refuse.Store(false)
	req, err := a.NewRequest(context.Background(), tg, chatCall)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer tok-1" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestServiceAccountErrors(t *testing.T) {
	good := func(t *testing.T) map[string]any {
		return serviceAccountJSON(t, "https://oauth2.googleapis.com/token", "a@b.iam.gserviceaccount.com")
	}
	tests := []struct {
		name   string
		edit   func(map[string]any) any
		status int
		param  string
	}{
		{"not an object", func(map[string]any) any { return []int{1} }, 400, "cloudy_service_account_json"},
		{"no email", func(m map[string]any) any { delete(m, "client_email"); return m }, 400, "cloudy_service_account_json.client_email"},
		{"bad key", func(m map[string]any) any {
			m["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
			return m
		},
			400, "cloudy_service_account_json.private_key"},
		{"no key", func(m map[string]any) any { delete(m, "private_key"); return m }, 400, "cloudy_service_account_json.private_key"},
		{"bad token_uri", func(m map[string]any) any { m["token_uri"] = "file:///etc/passwd"; return m }, 400, "cloudy_service_account_json.token_uri"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().NewRequest(context.Background(), saTarget(t, "", tc.edit(good(t))), chatCall)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != tc.status || ge.Param != tc.param {
				t.Fatalf("err = %v, want %d naming %q", err, tc.status, tc.param)
			}
		})
	}
}

func TestServiceAccountPKCS1Key(t *testing.T) {
	m := serviceAccountJSON(t, "https://oauth2.googleapis.com/token", "a@b.iam.gserviceaccount.com")
	m["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey(t))}))
	raw, _ := json.Marshal(m)
	if _, err := parseAccount(raw); err != nil {
		t.Fatal(err)
	}
}

// TestServiceAccountWaitHonoursContext: a caller waiting for another's exchange gives up with its context.
func TestServiceAccountWaitHonoursContext(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1750000000, 0)}
	ts := newTokenServer(t, clock)
	ts.delay = 300 * time.Millisecond
	a := New()
	a.now = clock.Now
	tg := saTarget(t, "http://vertex.test", serviceAccountJSON(t, ts.URL+"/token", "gateway@proj.iam.gserviceaccount.com"))
	started := make(chan struct{})
	go func() {
		close(started)
		_, _ = a.NewRequest(context.Background(), tg, chatCall)
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // let the first caller start its exchange
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := a.NewRequest(ctx, tg, chatCall)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusRequestTimeout {
		t.Fatalf("err = %v, want 408", err)
	}
}

func TestTokenEndpointUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	uri := srv.URL + "/token"
	srv.Close()
	_, err := New().NewRequest(context.Background(), saTarget(t, "", serviceAccountJSON(t, uri, "a@b")), chatCall)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusBadGateway || ge.Code != gwerr.CodeUpstream {
		t.Fatalf("err = %v, want 502 upstream_error", err)
	}
}
