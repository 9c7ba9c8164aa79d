package runtime

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
)

// admit asks the workspace's rate-limit policies whether the request may go on. A refusal is a 429 with
// retry-after and the x-ratelimit-* figures of the policy that refused it.
func (e *Engine) admit(req *Request) (ratelimit.Admission, *gwerr.Error) {
	if e.limiter == nil || req.Key == nil {
		return ratelimit.Admission{}, nil
	}
	attrs := ratelimit.Attrs{WorkspaceID: req.Key.WorkspaceID, APIKey: req.Key.ID, Provider: req.Provider,
		VirtualKey: req.VirtualKey, Metadata: req.Metadata, Body: req.Body}
	if c := strings.TrimSpace(req.Config); c != "" && c[0] != '{' {
		attrs.Config = c
	}
	adm, exceeded := e.limiter.Admit(&attrs)
	if exceeded == nil {
		return adm, nil
	}
	h := make(http.Header, 4)
	h.Set("Retry-After", strconv.FormatInt(exceeded.RetryAfterSeconds(), 10))
	h.Set("X-Ratelimit-Limit", formatLimit(exceeded.Limit))
	h.Set("X-Ratelimit-Remaining", "0")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(exceeded.RetryAfterSeconds(), 10))
	return adm, &gwerr.Error{Status: http.StatusTooManyRequests, Code: gwerr.CodeRateLimited, Message: exceeded.Error(), Header: h}
}

// countTokens reports the answer's usage to the tokens policies that admitted the request: at once for a
// whole answer, when the stream closes for a streamed one. Answers served from the cache cost the provider
// nothing and count nothing; neither do failed ones.
func (e *Engine) countTokens(req *Request, adm *ratelimit.Admission, resp *Response) {
	if !adm.CountsTokens() || resp.Status < 200 || resp.Status > 299 || resp.CacheStatus == CacheHit || resp.CacheStatus == CacheSemanticHit {
		return
	}
	if resp.Stream == nil {
		if tokens, ok := answerUsage(resp.Body); ok {
			e.limiter.AddTokens(adm, int(tokens))
		}
		return
	}
	a := *adm // the stream outlives Do's frame
	limiter := e.limiter
	resp.Stream = newUsageStream(resp.Stream, len(req.Body), func(tokens int64) { limiter.AddTokens(&a, int(tokens)) })
}

// rateLimitHeaders records the x-ratelimit-* figures of the most constrained policy on the answer; routes
// writes them as headers (without building a header map per request).
func rateLimitHeaders(adm *ratelimit.Admission, resp *Response) {
	limit, remaining, reset, ok := adm.Headers()
	if !ok {
		return
	}
	resp.RateLimit = RateLimitFigures{Limit: limit, Remaining: max(remaining, 0), Reset: reset, Set: true}
}

func formatLimit(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
