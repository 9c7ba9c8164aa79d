package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/llmgw/gateway/storage"
)

// budgetIdle is how long a group's spend stays in memory without a request once it is saved; it is read
// again from the store when a request comes.
const budgetIdle = 10 * time.Minute

// flush removes the saved spend of deleted policies, then saves every changed spend in one synced batch and
// forgets the groups idle for budgetIdle.
func (b *Budgets) flush() error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	now := b.now()
	gone, stale := b.retire.take()
	deleted, errs := dropDeleted(b.store.BudgetSpend, b.store.UsageLimits, usageLimitID, gone, stale)
	var records []*storage.BudgetRecord
	var saved []*guard
	b.workspaces.each(func(s *budgetSnapshot) {
		for _, p := range s.policies {
			records, saved = p.set.sweep(p, now, true, records, saved)
		}
	})
	for _, r := range gone {
		// An archive's last save queued before the delete is skipped.
		if r.mode == retireFlush && !deleted[r.ws+"/"+r.policyID] {
			records, saved = r.set.sweep(nil, now, false, records, saved)
		}
	}
	err := b.store.BudgetSpend.SaveBatch(records, nil)
	markSaved(saved, err)
	if err != nil {
		errs = append(errs, fmt.Errorf("budget: save %d groups: %w", len(records), err))
	}
	return errors.Join(errs...)
}

func usageLimitID(p *storage.UsageLimitPolicy) string { return p.ID }

// sweep appends the set's changed spend; with evict it forgets the groups that hold no reservation, are saved
// and were not used for budgetIdle. p (nil for a retired set) rolls the groups into the current period first.
func (s *spendSet) sweep(p *budgetPolicy, now time.Time, evict bool, records []*storage.BudgetRecord, saved []*guard) ([]*storage.BudgetRecord, []*guard) {
	nanos := now.UnixNano()
	s.m.Range(func(k, v any) bool {
		c := v.(*spend)
		c.mu.Lock()
		defer c.mu.Unlock()
		if p != nil {
			c.roll(p.periodStart(now))
		}
		if c.dirty {
			c.dirty = false
			records = append(records, c.record())
			saved = append(saved, &c.guard)
			return true
		}
		if evict && c.reserved == 0 && nanos-c.used > int64(budgetIdle) {
			c.evicted = true
			s.m.CompareAndDelete(k, c)
		}
		return true
	})
	return records, saved
}

// MaxUsageGroups is how many groups a policy's usage lists, largest first.
const MaxUsageGroups = 100

// maxUsageRecords bounds the saved groups read to show one policy's usage.
const maxUsageRecords = 100_000

// GroupUsage is one group's spend in the current period.
type GroupUsage struct {
	Group     map[string]string `json:"group"` // group_by key → the group's value
	Usage     float64           `json:"usage"`
	Exhausted bool              `json:"exhausted"`
}

// PolicyUsage is what a usage-limit policy has spent in its current period.
type PolicyUsage struct {
	// Current is the spend of the policy's one counter without group_by; with group_by, the sum of its groups.
	Current float64
	// Groups are up to MaxUsageGroups groups, largest spend first.
	Groups []GroupUsage
	// Exhausted tells that a policy without group_by has reached its credit_limit.
	Exhausted bool
	// PeriodStart and PeriodEnd bound the current period (Unix seconds); Periodic is false without reset.
	PeriodStart, PeriodEnd int64
	Periodic               bool
}

// Usage reports the policy's spend in the current period: the saved spend, with the groups this process holds
// in memory (newer) in place of their records, and with Redis, the shared spend of those groups where it is
// larger. Reservations are not spend and are not counted.
func (b *Budgets) Usage(pol *storage.UsageLimitPolicy) PolicyUsage {
	var u PolicyUsage
	if b == nil || pol == nil {
		return u
	}
	now := b.now()
	reset := ""
	if pol.PeriodicReset != nil {
		reset = *pol.PeriodicReset
	}
	u.PeriodStart, u.PeriodEnd, u.Periodic = PeriodBounds(reset, now)
	spentBy := map[string]float64{}
	recs, err := b.store.BudgetSpend.List(pol.WorkspaceID, pol.ID, maxUsageRecords)
	if err != nil {
		b.log.Error("budget: read spend", "policy", pol.ID, "err", err)
	}
	for _, r := range recs {
		if r.Type == pol.Type && r.Reset == reset && r.PeriodStart == u.PeriodStart {
			spentBy[r.Group] = r.Spend
		}
	}
	if s := b.workspaces.current(pol.WorkspaceID); s != nil {
		for _, p := range s.policies {
			if p.sel.id != pol.ID || p.typ != pol.Type || p.reset != reset {
				continue
			}
			p.set.m.Range(func(_, v any) bool {
				c := v.(*spend)
				c.mu.Lock()
				if c.period == u.PeriodStart {
					spentBy[c.group] = c.spent
				} else {
					delete(spentBy, c.group)
				}
				c.mu.Unlock()
				return true
			})
		}
	}
	if b.redis.Available() && len(spentBy) > 0 {
		b.sharedUsage(pol, reset, u.PeriodStart, spentBy)
	}
	for group, spent := range spentBy {
		if spent <= 0 {
			continue
		}
		u.Current += spent
		u.Groups = append(u.Groups, GroupUsage{Group: groupValues(group), Usage: spent, Exhausted: spent >= pol.CreditLimit})
	}
	slices.SortFunc(u.Groups, func(x, y GroupUsage) int { return cmp.Compare(y.Usage, x.Usage) })
	if len(u.Groups) > MaxUsageGroups {
		u.Groups = u.Groups[:MaxUsageGroups]
	}
	if len(pol.GroupBy) == 0 {
		u.Exhausted = u.Current >= pol.CreditLimit
	}
	return u
}

// groupValues reads a stored group name (key=value pairs, query-escaped) back into its keys and values.
func groupValues(group string) map[string]string {
	out := map[string]string{}
	q, _ := url.ParseQuery(group)
	for k, vs := range q {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return out
}
