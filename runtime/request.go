package runtime

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// Request is one inference request as routes hands it over: the caller's body and the gateway headers, parsed.
// It is created per request and is not safe for concurrent use.
type Request struct {
	Endpoint providers.Endpoint
	URLPath  string
	Body     []byte // the caller's JSON body; the engine does not modify it
	Stream   bool
	Key      *storage.APIKey

	// Gateway headers.
	Provider      string // x-gateway-provider
	Authorization string // the caller's Bearer token (Authorization header), for the provider
	VirtualKey    string // x-gateway-virtual-key
	Config        string // x-gateway-config: inline JSON or a saved config ID
	CustomHost    string // x-gateway-custom-host
	Metadata      map[string]string
	TraceID       string
	Timeout       time.Duration // x-gateway-request-timeout; 0 when absent
	ForwardNames  []string      // x-gateway-forward-headers
	CacheRefresh  bool          // x-gateway-cache-force-refresh
	CacheNS       string        // x-gateway-cache-namespace

	// Header reads any of the caller's request headers; valid only during Engine.Do.
	Header func(name string) string

	// RenderPrompt renders another prompt template with the request's variables, for targets that name a
	// prompt_id (DESIGN.md): set by /v1/prompts/{id}/completions, nil on other endpoints.
	RenderPrompt func(promptID string) ([]byte, error)

	// Cancel, when set, cancels the context given to Engine.Do, and the engine ends the request through it when
	// the request deadline passes, instead of deriving a context of its own: one context less per request. The
	// caller then ends that context itself once the answer is sent (a stream: once it is closed).
	Cancel context.CancelCauseFunc
}

// Response is the answer to send back. Exactly one of Body and Stream is set. The caller must Close the
// response, which releases the upstream connection.
type Response struct {
	Status int
	Header http.Header // upstream headers worth passing on (content type, request id, rate-limit headers)
	Body   []byte
	Stream io.ReadCloser // an upstream SSE body, for streamed 2xx answers

	Provider    string // canonical identifier of the provider that answered
	Retries     int    // retries made on the target that answered
	OptionPath  string // the answering target's path, e.g. "config.targets[1]"
	CacheStatus string // HIT, SEMANTIC HIT, MISS, REFRESH or DISABLED
	RateLimit   RateLimitFigures
}

// RateLimitFigures are the x-ratelimit-limit, -remaining and -reset (seconds) of the most constrained
// rate-limit policy that admitted the request; Set is false when no policy applied.
type RateLimitFigures struct {
	Limit, Remaining float64
	Reset            int64
	Set              bool
}

// Close releases the upstream stream, if any.
func (r *Response) Close() error {
	if r.Stream != nil {
		return r.Stream.Close()
	}
	return nil
}
