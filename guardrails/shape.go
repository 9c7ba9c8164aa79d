package guardrails

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
)

// This file is the one validator of hook and guardrail items (SPEC.md's Hooks table with DESIGN.md's
// decisions). runtime/config calls it for every config, routes and runtime/bootstrap for saved guardrails, and
// Compile builds its items from what it reads, so that no path accepts what another refuses.

// list says where an item stands, which decides its keys and where deny may stand.
type list int

const (
	beforeHooks list = iota
	afterHooks
	inputGuardrails
	outputGuardrails
	// savedGuardrail is a saved guardrail object: either guardrail list may name it, so it has the wider shape,
	// output's, and its on_fail.deny denies wherever it runs.
	savedGuardrail
	// beforeToolCall and afterToolCall are a config's tool hooks (DESIGN.md "MCP gateway"): shaped like
	// before_request_hooks and after_request_hooks, and both may deny, since a tool's result can carry what must
	// not reach the agent as much as its arguments can.
	beforeToolCall
	afterToolCall
)

func (l list) String() string {
	return [...]string{"before_request_hooks", "after_request_hooks", "input_guardrails", "output_guardrails",
		"a saved guardrail", "before_tool_call", "after_tool_call"}[l]
}

func (l list) hook() bool {
	return l == beforeHooks || l == afterHooks || l == beforeToolCall || l == afterToolCall
}

// after reports whether the list's items run on the answer (or a tool's result).
func (l list) after() bool { return l == afterHooks || l == outputGuardrails || l == afterToolCall }

// outcomeDeny reports whether on_fail and on_success may carry deny here (DESIGN.md: hooks deny through them
// before the request; guardrail objects through their top-level deny, output ones through on_fail too).
func (l list) outcomeDeny() bool {
	return l == beforeHooks || l == outputGuardrails || l == savedGuardrail || l == beforeToolCall || l == afterToolCall
}

var (
	hookKeys      = []string{"id", "type", "on_fail", "on_success", "checks"}
	afterHookKeys = []string{"id", "type", "async", "on_fail", "on_success", "checks"}
	// guardrailOwnKeys are a guardrail object's own keys; any other key is a check id whose value is its
	// parameters. "checks" holds checks as a hook does ({"checks": [{"id": ..., "parameters": ...}]}).
	guardrailOwnKeys = []string{"id", "type", "deny", "async", "on_fail", "on_success", "checks"}
)

// checkIDPattern is the form of a check id: "name" (meaning default.name) or "namespace.name".
var checkIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?$`)

// ValidateHook checks one item of before_request_hooks (after false) or after_request_hooks (after true):
// its keys and their types, where deny may stand, and each check's id and parameters. Built-in check ids must
// be registered and their parameters valid; "<plugin>.<check>" ids are taken as they are, since plugins belong
// to a workspace (Compile resolves them). path is the item's JSON path ("targets[1].before_request_hooks[0]").
//
// Errors are *gwerr.Error 400 with code "invalid_config", Param the offending field's JSON path
// ("before_request_hooks[0].checks[1].parameters.rule") and a Message that starts "invalid config: <Param>: ".
func ValidateHook(raw json.RawMessage, path string, after bool) error {
	l := beforeHooks
	if after {
		l = afterHooks
	}
	_, err := (&compiler{validateOnly: true}).item(raw, path, l)
	return err
}

// ValidateToolHook checks one item of a config's before_tool_call (after false) or after_tool_call (after true)
// as ValidateHook checks a request hook, with the same errors; either may deny (on_fail.deny, on_success.deny).
func ValidateToolHook(raw json.RawMessage, path string, after bool) error {
	l := beforeToolCall
	if after {
		l = afterToolCall
	}
	_, err := (&compiler{validateOnly: true}).item(raw, path, l)
	return err
}

// ValidateGuardrail checks one item of input_guardrails (output false) or output_guardrails (output true): a
// saved guardrail's ID (any non-empty string here: storage owns the syntax of IDs and Compile looks it up) or a
// guardrail object, checked as ValidateHook checks a hook. Its errors are ValidateHook's.
func ValidateGuardrail(raw json.RawMessage, path string, output bool) error {
	l := inputGuardrails
	if output {
		l = outputGuardrails
	}
	_, err := (&compiler{validateOnly: true}).item(raw, path, l)
	return err
}

// ValidateSaved checks a saved guardrail object (the body of PUT /v1/guardrails/{id}, an entry of the bootstrap
// file's guardrails, both without their id and workspace) as ValidateGuardrail checks an output guardrail
// object: either list may name it. Its errors' Param is relative to the object ("default.wordCount.maxWords",
// "" for the object itself).
func ValidateSaved(raw json.RawMessage) error {
	_, err := (&compiler{validateOnly: true}).item(raw, "", savedGuardrail)
	return err
}

// ValidateSavedIn is ValidateSaved for a workspace: each "<plugin>.<check>" id is also resolved through plugins,
// as Compile resolves it (nil plugins knows none), so that a plugin the workspace lacks is refused now.
func ValidateSavedIn(workspaceID string, raw json.RawMessage, plugins PluginChecks) error {
	_, err := (&compiler{ws: workspaceID, plugins: plugins}).item(raw, "", savedGuardrail)
	return err
}

// ValidateIn checks the four lists of a config object as Compile does in workspaceID, "<plugin>.<check>" ids
// resolved through plugins (nil knows none), but without reading the saved guardrails named by ID: a request
// reads them when it runs. path prefixes the errors' Param, as for Compile.
func ValidateIn(workspaceID, path string, before, after, input, output []json.RawMessage, plugins PluginChecks) error {
	c := &compiler{ws: workspaceID, path: path, plugins: plugins, skipSaved: true}
	_, err := c.lists(before, after, input, output)
	return err
}

// checkRef is a check as an item names it, before it is resolved.
type checkRef struct {
	id                 string          // as written: "wordCount", "default.wordCount", "pii.detect"
	params             json.RawMessage // always a JSON object
	idPath, paramsPath string
}

// item validates one list item and resolves its checks: compiled for Compile, only validated when
// c.validateOnly.
func (c *compiler) item(raw json.RawMessage, p string, l list) (*item, error) {
	var it *item
	var refs []checkRef
	var err error
	switch {
	case l.hook():
		it, refs, err = c.hook(raw, p, l)
	case l != savedGuardrail && jsonfield.Kind(raw) == "string":
		it, refs, err = c.savedItem(raw, p)
	default:
		it, refs, err = c.guardrail(raw, p, l)
	}
	if err != nil {
		return nil, err
	}
	it.mutator = it.typ == typeMutator
	for _, r := range refs {
		cc, err := c.check(r, it.mutator)
		if err != nil {
			return nil, err
		}
		it.checks = append(it.checks, cc)
	}
	return it, nil
}

// typeMutator is the type of a hook whose checks rewrite the request or the answer (Portkey's name): each is a
// plugin's gateway_transform, run one after another on the body the one before left.
const typeMutator = "mutator"

// mutatorShape checks where a mutator hook stands and what it may say: only in before_request_hooks and
// after_request_hooks (the body of a tool call or a guardrail list is not theirs to rewrite), and never async,
// since its answer is the body that goes on.
func (c *compiler) mutatorShape(o *object, it *item, l list) error {
	if it.typ != typeMutator {
		return nil
	}
	if l != beforeHooks && l != afterHooks {
		return c.errf(o.at("type"), "%q is not allowed in %s: mutator hooks stand in before_request_hooks and after_request_hooks", typeMutator, l)
	}
	if it.async {
		return c.errf(o.at("async"), "must not be true in a mutator hook: the body it returns is what goes on, so it cannot run after the answer")
	}
	return nil
}

func (c *compiler) hook(raw json.RawMessage, p string, l list) (*item, []checkRef, error) {
	o, err := c.object(raw, p, "a hook object")
	if err != nil {
		return nil, nil, err
	}
	keys := hookKeys
	if l == afterHooks || l == afterToolCall {
		keys = afterHookKeys
	}
	if err := c.onlyKeys(o, keys); err != nil {
		return nil, nil, err
	}
	it := &item{}
	if it.id, err = o.str("id", true, true); err != nil {
		return nil, nil, err
	}
	if it.typ, err = o.str("type", false, false); err != nil {
		return nil, nil, err
	}
	if it.typ == "" {
		it.typ = "guardrail"
	}
	if it.async, err = o.boolean("async"); err != nil {
		return nil, nil, err
	}
	if err := c.mutatorShape(o, it, l); err != nil {
		return nil, nil, err
	}
	if it.onFail, it.denyOnFail, err = c.outcome(o, "on_fail", l); err != nil {
		return nil, nil, err
	}
	if it.onSuccess, it.denyOnSuccess, err = c.outcome(o, "on_success", l); err != nil {
		return nil, nil, err
	}
	refs, err := c.checkList(o.get("checks"), o.at("checks"))
	return it, refs, err
}

// savedItem reads a string item of a guardrail list: a saved guardrail, looked up in the workspace.
func (c *compiler) savedItem(raw json.RawMessage, p string) (*item, []checkRef, error) {
	var id string
	if err := json.Unmarshal(raw, &id); err != nil || id == "" {
		return nil, nil, c.errf(p, "must be a saved guardrail's ID (a non-empty string) or a guardrail object")
	}
	if c.validateOnly || c.skipSaved {
		return &item{id: id}, nil, nil
	}
	if c.saved == nil {
		return nil, nil, c.errf(p, "saved guardrail %q not found", id)
	}
	obj, err := c.saved(c.ws, id)
	if err != nil {
		if ge, ok := err.(*gwerr.Error); ok {
			return nil, nil, ge
		}
		e := c.errf(p, "saved guardrail %q not found", id)
		e.Err = err
		return nil, nil, e
	}
	if jsonfield.Kind(obj) != "object" {
		return nil, nil, c.errf(p, "saved guardrail %q is not a guardrail object", id)
	}
	it, refs, err := c.guardrail(obj, p, savedGuardrail)
	if err != nil {
		return nil, nil, err
	}
	it.id = id
	return it, refs, nil
}

// guardrail reads a guardrail object standing in list l (savedGuardrail: a saved one on its own).
func (c *compiler) guardrail(raw json.RawMessage, p string, l list) (*item, []checkRef, error) {
	what := "a saved guardrail's ID (a string) or a guardrail object"
	if l == savedGuardrail {
		what = "a guardrail object"
	}
	o, err := c.object(raw, p, what)
	if err != nil {
		return nil, nil, err
	}
	it := &item{}
	if it.id, err = o.str("id", false, true); err != nil {
		return nil, nil, err
	}
	if it.id == "" && l != savedGuardrail {
		it.id = p // an inline guardrail without id is named by its place, e.g. "input_guardrails[0]"
	}
	if it.typ, err = o.str("type", false, false); err != nil {
		return nil, nil, err
	}
	if it.typ == "" {
		it.typ = "guardrail"
	}
	if err := c.mutatorShape(o, it, l); err != nil {
		return nil, nil, err
	}
	if it.denyOnFail, err = o.boolean("deny"); err != nil {
		return nil, nil, err
	}
	if it.async, err = o.boolean("async"); err != nil {
		return nil, nil, err
	}
	var deny bool
	if it.onFail, deny, err = c.outcome(o, "on_fail", l); err != nil {
		return nil, nil, err
	}
	it.denyOnFail = it.denyOnFail || deny
	if it.onSuccess, it.denyOnSuccess, err = c.outcome(o, "on_success", l); err != nil {
		return nil, nil, err
	}
	// The checks, in document order: transformers apply in the order they are written.
	var refs []checkRef
	for i, key := range o.keys {
		v, kp := o.vals[i], o.at(key)
		if key == "checks" {
			if jsonfield.Kind(v) == "null" {
				continue
			}
			more, err := c.checkList(v, kp)
			if err != nil {
				return nil, nil, err
			}
			refs = append(refs, more...)
			continue
		}
		if slices.Contains(guardrailOwnKeys, key) {
			continue
		}
		if !checkIDPattern.MatchString(key) {
			return nil, nil, c.errf(kp, "unknown field %q (a guardrail object's keys are %s, and check ids: name or namespace.name)", key, strings.Join(guardrailOwnKeys, ", "))
		}
		if jsonfield.Kind(v) != "object" {
			return nil, nil, c.errf(kp, "must be an object of check parameters (a guardrail's extra keys are check ids, e.g. \"default.wordCount\": {\"maxWords\": 10}), not %s", jsonfield.Describe(v))
		}
		refs = append(refs, checkRef{id: key, params: v, idPath: kp, paramsPath: kp})
	}
	if len(refs) == 0 {
		return nil, nil, c.errf(p, "has no checks: a guardrail object needs at least one, such as \"default.regexMatch\": {\"rule\": \"...\"} (or a \"checks\" list)")
	}
	return it, refs, nil
}

// checkList reads a checks array ([{"id": ..., "parameters": {...}}]) found at p; nil when absent.
func (c *compiler) checkList(raw json.RawMessage, p string) ([]checkRef, error) {
	if raw == nil {
		return nil, nil
	}
	var items []json.RawMessage
	if jsonfield.Kind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
		return nil, c.errf(p, "must be an array of checks ({\"id\": \"default.wordCount\", \"parameters\": {...}}), not %s", jsonfield.Describe(raw))
	}
	refs := make([]checkRef, 0, len(items))
	for j, r := range items {
		o, err := c.object(r, jsonfield.Index(p, j), "a check ({\"id\": ..., \"parameters\": {...}})")
		if err != nil {
			return nil, err
		}
		if err := c.onlyKeys(o, []string{"id", "parameters"}); err != nil {
			return nil, err
		}
		id, err := o.str("id", true, true)
		if err != nil {
			return nil, err
		}
		if !checkIDPattern.MatchString(id) {
			return nil, c.errf(o.at("id"), "%q is not a check id (name or namespace.name)", id)
		}
		params := o.get("parameters")
		switch {
		case params == nil:
			return nil, c.errf(o.at("parameters"), "is required (an object; {} when the check takes none)")
		case jsonfield.Kind(params) != "object":
			return nil, c.errf(o.at("parameters"), "must be an object of check parameters, not %s", jsonfield.Describe(params))
		}
		refs = append(refs, checkRef{id: id, params: params, idPath: o.at("id"), paramsPath: o.at("parameters")})
	}
	return refs, nil
}

// outcome reads on_fail or on_success: its feedback, and deny where l allows it.
func (c *compiler) outcome(parent *object, key string, l list) (*feedback, bool, error) {
	raw := parent.get(key)
	if raw == nil {
		return nil, false, nil
	}
	o, err := c.object(raw, parent.at(key), "an object with feedback (and deny)")
	if err != nil {
		return nil, false, err
	}
	if !l.outcomeDeny() && o.get("deny") != nil {
		return nil, false, c.errf(o.at("deny"), "is not allowed here: %s of %s takes feedback only (deny belongs in on_fail/on_success of before_request_hooks and output_guardrails, or at a guardrail's top level)", key, l)
	}
	if err := c.onlyKeys(o, []string{"feedback", "deny"}); err != nil {
		return nil, false, err
	}
	var fb *feedback
	if fraw := o.get("feedback"); fraw != nil {
		f, err := c.object(fraw, o.at("feedback"), "an object")
		if err != nil {
			return nil, false, err
		}
		if err := c.onlyKeys(f, []string{"value", "weight", "metadata"}); err != nil {
			return nil, false, err
		}
		fb = &feedback{}
		if fb.Value, err = f.number("value"); err != nil {
			return nil, false, err
		}
		if fb.Weight, err = f.number("weight"); err != nil {
			return nil, false, err
		}
		if m := f.get("metadata"); m != nil {
			if jsonfield.Kind(m) != "object" {
				return nil, false, c.errf(f.at("metadata"), "must be an object, not %s", jsonfield.Describe(m))
			}
			fb.Metadata = m
		}
	}
	deny, err := o.boolean("deny")
	return fb, deny, err
}

// object is a JSON object of an item: its keys and values in document order, and its fields by key (the last
// of a repeated key, as encoding/json keeps), read with jsonfield.
type object struct {
	path   string // relative to the compiler's path, as errf takes it
	keys   []string
	vals   []json.RawMessage
	fields *jsonfield.Object // its Path is the full one, which its errors name
}

func (c *compiler) object(raw json.RawMessage, p, what string) (*object, error) {
	if jsonfield.Kind(raw) != "object" {
		return nil, c.errf(p, "must be %s, not %s", what, jsonfield.Describe(raw))
	}
	keys, vals, err := orderedObject(raw)
	if err != nil {
		return nil, c.errf(p, "must be %s: %v", what, err)
	}
	m := make(map[string]json.RawMessage, len(keys))
	for i, k := range keys {
		m[k] = vals[i]
	}
	return &object{path: p, keys: keys, vals: vals, fields: jsonfield.ObjectOf(m, c.full(p))}, nil
}

func (o *object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns key's value; nil when absent or null (null means "not set", as everywhere in a config).
func (o *object) get(key string) json.RawMessage { return o.fields.Get(key) }

func (c *compiler) onlyKeys(o *object, names []string) error {
	for _, k := range o.keys {
		if !slices.Contains(names, k) {
			return c.errf(o.at(k), "unknown field %q (allowed here: %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// The fields an item reads with str, boolean and number have plain names, so that jsonfield's paths for them
// are the ones at gives.

// str reads a string field. A required field must be present and, like every field that nonEmpty names, not "".
func (o *object) str(key string, required, nonEmpty bool) (string, error) {
	s, _, err := o.fields.Str(key, required, nonEmpty)
	return s, err
}

func (o *object) boolean(key string) (bool, error) {
	b, err := o.fields.Boolean(key)
	return b != nil && *b, err
}

func (o *object) number(key string) (*float64, error) {
	return o.fields.Number(key, false)
}
