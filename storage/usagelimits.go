package storage

import (
	"encoding/json"
	"errors"
	"fmt"
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

// Key returns the record's key: its policy and group.
func (r *BudgetRecord) Key() CounterKey {
	return CounterKey{WorkspaceID: r.WorkspaceID, PolicyID: r.PolicyID, Group: r.Group}
}

func (r *BudgetRecord) setPolicy(workspaceID, policyID string) {
	r.WorkspaceID, r.PolicyID = workspaceID, policyID
}

// BudgetStore holds the spend of usage-limit policies. Like Counters, it is written by a background flusher,
// not on the request path, and its table has the layout of theirs (groupTable).
type BudgetStore struct {
	s *Store
}

var budgetTable = groupTable{table: tableBudget, record: "budget", records: "spend"}

// Load returns the saved spend of the group, with ok=false when there is none.
func (bs *BudgetStore) Load(workspaceID, policyID, group string) (rec *BudgetRecord, ok bool, err error) {
	return loadGroup[BudgetRecord](bs.s, budgetTable, workspaceID, policyID, group)
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
		rec.setPolicy(workspaceID, policyID)
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
	return saveGroups(bs.s, budgetTable, records, drop)
}

// DeletePolicy removes every saved spend record of the policy, synced.
func (bs *BudgetStore) DeletePolicy(workspaceID, policyID string) error {
	return budgetTable.deletePolicy(bs.s, workspaceID, policyID)
}

// PolicyIDs returns the IDs of the workspace's policies that have saved spend, in key order, seeking past each
// policy's records.
func (bs *BudgetStore) PolicyIDs(workspaceID string) ([]string, error) {
	return budgetTable.policyIDs(bs.s, workspaceID)
}
