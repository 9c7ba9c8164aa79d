package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// Stored request logs (package reqlog writes them, the admin API reads them).
//
//	lob/<reversed stamp>   the entry's detail (logBodies): its route, hook results, and request and response
//	                       bodies, read only by GetBodies
//	log/<stamp>            LogEntry as JSON, without its bodies: every workspace's, newest first
//
// <stamp> is the base32 (extended hex alphabet, lower case, which keeps byte order) of 12 bytes: MaxUint64
// minus the entry's creation time in Unix nanoseconds, then 4 random bytes. Keys therefore sort newest first,
// a time bound is a key bound (from/to seek), and retention is a range delete. An entry's ID is "log_" and its
// stamp, so a point lookup needs no index. <reversed stamp> is the stamp with each digit d replaced by 31-d:
// bodies sort oldest first.
//
// The layout spares pebble most rewriting of old entries (compactions were most of the request log's CPU): what
// one batch writes is a run of the newest keys, at the end of lob/ and the start of log/, with no table sorting
// between them (none may), so a flushed table overlaps older ones only at its old edge (the requests that ended
// after later ones began) and otherwise moves down the levels unrewritten. A second, interleaved key per entry
// would make every flushed table span all older entries, which is why a workspace has no index of its own: its
// list scans log/ and skips other workspaces' entries before decoding them. Earlier versions kept such an index
// (logws/<workspace-id>/<stamp>), which the sweep drops, and bodies under logbody/<stamp>, which GetBodies
// still reads and the sweep ages out.
const (
	tableLog     = "log"
	tableLogBody = "lob"

	tableLogWSLegacy   = "logws"
	tableLogBodyLegacy = "logbody"

	// LogIDPrefix starts every log entry's ID.
	LogIDPrefix = "log_"

	logStampBytes = 12
)

// MaxLogUnix is the latest time, in Unix seconds, a log query may name (2242): a stamp holds Unix nanoseconds in
// 64 bits, which run out in 2262, and a later time would wrap around to another range of entries.
const MaxLogUnix = 1 << 33

// LogTimeInRange reports whether a stamp holds t: from 1970 to MaxLogUnix.
func LogTimeInRange(t time.Time) bool {
	u := t.Unix()
	return u >= 0 && u <= MaxLogUnix
}

// logStampDigits are the stamp's digits, in their order.
const logStampDigits = "0123456789abcdefghijklmnopqrstuv"

// logStampEncoding keeps the byte order of fixed-length input in the order of its text.
var logStampEncoding = base32.NewEncoding(logStampDigits).WithPadding(base32.NoPadding)

var logStampLen = logStampEncoding.EncodedLen(logStampBytes)

// LogEntry is one inference request as the request log keeps it. Its JSON is the admin API's view
// (DESIGN.md "Request logs"): created_at in Unix seconds, latencies in milliseconds, cost_usd null when the
// catalogue has no price, usage null when the answer reported none; request and response appear only when
// set, and a body cut at the writer's limit is a JSON string with request_truncated or response_truncated.
type LogEntry struct {
	ID          string // "log_..."; set when the entry is stored
	TraceID     string
	CreatedAt   time.Time
	WorkspaceID string
	Endpoint    string // "chat/completions", ..., "/mcp" for a tool call
	// Tool and MCPServer name a tool call's bare tool and its server's registry ID; "" for other entries.
	Tool, MCPServer string
	Provider        string
	Model           string
	Status          int
	Latency         time.Duration // the whole request
	UpstreamLatency time.Duration // waiting on providers
	Target          string        // the answering target's path, e.g. "config.targets[1]"
	Retries         int
	CacheStatus     string
	Usage           LogUsage
	CostUSD         float64
	CostKnown       bool
	Metadata        map[string]string

	// Request and Response are the bodies: raw JSON, or (cut) a JSON string when the flag below is set. They
	// are stored under their own key, with Route and HookResults (the entry's detail); lists never read them.
	Request, Response                   json.RawMessage
	RequestTruncated, ResponseTruncated bool

	// Route is every target the request tried or passed over, in order, retries included (at most
	// MaxLogRouteSteps are kept); HookResults is the answer's hook_results JSON, nil when no hook ran.
	Route       []LogRouteStep
	HookResults json.RawMessage
	// Detailed marks an entry read with its detail (GetBodies): its JSON view then has route and hook_results
	// (null when none), which a listed entry leaves out.
	Detailed bool
}

// LogRouteStep is one step of a request's route: one call of a target (Attempt counts its retries from 0), or a
// target passed over without a call (Outcome RouteCircuitOpen or RouteSkipped, Status 0).
type LogRouteStep struct {
	Path     string // the target's option path, as x-gateway-last-used-option-index names it: "config.targets[1]"
	Provider string
	Attempt  int
	Status   int // the answer's status, or the gateway's own error's; 0 when the target was not called
	Latency  time.Duration
	Outcome  string // RouteOK, RouteError, RouteCircuitOpen or RouteSkipped
	Error    string // a short message when the step failed, else ""
}

// Outcomes of a LogRouteStep.
const (
	RouteOK          = "ok"
	RouteError       = "error"
	RouteCircuitOpen = "circuit_open" // the target's circuit breaker was open: it was not called
	RouteSkipped     = "skipped"      // the request had made its cap of upstream attempts: the target was not called
)

// MaxLogRouteSteps bounds a stored route; the attempt cap keeps real routes far shorter.
const MaxLogRouteSteps = 64

type logRouteStepJSON struct {
	Path      string  `json:"path"`
	Provider  string  `json:"provider"`
	Attempt   int     `json:"attempt"`
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	Outcome   string  `json:"outcome"`
	Error     string  `json:"error"`
}

// LogUsage is an answer's token usage; Known is false when it reported none (failures, cache hits, streams
// without usage). Estimated marks usage the gateway measured itself.
type LogUsage struct {
	InputTokens, OutputTokens int64
	Known, Estimated          bool
}

type logUsageJSON struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	Estimated    bool  `json:"estimated,omitempty"`
}

type logEntryJSON struct {
	ID                string            `json:"id"`
	TraceID           string            `json:"trace_id"`
	CreatedAt         int64             `json:"created_at"`
	WorkspaceID       string            `json:"workspace_id"`
	Endpoint          string            `json:"endpoint"`
	Tool              string            `json:"tool,omitempty"`
	MCPServer         string            `json:"mcp_server,omitempty"`
	Provider          string            `json:"provider"`
	Model             string            `json:"model"`
	Status            int               `json:"status"`
	LatencyMS         float64           `json:"latency_ms"`
	UpstreamLatencyMS float64           `json:"upstream_latency_ms"`
	Target            string            `json:"target"`
	Retries           int               `json:"retries"`
	CacheStatus       string            `json:"cache_status"`
	Usage             *logUsageJSON     `json:"usage"`
	CostUSD           *float64          `json:"cost_usd"`
	Metadata          map[string]string `json:"metadata"`
	Request           json.RawMessage   `json:"request,omitempty"`
	RequestTruncated  bool              `json:"request_truncated,omitempty"`
	Response          json.RawMessage   `json:"response,omitempty"`
	ResponseTruncated bool              `json:"response_truncated,omitempty"`
	// Only in a Detailed entry's view: route [] and hook_results null when there are none.
	Route       *[]logRouteStepJSON `json:"route,omitempty"`
	HookResults *json.RawMessage    `json:"hook_results,omitempty"`
}

// MarshalJSON writes the admin API's view of the entry.
func (e *LogEntry) MarshalJSON() ([]byte, error) {
	return appendLogEntry(make([]byte, 0, 512+len(e.Request)+len(e.Response)+len(e.HookResults)+120*len(e.Route)), e, true), nil
}

// appendLogEntry appends the entry's JSON view (logEntryJSON's, as encoding/json would write it), with its
// bodies (and, for a Detailed entry, its route and hook results) when withBodies.
func appendLogEntry(b []byte, e *LogEntry, withBodies bool) []byte {
	b = append(b, `{"id":`...)
	b = jsonstr.AppendString(b, e.ID)
	b = append(b, `,"trace_id":`...)
	b = jsonstr.AppendString(b, e.TraceID)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, e.CreatedAt.Unix(), 10)
	b = append(b, `,"workspace_id":`...)
	b = jsonstr.AppendString(b, e.WorkspaceID)
	b = append(b, `,"endpoint":`...)
	b = jsonstr.AppendString(b, e.Endpoint)
	if e.Tool != "" {
		b = append(b, `,"tool":`...)
		b = jsonstr.AppendString(b, e.Tool)
	}
	if e.MCPServer != "" {
		b = append(b, `,"mcp_server":`...)
		b = jsonstr.AppendString(b, e.MCPServer)
	}
	b = append(b, `,"provider":`...)
	b = jsonstr.AppendString(b, e.Provider)
	b = append(b, `,"model":`...)
	b = jsonstr.AppendString(b, e.Model)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"latency_ms":`...)
	b = appendMS(b, e.Latency)
	b = append(b, `,"upstream_latency_ms":`...)
	b = appendMS(b, e.UpstreamLatency)
	b = append(b, `,"target":`...)
	b = jsonstr.AppendString(b, e.Target)
	b = append(b, `,"retries":`...)
	b = strconv.AppendInt(b, int64(e.Retries), 10)
	b = append(b, `,"cache_status":`...)
	b = jsonstr.AppendString(b, e.CacheStatus)
	b = append(b, `,"usage":`...)
	if u := e.Usage; u.Known {
		b = append(b, `{"input_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, u.OutputTokens, 10)
		if u.Estimated {
			b = append(b, `,"estimated":true`...)
		}
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"cost_usd":`...)
	if e.CostKnown {
		b = appendJSONFloat(b, e.CostUSD)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metadata":`...)
	b = appendStringMap(b, e.Metadata)
	if withBodies {
		b = appendLogBodies(b, e)
		if e.Detailed {
			b = append(b, `,"route":`...)
			b = appendLogRoute(b, e.Route)
			b = append(b, `,"hook_results":`...)
			if len(e.HookResults) > 0 {
				b = append(b, e.HookResults...)
			} else {
				b = append(b, "null"...)
			}
		}
	}
	return append(b, '}')
}

// appendLogRoute appends route as a JSON array ([] when empty).
func appendLogRoute(b []byte, route []LogRouteStep) []byte {
	b = append(b, '[')
	for i := range route {
		s := &route[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = jsonstr.AppendString(b, s.Path)
		b = append(b, `,"provider":`...)
		b = jsonstr.AppendString(b, s.Provider)
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(s.Attempt), 10)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(s.Status), 10)
		b = append(b, `,"latency_ms":`...)
		b = appendMS(b, s.Latency)
		b = append(b, `,"outcome":`...)
		b = jsonstr.AppendString(b, s.Outcome)
		b = append(b, `,"error":`...)
		b = jsonstr.AppendString(b, s.Error)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendLogDetail appends the value stored under lob/: logBodies' JSON, members left out when empty.
func appendLogDetail(b []byte, e *LogEntry) []byte {
	start := len(b)
	b = appendLogBodies(append(b, '{'), e)
	if len(e.Route) > 0 {
		b = append(b, `,"route":`...)
		b = appendLogRoute(b, e.Route[:min(len(e.Route), MaxLogRouteSteps)])
	}
	if len(e.HookResults) > 0 {
		b = append(b, `,"hook_results":`...)
		b = append(b, e.HookResults...)
	}
	if len(b) > start+1 { // the first member's comma
		b = append(b[:start+1], b[start+2:]...)
	}
	return append(b, '}')
}

// appendLogBodies appends the members of the entry's bodies that are set, each after a comma.
func appendLogBodies(b []byte, e *LogEntry) []byte {
	if len(e.Request) > 0 {
		b = append(b, `,"request":`...)
		b = append(b, e.Request...)
	}
	if e.RequestTruncated {
		b = append(b, `,"request_truncated":true`...)
	}
	if len(e.Response) > 0 {
		b = append(b, `,"response":`...)
		b = append(b, e.Response...)
	}
	if e.ResponseTruncated {
		b = append(b, `,"response_truncated":true`...)
	}
	return b
}

// appendStringMap appends m as a JSON object with its keys sorted, as encoding/json writes maps.
func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.AppendString(b, k)
		b = append(b, ':')
		b = jsonstr.AppendString(b, m[k])
	}
	return append(b, '}')
}

// UnmarshalJSON reads the view MarshalJSON writes. created_at has only seconds: a stored entry's CreatedAt
// comes from its ID instead, to the nanosecond.
func (e *LogEntry) UnmarshalJSON(b []byte) error {
	var v logEntryJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = LogEntry{ID: v.ID, TraceID: v.TraceID, CreatedAt: time.Unix(v.CreatedAt, 0).UTC(), WorkspaceID: v.WorkspaceID,
		Endpoint: v.Endpoint, Tool: v.Tool, MCPServer: v.MCPServer, Provider: v.Provider, Model: v.Model, Status: v.Status,
		Latency: msDuration(v.LatencyMS), UpstreamLatency: msDuration(v.UpstreamLatencyMS), Target: v.Target,
		Retries: v.Retries, CacheStatus: v.CacheStatus, Metadata: v.Metadata,
		Request: v.Request, RequestTruncated: v.RequestTruncated, Response: v.Response, ResponseTruncated: v.ResponseTruncated}
	if v.Route != nil {
		e.Route, e.Detailed = routeSteps(*v.Route), true
	}
	if v.HookResults != nil {
		e.Detailed = true
		if string(*v.HookResults) != "null" {
			e.HookResults = *v.HookResults
		}
	}
	if v.Usage != nil {
		e.Usage = LogUsage{InputTokens: v.Usage.InputTokens, OutputTokens: v.Usage.OutputTokens, Known: true, Estimated: v.Usage.Estimated}
	}
	if v.CostUSD != nil {
		e.CostUSD, e.CostKnown = *v.CostUSD, true
	}
	if t, ok := logIDTime(e.ID); ok {
		e.CreatedAt = t
	}
	return nil
}

// routeSteps turns a decoded route back into steps (nil when empty).
func routeSteps(in []logRouteStepJSON) []LogRouteStep {
	if len(in) == 0 {
		return nil
	}
	out := make([]LogRouteStep, len(in))
	for i, s := range in {
		out[i] = LogRouteStep{Path: s.Path, Provider: s.Provider, Attempt: s.Attempt, Status: s.Status,
			Latency: msDuration(s.LatencyMS), Outcome: s.Outcome, Error: s.Error}
	}
	return out
}

func durationMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// appendMS appends durationMS(d) as appendJSONFloat writes it, without formatting a float (a fifth of the
// encoding's time): a count of microseconds below 10^15 divided by 1000 has at most 15 significant digits, so
// the shortest decimal that reads back as that float is the quotient's own digits.
func appendMS(b []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us <= -1e15 || us >= 1e15 {
		return appendJSONFloat(b, durationMS(d))
	}
	if us < 0 {
		b, us = append(b, '-'), -us
	}
	b = strconv.AppendInt(b, us/1000, 10)
	if frac := us % 1000; frac != 0 {
		b = append(b, '.', byte('0'+frac/100))
		if frac %= 100; frac != 0 {
			b = append(b, byte('0'+frac/10))
			if frac %= 10; frac != 0 {
				b = append(b, byte('0'+frac))
			}
		}
	}
	return b
}

func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms*1e3)) * time.Microsecond
}

// logBodies is the value under lob/ (and the legacy logbody/): the detail of one entry.
type logBodies struct {
	Request           json.RawMessage    `json:"request,omitempty"`
	RequestTruncated  bool               `json:"request_truncated,omitempty"`
	Response          json.RawMessage    `json:"response,omitempty"`
	ResponseTruncated bool               `json:"response_truncated,omitempty"`
	Route             []logRouteStepJSON `json:"route,omitempty"`
	HookResults       json.RawMessage    `json:"hook_results,omitempty"`
}

// LogStore keeps the request log. Writes are batched and not synced (pebble.NoSync): a crash may lose the
// last moments of logs, never other data. It is safe for concurrent use.
type LogStore struct{ s *Store }

// logStamp is the key component of an entry made at t (see the key layout above).
func logStamp(t time.Time, random []byte) string {
	return string(appendLogStamp(nil, t, random))
}

// appendLogStamp appends logStamp's text to dst.
func appendLogStamp(dst []byte, t time.Time, random []byte) []byte {
	var b [logStampBytes]byte
	binary.BigEndian.PutUint64(b[:8], invertedNanos(t))
	copy(b[8:], random)
	return logStampEncoding.AppendEncode(dst, b[:])
}

// appendReversedLogStamp appends the stamp with each digit d replaced by 31-d, which reverses the order of
// stamps (they all have one length).
func appendReversedLogStamp(dst []byte, stamp string) []byte {
	for i := 0; i < len(stamp); i++ {
		dst = append(dst, logStampDigits[len(logStampDigits)-1-strings.IndexByte(logStampDigits, stamp[i])])
	}
	return dst
}

func invertedNanos(t time.Time) uint64 {
	n := t.UnixNano()
	if n < 0 {
		n = 0
	}
	return math.MaxUint64 - uint64(n)
}

// logStampOf returns the stamp of a log ID, or false when id is not one.
func logStampOf(id string) (string, bool) {
	stamp, ok := strings.CutPrefix(id, LogIDPrefix)
	if !ok || len(stamp) != logStampLen {
		return "", false
	}
	if _, err := logStampEncoding.DecodeString(stamp); err != nil {
		return "", false
	}
	return stamp, true
}

// ValidLogID reports whether id is the ID of a log entry (whether or not one exists).
func ValidLogID(id string) bool {
	_, ok := logStampOf(id)
	return ok
}

// logIDTime is the creation time a log ID encodes.
func logIDTime(id string) (time.Time, bool) {
	stamp, ok := logStampOf(id)
	if !ok {
		return time.Time{}, false
	}
	b, _ := logStampEncoding.DecodeString(stamp)
	return time.Unix(0, int64(math.MaxUint64-binary.BigEndian.Uint64(b[:8]))).UTC(), true
}

// Append stores entries in one unsynced batch. An entry without an ID gets one from its CreatedAt (the
// store's clock when that is zero); an entry's detail (Request, Response, Route, HookResults), when set, goes
// under its own key.
func (ls *LogStore) Append(entries []*LogEntry) error {
	b := ls.s.db.NewBatch()
	defer b.Close()
	var random [4]byte
	var raw, k []byte // reused: the batch copies what it is given
	for _, e := range entries {
		if !ValidID(e.WorkspaceID) {
			return fmt.Errorf("storage: log entry: invalid workspace ID %q", e.WorkspaceID)
		}
		if e.CreatedAt.IsZero() {
			e.CreatedAt = ls.s.now()
		}
		stamp, ok := logStampOf(e.ID)
		if !ok {
			_, _ = rand.Read(random[:])
			var id [32]byte // the ID is made in one allocation, and the stamp is a part of it
			e.ID = string(appendLogStamp(append(id[:0], LogIDPrefix...), e.CreatedAt, random[:]))
			stamp = e.ID[len(LogIDPrefix):]
		}
		raw = appendLogEntry(raw[:0], e, false)
		k = appendKey(k[:0], tableLog, stamp)
		_ = b.Set(k, raw, nil)
		if e.Request != nil || e.Response != nil || len(e.HookResults) > 0 || !impliedRoute(e) {
			raw = appendLogDetail(raw[:0], e)
			k = appendReversedLogStamp(append(appendKey(k[:0], tableLogBody), '/'), stamp)
			_ = b.Set(k, raw, nil)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("storage: append logs: %w", err)
	}
	return nil
}

// Get returns the entry id without its bodies, or ErrNotFound. workspaceID "" reads any workspace's entry;
// otherwise another workspace's entry is ErrNotFound too.
func (ls *LogStore) Get(workspaceID, id string) (*LogEntry, error) {
	stamp, ok := logStampOf(id)
	if !ok {
		return nil, ErrNotFound
	}
	k := key(tableLog, stamp)
	raw, err := ls.s.get(k)
	if err != nil {
		return nil, err
	}
	e := new(LogEntry)
	if err := json.Unmarshal(raw, e); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	if workspaceID != "" && e.WorkspaceID != workspaceID {
		return nil, ErrNotFound
	}
	return e, nil
}

// impliedRoute reports a route that the entry's own fields say whole: none, or one step, called once, that
// answered the request. Most requests take that route; storing it apart would double the keys a request writes
// (and the request log's share of pebble's compactions), so GetBodies rebuilds it from the entry instead.
func impliedRoute(e *LogEntry) bool {
	if len(e.Route) != 1 {
		return len(e.Route) == 0
	}
	s := e.Route[0]
	return s.Outcome == RouteOK && s.Attempt == 0 && s.Error == "" && s.Path == e.Target && s.Provider == e.Provider &&
		s.Status == e.Status && s.Latency.Microseconds() == e.UpstreamLatency.Microseconds()
}

// GetBodies sets e's detail from the store: Request and Response when they were stored, Route and HookResults,
// and Detailed, which puts route and hook_results in its JSON view.
func (ls *LogStore) GetBodies(e *LogEntry) error {
	stamp, ok := logStampOf(e.ID)
	if !ok {
		return ErrNotFound
	}
	raw, err := ls.s.get(appendReversedLogStamp(prefix(tableLogBody), stamp))
	if errors.Is(err, ErrNotFound) {
		raw, err = ls.s.get(key(tableLogBodyLegacy, stamp))
	}
	e.Detailed = true
	if errors.Is(err, ErrNotFound) {
		if e.Target != "" { // no detail was needed: the route was the one step the entry itself says
			e.Route = []LogRouteStep{{Path: e.Target, Provider: e.Provider, Status: e.Status, Latency: e.UpstreamLatency, Outcome: RouteOK}}
		}
		return nil
	}
	if err != nil {
		return err
	}
	var bodies logBodies
	if err := json.Unmarshal(raw, &bodies); err != nil {
		return fmt.Errorf("storage: decode the bodies of %s: %w", e.ID, err)
	}
	e.Request, e.RequestTruncated, e.Response, e.ResponseTruncated = bodies.Request, bodies.RequestTruncated, bodies.Response, bodies.ResponseTruncated
	e.Route, e.HookResults = routeSteps(bodies.Route), bodies.HookResults
	return nil
}

// LogQuery selects log entries. The zero value lists every workspace's newest DefaultLogLimit entries.
type LogQuery struct {
	WorkspaceID string // "": every workspace
	TraceID     string
	Status      int // 0: any
	Provider    string
	Model       string
	Tool        string // a tool call's bare tool name
	MCPServer   string // a tool call's server
	// From and To bound created_at (both included, to the second); zero: unbounded.
	From, To time.Time
	// Metadata must all match the entry's metadata.
	Metadata map[string]string
	// After is a log ID: only entries older than it.
	After string
	// Limit is the page's size; 0: DefaultLogLimit.
	Limit int
	// MaxScan bounds the entries one query reads; 0: DefaultLogMaxScan.
	MaxScan int
}

// DefaultLogLimit and DefaultLogMaxScan are LogQuery's defaults.
const (
	DefaultLogLimit   = 20
	DefaultLogMaxScan = 50_000
)

// LogPage is one page of a LogQuery, newest first. When HasMore, Next is the After of the next page: the last
// entry's ID, or, when the scan reached MaxScan first, the last entry read (the page may then be short, even
// empty).
type LogPage struct {
	Entries []*LogEntry
	HasMore bool
	Next    string
}

// List returns a page of the entries q selects, newest first. From and To seek; the other filters are applied
// while scanning, at most q.MaxScan entries.
func (ls *LogStore) List(q LogQuery) (*LogPage, error) {
	limit, maxScan := q.Limit, q.MaxScan
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	if maxScan <= 0 {
		maxScan = DefaultLogMaxScan
	}
	if (!q.From.IsZero() && !LogTimeInRange(q.From)) || (!q.To.IsZero() && !LogTimeInRange(q.To)) {
		return nil, fmt.Errorf("storage: list logs: a time outside 1970 to Unix %d", MaxLogUnix)
	}
	p := prefix(tableLog)
	var wsMember []byte // the workspace_id member of the workspace's entries, as appendLogEntry writes it
	if q.WorkspaceID != "" {
		if !ValidID(q.WorkspaceID) {
			return &LogPage{}, nil
		}
		wsMember = jsonstr.AppendString([]byte(`"workspace_id":`), q.WorkspaceID)
	}
	lower, upper := p, prefixEnd(p)
	if !q.To.IsZero() {
		// created_at ≤ To to the second: nanoseconds before the next second.
		end := time.Unix(q.To.Unix()+1, 0).Add(-time.Nanosecond)
		lower = maxKey(lower, append(bytes.Clone(p), logStamp(end, nil)...))
	}
	if q.After != "" {
		stamp, ok := logStampOf(q.After)
		if !ok {
			return nil, fmt.Errorf("storage: %q is not a log ID", q.After)
		}
		// The smallest key after the cursor's: its stamp with a byte appended.
		lower = maxKey(lower, append(append(bytes.Clone(p), stamp...), 0))
	}
	if !q.From.IsZero() {
		// created_at ≥ From: up to the first key of the nanosecond before From.
		upper = append(bytes.Clone(p), logStamp(time.Unix(q.From.Unix(), 0).Add(-time.Nanosecond), nil)...)
	}
	page := &LogPage{Entries: make([]*LogEntry, 0, min(limit, 100))}
	if bytes.Compare(lower, upper) >= 0 {
		return page, nil
	}
	it, err := ls.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("storage: list logs: %w", err)
	}
	defer it.Close()
	scanned := 0
	var last []byte // the stamp of the last entry read
	for it.First(); it.Valid(); it.Next() {
		if len(page.Entries) == limit || scanned == maxScan {
			page.HasMore = true
			break
		}
		scanned++
		last = append(last[:0], it.Key()[len(p):]...)
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("storage: list logs: %w", err)
		}
		// Another workspace's entry is skipped undecoded. The member cannot occur inside a JSON string (whose
		// quotes are escaped); it may occur as a metadata key, which matches tells apart.
		if wsMember != nil && !bytes.Contains(v, wsMember) {
			continue
		}
		e := new(LogEntry)
		if err := json.Unmarshal(v, e); err != nil {
			return nil, fmt.Errorf("storage: decode %s: %w", it.Key(), err)
		}
		if q.matches(e) {
			page.Entries = append(page.Entries, e)
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("storage: list logs: %w", err)
	}
	if page.HasMore {
		page.Next = LogIDPrefix + string(last)
	}
	return page, nil
}

func (q *LogQuery) matches(e *LogEntry) bool {
	if (q.WorkspaceID != "" && e.WorkspaceID != q.WorkspaceID) ||
		(q.TraceID != "" && e.TraceID != q.TraceID) || (q.Status != 0 && e.Status != q.Status) ||
		(q.Provider != "" && e.Provider != q.Provider) || (q.Model != "" && e.Model != q.Model) ||
		(q.Tool != "" && e.Tool != q.Tool) || (q.MCPServer != "" && e.MCPServer != q.MCPServer) {
		return false
	}
	for k, want := range q.Metadata {
		if got, ok := e.Metadata[k]; !ok || got != want {
			return false
		}
	}
	return true
}

func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

// DeleteBefore deletes the entries made before cutoff, with their bodies, in one unsynced batch of range
// deletions, and what earlier versions wrote (logws/, logbody/) with them.
func (ls *LogStore) DeleteBefore(cutoff time.Time) error {
	// Older entries have larger stamps: everything from the first stamp of the nanosecond before cutoff, and
	// their bodies, whose reversed stamps are smaller, up to that stamp reversed.
	from := logStamp(cutoff.Add(-time.Nanosecond), nil)
	b := ls.s.db.NewBatch()
	defer b.Close()
	p := prefix(tableLog)
	_ = b.DeleteRange(append(bytes.Clone(p), from...), prefixEnd(p), nil)
	p = prefix(tableLogBody)
	_ = b.DeleteRange(p, append(appendReversedLogStamp(bytes.Clone(p), from), 0), nil)
	// The earlier versions' tables, only while they hold something: the index all at once (nothing reads it),
	// the bodies as they age.
	legacy := []struct{ lower, upper []byte }{
		{prefix(tableLogWSLegacy), prefixEnd(prefix(tableLogWSLegacy))},
		{append(prefix(tableLogBodyLegacy), from...), prefixEnd(prefix(tableLogBodyLegacy))},
	}
	for _, r := range legacy {
		if found, err := ls.anyKey(r.lower, r.upper); err != nil {
			return err
		} else if found {
			_ = b.DeleteRange(r.lower, r.upper, nil)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("storage: sweep logs: %w", err)
	}
	return nil
}

// anyKey reports whether a key in [lower, upper) exists.
func (ls *LogStore) anyKey(lower, upper []byte) (bool, error) {
	it, err := ls.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return false, fmt.Errorf("storage: sweep logs: %w", err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("storage: sweep logs: %w", err)
	}
	return found, nil
}

// LogStatsQuery selects the entries GET /v1/logs/stats aggregates: those of a workspace ("" every workspace)
// made from From (included) to To (excluded), in buckets of Bucket starting at From.
type LogStatsQuery struct {
	WorkspaceID string
	From, To    time.Time
	Bucket      time.Duration
	// MaxScan bounds the entries read; 0: DefaultLogStatsMaxScan. Past it the newest entries are counted and
	// LogStats.Truncated is set.
	MaxScan int
}

// DefaultLogStatsMaxScan bounds a LogStatsQuery's scan, and LogStatsSample each bucket's sample of latencies.
const (
	DefaultLogStatsMaxScan = 200_000
	LogStatsSample         = 2048
)

// LogBucket is one bucket of LogStats: its start, its requests and errors (status ≥ 400), latency percentiles
// over a uniform sample of at most LogStatsSample of its requests, and token and cost totals (of the entries
// that reported usage or had a price).
type LogBucket struct {
	Start                     time.Time
	Requests, Errors          int64
	P50, P99                  time.Duration
	InputTokens, OutputTokens int64
	CostUSD                   float64
}

// LogStats is the answer of a LogStatsQuery: the buckets with requests, oldest first. Truncated says that the
// scan bound was reached: the oldest entries of the range were not counted.
type LogStats struct {
	Buckets   []LogBucket
	Truncated bool
}

// logStatsFields are the members of a stored entry that stats read.
type logStatsFields struct {
	WorkspaceID string        `json:"workspace_id"`
	Status      int           `json:"status"`
	LatencyMS   float64       `json:"latency_ms"`
	Usage       *logUsageJSON `json:"usage"`
	CostUSD     *float64      `json:"cost_usd"`
}

// Stats aggregates the entries q selects into buckets. The scan reads at most q.MaxScan entries, newest first;
// an entry's time comes from its key, and another workspace's entry is skipped undecoded, as in List. Each
// bucket keeps a reservoir sample of latencies (at most LogStatsSample, seeded the same way on every call, so
// that one store gives one answer), whose nearest-rank 50th and 99th percentiles are P50 and P99.
func (ls *LogStore) Stats(q LogStatsQuery) (*LogStats, error) {
	if q.Bucket <= 0 || !q.From.Before(q.To) {
		return nil, fmt.Errorf("storage: log stats: empty range or bucket")
	}
	if !LogTimeInRange(q.From) || !LogTimeInRange(q.To) {
		return nil, fmt.Errorf("storage: log stats: a time outside 1970 to Unix %d", MaxLogUnix)
	}
	maxScan := q.MaxScan
	if maxScan <= 0 {
		maxScan = DefaultLogStatsMaxScan
	}
	p := prefix(tableLog)
	var wsMember []byte
	if q.WorkspaceID != "" {
		if !ValidID(q.WorkspaceID) {
			return &LogStats{}, nil
		}
		wsMember = jsonstr.AppendString([]byte(`"workspace_id":`), q.WorkspaceID)
	}
	// Newer entries have smaller keys: from the first key of the nanosecond before To (created_at < To) up to
	// the first key of the nanosecond before From (created_at ≥ From).
	lower := append(bytes.Clone(p), logStamp(q.To.Add(-time.Nanosecond), nil)...)
	upper := append(bytes.Clone(p), logStamp(q.From.Add(-time.Nanosecond), nil)...)
	it, err := ls.s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("storage: log stats: %w", err)
	}
	defer it.Close()
	type bucket struct {
		LogBucket
		sample []time.Duration
	}
	byIndex := map[int64]*bucket{}
	rng := mrand.New(mrand.NewPCG(1, 2)) // reservoir sampling: deterministic, nothing to keep secret
	stats := &LogStats{}
	scanned := 0
	var buf [32]byte
	for it.First(); it.Valid(); it.Next() {
		if scanned == maxScan {
			stats.Truncated = true
			break
		}
		scanned++
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("storage: log stats: %w", err)
		}
		if wsMember != nil && !bytes.Contains(v, wsMember) {
			continue
		}
		var f logStatsFields
		if err := json.Unmarshal(v, &f); err != nil {
			return nil, fmt.Errorf("storage: decode %s: %w", it.Key(), err)
		}
		if q.WorkspaceID != "" && f.WorkspaceID != q.WorkspaceID { // the member was a metadata key's
			continue
		}
		created, ok := logIDTime(string(append(append(buf[:0], LogIDPrefix...), it.Key()[len(p):]...)))
		if !ok {
			continue
		}
		i := int64(created.Sub(q.From) / q.Bucket)
		b := byIndex[i]
		if b == nil {
			b = &bucket{LogBucket: LogBucket{Start: q.From.Add(time.Duration(i) * q.Bucket)}}
			byIndex[i] = b
		}
		b.Requests++
		if f.Status >= 400 {
			b.Errors++
		}
		if f.Usage != nil {
			b.InputTokens += f.Usage.InputTokens
			b.OutputTokens += f.Usage.OutputTokens
		}
		if f.CostUSD != nil {
			b.CostUSD += *f.CostUSD
		}
		latency := msDuration(f.LatencyMS)
		if len(b.sample) < LogStatsSample {
			b.sample = append(b.sample, latency)
		} else if j := rng.Int64N(b.Requests); j < LogStatsSample {
			b.sample[j] = latency
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("storage: log stats: %w", err)
	}
	stats.Buckets = make([]LogBucket, 0, len(byIndex))
	for _, b := range byIndex {
		slices.Sort(b.sample)
		b.P50, b.P99 = nearestRank(b.sample, 50), nearestRank(b.sample, 99)
		stats.Buckets = append(stats.Buckets, b.LogBucket)
	}
	slices.SortFunc(stats.Buckets, func(a, b LogBucket) int { return a.Start.Compare(b.Start) })
	return stats, nil
}

// nearestRank is the p-th percentile of sorted by the nearest-rank method: the smallest value with at least p%
// of the values at or below it.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ⌈p·n/100⌉
	return sorted[max(rank, 1)-1]
}
