package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// tableCounter holds the rate limiter's sliding-window counters. Key layout (also in keys.go):
//
//	counter/<workspace-id>/<policy-id>/<hex>   CounterRecord; <hex> is the first 16 bytes of sha256(group)
//
// The group (the values of a policy's group_by keys) is free text, so the key carries its digest and the record
// carries the group itself, which Load compares: a digest collision reads as "no record", never as another
// group's count.
const tableCounter = "counter"

// CounterBuckets is the number of buckets of a counter's sliding window: a window of one unit (a minute, an hour,
// a day) is cut into this many buckets of equal length.
const CounterBuckets = 60

// CounterKey names one counter: a policy of a workspace and one group of that policy.
type CounterKey struct {
	WorkspaceID string
	PolicyID    string
	Group       string
}

// CounterRecord is the saved state of one rate-limit counter, so that a restart does not reset a window (a
// day's window above all). The workspace and policy are in the key, not in the value.
type CounterRecord struct {
	WorkspaceID string `json:"-"`
	PolicyID    string `json:"-"`
	// Group is the counter's group as the limiter spells it ("" for a policy without group_by).
	Group string `json:"group"`
	// Type and Unit are the policy's when the record was written. A policy whose type or unit changed since
	// counts differently, so the limiter ignores a record that does not match.
	Type          string `json:"type"`
	Unit          string `json:"unit"`
	BucketSeconds int64  `json:"bucket_seconds"`
	// LastBucket is the absolute number of the newest bucket (Unix time / BucketSeconds).
	LastBucket int64 `json:"last_bucket"`
	// Buckets are the counts of buckets LastBucket-59 .. LastBucket, oldest first.
	Buckets [CounterBuckets]float64 `json:"buckets"`
}

// Key returns the record's counter key.
func (r *CounterRecord) Key() CounterKey {
	return CounterKey{WorkspaceID: r.WorkspaceID, PolicyID: r.PolicyID, Group: r.Group}
}

func (r *CounterRecord) setPolicy(workspaceID, policyID string) {
	r.WorkspaceID, r.PolicyID = workspaceID, policyID
}

// Counters holds the rate limiter's counters. It is written by one flusher in the background, not on the
// request path, so it keeps no copy in memory and takes no part in writeMu's read-modify-write sequences.
type Counters struct {
	s *Store
}

// counterTable is where Counters keeps its records.
var counterTable = groupTable{table: tableCounter, record: "counter", records: "counters"}

// Load returns the saved counter of the group, with ok=false when there is none.
func (c *Counters) Load(workspaceID, policyID, group string) (rec *CounterRecord, ok bool, err error) {
	return loadGroup[CounterRecord](c.s, counterTable, workspaceID, policyID, group)
}

// SaveBatch writes the records and removes the counters of drop, in that order (a counter both dropped and
// saved ends up saved), in one batch synced to disk.
func (c *Counters) SaveBatch(records []*CounterRecord, drop []CounterKey) error {
	return saveGroups(c.s, counterTable, records, drop)
}

// DeletePolicy removes every saved counter of the policy, synced.
func (c *Counters) DeletePolicy(workspaceID, policyID string) error {
	return counterTable.deletePolicy(c.s, workspaceID, policyID)
}

// PolicyIDs returns the IDs of the policies of the workspace that have saved counters, in key order. The
// limiter compares them with the workspace's policies to remove the counters of policies deleted while it was
// not running. It seeks past each policy's counters, so the cost grows with the number of policies, not of
// counters.
func (c *Counters) PolicyIDs(workspaceID string) ([]string, error) {
	return counterTable.policyIDs(c.s, workspaceID)
}

// groupTable is a table of records kept per group of a policy, written by a background flusher: the rate
// limiter's counters and the budgets' spend (usagelimits.go) share its layout and its code. Keys are
// <table>/<workspace-id>/<policy-id>/<hex of sha256(group)[:16]>; the record carries the group itself.
type groupTable struct {
	table   string
	record  string // what a record is called in errors: "counter"
	records string // what a policy's records are called: "counters"
}

// groupRecord is a record of a groupTable: its key, and the workspace and policy that the key (not the value)
// holds, filled in when it is read.
type groupRecord interface {
	Key() CounterKey
	setPolicy(workspaceID, policyID string)
}

func (t groupTable) key(workspaceID, policyID, group string) []byte {
	sum := sha256.Sum256([]byte(group))
	return key(t.table, workspaceID, policyID, hex.EncodeToString(sum[:16]))
}

func checkCounterIDs(workspaceID, policyID string) error {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return err
	}
	return CheckID("policy id", policyID)
}

// loadGroup returns the saved record of the group, with ok=false when there is none.
func loadGroup[R any, P interface {
	*R
	groupRecord
}](s *Store, t groupTable, workspaceID, policyID, group string) (rec *R, ok bool, err error) {
	if err := checkCounterIDs(workspaceID, policyID); err != nil {
		return nil, false, err
	}
	k := t.key(workspaceID, policyID, group)
	raw, err := s.get(k)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rec = new(R)
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, false, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	if P(rec).Key().Group != group {
		return nil, false, nil // another group with the same digest prefix
	}
	P(rec).setPolicy(workspaceID, policyID)
	return rec, true, nil
}

// saveGroups writes the records and removes the groups of drop, in that order (a group both dropped and saved
// ends up saved), in one batch synced to disk.
func saveGroups[R groupRecord](s *Store, t groupTable, records []R, drop []CounterKey) error {
	if len(records) == 0 && len(drop) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	for _, k := range drop {
		if err := checkCounterIDs(k.WorkspaceID, k.PolicyID); err != nil {
			b.Close()
			return fmt.Errorf("storage: drop %s: %w", t.record, err)
		}
		if err := b.Delete(t.key(k.WorkspaceID, k.PolicyID, k.Group), nil); err != nil {
			b.Close()
			return err
		}
	}
	for _, r := range records {
		k := r.Key()
		if err := checkCounterIDs(k.WorkspaceID, k.PolicyID); err != nil {
			b.Close()
			return fmt.Errorf("storage: save %s: %w", t.record, err)
		}
		raw, err := json.Marshal(r)
		if err != nil {
			b.Close()
			return fmt.Errorf("storage: encode %s of policy %s: %w", t.record, k.PolicyID, err)
		}
		if err := b.Set(t.key(k.WorkspaceID, k.PolicyID, k.Group), raw, nil); err != nil {
			b.Close()
			return err
		}
	}
	return s.commit(b)
}

// deletePolicy removes every saved record of the policy, synced.
func (t groupTable) deletePolicy(s *Store, workspaceID, policyID string) error {
	if err := checkCounterIDs(workspaceID, policyID); err != nil {
		return err
	}
	p := prefix(t.table, workspaceID, policyID)
	if err := s.db.DeleteRange(p, prefixEnd(p), pebble.Sync); err != nil {
		return fmt.Errorf("storage: delete %s of policy %s: %w", t.records, policyID, err)
	}
	return nil
}

// policyIDs returns the IDs of the workspace's policies that have saved records, in key order, seeking past
// each policy's records.
func (t groupTable) policyIDs(s *Store, workspaceID string) ([]string, error) {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return nil, err
	}
	p := prefix(t.table, workspaceID)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
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
		valid = it.SeekGE(prefixEnd(prefix(t.table, workspaceID, id)))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("storage: scan %s: %w", p, err)
	}
	return out, nil
}
