package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func testCounter(ws, policy, group string, last int64, counts ...float64) *CounterRecord {
	r := &CounterRecord{WorkspaceID: ws, PolicyID: policy, Group: group, Type: "requests", Unit: "rpm",
		BucketSeconds: 1, LastBucket: last}
	copy(r.Buckets[CounterBuckets-len(counts):], counts)
	return r
}

func TestCountersRoundTrip(t *testing.T) {
	s := openTest(t, nil, nil)
	ws, pol := NewUUID(), NewUUID()
	if _, ok, err := s.Counters.Load(ws, pol, "api_key=k1"); ok || err != nil {
		t.Fatalf("Load of nothing = ok %v, err %v; want no record", ok, err)
	}
	a := testCounter(ws, pol, "api_key=k1", 1000, 1, 2, 3)
	b := testCounter(ws, pol, "", 2000, 7)
	if err := s.Counters.SaveBatch([]*CounterRecord{a, b}, nil); err != nil {
		t.Fatalf("SaveBatch: %v", err)
	}
	for _, want := range []*CounterRecord{a, b} {
		got, ok, err := s.Counters.Load(ws, pol, want.Group)
		if err != nil || !ok {
			t.Fatalf("Load(%q) = ok %v, err %v", want.Group, ok, err)
		}
		if *got != *want {
			t.Errorf("Load(%q) = %+v, want %+v", want.Group, got, want)
		}
	}
	// The key is counter/<ws>/<policy>/<first 16 bytes of sha256(group) in hex>; the value names the group.
	sum := sha256.Sum256([]byte("api_key=k1"))
	k := "counter/" + ws + "/" + pol + "/" + hex.EncodeToString(sum[:16])
	found := false
	for _, kv := range rawAll(t, s) {
		if string(kv.k) == k {
			found = true
			if !strings.Contains(string(kv.v), `"group":"api_key=k1"`) || strings.Contains(string(kv.v), ws) {
				t.Errorf("value %s: want the group and not the workspace (it is in the key)", kv.v)
			}
		}
	}
	if !found {
		t.Errorf("no key %s", k)
	}

	// Saving again replaces; dropping removes, and a counter both dropped and saved in one batch stays saved.
	a2 := testCounter(ws, pol, "api_key=k1", 1001, 9)
	if err := s.Counters.SaveBatch([]*CounterRecord{a2}, []CounterKey{a2.Key(), b.Key()}); err != nil {
		t.Fatalf("SaveBatch: %v", err)
	}
	if got, ok, _ := s.Counters.Load(ws, pol, a2.Group); !ok || *got != *a2 {
		t.Errorf("after save+drop in one batch: %+v, ok %v; want %+v", got, ok, a2)
	}
	if _, ok, _ := s.Counters.Load(ws, pol, b.Group); ok {
		t.Error("dropped counter still loads")
	}
}

func TestCountersGroupMismatchIsNoRecord(t *testing.T) {
	s := openTest(t, nil, nil)
	ws, pol := NewUUID(), NewUUID()
	if err := s.Counters.SaveBatch([]*CounterRecord{testCounter(ws, pol, "g1", 5, 1)}, nil); err != nil {
		t.Fatal(err)
	}
	// Simulate a digest collision: the record under g2's key names g1.
	raw, err := s.get(counterTable.key(ws, pol, "g1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(counterTable.key(ws, pol, "g2"), raw, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Counters.Load(ws, pol, "g2"); ok || err != nil {
		t.Fatalf("Load(g2) over g1's record = ok %v, err %v; want no record", ok, err)
	}
}

func TestCountersDeletePolicyAndPolicyIDs(t *testing.T) {
	s := openTest(t, nil, nil)
	ws, other := NewUUID(), NewUUID()
	p1, p2, p3 := "p1-"+NewUUID(), "p2-"+NewUUID(), "p3-"+NewUUID()
	var recs []*CounterRecord
	for _, p := range []string{p1, p2, p3} {
		for _, g := range []string{"", "a", "b", "c"} {
			recs = append(recs, testCounter(ws, p, g, 10, 1))
		}
	}
	recs = append(recs, testCounter(other, p1, "a", 10, 1))
	if err := s.Counters.SaveBatch(recs, nil); err != nil {
		t.Fatal(err)
	}
	ids, err := s.Counters.PolicyIDs(ws)
	if err != nil || !slices.Equal(ids, []string{p1, p2, p3}) {
		t.Fatalf("PolicyIDs = %v, %v; want [%s %s %s]", ids, err, p1, p2, p3)
	}
	if err := s.Counters.DeletePolicy(ws, p2); err != nil {
		t.Fatalf("DeletePolicy: %v", err)
	}
	if n := countPrefix(t, s, "counter/"+ws+"/"+p2+"/"); n != 0 {
		t.Errorf("%d counters of the deleted policy remain", n)
	}
	if n := countPrefix(t, s, "counter/"+ws+"/"); n != 8 {
		t.Errorf("%d counters of the workspace remain, want 8 (the other policies')", n)
	}
	if n := countPrefix(t, s, "counter/"+other+"/"); n != 1 {
		t.Errorf("another workspace's counter was touched: %d left", n)
	}
	if ids, _ := s.Counters.PolicyIDs(ws); !slices.Equal(ids, []string{p1, p3}) {
		t.Errorf("PolicyIDs after delete = %v", ids)
	}
	if ids, err := s.Counters.PolicyIDs(NewUUID()); len(ids) != 0 || err != nil {
		t.Errorf("PolicyIDs of an empty workspace = %v, %v", ids, err)
	}
}

func TestCountersRejectBadIDs(t *testing.T) {
	s := openTest(t, nil, nil)
	good := NewUUID()
	tests := []struct {
		name, ws, policy, field string
	}{
		{"empty workspace", "", good, "workspace id"},
		{"workspace with a slash", "a/b", good, "workspace id"},
		{"empty policy", good, "", "policy id"},
		{"policy with a slash", good, "x/y", "policy id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(op string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), tt.field) {
					t.Errorf("%s: err = %v, want one naming %q", op, err, tt.field)
				}
			}
			_, _, err := s.Counters.Load(tt.ws, tt.policy, "g")
			check("Load", err)
			check("SaveBatch", s.Counters.SaveBatch([]*CounterRecord{testCounter(tt.ws, tt.policy, "g", 1, 1)}, nil))
			check("SaveBatch drop", s.Counters.SaveBatch(nil, []CounterKey{{tt.ws, tt.policy, "g"}}))
			check("DeletePolicy", s.Counters.DeletePolicy(tt.ws, tt.policy))
		})
	}
	if n := countPrefix(t, s, "counter/"); n != 0 {
		t.Errorf("%d counters written by failed calls", n)
	}
}

// TestCountersSurviveCrash: SaveBatch and DeletePolicy return only once synced, so a crash right after them
// keeps their effect.
func TestCountersSurviveCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openTest(t, fs, nil)
	requirePebble(t, s)
	ws, pol, gone := NewUUID(), NewUUID(), NewUUID()
	rec := testCounter(ws, pol, "g", 42, 1, 2)
	if err := s.Counters.SaveBatch([]*CounterRecord{rec, testCounter(ws, gone, "g", 42, 3)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Counters.DeletePolicy(ws, gone); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	s2 := openTest(t, crashed, nil)
	got, ok, err := s2.Counters.Load(ws, pol, "g")
	if err != nil || !ok || *got != *rec {
		t.Fatalf("after a crash: %+v, ok %v, err %v; want %+v", got, ok, err, rec)
	}
	if _, ok, _ := s2.Counters.Load(ws, gone, "g"); ok {
		t.Error("the deleted policy's counter came back after a crash")
	}
}

func TestDocStoreGeneration(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := NewUUID()
	g0 := s.Policies.Generation()
	p := &RateLimitPolicy{ID: NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm", Value: 1, Status: "active"}
	if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
		t.Fatal(err)
	}
	g1 := s.Policies.Generation()
	if g1 == g0 {
		t.Fatal("Put did not change the generation")
	}
	p.Status = "archived"
	if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
		t.Fatal(err)
	}
	g2 := s.Policies.Generation()
	if g2 == g1 {
		t.Fatal("an update did not change the generation")
	}
	if err := s.Policies.Delete(ws, p.ID); err != nil {
		t.Fatal(err)
	}
	if s.Policies.Generation() == g2 {
		t.Fatal("Delete did not change the generation")
	}
	if s.Configs.Generation() != 0 {
		t.Errorf("writes to policies changed the configs' generation")
	}
}
