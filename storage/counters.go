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

// Counters holds the rate limiter's counters. It is written by one flusher in the background, not on the
// request path, so it keeps no copy in memory and takes no part in writeMu's read-modify-write sequences.
type Counters struct {
	s *Store
}

// counterKey is counter/<workspace-id>/<policy-id>/<hex of sha256(group)[:16]>.
func counterKey(workspaceID, policyID, group string) []byte {
	sum := sha256.Sum256([]byte(group))
	return key(tableCounter, workspaceID, policyID, hex.EncodeToString(sum[:16]))
}

func checkCounterIDs(workspaceID, policyID string) error {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return err
	}
	return CheckID("policy id", policyID)
}

// Load returns the saved counter of the group, with ok=false when there is none.
func (c *Counters) Load(workspaceID, policyID, group string) (rec *CounterRecord, ok bool, err error) {
	if err := checkCounterIDs(workspaceID, policyID); err != nil {
		return nil, false, err
	}
	k := counterKey(workspaceID, policyID, group)
	raw, err := c.s.get(k)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rec = new(CounterRecord)
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, false, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	if rec.Group != group {
		return nil, false, nil // another group with the same digest prefix
	}
	rec.WorkspaceID, rec.PolicyID = workspaceID, policyID
	return rec, true, nil
}

// SaveBatch writes the records and removes the counters of drop, in that order (a counter both dropped and
// saved ends up saved), in one batch synced to disk.
func (c *Counters) SaveBatch(records []*CounterRecord, drop []CounterKey) error {
	if len(records) == 0 && len(drop) == 0 {
		return nil
	}
	b := c.s.db.NewBatch()
	for _, k := range drop {
		if err := checkCounterIDs(k.WorkspaceID, k.PolicyID); err != nil {
			b.Close()
			return fmt.Errorf("storage: drop counter: %w", err)
		}
		if err := b.Delete(counterKey(k.WorkspaceID, k.PolicyID, k.Group), nil); err != nil {
			b.Close()
			return err
		}
	}
	for _, r := range records {
		if err := checkCounterIDs(r.WorkspaceID, r.PolicyID); err != nil {
			b.Close()
			return fmt.Errorf("storage: save counter: %w", err)
		}
		raw, err := json.Marshal(r)
		if err != nil {
			b.Close()
			return fmt.Errorf("storage: encode counter of policy %s: %w", r.PolicyID, err)
		}
		if err := b.Set(counterKey(r.WorkspaceID, r.PolicyID, r.Group), raw, nil); err != nil {
			b.Close()
			return err
		}
	}
	return c.s.commit(b)
}

// DeletePolicy removes every saved counter of the policy, synced.
func (c *Counters) DeletePolicy(workspaceID, policyID string) error {
	if err := checkCounterIDs(workspaceID, policyID); err != nil {
		return err
	}
	p := prefix(tableCounter, workspaceID, policyID)
	if err := c.s.db.DeleteRange(p, prefixEnd(p), pebble.Sync); err != nil {
		return fmt.Errorf("storage: delete counters of policy %s: %w", policyID, err)
	}
	return nil
}

// PolicyIDs returns the IDs of the policies of the workspace that have saved counters, in key order. The
// limiter compares them with the workspace's policies to remove the counters of policies deleted while it was
// not running. It seeks past each policy's counters, so the cost grows with the number of policies, not of
// counters.
func (c *Counters) PolicyIDs(workspaceID string) ([]string, error) {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return nil, err
	}
	p := prefix(tableCounter, workspaceID)
	it, err := c.s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
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
		valid = it.SeekGE(prefixEnd(prefix(tableCounter, workspaceID, id)))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("storage: scan %s: %w", p, err)
	}
	return out, nil
}
