package ratelimit

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// DefaultReserveOutputTokens is the output a reservation counts for a request that sets no max_tokens,
// max_completion_tokens or max_output_tokens, of a model the catalogue gives no MaxOutputTokens.
const DefaultReserveOutputTokens = 4096

// maxReserveOutputTokens bounds the output a request's own max_tokens may make a reservation count.
const maxReserveOutputTokens = 1 << 30

// maxUnpricedModels bounds the model names remembered as warned about, so that callers inventing names cannot
// grow the set without end; past it, unpriced models are no longer reported.
const maxUnpricedModels = 1024

// BudgetOptions configure NewBudgets.
type BudgetOptions struct {
	// Now is the clock; periods are computed from it in UTC. Default: time.Now.
	Now func() time.Time
	// FlushInterval is how often changed spend is saved, and so how much a crash can lose. Default 1 s.
	FlushInterval time.Duration
	// Logger receives alerts, unpriced models, storage errors and policies that cannot be enforced.
	// Default: slog.Default().
	Logger *slog.Logger
	// OnAlert is called, outside any lock, the first time in a period that a group's spend reaches its policy's
	// alert_threshold (gateway_budget_alerts_total). Nil: none.
	OnAlert func(policyID string)
	// OnExceeded is called for each refused request (gateway_budget_exceeded_total). Nil: none.
	OnExceeded func(policyID string)
	// Redis, when set, shares the spend with the other replicas (see "Several replicas" in the package's
	// documentation). Nil: this process counts alone.
	Redis *redisstate.Client
}

// Budgets enforces the usage-limit policies (budgets) of every workspace: it reserves a request's largest
// possible cost before the call and settles it with the real usage after it. It is safe for concurrent use.
type Budgets struct {
	base
	onAlert    func(string)
	onExceeded func(string)

	workspaces workspaces[storage.UsageLimitPolicy, budgetSnapshot, *budgetSnapshot]
	retire     retirements[*spendSet]

	unpricedMu sync.Mutex
	unpriced   map[string]bool // model names reported as unpriced

	redis  *redisstate.Client // nil: spend stays in this process
	writes *writeQueue        // settled spend and seeds sent to Redis; nil without Redis
}

// NewBudgets returns an enforcer over the store's usage-limit policies and spend and starts its flusher; Close
// stops it.
func NewBudgets(store *storage.Store, opts BudgetOptions) *Budgets {
	b := &Budgets{onAlert: opts.OnAlert, onExceeded: opts.OnExceeded, unpriced: map[string]bool{}}
	b.base.init(store, opts.Now, opts.Logger, opts.FlushInterval)
	b.workspaces.init(store.UsageLimits, b.compile, b.log, "budget: list usage-limit policies")
	if opts.Redis != nil {
		b.redis = opts.Redis
		b.writes = newWriteQueue(opts.Redis, b.log, "budget.spend")
	}
	b.start(b.every, b.flush, b.log, "budget: save spend")
	return b
}

// BudgetExceeded is a refusal: the policy whose group has no room left.
type BudgetExceeded struct {
	PolicyID string
	Type     string // cost | tokens
	Limit    float64
	// Committed is the group's spend plus what running requests hold reserved.
	Committed float64
	// ToolCost is the refused tool call's cost (its server's cost_per_call); 0 for a model request.
	ToolCost float64
}

func (e *BudgetExceeded) Error() string {
	unit := "USD"
	if e.Type == "tokens" {
		unit = "tokens"
	}
	msg := fmt.Sprintf("budget exceeded: usage-limit policy %s allows %s %s (spent or reserved: %s", e.PolicyID,
		strconv.FormatFloat(e.Limit, 'f', -1, 64), unit, strconv.FormatFloat(e.Committed, 'f', -1, 64))
	if e.ToolCost > 0 {
		msg += "; this tool call costs " + strconv.FormatFloat(e.ToolCost, 'f', -1, 64)
	}
	return msg + ")"
}

// Spend is what an answer really used, for Hold.Settle.
type Spend struct {
	InputTokens, OutputTokens int64
	CostUSD                   float64
	CostKnown                 bool // false: the catalogue has no price for what answered; it counts 0 USD
}

// held is one reservation of a Hold.
type held struct {
	p      *budgetPolicy
	c      *spend
	amount float64
}

// Hold is one request's reservations. Settle it exactly once; later calls do nothing. A nil Hold holds nothing.
type Hold struct {
	b        *Budgets
	model    string
	toolCost float64 // what ReserveTool reserved, for SettleTool
	inline   [4]held
	hits     []held
	done     atomic.Bool
}

type budgetHit = hit[*budgetPolicy, *spend]

// Enforces reports whether the workspace has an active usage-limit policy, so that a caller can skip building
// Attrs for workspaces without budgets: a map read and an atomic load. A nil Budgets enforces nothing.
func (b *Budgets) Enforces(workspaceID string) bool {
	return b != nil && workspaceID != "" && len(b.workspaces.snapshot(workspaceID).policies) > 0
}

// Reserve reserves the request's largest possible cost (see estimate) with every matching active usage-limit
// policy of its workspace, or refuses it when one of them has no room: its group's spend plus what running
// requests hold reserved already reaches credit_limit. Every matched policy is checked before any reserves,
// under the groups' locks taken in policy-ID order, so a refused request holds nothing. With no usage-limit
// policy in the workspace it costs a map read and an atomic load and allocates nothing. A nil Budgets admits
// everything.
//
// A tool call (a.ToolCall) is reserved as ReserveTool reserves one that costs nothing.
func (b *Budgets) Reserve(a *Attrs) (*Hold, *BudgetExceeded) {
	return b.reserve(a, false, 0)
}

// ReserveTool reserves an MCP tool call that costs cost USD (its server's cost_per_call; a negative or NaN
// cost counts 0) with every matching active usage-limit policy of a's workspace: those that name mcp_server or
// tool, which are all of type cost. It refuses the call when, for one of them, the group's spend plus what
// running calls hold reserved has reached credit_limit, or would pass it with this call (within a billionth of
// the limit, for the rounding of sums of prices): a limit of 0.06 with calls of 0.02 admits exactly three.
// Checks and reservations happen under the groups' locks as Reserve's do, so concurrent calls never pass the
// limit on one replica. a is taken as a tool call whether or not a.ToolCall is set. Settle the hold with
// SettleTool.
func (b *Budgets) ReserveTool(a *Attrs, cost float64) (*Hold, *BudgetExceeded) {
	if a != nil && !a.ToolCall {
		tool := *a
		tool.ToolCall = true
		a = &tool
	}
	if !(cost > 0) {
		cost = 0
	}
	return b.reserve(a, true, cost)
}

// reserve is ReserveTool for a tool call of toolCost USD (tool, or a.ToolCall: then free), else Reserve.
func (b *Budgets) reserve(a *Attrs, tool bool, toolCost float64) (*Hold, *BudgetExceeded) {
	if b == nil || a == nil || a.WorkspaceID == "" {
		return nil, nil
	}
	tool = tool || a.ToolCall
	snap := b.workspaces.snapshot(a.WorkspaceID)
	if len(snap.policies) == 0 {
		return nil, nil
	}
	var buf [inlineHits]budgetHit
	hits := buf[:0]
	for _, p := range snap.policies {
		if p.sel.matches(a) {
			hits = append(hits, budgetHit{p: p, key: p.sel.groupKey(a)})
		}
	}
	if len(hits) == 0 {
		return nil, nil
	}
	var est reservation
	if tool {
		est.cost, est.priced = toolCost, true
	} else {
		est = estimate(a.Body)
	}
	now := b.now()
	shared := b.sharedSpend(hits, now)
	for {
		for i := range hits {
			hits[i].c = hits[i].p.set.get(b, hits[i].key, now)
		}
		if lockAll(hits) {
			break
		}
	}
	nanos := now.UnixNano()
	for i := range hits {
		h := &hits[i]
		h.c.roll(h.p.periodStart(now))
		h.c.used = nanos
		if shared != nil {
			b.takeShared(h.c, h.p, shared[i], now)
		}
		committed := h.c.spent + h.c.reserved
		if committed >= h.p.limit || (tool && !h.p.admitsTool(committed, toolCost)) {
			ex := &BudgetExceeded{PolicyID: h.p.sel.id, Type: h.p.typ, Limit: h.p.limit, Committed: committed,
				ToolCost: toolCost}
			unlockAll(hits)
			if b.onExceeded != nil {
				b.onExceeded(ex.PolicyID)
			}
			return nil, ex
		}
	}
	hold := &Hold{b: b, toolCost: toolCost}
	hold.hits = hold.inline[:0]
	costs := false
	for i := range hits {
		h := &hits[i]
		amount := est.tokens
		if !h.p.tokens {
			amount, costs = est.cost, true
		}
		h.c.reserved += amount
		hold.hits = append(hold.hits, held{p: h.p, c: h.c, amount: amount})
	}
	unlockAll(hits)
	if costs && !tool {
		hold.model = strings.Clone(est.model)
		if !est.priced {
			b.warnUnpriced(hold.model, "reserved 0 USD")
		}
	}
	return hold, nil
}

// Settle removes the hold's reservations and counts what the answer used: tokens policies input + output
// tokens, cost policies CostUSD (0 when not CostKnown, with a warning once per model). A nil Spend (no answer,
// or one without usage) only releases. A group whose spend reaches its limit is exhausted until its period
// resets; one whose spend first reaches the alert threshold in the period raises the alert.
func (h *Hold) Settle(s *Spend) {
	if h == nil || h.done.Swap(true) {
		return
	}
	b := h.b
	now := b.now()
	var alerts []string
	costUnknown := false
	for _, x := range h.hits {
		used := 0.0
		if s != nil {
			if x.p.tokens {
				used = float64(s.InputTokens + s.OutputTokens)
			} else if s.CostKnown {
				used = s.CostUSD
			} else {
				costUnknown = true
			}
		}
		if alert := b.settleOne(x, used, now); alert != "" {
			alerts = append(alerts, alert)
		}
	}
	if costUnknown && h.model != "" {
		b.warnUnpriced(h.model, "counted 0 USD")
	}
	if b.onAlert != nil {
		for _, id := range alerts {
			b.onAlert(id)
		}
	}
}

// SettleTool settles a hold of ReserveTool: the call's cost counts when it was forwarded to its server (whatever
// the server answered, or if it died mid-call: the call was made), and nothing when it was not (refused by a
// guardrail or a rate limit, or the client went away first). As Settle, once; a nil Hold does nothing.
func (h *Hold) SettleTool(forwarded bool) {
	if h == nil {
		return
	}
	if !forwarded {
		h.Settle(nil)
		return
	}
	h.Settle(&Spend{CostUSD: h.toolCost, CostKnown: true})
}

// settleOne settles one reservation and returns the policy ID when the spend crossed the alert threshold.
func (b *Budgets) settleOne(x held, used float64, now time.Time) (alert string) {
	c := x.c
	for {
		c.mu.Lock()
		if !c.evicted {
			break
		}
		c.mu.Unlock()
		c = c.set.get(b, c.key, now) // evicted meanwhile (a reservation never is): count into its successor
	}
	defer c.mu.Unlock()
	c.roll(x.p.periodStart(now))
	if c == x.c {
		c.reserved = max(0, c.reserved-x.amount)
	}
	c.used = now.UnixNano()
	if used <= 0 {
		return ""
	}
	c.spent += used
	c.dirty = true
	if b.settleShared(c, x.p, used, now) {
		return "" // Redis's total decides the alert
	}
	if x.p.alert > 0 && !c.alerted && c.spent >= x.p.alert {
		c.alerted = true
		b.logAlert(x.p, c, c.spent)
		return x.p.sel.id
	}
	return ""
}

func (b *Budgets) logAlert(p *budgetPolicy, c *spend, spent float64) {
	b.log.Warn("budget: alert threshold reached", "policy", p.sel.id, "workspace", c.set.ws, "group", c.group,
		"spend", spent, "alert_threshold", p.alert, "limit", p.limit, "type", p.typ)
}

// warnUnpriced logs once per model that the catalogue has no price for it.
func (b *Budgets) warnUnpriced(model, what string) {
	b.unpricedMu.Lock()
	seen := b.unpriced[model] || len(b.unpriced) >= maxUnpricedModels
	if !seen {
		b.unpriced[model] = true
	}
	b.unpricedMu.Unlock()
	if !seen {
		b.log.Warn("budget: the catalogue has no price for the model; cost budgets count it as free", "model", model, "what", what)
	}
}

// reservation is a request's largest possible use, in both units.
type reservation struct {
	tokens float64
	cost   float64
	priced bool
	model  string
}

// estimate is the request's largest possible use: input tokens bounded by the body's length in bytes (a token
// is rarely shorter than a byte), output by the body's max_tokens, max_completion_tokens or max_output_tokens
// (the largest given), else the catalogue's MaxOutputTokens for the model, else DefaultReserveOutputTokens;
// priced at the highest price any provider of the catalogue lists for the model (catalog.MaxPrice), since the
// provider is not chosen yet.
func estimate(body *schema.Body) reservation {
	var r reservation
	var in, out int64
	if body != nil {
		in = int64(body.Len())
		r.model = body.Model()
		out = requestedOutput(body)
	}
	m, priced := catalog.MaxPrice(r.model)
	if out <= 0 {
		out = int64(m.MaxOutputTokens)
	}
	if out <= 0 {
		out = DefaultReserveOutputTokens
	}
	r.tokens = float64(in + out)
	r.cost, r.priced = catalog.Price(&m, in, out), priced
	return r
}

// outputLimitFields are the request fields that cap an answer's tokens: chat's two and the responses API's.
var outputLimitFields = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

func requestedOutput(body *schema.Body) int64 {
	params := body.Params()
	var out int64
	for _, f := range outputLimitFields {
		if v, ok := params[f].(float64); ok && v > 0 {
			out = max(out, int64(min(v, maxReserveOutputTokens)))
		}
	}
	return out
}

// Close stops the flusher and saves every changed spend, synced. Close does not close the store.
func (b *Budgets) Close() error {
	if b == nil {
		return nil
	}
	b.writes.close()
	return b.close(b.flush)
}
