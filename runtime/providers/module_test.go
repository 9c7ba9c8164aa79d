package providers_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// fakeLLM is a provider module that exists only in this test: one descriptor, registered from init like the
// shipped adapters, with a field (fake_zone) and a header (x-gateway-fake-zone) of its own. Nothing else in
// the gateway names it; TestProviderModule shows that config validation, the bootstrap file, the provider
// headers and circuit-breaker identity all take it from the registry.
const fakeLLM = "fake-llm"

func init() {
	providers.Register(providers.Descriptor{
		ID:      fakeLLM,
		Aliases: []string{"fakey"},
		BaseURL: "http://fake-llm.invalid/v1",
		Fields: []providers.Field{{Name: "fake_zone", Kind: providers.String, Address: true,
			Check: func(o *jsonfield.Object, name string) error {
				if z, _, _ := o.Str(name, false, true); z != "eu" && z != "us" {
					return jsonfield.Invalid(o.At(name), "must be \"eu\" or \"us\", not %q", z)
				}
				return nil
			}}},
		Headers:     []providers.Header{{Name: "x-gateway-fake-zone", Address: true}},
		Credentials: []string{"fake_zone"},
		KeySets:     [][]string{{"fake_zone"}},
		New:         func() providers.Adapter { return fakeAdapter{} },
	})
}

// fakeAdapter sends the zone, from the field or else the header, upstream in X-Zone.
type fakeAdapter struct{}

func (fakeAdapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.BaseURL+c.Endpoint.Path(), bytes.NewReader(c.Body))
	if err != nil {
		return nil, err
	}
	zone := t.StringField("fake_zone")
	if zone == "" {
		zone = t.Header("x-gateway-fake-zone")
	}
	req.Header.Set("X-Zone", zone)
	return req, nil
}

// zoneUpstream answers for the fake provider: 503 in zones listed in down, else a completion. It records the
// zone of every call.
type zoneUpstream struct {
	mu    sync.Mutex
	zones []string
	down  map[string]bool
}

func (u *zoneUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	zone := r.Header.Get("X-Zone")
	u.mu.Lock()
	u.zones = append(u.zones, zone)
	down := u.down[zone]
	u.mu.Unlock()
	status, body := 200, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`
	if down {
		status, body = 503, `{"error":{"message":"down"}}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

func (u *zoneUpstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.zones) == 0 {
		return ""
	}
	return u.zones[len(u.zones)-1]
}

func TestProviderModule(t *testing.T) {
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	up := &zoneUpstream{down: map[string]bool{}}
	e := runtime.New(st, runtime.Options{Transport: up})
	const wsID = "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2910"
	key := &storage.APIKey{WorkspaceID: wsID}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	do := func(t *testing.T, req *runtime.Request) (*runtime.Response, error) {
		t.Helper()
		req.Endpoint, req.Key, req.Body = providers.ChatCompletions, key, schema.NewBody(body)
		if req.Header == nil {
			req.Header = func(string) string { return "" }
		}
		return e.Do(context.Background(), req)
	}

	t.Run("header config", func(t *testing.T) {
		// The field completes the target (the descriptor's key set) and reaches the adapter; the alias is
		// the provider's.
		resp, err := do(t, &runtime.Request{Config: `{"provider": "fakey", "fake_zone": "eu"}`})
		if err != nil || resp.Status != 200 || resp.Provider != fakeLLM || up.last() != "eu" {
			t.Fatalf("Do = %+v, %v; upstream saw zone %q", resp, err, up.last())
		}
		// The adapter's own check runs in config validation, and names the field.
		_, err = config.Parse([]byte(`{"provider": "fake-llm", "fake_zone": "mars"}`))
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Param != "fake_zone" || !strings.Contains(ge.Message, `"eu" or "us"`) {
			t.Errorf("a bad zone: %v", err)
		}
		// Without its key set or an api_key the target is incomplete, as for any provider.
		if _, err := config.Parse([]byte(`{"provider": "fake-llm"}`)); err == nil || !strings.Contains(err.Error(), "api_key") {
			t.Errorf("no credentials: %v", err)
		}
	})

	t.Run("bootstrap file", func(t *testing.T) {
		file := `{"workspaces": [{"id": "` + wsID + `", "slug": "default", "organisation_id": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"}],
			"providers": [{"slug": "fake-us", "provider": "fake-llm", "fake_zone": "us"}],
			"configs": [{"id": "fake-cfg", "config": {"provider": "fakey", "fake_zone": "eu"}}]}`
		f, err := bootstrap.Parse([]byte(file), t.TempDir())
		if err != nil {
			t.Fatal(err) // fake_zone stands in for api_key: it is one of the descriptor's credentials
		}
		if _, err := bootstrap.Apply(st, f); err != nil {
			t.Fatal(err)
		}
		resp, err := do(t, &runtime.Request{VirtualKey: "fake-us"})
		if err != nil || resp.Status != 200 || up.last() != "us" {
			t.Fatalf("Do = %+v, %v; upstream saw zone %q", resp, err, up.last())
		}
		_, err = bootstrap.Parse([]byte(`{"providers": [{"slug": "f", "provider": "fake-llm", "fake_zone": "mars"}]}`), t.TempDir())
		var ve *bootstrap.ValidationError
		if !errors.As(err, &ve) || ve.Problems[0].Path != "providers[0].fake_zone" {
			t.Errorf("a bad zone in the file: %v", err)
		}
	})

	t.Run("provider headers and identity", func(t *testing.T) {
		zone := "eu"
		header := func(name string) string {
			if name == "x-gateway-fake-zone" {
				return zone
			}
			return ""
		}
		// A breaker that opens at the first failure: the zone header addresses the target, so a failing eu
		// opens eu's breaker and leaves us's closed.
		cfg := `{"retry": {"attempts": 0}, "cb_config": {"failure_threshold": 1, "cooldown_interval": 30000}}`
		up.down["eu"] = true
		if resp, err := do(t, &runtime.Request{Provider: fakeLLM, Header: header, Config: cfg}); err != nil || resp.Status != 503 {
			t.Fatalf("eu: %+v, %v", resp, err)
		}
		if _, err := do(t, &runtime.Request{Provider: fakeLLM, Header: header, Config: cfg}); err == nil || !strings.Contains(err.Error(), "circuit") {
			t.Fatalf("eu again: %v, want its open circuit", err)
		}
		zone = "us"
		if resp, err := do(t, &runtime.Request{Provider: fakeLLM, Header: header, Config: cfg}); err != nil || resp.Status != 200 || up.last() != "us" {
			t.Fatalf("us: %+v, %v (its breaker must be its own)", resp, err)
		}
	})
}
