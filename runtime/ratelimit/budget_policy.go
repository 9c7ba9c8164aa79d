package ratelimit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/storage"
)

// budgetPolicy is an active usage-limit policy compiled for matching.
type budgetPolicy struct {
	sel    policy // id, conditions and group_by: matched and grouped exactly as a rate-limit policy's
	tokens bool   // type tokens; else cost (USD)
	typ    string
	limit  float64
	alert  float64 // 0: no alert
	reset  string  // "", "monthly" or "weekly"
	set    *spendSet
}

func compileBudget(up *storage.UsageLimitPolicy) (*budgetPolicy, error) {
	p := &budgetPolicy{sel: policy{id: up.ID}, typ: up.Type, limit: up.CreditLimit}
	switch up.Type {
	case "tokens":
		p.tokens = true
	case "cost":
	default:
		return nil, fmt.Errorf("type %q is neither cost nor tokens", up.Type)
	}
	if !(up.CreditLimit > 0) || math.IsInf(up.CreditLimit, 1) {
		return nil, fmt.Errorf("credit_limit %v is not a positive number", up.CreditLimit)
	}
	if up.AlertThreshold != nil {
		p.alert = *up.AlertThreshold
	}
	if up.PeriodicReset != nil {
		p.reset = *up.PeriodicReset
		if !slices.Contains(BudgetResets, p.reset) {
			return nil, fmt.Errorf("periodic_reset %q is neither monthly nor weekly", p.reset)
		}
	}
	var err error
	if p.sel.conds, p.sel.groups, err = compileSelectors(up.Conditions, up.GroupBy); err != nil {
		return nil, err
	}
	p.sel.tools = p.sel.namesToolKey()
	if p.sel.tools && p.tokens {
		return nil, errTokensForTools
	}
	return p, nil
}

// toolSlack is the share of credit_limit by which a tool call's spend may pass it: sums of prices such as 0.02
// USD are not exact in binary (0.02 + 0.02 + 0.02 > 0.06), and a limit that is a whole number of calls must
// admit that many.
const toolSlack = 1e-9

// admitsTool reports whether a tool call that costs cost fits a group that has committed (spent plus
// reserved): the group is not exhausted, and the call does not take it past the limit.
func (p *budgetPolicy) admitsTool(committed, cost float64) bool {
	slack := p.limit * toolSlack
	return committed < p.limit-slack && committed+cost <= p.limit+slack
}

// PeriodBounds returns the period of a usage-limit policy's spend that holds t, in Unix seconds: monthly
// periods start on the first of the month at 00:00 UTC, weekly ones on Monday at 00:00 UTC. ok is false for
// any other reset (none: the spend never resets).
func PeriodBounds(reset string, t time.Time) (start, end int64, ok bool) {
	t = t.UTC()
	y, m, d := t.Date()
	switch reset {
	case "monthly":
		s := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return s.Unix(), s.AddDate(0, 1, 0).Unix(), true
	case "weekly":
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		s := time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
		return s.Unix(), s.AddDate(0, 0, 7).Unix(), true
	}
	return 0, 0, false
}

// periodStart is the start of the policy's current period at now; 0 without periodic reset.
func (p *budgetPolicy) periodStart(now time.Time) int64 {
	if p.reset == "" {
		return 0
	}
	s, _, _ := PeriodBounds(p.reset, now)
	return s
}

// keeps reports whether set, made for an earlier version of the policy, counts what p counts: same type,
// reset and group_by. A new credit_limit or alert_threshold applies to the spend so far.
func (p *budgetPolicy) keeps(set *spendSet) bool {
	return set.typ == p.typ && set.reset == p.reset && set.groupSig == p.sel.groupSig()
}

func (p *budgetPolicy) newSet(ws string) *spendSet {
	return &spendSet{ws: ws, policyID: p.sel.id, typ: p.typ, reset: p.reset, groups: p.sel.groups, groupSig: p.sel.groupSig()}
}

// spendSet holds the spend of one policy, one per group.
type spendSet struct {
	ws, policyID string
	typ, reset   string
	groups       []attr
	groupSig     string

	m sync.Map // group key (policy.groupKey) → *spend
}

// get returns the spend of the group key, created on first use from the saved record when there is one.
func (s *spendSet) get(b *Budgets, key string, now time.Time) *spend {
	if v, ok := s.m.Load(key); ok {
		return v.(*spend)
	}
	key = strings.Clone(key) // key may point into the request's body
	c := &spend{set: s, key: key, group: groupName(s.groups, key), used: now.UnixNano()}
	if b.redis != nil {
		c.ghash = groupHash(c.group)
	}
	rec, ok, err := b.store.BudgetSpend.Load(s.ws, s.policyID, c.group)
	if err != nil {
		b.log.Error("budget: load spend", "policy", s.policyID, "group", c.group, "err", err)
	} else if ok && rec.Type == s.typ && rec.Reset == s.reset {
		c.saved = true
		c.period, c.spent, c.alerted = rec.PeriodStart, max(0, rec.Spend), rec.Alerted
	}
	v, _ := s.m.LoadOrStore(key, c)
	return v.(*spend)
}

// spend is one group's spend in its current period, and what running requests hold reserved against it.
type spend struct {
	set   *spendSet
	key   string // in set.m
	group string // as stored
	ghash string // groupHash(group) for the shared keys; "" without Redis
	rkey  atomic.Pointer[periodKey]

	guard          // mu guards the rest
	period   int64 // start of the counted period (Unix seconds); 0 without periodic reset
	spent    float64
	reserved float64
	alerted  bool  // the alert threshold was reported in this period
	used     int64 // Unix nanoseconds of the last reservation or settlement, for eviction
}

// roll moves the spend into the period that starts at start: a later period starts from nothing (and may alert
// again); reservations stay, as they belong to running requests. A clock that went back changes nothing.
func (c *spend) roll(start int64) {
	if start > c.period {
		c.period, c.spent, c.alerted = start, 0, false
		c.dirty = true
	}
}

func (c *spend) record() *storage.BudgetRecord {
	return &storage.BudgetRecord{WorkspaceID: c.set.ws, PolicyID: c.set.policyID, Group: c.group, Type: c.set.typ,
		Reset: c.set.reset, PeriodStart: c.period, Spend: c.spent, Alerted: c.alerted}
}

// budgetSnapshot is what a workspace's usage-limit policies were at one generation of their store.
type budgetSnapshot struct {
	gen      uint64
	policies []*budgetPolicy // active and enforceable, ordered by ID: the order groups are locked in
	stored   map[string]bool
	dormant  map[string]*spendSet // the spend of archived policies seen active in this process
}

func (s *budgetSnapshot) generation() uint64 { return s.gen }

// compile builds the workspace's snapshot, carrying over the spend of policies that still count the same way;
// the others are retired (see retired).
func (b *Budgets) compile(ws string, gen uint64, list []*storage.UsageLimitPolicy, old *budgetSnapshot) *budgetSnapshot {
	s := &budgetSnapshot{gen: gen, stored: make(map[string]bool, len(list)), dormant: map[string]*spendSet{}}
	prev := map[string]*spendSet{} // the sets of the old snapshot, active or dormant
	wasActive := map[string]bool{}
	if old != nil {
		for id, set := range old.dormant {
			prev[id] = set
		}
		for _, p := range old.policies {
			prev[p.sel.id] = p.set
			wasActive[p.sel.id] = true
		}
	}
	var gone []retired[*spendSet]
	for _, up := range list {
		s.stored[up.ID] = true
		if up.Status != "active" {
			if set := prev[up.ID]; set != nil {
				// Archived: saved one last time if it was active, and kept, so that reactivating it carries on.
				s.dormant[up.ID] = set
				delete(prev, up.ID)
				if wasActive[up.ID] {
					gone = append(gone, retired[*spendSet]{ws: ws, policyID: up.ID, set: set, mode: retireFlush})
				}
			}
			continue
		}
		p, err := compileBudget(up)
		if err != nil {
			b.log.Warn("budget: usage-limit policy not enforced", "workspace", ws, "policy", up.ID, "err", err)
			continue
		}
		if set := prev[p.sel.id]; set != nil && p.keeps(set) {
			p.set = set
			delete(prev, p.sel.id)
		} else {
			p.set = p.newSet(ws)
		}
		s.policies = append(s.policies, p)
	}
	slices.SortFunc(s.policies, func(x, y *budgetPolicy) int { return strings.Compare(x.sel.id, y.sel.id) })

	for id, set := range prev {
		if s.stored[id] {
			// Counts another way now: forgotten; the new set ignores records of the old type or reset.
			gone = append(gone, retired[*spendSet]{ws: ws, policyID: id, set: set, mode: retireDiscard})
		} else {
			gone = append(gone, retired[*spendSet]{ws: ws, policyID: id, set: set, mode: retireDelete})
		}
	}
	if old != nil {
		for id := range old.stored {
			if !s.stored[id] && prev[id] == nil {
				gone = append(gone, retired[*spendSet]{ws: ws, policyID: id, mode: retireDelete}) // deleted, never loaded
			}
		}
	}
	b.retire.add(ws, gone, old == nil)
	return s
}
