package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Usage-limit policies (budgets, DESIGN.md "Budgets") and their spend. Key layout (beside keys.go's):
//
//	usagelimit/<workspace-id>/<id>             UsageLimitPolicy
//	budget/<workspace-id>/<policy-id>/<hex>    BudgetRecord: one group's spend in its current period; <hex> is the
//	                                           first 16 bytes of sha256(group), the group kept in the record
//
// A group has one record, which carries the start of the period it counts: a record of an earlier period reads
// as no spend, and the next save of the group replaces it.
const (
	tableUsageLimit = "usagelimit"
	tableBudget     = "budget"
)

// UsageLimitPolicy is a usage-limit policy (a budget) of a workspace: a cap on the cost in USD or on the tokens
// of the requests it matches, per group, optionally reset every month or week.
type UsageLimitPolicy struct {
	ID             string  `json:"id"` // UUID
	WorkspaceID    string  `json:"workspace_id"`
	OrganisationID string  `json:"organisation_id"`
	Name           *string `json:"name"`
	Type           string  `json:"type"`         // cost | tokens
	CreditLimit    float64 `json:"credit_limit"` // USD or tokens, > 0
	// AlertThreshold, when set, is the spend (same unit) at which a warning is raised once per period.
	AlertThreshold *float64 `json:"alert_threshold"`
	// PeriodicReset is "monthly" or "weekly"; nil: the spend never resets.
	PeriodicReset *string       `json:"periodic_reset"`
	Conditions    []PolicyMatch `json:"conditions"`
	GroupBy       []PolicyGroup `json:"group_by"`
	Status        string        `json:"status"` // active | archived ("exhausted" is derived from the spend)
	Stamps
}

// BudgetRecord is the saved spend of one group of a usage-limit policy, so that a restart does not forget it.
type BudgetRecord struct {
	WorkspaceID string `json:"-"`
	PolicyID    string `json:"-"`
	// Group is the group as the enforcer spells it ("" for a policy without group_by).
	Group string `json:"group"`
	// Type and Reset (periodic_reset, "" for none) are the policy's when the record was written: a policy whose
	// type or reset changed since counts differently and ignores the record.
	Type  string `json:"type"`
	Reset string `json:"reset,omitempty"`
	// PeriodStart is the Unix time (seconds) at which the counted period began; 0 for a policy without reset.
	PeriodStart int64   `json:"period_start"`
	Spend       float64 `json:"spend"`
	// Alerted tells that the alert threshold was reported in this period.
	Alerted bool `json:"alerted,omitempty"`
}

// BudgetStore holds the spend of usage-limit policies. Like Counters, it is written by a background flusher,
// not on the request path.
type BudgetStore struct {
	s *Store
}

func budgetKey(workspaceID, policyID, group string) []byte {
	sum := sha256.Sum256([]byte(group))
	return key(tableBudget, workspaceID, policyID, hex.EncodeToString(sum[:16]))
}

// Load returns the saved spend of the group, with ok=false when there is none.
func (bs *BudgetStore) Load(workspaceID, policyID, group string) (rec *BudgetRecord, ok bool, err error) {
	if err := checkCounterIDs(workspaceID, policyID); err != nil {
		return nil, false, err
	}
	k := budgetKey(workspaceID, policyID, group)
	raw, err := bs.s.get(k)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rec = new(BudgetRecord)
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, false, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	if rec.Group != group {
		return nil, false, nil // another group with the same digest prefix
	}
	rec.WorkspaceID, rec.PolicyID = workspaceID, policyID
	return rec, true, nil
}

// List returns the saved spend of every group of the policy, in key order, at most limit records (limit <= 0:
// all of them).
func (bs *BudgetStore) List(workspaceID, policyID string, limit int) ([]*BudgetRecord, error) {
	if !ValidID(workspaceID) || !ValidID(policyID) {
		return nil, nil
	}
	var out []*BudgetRecord
	errFull := errors.New("full")
	err := bs.s.scan(prefix(tableBudget, workspaceID, policyID), func(k, raw []byte) error {
		if limit > 0 && len(out) >= limit {
			return errFull
		}
		rec := new(BudgetRecord)
		if err := json.Unmarshal(raw, rec); err != nil {
			return fmt.Errorf("storage: decode %s: %w", k, err)
		}
		rec.WorkspaceID, rec.PolicyID = workspaceID, policyID
		out = append(out, rec)
		return nil
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	return out, err
}

// SaveBatch writes the records and removes the groups of drop (drop first), in one batch synced to disk.
func (bs *BudgetStore) SaveBatch(records []*BudgetRecord, drop []CounterKey) error {
	if len(records) == 0 && len(drop) == 0 {
		return nil
	}
	b := bs.s.db.NewBatch()
	for _, k := range drop {
		if err := checkCounterIDs(k.WorkspaceID, k.PolicyID); err != nil {
			b.Close()
			return fmt.Errorf("storage: drop budget: %w", err)
		}
		if err := b.Delete(budgetKey(k.WorkspaceID, k.PolicyID, k.Group), nil); err != nil {
			b.Close()
			return err
		}
	}
	for _, r := range records {
		if err := checkCounterIDs(r.WorkspaceID, r.PolicyID); err != nil {
			b.Close()
			return fmt.Errorf("storage: save budget: %w", err)
		}
		raw, err := json.Marshal(r)
		if err != nil {
			b.Close()
			return fmt.Errorf("storage: encode budget of policy %s: %w", r.PolicyID, err)
		}
		if err := b.Set(budgetKey(r.WorkspaceID, r.PolicyID, r.Group), raw, nil); err != nil {
			b.Close()
			return err
		}
	}
	return bs.s.commit(b)
}

// DeletePolicy removes every saved spend record of the policy, synced.
func (bs *BudgetStore) DeletePolicy(workspaceID, policyID string) error {
	if err := checkCounterIDs(workspaceID, policyID); err != nil {
		return err
	}
	p := prefix(tableBudget, workspaceID, policyID)
	if err := bs.s.db.DeleteRange(p, prefixEnd(p), pebble.Sync); err != nil {
		return fmt.Errorf("storage: delete spend of policy %s: %w", policyID, err)
	}
	return nil
}

// PolicyIDs returns the IDs of the workspace's policies that have saved spend, in key order, seeking past each
// policy's records.
func (bs *BudgetStore) PolicyIDs(workspaceID string) ([]string, error) {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return nil, err
	}
	p := prefix(tableBudget, workspaceID)
	it, err := bs.s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("storage: scan %s: %w", p, err)
	}
	var out []string
	for valid := it.First(); valid; {
		rest := it.Key()[len(p):]
		i := 0
		for i < len(rest) && rest[i] != '/' {
			i++
		}
		id := string(rest[:i])
		out = append(out, id)
		valid = it.SeekGE(prefixEnd(prefix(tableBudget, workspaceID, id)))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("storage: scan %s: %w", p, err)
	}
	return out, nil
}
