package condition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// Env is what a condition reads: the request's metadata (x-gateway-metadata), its parsed JSON body (params)
// and its URL path. It is built once per request and shared by every condition of the config.
type Env struct {
	Metadata map[string]string
	Params   map[string]any // the request body decoded with encoding/json (numbers are float64)
	URLPath  string         // e.g. "/v1/chat/completions"
	// Plugin asks the workspace's wasm plugin id, with the query's $params, whether the request matches. Nil
	// means no plugins: $plugin conditions never match. The caller binds it to the request's context for the
	// Eval calls that need it, rather than keeping a context in the Env.
	Plugin func(id string, params json.RawMessage) bool
}

// Matcher is a compiled query. Match is safe for concurrent use.
type Matcher interface {
	Match(env *Env) bool
}

// An Evaluator is a Matcher that can also fail: a $expr that goes over its run-time limits on a request. The
// Matchers of Compile are Evaluators; call them through Eval.
type Evaluator interface {
	Eval(env *Env) (bool, *gwerr.Error)
}

// Eval is m.Match(env), except that a query that could not be evaluated within its limits on this request
// returns a 400 *gwerr.Error whose Param is the JSON path of the offending $expr. A Matcher that is not an
// Evaluator never fails.
func Eval(m Matcher, env *Env) (bool, *gwerr.Error) {
	if e, ok := m.(Evaluator); ok {
		return e.Eval(env)
	}
	return m.Match(env), nil
}

// codeInvalidConfig is the gwerr code of every Compile error.
const codeInvalidConfig = "invalid_config"

// Compile compiles a conditional-routing query (DESIGN.md's MongoDB-style language, plus $expr) once. path is
// the query's JSON path in its config (e.g. "strategy.conditions[0].query"); errors are *gwerr.Error 400 whose
// Param and message name the offending field below it.
func Compile(query json.RawMessage, path string) (Matcher, error) {
	if !json.Valid(query) {
		return nil, configErr(path, "query is not valid JSON")
	}
	m, err := compileQuery(query, path)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// compileQuery compiles one query object: every key must hold.
func compileQuery(raw json.RawMessage, path string) (Matcher, *gwerr.Error) {
	fields, gerr := objectFields(raw, path, "a query")
	if gerr != nil {
		return nil, gerr
	}
	all := make(andNode, 0, len(fields))
	for _, f := range fields {
		p := joinPath(path, f.key)
		var (
			m   Matcher
			err *gwerr.Error
		)
		switch f.key {
		case "$and":
			m, err = compileList(f.val, p, func(ms []Matcher) Matcher { return andNode(ms) })
		case "$or":
			m, err = compileList(f.val, p, func(ms []Matcher) Matcher { return orNode(ms) })
		case "$expr":
			m, err = compileExpr(f.val, p)
		case "$plugin":
			m, err = compilePlugin(f.val, fields, p, path)
		case "$params":
			if !hasKey(fields, "$plugin") {
				return nil, configErr(p, "$params goes with $plugin")
			}
			continue // read by compilePlugin
		default:
			if strings.HasPrefix(f.key, "$") {
				err = configErr(p, "unsupported operator %q (a query's top level allows $and, $or and $expr)", f.key)
			} else {
				m, err = compileField(f.key, f.val, p)
			}
		}
		if err != nil {
			return nil, err
		}
		all = append(all, m)
	}
	if len(all) == 1 {
		return all[0], nil
	}
	return all, nil
}

// compileList compiles the array of queries of $and or $or.
func compileList(raw json.RawMessage, path string, build func([]Matcher) Matcher) (Matcher, *gwerr.Error) {
	var items []json.RawMessage
	if firstByte(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, configErr(path, "must be an array of queries")
	}
	if len(items) == 0 {
		return nil, configErr(path, "must not be empty")
	}
	ms := make([]Matcher, len(items))
	for i, item := range items {
		m, err := compileQuery(item, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return build(ms), nil
}

// andNode matches when every part matches; an empty andNode matches everything.
type andNode []Matcher

func (n andNode) Match(env *Env) bool {
	for _, m := range n {
		if !m.Match(env) {
			return false
		}
	}
	return true
}

// orNode matches when any part matches.
type orNode []Matcher

func (n orNode) Match(env *Env) bool {
	for _, m := range n {
		if m.Match(env) {
			return true
		}
	}
	return false
}

func (n andNode) Eval(env *Env) (bool, *gwerr.Error) {
	for _, m := range n {
		if ok, err := Eval(m, env); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

func (n orNode) Eval(env *Env) (bool, *gwerr.Error) {
	for _, m := range n {
		ok, err := Eval(m, env)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// member is one key of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// objectFields returns the members of the JSON object raw in document order. raw must be valid JSON. It
// rejects anything but an object (what names the expected thing in the message) and duplicate keys.
func objectFields(raw json.RawMessage, path, what string) ([]member, *gwerr.Error) {
	if firstByte(raw) != '{' {
		return nil, configErr(path, "%s must be a JSON object", what)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, configErr(path, "%s must be a JSON object", what)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, configErr(path, "%s must be a JSON object", what)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, configErr(path, "%s must be a JSON object", what)
		}
		for _, m := range out {
			if m.key == key {
				return nil, configErr(joinPath(path, key), "duplicate key %q", key)
			}
		}
		out = append(out, member{key: key, val: val})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, configErr(path, "%s must be a JSON object", what)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, configErr(path, "%s must be a single JSON object", what)
	}
	return out, nil
}

// firstByte returns the first non-space byte of raw, or 0.
func firstByte(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// joinPath appends key to the JSON path path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// configErr is the 400 every Compile error is.
func configErr(param, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{
		Status:  http.StatusBadRequest,
		Code:    codeInvalidConfig,
		Param:   param,
		Message: "invalid config: " + param + ": " + fmt.Sprintf(format, args...),
	}
}

// pluginNode asks a workspace's wasm plugin whether the request matches, through Env.Plugin.
type pluginNode struct {
	id     string
	params json.RawMessage
}

func (n pluginNode) Match(env *Env) bool {
	if env == nil || env.Plugin == nil {
		return false
	}
	return env.Plugin(n.id, n.params)
}

// compilePlugin compiles {"$plugin": "<plugin id>", "$params": {...}}: the plugin's answer is one more
// condition that must hold beside the object's other keys.
func compilePlugin(val json.RawMessage, fields []member, p, path string) (Matcher, *gwerr.Error) {
	var id string
	if json.Unmarshal(val, &id) != nil || !validPluginID(id) {
		return nil, configErr(p, "must be the id of a workspace plugin (letters, digits, '.', '_', ':' or '-')")
	}
	n := pluginNode{id: id}
	for _, f := range fields {
		if f.key == "$params" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(f.val, &obj) != nil || obj == nil {
				return nil, configErr(joinPath(path, "$params"), "must be an object of the plugin's parameters")
			}
			n.params = f.val
		}
	}
	return n, nil
}

func hasKey(fields []member, key string) bool {
	for _, f := range fields {
		if f.key == key {
			return true
		}
	}
	return false
}

func validPluginID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
