package batch

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// Endpoints are the batch endpoints (SPEC.md), with the engine's endpoint for each.
var Endpoints = map[string]providers.Endpoint{
	"/v1/chat/completions": providers.ChatCompletions,
	"/v1/completions":      providers.Completions,
	"/v1/embeddings":       providers.Embeddings,
}

// EndpointNames lists Endpoints' keys in SPEC.md's order, for messages.
var EndpointNames = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"}

// Bounds of the headers a batch records besides the gateway's own.
const (
	maxRecordedHeaders   = 64
	maxRecordedHeaderLen = 8 << 10
)

// Capture records what shapes a batch's lines from the request that creates it: req's gateway headers (as
// routes read them for an inference request) and the values of the other headers a line's request may read
// through Request.Header: those x-gateway-forward-headers or the config's forward_headers name, and the
// provider-specific ones the adapters declare. header reads the creating request's headers; configs finds a
// saved config when req.Config names one (nil: saved configs' forward_headers are not looked up).
func Capture(req *runtime.Request, header func(name string) string, configs *storage.DocStore[storage.Config, *storage.Config]) storage.BatchRequest {
	rec := storage.BatchRequest{Provider: req.Provider, Authorization: req.Authorization, VirtualKey: req.VirtualKey,
		Config: req.Config, CustomHost: req.CustomHost, Metadata: req.Metadata, TraceID: req.TraceID,
		TimeoutMS: req.Timeout.Milliseconds(), ForwardNames: req.ForwardNames, CacheRefresh: req.CacheRefresh,
		CacheNS: req.CacheNS}
	if req.Key != nil {
		rec.KeyID = req.Key.ID
	}
	names := append([]string(nil), req.ForwardNames...)
	names = append(names, configForwardNames(req, configs)...)
	for _, id := range providers.Identifiers() {
		if d, ok := providers.Describe(id); ok {
			for _, h := range d.Headers {
				names = append(names, h.Name)
			}
		}
	}
	for _, name := range names {
		name = strings.ToLower(name)
		if _, seen := rec.Headers[name]; seen || len(rec.Headers) >= maxRecordedHeaders {
			continue
		}
		if v := header(name); v != "" && len(v) <= maxRecordedHeaderLen {
			if rec.Headers == nil {
				rec.Headers = map[string]string{}
			}
			rec.Headers[name] = strings.Clone(v)
		}
	}
	return rec
}

// configForwardNames returns the header names of every forward_headers list of the request's config, inline
// or saved. The config itself is checked when a line runs, as a live request's would be.
func configForwardNames(req *runtime.Request, configs *storage.DocStore[storage.Config, *storage.Config]) []string {
	raw := []byte(strings.TrimSpace(req.Config))
	if len(raw) == 0 {
		return nil
	}
	if raw[0] != '{' {
		if configs == nil || req.Key == nil {
			return nil
		}
		saved, err := configs.Get(req.Key.WorkspaceID, req.Config)
		if err != nil {
			return nil
		}
		raw = saved.Config
	}
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return nil
	}
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, item := range v {
				if list, ok := item.([]any); ok && k == "forward_headers" {
					for _, n := range list {
						if s, ok := n.(string); ok {
							names = append(names, s)
						}
					}
					continue
				}
				walk(item)
			}
		case []any:
			for _, item := range v {
				walk(item)
			}
		}
	}
	walk(tree)
	return names
}

// lineRequests makes the engine requests of a batch's lines: every line shares what the batch recorded.
type lineRequests struct {
	ep      providers.Endpoint
	path    string
	key     *storage.APIKey
	rec     *storage.BatchRequest
	timeout time.Duration
}

func newLineRequests(b *storage.Batch) *lineRequests {
	return &lineRequests{ep: Endpoints[b.Endpoint], path: b.Endpoint, rec: &b.Request,
		key:     &storage.APIKey{ID: b.Request.KeyID, WorkspaceID: b.WorkspaceID},
		timeout: time.Duration(b.Request.TimeoutMS) * time.Millisecond}
}

// header answers Request.Header with the recorded headers.
func (l *lineRequests) header(name string) string {
	if v, ok := l.rec.Headers[name]; ok {
		return v
	}
	return l.rec.Headers[strings.ToLower(name)]
}

// request is the engine request of one line, as the live request that made the batch would have been.
func (l *lineRequests) request(body schema.Body) *runtime.Request {
	r := l.rec
	return &runtime.Request{Endpoint: l.ep, URLPath: l.path, Body: body, Key: l.key,
		Provider: r.Provider, Authorization: r.Authorization, VirtualKey: r.VirtualKey, Config: r.Config,
		CustomHost: r.CustomHost, Metadata: r.Metadata, TraceID: r.TraceID, Timeout: l.timeout,
		ForwardNames: r.ForwardNames, CacheRefresh: r.CacheRefresh, CacheNS: r.CacheNS, Header: l.header}
}
