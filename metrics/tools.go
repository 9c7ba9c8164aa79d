package metrics

import (
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Tool call statuses (the status label of gateway_tool_calls_total).
const (
	ToolOK          = "ok"           // the server answered a result
	ToolError       = "error"        // the server answered a result with isError
	ToolDenied      = "denied"       // a tool hook denied the call or its result
	ToolRateLimited = "rate_limited" // a rate-limit policy or a budget refused the call
	ToolFailed      = "failed"       // the server could not be reached, failed mid-call or answered a JSON-RPC error
	ToolCancelled   = "cancelled"    // the caller cancelled the call, or it timed out
	ToolInvalid     = "invalid"      // the call's config was invalid
)

// toolBuckets are the tool call durations: a local tool answers in milliseconds, a browsing one in minutes.
var toolBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

type toolKey struct{ server, tool, status string }

type toolSeries struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

// toolMetrics are gateway_tool_calls_total and gateway_tool_call_duration_seconds. Server IDs and tool names
// are users' to choose: past MaxSeries the rest count under OtherLabel.
type toolMetrics struct {
	series labelled[toolKey, toolSeries]
}

func newToolMetrics(reg *prometheus.Registry) *toolMetrics {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_tool_calls_total", Help: "MCP tool calls through /mcp, by server, bare tool name and status (ok, error, denied, rate_limited, failed, cancelled, invalid).",
	}, []string{"server", "tool", "status"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_tool_call_duration_seconds", Help: "Duration of MCP tool calls through /mcp, hooks included, by server and tool.",
		Buckets: toolBuckets,
	}, []string{"server", "tool"})
	reg.MustRegister(calls, duration)
	t := &toolMetrics{}
	t.series.init(func(k toolKey) toolSeries {
		return toolSeries{calls: calls.WithLabelValues(k.server, k.tool, k.status), duration: duration.WithLabelValues(k.server, k.tool)}
	}, func(k toolKey) toolKey { return toolKey{OtherLabel, OtherLabel, k.status} })
	return t
}

// maxToolLabelBytes bounds a server or tool label: names come from callers and upstream servers, and a label
// is kept for the process's life. MCP tool names are at most 128 characters.
const maxToolLabelBytes = 128

// toolLabel is a server ID or tool name as a label value: OtherLabel when it is too long, or not UTF-8 (which
// the Prometheus client refuses with a panic).
func toolLabel(s string) string {
	if len(s) > maxToolLabelBytes || !utf8.ValidString(s) {
		return OtherLabel
	}
	return s
}

// ToolCall counts one MCP tool call (status one of the Tool* constants) and its duration.
func (m *Metrics) ToolCall(server, tool, status string, d time.Duration) {
	s := m.tools.series.get(toolKey{toolLabel(server), toolLabel(tool), status})
	s.calls.Inc()
	s.duration.Observe(d.Seconds())
}
