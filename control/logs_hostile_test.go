package control

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// TestLogTimesOutsideTheStampsRange: the plane refuses times a stored entry's key cannot hold (before 1970, past
// storage.MaxLogUnix), naming the field, whoever calls it; the bucket count of extreme times does not overflow
// into a small one.
func TestLogTimesOutsideTheStampsRange(t *testing.T) {
	f := newFixture(t, Options{})
	far := time.Unix(math.MaxInt64/2, 0)
	past := time.Unix(math.MinInt64/2, 0)
	for _, tc := range []struct {
		name  string
		err   error
		param string
	}{
		{"stats from before 1970", statsErr(f, LogStatsFilter{From: past, To: time.Unix(60, 0), Bucket: time.Hour}), "from"},
		{"stats over all of time", statsErr(f, LogStatsFilter{From: past, To: far, Bucket: time.Second}), "from"},
		{"stats to far ahead", statsErr(f, LogStatsFilter{From: time.Unix(0, 0), To: far, Bucket: time.Second}), "to"},
		{"stats past the stamps", statsErr(f, LogStatsFilter{From: time.Unix(storage.MaxLogUnix, 0), To: time.Unix(storage.MaxLogUnix+60, 0), Bucket: time.Minute}), "to"},
		{"list from far ahead", listErr(f, LogFilter{From: far}), "from"},
		{"list to before 1970", listErr(f, LogFilter{To: past}), "to"},
	} {
		var ge *gwerr.Error
		if !errors.As(tc.err, &ge) || ge.Status != 400 || ge.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.name, tc.err, tc.param)
		}
	}
}

func statsErr(f *fixture, lf LogStatsFilter) error {
	_, err := f.plane.LogStats(ctx, f.caller, lf)
	return err
}

func listErr(f *fixture, lf LogFilter) error {
	_, err := f.plane.ListLogs(ctx, f.caller, lf)
	return err
}
