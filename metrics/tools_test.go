package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tool names are the callers' and the servers' to choose: the series stay bounded, a long name or one that is
// not UTF-8 counts as OtherLabel (and does not panic the Prometheus client).
func TestToolSeriesAreBounded(t *testing.T) {
	m := New()
	for i := 0; i < MaxSeries+10; i++ {
		m.ToolCall("files", "tool"+strconv.Itoa(i), ToolOK, time.Millisecond)
	}
	if got := count(t, m, "gateway_tool_calls_total"); got != MaxSeries+1 {
		t.Errorf("%d series, want %d", got, MaxSeries+1)
	}
	if got := count(t, m, "gateway_tool_call_duration_seconds"); got != MaxSeries+1 {
		t.Errorf("%d duration series, want %d", got, MaxSeries+1)
	}

	m = New()
	m.ToolCall("files", strings.Repeat("x", 4<<10), ToolFailed, time.Millisecond)
	m.ToolCall("files", "bad\xff", ToolFailed, time.Millisecond)
	m.ToolCall(strings.Repeat("s", 200), "read_file", ToolOK, time.Millisecond)
	if got := value(t, m.tools.series.get(toolKey{"files", OtherLabel, ToolFailed}).calls); got != 2 {
		t.Errorf("long and invalid names under other: %v, want 2", got)
	}
	if got := value(t, m.tools.series.get(toolKey{OtherLabel, "read_file", ToolOK}).calls); got != 1 {
		t.Errorf("long server under other: %v, want 1", got)
	}
	if got := count(t, m, "gateway_tool_calls_total"); got != 2 {
		t.Errorf("%d series, want 2", got)
	}
}
