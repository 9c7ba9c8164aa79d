package routes

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// The request log: every inference request is handed to the log writer when it is reported (storeLog, from
// observe), and read back at GET /v1/logs, GET /v1/logs/{id} (with the request's route and hook results) and,
// aggregated per time bucket, GET /v1/logs/stats. Admin keys read their workspace's entries,
// organisation admin keys every workspace's; the reads are control.Plane's (control/logs.go), the entry's JSON
// view storage.LogEntry's.

// storeLog hands the request's log entry to the log writer (nil: no stored logs). r is the request as observe
// reported it to the metrics. The request body is the caller's own (never a header: no Authorization, gateway
// key or x-gateway-config is stored); the response body is a whole answer's only, a stream's is not kept. The
// writer drops both unless --log-bodies is on.
func (s *Server) storeLog(start time.Time, req *runtime.Request, resp *runtime.Response, status int, r *metrics.Request) {
	if s.logs == nil || req.Key == nil {
		return
	}
	e := &reqlog.Entry{TraceID: req.TraceID, CreatedAt: start, WorkspaceID: req.Key.WorkspaceID, Endpoint: r.Endpoint,
		Provider: r.Provider, Model: r.Model, Status: status, Latency: r.Duration, Retries: r.Retries,
		CacheStatus: r.CacheStatus, Metadata: req.Metadata, Request: loggedRequest(req), // media.go: an upload's fields
		Route: req.Route}
	if resp != nil {
		e.Target, e.UpstreamLatency = resp.OptionPath, r.Upstream
		u := resp.Usage
		e.Usage = storage.LogUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Known: u.Known, Estimated: u.Estimated}
		e.CostUSD, e.CostKnown = u.CostUSD, u.CostKnown
		if resp.Stream == nil && (!req.Endpoint.AnyAnswer() || loggedAnswer(resp)) { // not a transcript as text
			e.Response = resp.Body
		}
		e.HookResults = loggedHookResults(&resp.HookResults, false)
	}
	s.logs.Record(e)
}

// loggedHookResults is the stored hook_results of an answer, nil when no hook ran. A check's data is left out
// ("data": null): it may quote the request or the answer, which are stored only with --log-bodies. Only
// requests with hooks pay for the copy and the encoding.
//
// It is stored with every entry, bodies or not, and comes from the config (how many hooks and checks) and the
// checks (a plugin's error message), so it is bounded: at most maxLoggedHooks hooks and maxLoggedChecks checks
// are kept, their texts cut at maxLoggedText bytes, and when that is still more than maxLoggedHookResults the
// hooks are kept without their checks. Anything left out marks the value "truncated": true.
//
// A tool call's (toolCall true) names its lists before_tool_call and after_tool_call.
func loggedHookResults(h *runtime.HookResults, toolCall bool) json.RawMessage {
	if len(h.Before) == 0 && len(h.After) == 0 {
		return nil
	}
	hooks, checks := maxLoggedHooks, maxLoggedChecks
	v := loggedHooks{}
	v.Before, v.Truncated = keptHooks(h.Before, &hooks, &checks, v.Truncated)
	v.After, v.Truncated = keptHooks(h.After, &hooks, &checks, v.Truncated)
	raw, err := json.Marshal(v)
	if err == nil && len(raw) > maxLoggedHookResults {
		for _, side := range [][]guardrails.HookResult{v.Before, v.After} {
			for i := range side {
				side[i].Checks = []guardrails.CheckResult{}
			}
		}
		v.Truncated = true
		raw, err = json.Marshal(v)
	}
	if err == nil && toolCall {
		raw, err = json.Marshal(loggedToolHooks(v))
	}
	if err != nil {
		return nil
	}
	return raw
}

// Bounds of the hook_results stored with an entry (loggedHookResults). With texts cut at maxLoggedText bytes (at
// most 6 bytes each in JSON), maxLoggedHooks hooks without their checks always fit in maxLoggedHookResults.
const (
	maxLoggedHookResults = 64 << 10
	maxLoggedHooks       = 16
	maxLoggedChecks      = 64
	maxLoggedText        = 256
)

// loggedHooks is the stored hook_results: runtime.HookResults's lists, and whether some were left out.
type loggedHooks struct {
	Before    []guardrails.HookResult `json:"before_request_hooks"`
	After     []guardrails.HookResult `json:"after_request_hooks"`
	Truncated bool                    `json:"truncated,omitempty"`
}

// loggedToolHooks is loggedHooks under a tool call's list names.
type loggedToolHooks struct {
	Before    []guardrails.HookResult `json:"before_tool_call"`
	After     []guardrails.HookResult `json:"after_tool_call"`
	Truncated bool                    `json:"truncated,omitempty"`
}

// keptHooks copies the hooks, and their checks without data, that the budgets still allow (counting them off),
// with their texts cut; cut is true when anything was left out, or was already.
func keptHooks(in []guardrails.HookResult, hooks, checks *int, cut bool) ([]guardrails.HookResult, bool) {
	n := min(len(in), *hooks)
	*hooks -= n
	out := make([]guardrails.HookResult, n)
	cut = cut || n < len(in)
	for i := range out {
		hr := in[i]
		hr.ID, cut = cutText(hr.ID, cut)
		hr.Type, cut = cutText(hr.Type, cut)
		k := min(len(hr.Checks), *checks)
		*checks -= k
		cut = cut || k < len(hr.Checks)
		hr.Checks = slices.Clone(hr.Checks[:k])
		if hr.Checks == nil {
			hr.Checks = []guardrails.CheckResult{}
		}
		for j := range hr.Checks {
			c := &hr.Checks[j]
			c.Data = nil
			c.ID, cut = cutText(c.ID, cut)
			if c.Error != nil {
				msg, shorter := cutText(*c.Error, false)
				if shorter {
					c.Error, cut = &msg, true
				}
			}
		}
		out[i] = hr
	}
	return out, cut
}

// cutText cuts s to maxLoggedText bytes at a character's start; cut is true when it was cut, or already was.
func cutText(s string, cut bool) (string, bool) {
	if len(s) <= maxLoggedText {
		return s, cut
	}
	return strings.ToValidUTF8(s[:maxLoggedText], "") + "…", true
}

// logList is the answer of GET /v1/logs: a cursor list, and, when has_more, next_after, the after of the next
// page (the last entry's ID, or the last one read when the scan's bound ended a short page).
type logList struct {
	Object    string              `json:"object"`
	Data      []*storage.LogEntry `json:"data"`
	HasMore   bool                `json:"has_more"`
	NextAfter string              `json:"next_after,omitempty"`
}

// listLogs answers GET /v1/logs: newest first, filtered by trace_id, status, provider, model, tool, mcp_server,
// from, to (Unix seconds), metadata.<key> and, for organisation admins, workspace_id; limit 1 to 100 (default 20), after a log ID.
func (s *Server) listLogs(c *fiber.Ctx) error {
	key, err := requireAdmin(c)
	if err != nil {
		return err
	}
	f, err := logFilter(c)
	if err != nil {
		return err
	}
	f.AllWorkspaces = key.OrganisationAdmin
	page, err := s.plane.ListLogs(c.UserContext(), callerOf(c), f)
	if err != nil {
		return err
	}
	return c.JSON(logList{Object: "list", Data: page.Entries, HasMore: page.HasMore, NextAfter: page.Next})
}

// logFilter reads GET /v1/logs's query; the control plane checks the values' ranges.
func logFilter(c *fiber.Ctx) (control.LogFilter, error) {
	pg, err := cursorPage(c)
	if err != nil {
		return control.LogFilter{}, err
	}
	f := control.LogFilter{Limit: pg.Limit, After: pg.After, WorkspaceID: strings.Clone(c.Query("workspace_id")),
		TraceID: strings.Clone(c.Query("trace_id")), Provider: strings.Clone(c.Query("provider")), Model: strings.Clone(c.Query("model")),
		Tool: strings.Clone(c.Query("tool")), MCPServer: strings.Clone(c.Query("mcp_server"))}
	if raw := c.Query("status"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 100 || n > 599 {
			return f, gwerr.BadRequest("status", "status must be an HTTP status from 100 to 599, not %q", raw)
		}
		f.Status = n
	}
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if raw := c.Query(b.name); raw != "" {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || n < 0 || n > storage.MaxLogUnix {
				return f, gwerr.BadRequest(b.name, "%s must be a time in Unix seconds, not %q", b.name, raw)
			}
			*b.t = time.Unix(n, 0)
		}
	}
	var bad error
	c.Context().QueryArgs().VisitAll(func(k, v []byte) {
		name, ok := strings.CutPrefix(string(k), "metadata.")
		if !ok || bad != nil {
			return
		}
		if f.Metadata == nil {
			f.Metadata = map[string]string{}
		}
		if _, dup := f.Metadata[name]; dup || len(f.Metadata) == control.MaxLogMetadataFilters {
			bad = gwerr.BadRequest("metadata."+name, "give each metadata key once, and at most %d of them", control.MaxLogMetadataFilters)
		}
		f.Metadata[name] = string(v)
	})
	return f, bad
}

// logStatsList is the answer of GET /v1/logs/stats.
type logStatsList struct {
	Object        string           `json:"object"`
	BucketSeconds int64            `json:"bucket_seconds"`
	From          int64            `json:"from"`
	To            int64            `json:"to"`
	Truncated     bool             `json:"truncated"`
	Data          []logStatsBucket `json:"data"`
}

type logStatsBucket struct {
	T            int64   `json:"t"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Defaults of GET /v1/logs/stats.
const (
	defaultStatsRange  = time.Hour
	defaultStatsBucket = 60
)

// logStats answers GET /v1/logs/stats?from=&to=&bucket=: per bucket of the range (Unix seconds; default the
// last hour in buckets of 60 s), requests, errors, p50/p99 latency, tokens and cost, buckets without requests
// left out. Admin keys read their workspace's, organisation admin keys every workspace's (workspace_id picks one).
func (s *Server) logStats(c *fiber.Ctx) error {
	key, err := requireAdmin(c)
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	var from, to, bucket int64 = -1, -1, defaultStatsBucket
	for _, q := range []struct {
		name     string
		v        *int64
		min, max int64
	}{{"from", &from, 0, storage.MaxLogUnix}, {"to", &to, 0, storage.MaxLogUnix}, {"bucket", &bucket, 1, int64(control.MaxLogStatsBucket / time.Second)}} {
		raw := c.Query(q.name)
		if raw == "" {
			continue
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < q.min || n > q.max {
			return gwerr.BadRequest(q.name, "%s must be an integer from %d to %d, not %q", q.name, q.min, q.max, raw)
		}
		*q.v = n
	}
	switch {
	case to < 0 && from < 0:
		to, from = now, now-int64(defaultStatsRange/time.Second)
	case to < 0:
		to = max(now, from+1)
	case from < 0:
		from = max(to-int64(defaultStatsRange/time.Second), 0)
	}
	stats, err := s.plane.LogStats(c.UserContext(), callerOf(c), control.LogStatsFilter{AllWorkspaces: key.OrganisationAdmin,
		WorkspaceID: strings.Clone(c.Query("workspace_id")), From: time.Unix(from, 0), To: time.Unix(to, 0),
		Bucket: time.Duration(bucket) * time.Second})
	if err != nil {
		return err
	}
	out := logStatsList{Object: "list", BucketSeconds: bucket, From: from, To: to, Truncated: stats.Truncated,
		Data: make([]logStatsBucket, len(stats.Buckets))}
	for i, b := range stats.Buckets {
		out.Data[i] = logStatsBucket{T: b.Start.Unix(), Requests: b.Requests, Errors: b.Errors,
			P50MS: msOf(b.P50), P99MS: msOf(b.P99), InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, CostUSD: b.CostUSD}
	}
	return c.JSON(out)
}

// msOf is d in milliseconds, to the microsecond.
func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// getLog answers GET /v1/logs/{id}: the entry, with its request and response when they were stored. An
// organisation admin key reads any workspace's entry.
func (s *Server) getLog(c *fiber.Ctx) error {
	key, err := requireAdmin(c)
	if err != nil {
		return err
	}
	get := s.plane.GetLog
	if key.OrganisationAdmin {
		get = s.plane.GetAnyLog
	}
	e, err := get(c.UserContext(), callerOf(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(e)
}
