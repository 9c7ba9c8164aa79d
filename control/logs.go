package control

import (
	"context"
	"errors"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Request logs (GET /v1/logs): reads of the entries package reqlog writes. An admin key reads its own
// workspace's; an organisation admin key reads every workspace's and may choose one (routes decides which
// caller is which: LogFilter.AllWorkspaces, GetAnyLog).

// LogFilter is a query of the request log, as GET /v1/logs takes it.
type LogFilter struct {
	// AllWorkspaces lets the query read every workspace (organisation admins); WorkspaceID (an ID or slug)
	// then picks one. Without it the caller's workspace is read, and a WorkspaceID must name that one.
	AllWorkspaces bool
	WorkspaceID   string

	TraceID  string
	Status   int // 0: any; else 100 to 599
	Provider string
	Model    string
	// Tool and MCPServer pick tool calls (entries of /mcp) by bare tool name and server ID.
	Tool, MCPServer string
	// From and To bound created_at, both included (Unix seconds; zero: unbounded).
	From, To time.Time
	Metadata map[string]string // each must match
	After    string            // a log ID: the entries older than it
	Limit    int               // 1 to MaxPageLimit; 0: DefaultPageLimit
}

// Bounds of a LogFilter's values.
const (
	MaxLogMetadataFilters = 16
	maxLogFilterValue     = 512
)

// LogPage is one page of the request log, newest first. When HasMore, Next is the after of the next page.
type LogPage = storage.LogPage

// ListLogs returns a page of the request log that f selects, newest first. The scan behind a page is bounded
// (storage.DefaultLogMaxScan entries): a page may be short, with HasMore and a Next to go on from.
func (p *Plane) ListLogs(_ context.Context, caller Caller, f LogFilter) (*LogPage, error) {
	q, err := p.logQuery(caller, f)
	if err != nil {
		return nil, err
	}
	page, err := p.store.Logs.List(q)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return page, nil
}

func (p *Plane) logQuery(caller Caller, f LogFilter) (storage.LogQuery, error) {
	q := storage.LogQuery{WorkspaceID: caller.WorkspaceID, TraceID: f.TraceID, Status: f.Status, Provider: f.Provider,
		Model: f.Model, Tool: f.Tool, MCPServer: f.MCPServer, From: f.From, To: f.To, Metadata: f.Metadata, After: f.After, Limit: f.Limit}
	ws, err := p.logWorkspace(caller, f.AllWorkspaces, f.WorkspaceID)
	if err != nil {
		return q, err
	}
	q.WorkspaceID = ws
	for _, b := range [...]struct {
		name string
		t    time.Time
	}{{"from", f.From}, {"to", f.To}} {
		if !b.t.IsZero() {
			if err := logTimeParam(b.name, b.t); err != nil {
				return q, err
			}
		}
	}
	if f.Status != 0 && (f.Status < 100 || f.Status > 599) {
		return q, gwerr.BadRequest("status", "status must be an HTTP status from 100 to 599, not %d", f.Status)
	}
	if f.Limit < 0 || f.Limit > MaxPageLimit {
		return q, gwerr.BadRequest("limit", "limit must be from 1 to %d, not %d", MaxPageLimit, f.Limit)
	}
	if f.After != "" && !storage.ValidLogID(f.After) {
		return q, gwerr.BadRequest("after", "after must be a log ID (log_...), not %q", f.After)
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		return q, gwerr.BadRequest("to", "to (%d) is before from (%d)", f.To.Unix(), f.From.Unix())
	}
	if len(f.Metadata) > MaxLogMetadataFilters {
		return q, gwerr.BadRequest("metadata", "at most %d metadata filters, not %d", MaxLogMetadataFilters, len(f.Metadata))
	}
	for name, v := range map[string]string{"trace_id": f.TraceID, "provider": f.Provider, "model": f.Model,
		"tool": f.Tool, "mcp_server": f.MCPServer} {
		if len(v) > maxLogFilterValue {
			return q, gwerr.BadRequest(name, "%s must be at most %d bytes", name, maxLogFilterValue)
		}
	}
	for k, v := range f.Metadata {
		if k == "" || len(k)+len(v) > maxLogFilterValue {
			return q, gwerr.BadRequest("metadata."+k, "a metadata filter needs a key, and key and value of at most %d bytes together", maxLogFilterValue)
		}
	}
	return q, nil
}

// logWorkspace is the workspace whose logs a caller reads: its own, or with all (organisation admins) every
// workspace (""); id (an ID or slug) picks one, which without all must be the caller's.
func (p *Plane) logWorkspace(caller Caller, all bool, id string) (string, error) {
	ws := caller.WorkspaceID
	if all {
		ws = ""
	}
	if id == "" {
		return ws, nil
	}
	w, err := p.store.Workspaces.Resolve(id)
	if errors.Is(err, storage.ErrNotFound) {
		return "", gwerr.NotFound("workspace", id)
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	if !all && w.ID != caller.WorkspaceID {
		return "", gwerr.Forbidden("workspace_id: reading another workspace's logs needs an organisation admin API key")
	}
	return w.ID, nil
}

// LogStatsFilter is a query of GET /v1/logs/stats: the requests from From (included) to To (excluded), in
// buckets of Bucket, of the caller's workspace or (AllWorkspaces) every workspace, WorkspaceID picking one as in
// LogFilter.
type LogStatsFilter struct {
	AllWorkspaces bool
	WorkspaceID   string
	From, To      time.Time
	Bucket        time.Duration
}

// Bounds of a LogStatsFilter.
const (
	MaxLogStatsBucket  = 24 * time.Hour
	MaxLogStatsBuckets = 1000
)

// LogStats aggregates the request log per bucket (storage.LogStore.Stats: a bounded scan, percentiles over a
// bounded sample). Errors name the field: bucket (1 s to a day, whole seconds), to (after from), and the range
// of at most MaxLogStatsBuckets buckets.
func (p *Plane) LogStats(_ context.Context, caller Caller, f LogStatsFilter) (*storage.LogStats, error) {
	if f.Bucket < time.Second || f.Bucket > MaxLogStatsBucket || f.Bucket%time.Second != 0 {
		return nil, gwerr.BadRequest("bucket", "bucket must be a whole number of seconds from 1 to %d, not %v", int(MaxLogStatsBucket/time.Second), f.Bucket)
	}
	if err := logTimeParam("from", f.From); err != nil {
		return nil, err
	}
	if err := logTimeParam("to", f.To); err != nil {
		return nil, err
	}
	if !f.From.Before(f.To) {
		return nil, gwerr.BadRequest("to", "to (%d) must be after from (%d)", f.To.Unix(), f.From.Unix())
	}
	secs := int64(f.Bucket / time.Second)
	if n := (f.To.Unix() - f.From.Unix() + secs - 1) / secs; n > MaxLogStatsBuckets { // in seconds: a Duration overflows past 292 years
		return nil, gwerr.BadRequest("bucket", "from %d to %d in buckets of %d s makes %d buckets; at most %d: widen bucket or narrow the range",
			f.From.Unix(), f.To.Unix(), secs, n, MaxLogStatsBuckets)
	}
	ws, err := p.logWorkspace(caller, f.AllWorkspaces, f.WorkspaceID)
	if err != nil {
		return nil, err
	}
	stats, err := p.store.Logs.Stats(storage.LogStatsQuery{WorkspaceID: ws, From: f.From, To: f.To, Bucket: f.Bucket})
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return stats, nil
}

// logTimeParam refuses a time the request log cannot be queried at (storage.LogTimeInRange): past
// storage.MaxLogUnix its keys' nanoseconds would wrap around to another range of entries.
func logTimeParam(name string, t time.Time) error {
	if !storage.LogTimeInRange(t) {
		return gwerr.BadRequest(name, "%s must be a time in Unix seconds from 0 to %d, not %d", name, storage.MaxLogUnix, t.Unix())
	}
	return nil
}

// GetLog returns the caller's workspace's log entry id with its bodies, when they were stored; another
// workspace's entry is a 404.
func (p *Plane) GetLog(_ context.Context, caller Caller, id string) (*storage.LogEntry, error) {
	return p.getLog(caller.WorkspaceID, id)
}

// GetAnyLog is GetLog over every workspace, for organisation admins.
func (p *Plane) GetAnyLog(_ context.Context, _ Caller, id string) (*storage.LogEntry, error) {
	return p.getLog("", id)
}

func (p *Plane) getLog(workspaceID, id string) (*storage.LogEntry, error) {
	e, err := p.store.Logs.Get(workspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("log", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if err := p.store.Logs.GetBodies(e); err != nil {
		return nil, gwerr.Internal(err)
	}
	return e, nil
}
