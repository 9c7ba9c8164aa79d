package bootstrap

import (
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// UsageLimit is an entry of "usage_limit_policies": a usage-limit policy (a budget) with its workspace.
type UsageLimit struct {
	Path      string
	Workspace string
	Policy    *storage.UsageLimitPolicy // ID and the policy's fields; no workspace or times
}

// parseUsageLimit reads an entry of "usage_limit_policies": a usage-limit policy object (runtime/ratelimit's
// rules, as POST /v1/policies/usage-limits checks them) with a required id and a "workspace".
func parseUsageLimit(o *object) UsageLimit {
	u := UsageLimit{Path: o.Path}
	id := ratelimit.ReadPolicyID(o, true)
	u.Workspace = workspaceRef(o)
	u.Policy = ratelimit.ReadUsageLimit(o)
	u.Policy.ID = id
	o.Finish()
	return u
}
