package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
)

// Endpoint is an OpenAI-shaped operation the gateway routes.
type Endpoint uint8

// The routed endpoints.
const (
	ChatCompletions Endpoint = iota + 1
	Completions
	Embeddings
)

// Path is the endpoint's path below the provider's base URL, as OpenAI names it.
func (e Endpoint) Path() string {
	switch e {
	case ChatCompletions:
		return "/chat/completions"
	case Completions:
		return "/completions"
	case Embeddings:
		return "/embeddings"
	}
	return ""
}

// Target is a resolved provider target: everything an adapter needs to call it. The runtime builds it per
// attempt from the config, the stored provider and the request's headers.
type Target struct {
	Provider string // canonical identifier
	BaseURL  string // custom_host or the provider's default; no trailing slash
	APIKey   string // api_key, the stored provider's, or the caller's Bearer token
	// Fields are provider-specific settings: resource_name, deployments, cloudz_*, llmvendor_organization, ...
	Fields map[string]json.RawMessage
	// Forward holds the caller's headers that the config or x-gateway-forward-headers names, to send unchanged.
	Forward http.Header
	// Header reads one of the caller's request headers (the cloud headers x-gateway-cloudx-* and the like).
	// It is valid only while the call is being built.
	Header func(name string) string
}

// StringField returns a string provider field, or "".
func (t *Target) StringField(name string) string {
	raw, ok := t.Fields[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// Call is one call of an endpoint: the OpenAI-shaped request body (overrides applied) and what the runtime
// already knows of it.
type Call struct {
	Endpoint Endpoint
	Body     []byte
	Stream   bool
}

// Adapter turns a call into the provider's HTTP request. Adapters whose wire format differs from OpenAI's also
// implement the optional interfaces below; an adapter that speaks OpenAI's format needs only NewRequest.
type Adapter interface {
	NewRequest(ctx context.Context, t *Target, c *Call) (*http.Request, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Adapter{}
)

// Register makes an adapter available under a provider identifier. It panics on a duplicate: two adapters for
// one identifier is a programming error. Adapters call it from init.
func Register(id string, a Adapter) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[id]; dup {
		panic(fmt.Sprintf("providers: adapter %q registered twice", id))
	}
	registry[id] = a
}

// Lookup returns the adapter registered for a canonical identifier.
func Lookup(id string) (Adapter, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	a, ok := registry[id]
	return a, ok
}

// Registered lists the identifiers that have an adapter, in order.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for id := range registry {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
