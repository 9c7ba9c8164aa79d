package ratelimit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/storage"
)

// attrKind is a request attribute that conditions and group_by can name.
type attrKind uint8

const (
	attrAPIKey attrKind = iota + 1
	attrWorkspace
	attrProvider
	attrVirtualKey
	attrModel
	attrConfig
	attrMetadata
	attrMCPServer
	attrTool
)

// attr is a compiled condition or group_by key.
type attr struct {
	kind attrKind
	name string // the metadata name, for attrMetadata
	key  string // as written in the policy
}

const metadataPrefix = "metadata."

// The values a policy's fields may take: the one list that the limiter, the bootstrap file and the admin
// endpoints all check against.
var (
	Types    = []string{"requests", "tokens"}
	Units    = []string{"rpm", "rph", "rpd"}
	Statuses = []string{"active", "archived"}
	// Keys are the condition and group_by keys besides metadata.<name>. mcp_server and tool make a policy
	// apply to MCP tool calls instead of model requests.
	Keys = []string{"api_key", "workspace_id", "provider", "virtual_key", "model", "config", "mcp_server", "tool"}
)

// parseAttr compiles a condition or group_by key.
func parseAttr(key string) (attr, error) {
	a := attr{key: key}
	switch key {
	case "api_key":
		a.kind = attrAPIKey
	case "workspace_id":
		a.kind = attrWorkspace
	case "provider":
		a.kind = attrProvider
	case "virtual_key":
		a.kind = attrVirtualKey
	case "model":
		a.kind = attrModel
	case "config":
		a.kind = attrConfig
	case "mcp_server":
		a.kind = attrMCPServer
	case "tool":
		a.kind = attrTool
	default:
		name, ok := strings.CutPrefix(key, metadataPrefix)
		if !ok || name == "" {
			return a, fmt.Errorf("unknown key %q (known: %s, metadata.<name>)", key, strings.Join(Keys, ", "))
		}
		a.kind, a.name = attrMetadata, name
	}
	return a, nil
}

// CheckKey tells whether key can stand as a condition or group_by key of a policy. The limiter does not enforce
// a policy with another key (it logs why), so writers of policies should check first.
func CheckKey(key string) error {
	_, err := parseAttr(key)
	return err
}

// isToolKey reports whether a condition or group_by key makes its policy apply to tool calls.
func isToolKey(key string) bool { return key == "mcp_server" || key == "tool" }

// errTokensForTools is why a tokens policy cannot name a tool key; the validators and the enforcers say the same.
var errTokensForTools = errors.New("a tokens policy cannot match mcp_server or tool: tool calls use no tokens")

// value returns the request's value of the attribute; an attribute the request lacks is "".
func (at *attr) value(a *Attrs) string {
	switch at.kind {
	case attrAPIKey:
		return a.APIKey
	case attrWorkspace:
		return a.WorkspaceID
	case attrProvider:
		return a.Provider
	case attrVirtualKey:
		return a.VirtualKey
	case attrModel:
		if a.Body == nil {
			return ""
		}
		return a.Body.Model()
	case attrConfig:
		return a.Config
	case attrMetadata:
		return a.Metadata[at.name]
	case attrMCPServer:
		return a.MCPServer
	case attrTool:
		return a.Tool
	}
	return ""
}

// forTools reports whether the attribute is one only tool calls have.
func (at *attr) forTools() bool { return at.kind == attrMCPServer || at.kind == attrTool }

type cond struct {
	attr
	want string
}

// policy is an active policy compiled for matching.
type policy struct {
	id     string
	tools  bool // names mcp_server or tool: matches tool calls only; else model requests only
	tokens bool // type tokens: counts usage reported by AddTokens; else one per admitted request
	typ    string
	unit   string
	value  float64
	conds  []cond
	groups []attr
	set    *counterSet
}

// units are the windows of the policy units.
var units = map[string]time.Duration{"rpm": time.Minute, "rph": time.Hour, "rpd": 24 * time.Hour}

// compilePolicy compiles an active policy; an error names the field that keeps it from being enforced.
func compilePolicy(rp *storage.RateLimitPolicy) (*policy, error) {
	p := &policy{id: rp.ID, typ: rp.Type, unit: rp.Unit, value: rp.Value}
	switch rp.Type {
	case "requests":
	case "tokens":
		p.tokens = true
	default:
		return nil, fmt.Errorf("type %q is neither requests nor tokens", rp.Type)
	}
	if _, ok := units[rp.Unit]; !ok {
		return nil, fmt.Errorf("unit %q is not rpm, rph or rpd", rp.Unit)
	}
	var err error
	if p.conds, p.groups, err = compileSelectors(rp.Conditions, rp.GroupBy); err != nil {
		return nil, err
	}
	p.tools = p.namesToolKey()
	if p.tools && p.tokens {
		return nil, errTokensForTools
	}
	return p, nil
}

// namesToolKey reports whether a condition or group_by key of the policy is a tool key, which makes the policy
// one of tool calls.
func (p *policy) namesToolKey() bool {
	for i := range p.conds {
		if p.conds[i].forTools() {
			return true
		}
	}
	for i := range p.groups {
		if p.groups[i].forTools() {
			return true
		}
	}
	return false
}

// compileSelectors compiles a policy's conditions and group_by keys, which rate-limit and usage-limit policies
// share; an error names the key that keeps the policy from being enforced.
func compileSelectors(matches []storage.PolicyMatch, groupBy []storage.PolicyGroup) (conds []cond, groups []attr, err error) {
	for i, c := range matches {
		at, err := parseAttr(c.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("conditions[%d].key: %w", i, err)
		}
		conds = append(conds, cond{attr: at, want: c.Value})
	}
	for i, g := range groupBy {
		at, err := parseAttr(g.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("group_by[%d].key: %w", i, err)
		}
		groups = append(groups, at)
	}
	return conds, groups, nil
}

// groupSig spells the policy's group_by keys, which a counter set must share to be carried over an update.
func (p *policy) groupSig() string {
	keys := make([]string, len(p.groups))
	for i, g := range p.groups {
		keys[i] = g.key
	}
	return strings.Join(keys, "\x00")
}

func (p *policy) newSet(ws string) *counterSet {
	return &counterSet{ws: ws, policyID: p.id, typ: p.typ, unit: p.unit,
		bucket: int64(units[p.unit] / nBuckets), groups: p.groups, groupSig: p.groupSig()}
}

// keeps reports whether set, made for an earlier version of the policy, counts what p counts.
func (p *policy) keeps(set *counterSet) bool {
	return set.typ == p.typ && set.unit == p.unit && set.groupSig == p.groupSig()
}

// matches reports whether the policy is of the request's kind (a tool call or a model request) and every
// condition holds (no condition: every request of its kind).
func (p *policy) matches(a *Attrs) bool {
	if p.tools != a.ToolCall {
		return false
	}
	for i := range p.conds {
		c := &p.conds[i]
		if c.value(a) != c.want {
			return false
		}
	}
	return true
}

// groupKey is the request's counter key within the policy: "" without group_by, the attribute's value itself
// with one key (no string is built), and the escaped key=value pairs joined by '&' with several.
func (p *policy) groupKey(a *Attrs) string {
	switch len(p.groups) {
	case 0:
		return ""
	case 1:
		return p.groups[0].value(a)
	}
	var b []byte
	for i := range p.groups {
		if i > 0 {
			b = append(b, '&')
		}
		b = appendPair(b, p.groups[i].key, p.groups[i].value(a))
	}
	return string(b)
}

func appendPair(b []byte, k, v string) []byte {
	b = append(b, url.QueryEscape(k)...)
	b = append(b, '=')
	return append(b, url.QueryEscape(v)...)
}

// policyStore is a store of one kind of policy, storage's Policies or UsageLimits, as the enforcers read it.
type policyStore[T any] interface {
	Generation() uint64
	List(workspaceID string) ([]*T, error)
}

// versioned is a workspace's compiled policies (S), which know the generation of the store they were read at.
type versioned[S any] interface {
	*S
	generation() uint64
}

// workspaces holds the compiled active policies of every workspace, of one kind of policy (T, compiled into
// snapshots S): the Limiter's and the Budgets' bookkeeping of policy changes, which they share.
type workspaces[T, S any, PS versioned[S]] struct {
	m       sync.Map // workspace ID → *workspace[S]
	store   policyStore[T]
	compile func(ws string, gen uint64, list []*T, old *S) *S
	log     *slog.Logger
	listErr string // logged when the policies cannot be listed
}

// workspace holds the compiled active policies of one workspace.
type workspace[S any] struct {
	id   string
	mu   sync.Mutex // one reload at a time
	snap atomic.Pointer[S]
}

func (w *workspaces[T, S, PS]) init(store policyStore[T], compile func(ws string, gen uint64, list []*T, old *S) *S, log *slog.Logger, listErr string) {
	w.store, w.compile, w.log, w.listErr = store, compile, log, listErr
}

// snapshot returns the workspace's current policies: one map read and one atomic load while nothing changed.
func (w *workspaces[T, S, PS]) snapshot(wsID string) *S {
	v, ok := w.m.Load(wsID)
	if !ok {
		v, _ = w.m.LoadOrStore(wsID, &workspace[S]{id: wsID})
	}
	ws := v.(*workspace[S])
	if s := ws.snap.Load(); s != nil && PS(s).generation() == w.store.Generation() {
		return s
	}
	return w.reload(ws)
}

// reload reads the workspace's policies again. The generation is read before the list, so that a write racing
// the read leaves the snapshot stale rather than current.
func (w *workspaces[T, S, PS]) reload(ws *workspace[S]) *S {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	gen := w.store.Generation()
	old := ws.snap.Load()
	if old != nil && PS(old).generation() == gen {
		return old
	}
	list, err := w.store.List(ws.id)
	if err != nil {
		// Keep enforcing what was known; the next request tries again.
		w.log.Error(w.listErr, "workspace", ws.id, "err", err)
		if old != nil {
			return old
		}
		return new(S)
	}
	s := w.compile(ws.id, gen, list, old)
	ws.snap.Store(s)
	return s
}

// current returns the workspace's snapshot as it is, without reading the store; nil before its first request.
func (w *workspaces[T, S, PS]) current(wsID string) *S {
	v, ok := w.m.Load(wsID)
	if !ok {
		return nil
	}
	return v.(*workspace[S]).snap.Load()
}

// each calls fn with the snapshot of every workspace that has one.
func (w *workspaces[T, S, PS]) each(fn func(*S)) {
	w.m.Range(func(_, v any) bool {
		if s := v.(*workspace[S]).snap.Load(); s != nil {
			fn(s)
		}
		return true
	})
}

// snapshot is what a workspace's policies were at one generation of the policy store.
type snapshot struct {
	gen      uint64
	policies []*policy       // active and enforceable, ordered by ID: the order counters are locked in
	stored   map[string]bool // the ID of every policy of the workspace in the store, active or not
}

func (s *snapshot) generation() uint64 { return s.gen }

// compile builds the workspace's snapshot. Counter sets of policies that are still active and count the same
// way are carried over; the others are retired: saved one last time when the policy was archived, removed from
// the store when it was deleted, discarded when it now counts differently.
func (l *Limiter) compile(ws string, gen uint64, list []*storage.RateLimitPolicy, old *snapshot) *snapshot {
	s := &snapshot{gen: gen, stored: make(map[string]bool, len(list))}
	prev := map[string]*policy{}
	if old != nil {
		for _, p := range old.policies {
			prev[p.id] = p
		}
	}
	for _, rp := range list {
		s.stored[rp.ID] = true
		if rp.Status != "active" {
			continue
		}
		p, err := compilePolicy(rp)
		if err != nil {
			l.log.Warn("ratelimit: policy not enforced", "workspace", ws, "policy", rp.ID, "err", err)
			continue
		}
		if o := prev[p.id]; o != nil && p.keeps(o.set) {
			p.set = o.set
			delete(prev, p.id)
		} else {
			p.set = p.newSet(ws)
		}
		s.policies = append(s.policies, p)
	}
	slices.SortFunc(s.policies, func(a, b *policy) int { return strings.Compare(a.id, b.id) })

	var gone []retired[*counterSet]
	for id, o := range prev {
		switch {
		case !s.stored[id]:
			gone = append(gone, retired[*counterSet]{ws: ws, policyID: id, set: o.set, mode: retireDelete})
		case s.hasActive(id):
			gone = append(gone, retired[*counterSet]{ws: ws, policyID: id, set: o.set, mode: retireDiscard})
		default:
			gone = append(gone, retired[*counterSet]{ws: ws, policyID: id, set: o.set, mode: retireFlush})
		}
	}
	if old != nil {
		for id := range old.stored {
			if !s.stored[id] && !old.hasActive(id) {
				gone = append(gone, retired[*counterSet]{ws: ws, policyID: id, mode: retireDelete}) // deleted while archived
			}
		}
	}
	l.retire.add(ws, gone, old == nil)
	return s
}

func (s *snapshot) hasActive(id string) bool {
	for _, p := range s.policies {
		if p.id == id {
			return true
		}
	}
	return false
}
