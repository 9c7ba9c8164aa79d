package runtime

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/llmgw/gateway/runtime/cache"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/responses"
	"github.com/llmgw/gateway/storage"
)

// Cache statuses of x-gateway-cache-status.
const (
	CacheHit         = "HIT"
	CacheSemanticHit = "SEMANTIC HIT"
	CacheMiss        = "MISS"
	CacheRefresh     = "REFRESH"
	CacheDisabled    = "DISABLED"
)

// defaultMaxAge is how long a cached answer lives when the config's cache sets no max_age (DESIGN.md).
const defaultMaxAge = 7 * 24 * time.Hour

// cacheStep is the cache's part in one target's call: the key looked up, and what to store after a miss.
type cacheStep struct {
	ws      string
	key     cache.Key
	expires time.Time
	status  string // MISS or REFRESH: the answer about to be fetched

	// responses: the answer is a responses API object or event stream (runtime/responses records and
	// replays those), not a chat completion's.
	responses bool
	// messages: the answer is an Anthropic message or event stream (anthropicmsg records and replays those).
	messages bool

	// Semantic mode: the partition and the query's embedding, stored beside the answer.
	semantic  bool
	partition cache.PartitionKey
	vector    []float32
}

// cacheable reports whether answers of the endpoint can be cached: chat and text completions, embeddings,
// responses, Anthropic's messages, and the JSON media endpoints (image generations, moderations, rerank); never
// uploads or audio.
func cacheable(ep providers.Endpoint) bool {
	switch ep {
	case providers.ChatCompletions, providers.Completions, providers.Embeddings, providers.Responses, providers.Messages,
		providers.ImagesGenerations, providers.Moderations, providers.Rerank:
		return true
	}
	return false
}

// cacheOn reports whether the target's answer to the request goes through the cache: its config enables one,
// the request has a workspace, and the endpoint's answers can be cached. Streams are recorded into the whole
// answer they stand for, and replayed from it (chat chunks, responses events, Anthropic's message events).
func cacheOn(n *config.Node, req *Request) bool {
	return n.Cache != nil && req.Key != nil && cacheable(req.Endpoint)
}

// keyedByAddress reports whether the cache's key of t needs the target's address (targetID) beside its base
// URL: the provider has fields, or builds its URL per request.
func keyedByAddress(t *providers.Target) bool { return len(t.Fields) > 0 || t.BaseURL == "" }

// cacheLookup consults the cache of a target whose config enables one; address is its targetID's. It returns the cached answer as an
// outcome on a hit; otherwise the step that stores the coming answer (nil when the request cannot be cached).
// A lookup failure is logged and treated as a miss: the cache must never fail a request. body is the request as
// the target gets it, before metadata fills any field (metadata._user): a namespace must share answers across
// metadata, and without one the metadata is in the key already.
func (e *Engine) cacheLookup(ctx context.Context, st *state, n *config.Node, t *providers.Target, address string, adapter providers.Adapter, body []byte) (*cacheStep, *outcome) {
	req := st.req
	if !cacheOn(n, req) {
		return nil, nil
	}
	ws := req.Key.WorkspaceID
	target := cache.Target{Provider: t.Provider, BaseURL: t.BaseURL}
	if keyedByAddress(t) {
		// Azure deployments, Bedrock regions, Vertex projects: the address is in fields and headers.
		target.BaseURL += "|" + address
	}
	ep := req.Endpoint.Path()
	key, err := cache.KeyOf(ws, target, ep, body, req.CacheNS, req.Metadata)
	if err != nil {
		return nil, nil
	}
	maxAge := defaultMaxAge
	if n.Cache.MaxAge != nil { // max_age 0: answers are looked up but never kept
		maxAge = time.Duration(*n.Cache.MaxAge) * time.Second
	}
	now := e.now()
	status := CacheMiss
	if req.CacheRefresh {
		status = CacheRefresh
	} else if out := e.cachedOutcome(req, ws, key, now, CacheHit); out != nil {
		return nil, out // a hit needs no step: made after the lookup, it costs a hit nothing
	}
	step := &cacheStep{ws: ws, key: key, expires: now.Add(maxAge), status: status, responses: req.Endpoint == providers.Responses,
		messages: req.Endpoint == providers.Messages}
	if n.Cache.Mode != "semantic" || req.Endpoint != providers.ChatCompletions {
		return step, nil
	}
	partition, query, ok := cache.Partition(ws, target, ep, body, req.CacheNS, req.Metadata)
	if !ok {
		return step, nil
	}
	settings := e.semanticSettings(ws)
	vec, err := e.embed(ctx, st, t, adapter, settings, query)
	if err != nil {
		e.log.Warn("semantic cache: embedding failed; looking up exact matches only", "trace_id", req.TraceID, "err", err)
		return step, nil
	}
	step.semantic, step.partition, step.vector = true, partition, vec
	if req.CacheRefresh {
		return step, nil
	}
	if near, _, ok := e.semantic.Search(ws, partition, vec, float32(settings.Threshold)); ok && near != key {
		if out := e.cachedOutcome(req, ws, near, now, CacheSemanticHit); out != nil {
			return nil, out
		}
	}
	return step, nil
}

// cachedOutcome reads a stored answer and shapes it for the request: as it is, or replayed as an event
// stream for a streamed request. nil on a miss.
func (e *Engine) cachedOutcome(req *Request, ws string, key cache.Key, now time.Time, status string) *outcome {
	a, ok, err := e.store.Cache.Get(ws, key, now)
	if err != nil {
		e.log.Warn("cache read failed; treating it as a miss", "trace_id", req.TraceID, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	out := &outcome{status: a.Status, header: jsonContentType, cacheStatus: status}
	if a.ContentType != "application/json" { // put always records one
		out.header = http.Header{"Content-Type": {a.ContentType}}
	}
	if !req.Stream {
		out.body = a.Body
		return out
	}
	var stream io.ReadCloser
	switch req.Endpoint {
	case providers.Responses:
		stream, err = responses.Replay(a.Body)
	case providers.Messages:
		stream, err = anthropicmsg.Replay(a.Body)
	default:
		stream, err = cache.Replay(a.Body)
	}
	if err != nil {
		e.log.Warn("cached answer cannot be replayed as a stream; calling the provider", "trace_id", req.TraceID, "err", err)
		return nil
	}
	out.header = nil
	out.stream = &attemptStream{ReadCloser: stream, cancel: func() {}}
	return out
}

// store keeps a 2xx answer of the provider: a whole answer at once, a streamed one when it has ended well
// (the recorder assembles it; a stream that breaks off is never stored).
func (s *cacheStep) store(e *Engine, out *outcome) {
	out.cacheStatus = s.status
	if out.status < 200 || out.status > 299 || !s.expires.After(e.now()) {
		return
	}
	if out.stream == nil {
		s.put(e, out.status, out.header.Get("Content-Type"), out.body)
		return
	}
	src := out.stream.ReadCloser
	if s.responses {
		// A responses stream ends with the whole response object; one that failed is not kept.
		out.stream.ReadCloser = responses.Record(src, func(final json.RawMessage) {
			var head struct {
				Status string `json:"status"`
			}
			if final != nil && json.Unmarshal(final, &head) == nil && head.Status != "failed" {
				s.put(e, http.StatusOK, "application/json", final)
			}
		})
		return
	}
	if s.messages {
		out.stream.ReadCloser = anthropicmsg.Record(src, func(message []byte) {
			s.put(e, http.StatusOK, "application/json", message)
		})
		return
	}
	out.stream.ReadCloser = cache.NewRecorder(src, func(answer []byte) {
		s.put(e, http.StatusOK, "application/json", answer)
	})
}

func (s *cacheStep) put(e *Engine, status int, contentType string, body []byte) {
	if contentType == "" {
		contentType = "application/json"
	}
	now := e.now()
	a := &storage.CachedAnswer{Status: status, ContentType: contentType, Body: body, CreatedAt: now, ExpiresAt: s.expires}
	if err := e.store.Cache.Put(s.ws, s.key, a); err != nil {
		e.log.Warn("cache write failed", "err", err)
		return
	}
	if s.semantic {
		if err := e.semantic.Add(s.ws, s.partition, s.vector, s.key, s.expires); err != nil {
			e.log.Warn("semantic cache: vector not kept", "err", err)
		}
	}
}

// SweepCache deletes expired cache entries: a bounded batch of stored answers and vectors, and the expired
// vectors of the semantic index in memory. The owner calls it from a ticker (cmd/gateway: every minute).
func (e *Engine) SweepCache() (deleted int, err error) {
	now := e.now()
	e.semantic.Sweep(now)
	if e.store == nil {
		return 0, nil
	}
	return e.store.Cache.Sweep(now)
}
