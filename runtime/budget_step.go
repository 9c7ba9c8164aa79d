package runtime

import (
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// budgetHold is one request's reservation against the usage-limit policies that apply to it (DESIGN.md
// "Budgets"): ratelimit's Hold, under a name of this package so that it can carry settle. A nil hold holds
// nothing; its methods are safe to call on nil.
type budgetHold ratelimit.Hold

// reserveBudget reserves the request's largest possible cost with every usage-limit policy that applies to
// it, or refuses it with 429 budget_exceeded. In a workspace without usage-limit policies it costs a map read
// and an atomic load and allocates nothing (BenchmarkReserveBudgetNoPolicy).
func (e *Engine) reserveBudget(req *Request) (*budgetHold, *gwerr.Error) {
	if req.Key == nil || !e.budgets.Enforces(req.Key.WorkspaceID) {
		return nil, nil
	}
	attrs := policyAttrs(req)
	hold, exceeded := e.budgets.Reserve(&attrs)
	if exceeded != nil {
		return nil, &gwerr.Error{Status: http.StatusTooManyRequests, Code: gwerr.CodeBudgetExceeded, Message: exceeded.Error(), Err: exceeded}
	}
	return (*budgetHold)(hold), nil
}

// policyAttrs is what the request shows rate-limit and usage-limit policies.
func policyAttrs(req *Request) ratelimit.Attrs {
	attrs := ratelimit.Attrs{WorkspaceID: req.Key.WorkspaceID, APIKey: req.Key.ID, Provider: req.Provider,
		VirtualKey: req.VirtualKey, Metadata: req.Metadata, Body: &req.Body}
	if c := strings.TrimSpace(req.Config); c != "" && c[0] != '{' {
		attrs.Config = c
	}
	return attrs
}

// settle replaces the reservation by what the answer really used (resp.Usage), exactly once; resp nil, or an
// answer without usage, releases the reservation.
func (h *budgetHold) settle(resp *Response) {
	if h == nil {
		return
	}
	if resp == nil || !resp.Usage.Known {
		(*ratelimit.Hold)(h).Settle(nil)
		return
	}
	u := &resp.Usage
	(*ratelimit.Hold)(h).Settle(&ratelimit.Spend{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CostUSD: u.CostUSD, CostKnown: u.CostKnown})
}

// BudgetUsage reports a usage-limit policy's spend in its current period, for the policy's view. Without
// budgets (a nil engine or enforcer) it is all zeros.
func (e *Engine) BudgetUsage(pol *storage.UsageLimitPolicy) ratelimit.PolicyUsage {
	if e == nil {
		return ratelimit.PolicyUsage{}
	}
	return e.budgets.Usage(pol)
}
