package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
)

// CodeInvalidConfig is the code of Compile's errors, the same as runtime/config's.
const CodeInvalidConfig = jsonfield.CodeInvalidConfig

// Check runs one check. Implementations: the built-in default.* checks (native Go) and wasm checks from the
// plugins package (which returns values satisfying this interface structurally; cmd wires them).
//
// A Check is compiled once and called by many requests at once: it must be safe for concurrent use and must not
// modify in. A returned error (or an Output with a non-empty Error) means the check could not decide; the check
// then counts as passed unless its parameters say "failOnError": true (or, without failOnError, the Set's
// ErrorPolicy says Fail).
type Check interface {
	Check(ctx context.Context, in *hostapi.Input, req hostapi.RequestView) (hostapi.Output, error)
}

// Transformer is an optional interface of a Check that may return a transformed text (regexReplace, addPrefix).
// Run feeds a transformer the text left by the checks before it and never runs it in parallel with them, so that
// transformers apply in order. A Check without this method may still transform; its text is then taken in order
// too, but it runs on the text its item started with.
type Transformer interface {
	Transforms() bool
}

// BodyTransformer is what every check of a mutator hook is: a plugin's gateway_transform (plugins.WasmCheck),
// called with in.Body the body to rewrite and in.Text empty. The Output's Body, when not nil, replaces the body
// (one JSON object); verdict, data and error mean what they mean for a Check. It must be safe for concurrent
// use and must not modify in.
type BodyTransformer interface {
	TransformBody(ctx context.Context, in *hostapi.Input, req hostapi.RequestView) (hostapi.Output, error)
}

// transformReady is an optional interface of a BodyTransformer that knows now that it cannot transform (a
// plugin loaded without gateway_transform): Compile makes its error a 400 naming the check.
type transformReady interface{ CanTransform() error }

// inline marks the cheap CPU-bound built-ins: Run calls them on the calling goroutine instead of starting one,
// which is the same as running them in parallel (they never block) and much cheaper.
type inline interface{ inline() }

// Factory compiles a check's parameters (a JSON object: the config requires one) once into a Check. Its errors
// name the parameter: return a *ParamError so that Compile can report the parameter's full path.
type Factory func(params json.RawMessage) (Check, error)

// ParamError is a Factory's error about one parameter.
type ParamError struct {
	Name    string // the parameter, e.g. "maxWords"
	Message string // what is wrong, e.g. "must be a number"
}

func (e *ParamError) Error() string { return e.Name + ": " + e.Message }

func paramErr(name, format string, args ...any) *ParamError {
	return &ParamError{Name: name, Message: fmt.Sprintf(format, args...)}
}

var registry = struct {
	sync.RWMutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register makes a check available under id ("default.wordCount"). It panics on a duplicate id or a nil
// factory. The built-ins register in init().
func Register(id string, f Factory) {
	if f == nil {
		panic("guardrails: Register " + id + " with a nil factory")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[id]; dup {
		panic("guardrails: Register called twice for " + id)
	}
	registry.m[id] = f
}

// Registered returns the registered check ids, sorted.
func Registered() []string {
	registry.RLock()
	defer registry.RUnlock()
	ids := make([]string, 0, len(registry.m))
	for id := range registry.m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func lookup(id string) Factory {
	registry.RLock()
	defer registry.RUnlock()
	return registry.m[id]
}

// PluginChecks resolves "<plugin-id>.<check>" ids for a workspace (wasm checks); nil means none. ErrNoPlugin
// (wrapped or not) says the workspace has no such plugin; a *ParamError names a parameter; a *gwerr.Error is
// returned as it is (with Param set when empty); any other error becomes a 400 naming the check.
type PluginChecks func(workspaceID, pluginID, checkName string, params json.RawMessage) (Check, error)

// ErrNoPlugin is what a PluginChecks returns for a plugin the workspace does not have. Compile makes it a 400
// naming the check, as for any unknown check id: a guardrail naming a missing plugin would otherwise be
// accepted and then pass every request on a check error.
var ErrNoPlugin = errors.New("no such plugin")

// SavedGuardrails looks up a saved guardrail object (a string item in a guardrail list) by ID in a workspace and
// returns the object (storage.Guardrail.Guardrail). An error (storage.ErrNotFound) becomes a 400 naming the item;
// a *gwerr.Error is returned as it is.
type SavedGuardrails func(workspaceID, id string) (json.RawMessage, error)

// Stage says which side of the provider call Run evaluates.
type Stage string

// Stages.
const (
	// StageBefore is before_request_hooks + input_guardrails, before the provider is called.
	StageBefore Stage = "before"
	// StageAfter is after_request_hooks + output_guardrails, on the answer.
	StageAfter Stage = "after"
)

// Outcome is what Run found.
type Outcome struct {
	// Deny is true when an item that denies decided: the request stops with 446 (gwerr.StatusHooksFailed).
	Deny bool
	// Failed is true when some synchronous item failed (with or without deny): without Deny the answer carries
	// status 246.
	Failed bool
	// Transformed is the text after the transformers ran (in order), when any transformed it (with RunBody, after
	// the last mutator hook that wrote it into the body).
	Transformed *string
	// Body is the body after the mutator hooks (RunBody), when one changed it; nil otherwise.
	Body []byte
	// Results are the synchronous items' results, in config order (hooks first, then guardrails), for
	// hook_results.before_request_hooks (StageBefore) or hook_results.after_request_hooks (StageAfter).
	Results []HookResult
	// Async are the async items, to run after the answer is sent; they never block or change the answer. Each
	// closure evaluates one item on a copy of the input and discards the result (its checks' side effects,
	// such as webhook and log calls, are the point). The RequestView passed to Run must stay readable until they
	// finish.
	Async []func(context.Context) HookResult
	// Feedback is the on_fail / on_success feedback of the synchronous items, for the request's log.
	Feedback []Feedback
}

// HookResult is one item of hook_results.before_request_hooks or after_request_hooks.
type HookResult struct {
	ID            string        `json:"id"`
	Verdict       bool          `json:"verdict"`
	Deny          bool          `json:"deny"`
	Async         bool          `json:"async"`
	Type          string        `json:"type"`
	ExecutionTime int64         `json:"execution_time"` // milliseconds
	Checks        []CheckResult `json:"checks"`
}

// CheckResult is one check of a HookResult.
type CheckResult struct {
	ID            string          `json:"id"`
	Verdict       bool            `json:"verdict"`
	Data          json.RawMessage `json:"data"`  // null when the check returned none
	Error         *string         `json:"error"` // null unless the check errored
	ExecutionTime int64           `json:"execution_time"`
	Transformed   bool            `json:"transformed"`
}

// Feedback is an on_fail or on_success feedback of an item that ran, for the request's log.
type Feedback struct {
	HookID   string          `json:"hook_id"`
	Verdict  bool            `json:"verdict"`          // the item's verdict (on_success when true, on_fail when false)
	Value    *float64        `json:"value,omitempty"`  // as configured; absent when not set
	Weight   *float64        `json:"weight,omitempty"` // as configured; absent when not set
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Set is the compiled hooks and guardrails of one config target. It is immutable and safe for concurrent use.
type Set struct {
	before, after []*item
	policy        ErrorPolicy
	// mutatesBefore and mutatesAfter say whether a side has a mutator hook, which needs the body (RunBody).
	mutatesBefore, mutatesAfter bool
}

// Mutates reports whether the set has a mutator hook for stage, so that callers give RunBody the body only
// when one will read it.
func (s *Set) Mutates(stage Stage) bool {
	if s == nil {
		return false
	}
	if stage == StageAfter {
		return s.mutatesAfter
	}
	return s.mutatesBefore
}

// item is one hook or guardrail object.
type item struct {
	id            string
	typ           string
	mutator       bool // a mutator hook: its checks are BodyTransformers, run in order on the body
	async         bool
	denyOnFail    bool
	denyOnSuccess bool
	onFail        *feedback
	onSuccess     *feedback
	checks        []*compiledCheck
	// groups are runs of consecutive checks started together; a transformer is always alone in its group.
	groups    [][]*compiledCheck
	allInline bool
}

type feedback struct {
	Value    *float64        `json:"value"`
	Weight   *float64        `json:"weight"`
	Metadata json.RawMessage `json:"metadata"`
}

type compiledCheck struct {
	id     string
	plugin string // the plugin of a wasm check; "" for a built-in
	check  Check
	// failOnError is the check's own "failOnError" when hasFailOnError; without it ErrorPolicy.Fail decides.
	failOnError    bool
	hasFailOnError bool
	transformer    bool
	inline         bool
}

// Empty reports whether the set has no item at all (a nil Set is empty).
// Has reports whether the set has hooks or guardrails for stage, so that callers skip building their input.
func (s *Set) Has(stage Stage) bool {
	if s == nil {
		return false
	}
	if stage == StageAfter {
		return len(s.after) > 0
	}
	return len(s.before) > 0
}

func (s *Set) Empty() bool {
	return s == nil || len(s.before) == 0 && len(s.after) == 0
}

// Compile compiles the four lists (raw JSON items as in the config) once. It validates each item with the code
// of ValidateHook and ValidateGuardrail, then looks saved guardrails up (saved, in workspaceID; nil finds none)
// and resolves "<plugin>.<check>" ids (plugins; nil knows none). path prefixes the errors' Param (e.g.
// "targets[1]"; "" for the top level).
//
// Errors are *gwerr.Error 400 with code "invalid_config" and Param the JSON path of the offending item, check or
// parameter: an unknown check id gives e.g. "input_guardrails[0].default.wordCountt" or
// "before_request_hooks[0].checks[1].id"; a bad parameter e.g. "input_guardrails[0].default.wordCount.maxWords".
// A check id without a dot means "default.<id>"; "<plugin>.<check>" ids go to plugins.
func Compile(workspaceID, path string, before, after, input, output []json.RawMessage, saved SavedGuardrails, plugins PluginChecks) (*Set, error) {
	c := &compiler{ws: workspaceID, path: path, saved: saved, plugins: plugins}
	return c.lists(before, after, input, output)
}

// CompileTools compiles a config's tool hooks, before_tool_call (StageBefore: checks see the call's arguments
// as JSON text) and after_tool_call (StageAfter: the result's text), as Compile compiles request hooks, with
// the same errors under those lists' names.
func CompileTools(workspaceID, path string, before, after []json.RawMessage, saved SavedGuardrails, plugins PluginChecks) (*Set, error) {
	c := &compiler{ws: workspaceID, path: path, saved: saved, plugins: plugins}
	return c.compileLists([]listItems{{beforeToolCall, before}, {afterToolCall, after}})
}

// listItems is one list of a config with its raw items.
type listItems struct {
	list  list
	items []json.RawMessage
}

func (c *compiler) lists(before, after, input, output []json.RawMessage) (*Set, error) {
	return c.compileLists([]listItems{{beforeHooks, before}, {inputGuardrails, input}, {afterHooks, after},
		{outputGuardrails, output}})
}

func (c *compiler) compileLists(lists []listItems) (*Set, error) {
	s := &Set{}
	for _, l := range lists {
		for i, raw := range l.items {
			it, err := c.item(raw, jsonfield.Index(l.list.String(), i), l.list)
			if err != nil {
				return nil, err
			}
			it.plan()
			if l.list.after() {
				s.after = append(s.after, it)
				s.mutatesAfter = s.mutatesAfter || it.mutator
			} else {
				s.before = append(s.before, it)
				s.mutatesBefore = s.mutatesBefore || it.mutator
			}
		}
	}
	return s, nil
}

// compiler validates items, and compiles them unless validateOnly.
type compiler struct {
	ws, path string
	saved    SavedGuardrails
	plugins  PluginChecks
	// validateOnly checks what needs no workspace: saved guardrails are not read, "<plugin>.<check>" ids are not
	// resolved, and built-in checks are compiled only to check their parameters.
	validateOnly bool
	// skipSaved accepts a saved guardrail's ID without reading it.
	skipSaved bool
}

func (c *compiler) full(p string) string {
	if c.path == "" {
		return p
	}
	if p == "" {
		return c.path
	}
	return c.path + "." + p
}

// errf is jsonfield.Invalid at p, a path relative to the compiler's.
func (c *compiler) errf(p, format string, args ...any) *gwerr.Error {
	return jsonfield.Invalid(c.full(p), format, args...)
}

// check resolves one check whose shape is valid: a built-in is compiled (its factory checks the parameters), a
// plugin's is resolved through c.plugins, and anything else is an unknown check id.
//
// A check of a mutator hook (mutator) must be a plugin's: a built-in one is an error naming its id, and so is
// a plugin loaded without gateway_transform.
func (c *compiler) check(r checkRef, mutator bool) (*compiledCheck, error) {
	id, params, idPath, paramsPath := r.id, r.params, r.idPath, r.paramsPath
	full := id
	if !strings.Contains(id, ".") {
		full = "default." + id
	}
	if mutator && (strings.HasPrefix(full, "default.") || lookup(full) != nil) {
		return nil, c.errf(idPath, "%q is a built-in check, which cannot rewrite a body: the checks of a mutator hook are plugins' (\"<plugin>.<name>\", called through gateway_transform)", id)
	}
	var fo struct {
		FailOnError any `json:"failOnError"`
	}
	if err := json.Unmarshal(params, &fo); err != nil {
		return nil, c.errf(paramsPath, "must be an object of check parameters: %v", err)
	}
	cc := &compiledCheck{id: full}
	switch v := fo.FailOnError.(type) {
	case nil:
	case bool:
		cc.failOnError, cc.hasFailOnError = v, true
	default:
		return nil, c.errf(paramsPath+".failOnError", "must be a boolean")
	}
	var chk Check
	var err error
	plugin, name, _ := strings.Cut(full, ".")
	if f := lookup(full); f != nil {
		chk, err = f(params)
	} else if plugin != "default" && c.validateOnly {
		cc.plugin = plugin
		return cc, nil
	} else if plugin != "default" && c.plugins != nil {
		chk, err = c.plugins(c.ws, plugin, name, params)
		cc.plugin = plugin
		if errors.Is(err, ErrNoPlugin) {
			e := c.errf(idPath, "unknown check %q: no plugin %q exists in this workspace", id, plugin)
			e.Err = err
			return nil, e
		}
	} else {
		return nil, c.errf(idPath, "unknown check %q (built-in checks: %s)", id, strings.Join(Registered(), ", "))
	}
	if err != nil {
		if pe, ok := err.(*ParamError); ok {
			return nil, c.errf(paramsPath+"."+pe.Name, "%s", pe.Message)
		}
		if ge, ok := err.(*gwerr.Error); ok {
			if ge.Param != "" {
				return nil, ge
			}
			cp := *ge
			cp.Param = c.full(idPath)
			return nil, &cp
		}
		e := c.errf(idPath, "check %q: %v", id, err)
		e.Err = err
		return nil, e
	}
	if chk == nil {
		return nil, c.errf(idPath, "unknown check %q", id)
	}
	if mutator {
		if _, ok := chk.(BodyTransformer); !ok {
			return nil, c.errf(idPath, "check %q cannot rewrite a body, which a mutator hook asks of its checks", id)
		}
		if t, ok := chk.(transformReady); ok {
			if err := t.CanTransform(); err != nil {
				e := c.errf(idPath, "check %q in a mutator hook: %v", id, err)
				e.Err = err
				return nil, e
			}
		}
	}
	cc.check = chk
	if t, ok := chk.(Transformer); ok && t.Transforms() {
		cc.transformer = true
	}
	_, cc.inline = chk.(inline)
	return cc, nil
}

// plan groups the checks: consecutive non-transformers run together, each transformer alone.
func (it *item) plan() {
	it.allInline = true
	var cur []*compiledCheck
	for _, cc := range it.checks {
		it.allInline = it.allInline && cc.inline
		if cc.transformer {
			if len(cur) > 0 {
				it.groups = append(it.groups, cur)
				cur = nil
			}
			it.groups = append(it.groups, []*compiledCheck{cc})
			continue
		}
		cur = append(cur, cc)
	}
	if len(cur) > 0 {
		it.groups = append(it.groups, cur)
	}
}

// orderedObject splits a JSON object into its keys and values in document order.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	return keys, vals, nil
}
