package runtime

import (
	"net/http"
	"strconv"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
)

// admit asks the workspace's rate-limit policies whether the request may go on. A refusal is a 429 with
// retry-after and the x-ratelimit-* figures of the policy that refused it.
func (e *Engine) admit(req *Request) (ratelimit.Admission, *gwerr.Error) {
	if e.limiter == nil || req.Key == nil {
		return ratelimit.Admission{}, nil
	}
	attrs := policyAttrs(req)
	adm, exceeded := e.limiter.Admit(&attrs)
	if exceeded == nil {
		return adm, nil
	}
	h := make(http.Header, 4)
	h.Set("Retry-After", strconv.FormatInt(exceeded.RetryAfterSeconds(), 10))
	h.Set("X-Ratelimit-Limit", formatLimit(exceeded.Limit))
	h.Set("X-Ratelimit-Remaining", "0")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(exceeded.RetryAfterSeconds(), 10))
	return adm, &gwerr.Error{Status: http.StatusTooManyRequests, Code: gwerr.CodeRateLimited, Message: exceeded.Error(), Header: h, Err: exceeded}
}

func formatLimit(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
