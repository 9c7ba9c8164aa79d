package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cbroglie/mustache"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/storage"
)

// Error is a template or request that cannot be used; Field names the offending part by its JSON path
// ("messages[0].content") and is empty for the whole.
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func fieldErr(field, format string, args ...any) *Error {
	return &Error{Field: field, Message: fmt.Sprintf(format, args...)}
}

// targetFields name the template's target; they are not part of the rendered body.
var targetFields = []string{"provider", "virtual_key", "config"}

// Target is where a template's completions go: a provider ("@slug" or an identifier), a virtual key, or a
// saved config's ID. All empty: the caller's headers decide.
type Target struct {
	Provider, VirtualKey, Config string
}

// Template is a compiled template version. It is immutable and safe for concurrent use.
type Template struct {
	target   Target
	params   []member // hyperparameters, sorted by key
	messages []message
	size     int // a guess of the rendered size, for the buffer
}

type member struct {
	key   string
	quote []byte // the key as a JSON string, with the colon
	raw   json.RawMessage
}

// message is one message: its fields other than content as they are, and its content as a template (a
// string) or as parts whose "text" is a template.
type message struct {
	fields  []member
	content *mustache.Template // a string content
	parts   []part             // an array content
	raw     json.RawMessage    // a content that is neither (null): passed as it is
}

type part struct {
	fields []member
	text   *mustache.Template // nil: the part has no text (an image)
}

// Target returns the template's target.
func (t *Template) Target() Target { return t.target }

// Model returns the template's model, or "".
func (t *Template) Model() string {
	for _, p := range t.params {
		if p.key == "model" {
			var s string
			json.Unmarshal(p.raw, &s)
			return s
		}
	}
	return ""
}

// Compile checks and compiles a template version.
func Compile(raw []byte) (*Template, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, &Error{Message: "a template must be a JSON object"}
	}
	t := &Template{size: len(raw) + 64}
	for _, name := range targetFields {
		v, ok := top[name]
		if !ok || isNull(v) {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, fieldErr(name, "must be a string")
		}
		switch name {
		case "provider":
			t.target.Provider = s
		case "virtual_key":
			t.target.VirtualKey = s
		case "config":
			t.target.Config = s
		}
	}
	rawMsgs, ok := top["messages"]
	if !ok {
		return nil, fieldErr("messages", "is required")
	}
	var msgs []json.RawMessage
	if json.Unmarshal(rawMsgs, &msgs) != nil || len(msgs) == 0 {
		return nil, fieldErr("messages", "must be a non-empty array of messages")
	}
	for i, m := range msgs {
		cm, err := compileMessage(fmt.Sprintf("messages[%d]", i), m)
		if err != nil {
			return nil, err
		}
		t.messages = append(t.messages, cm)
	}
	for k, v := range top {
		if k == "messages" || slices.Contains(targetFields, k) {
			continue
		}
		t.params = append(t.params, newMember(k, v))
	}
	sortMembers(t.params)
	return t, nil
}

func compileMessage(path string, raw json.RawMessage) (message, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return message{}, fieldErr(path, "must be an object with role and content")
	}
	var m message
	if r, ok := fields["role"]; !ok || kindOf(r) != '"' {
		return message{}, fieldErr(path+".role", "is required and must be a string")
	}
	content, ok := fields["content"]
	if !ok {
		return message{}, fieldErr(path+".content", "is required")
	}
	switch kindOf(content) {
	case '"':
		var s string
		json.Unmarshal(content, &s)
		tmpl, err := mustache.ParseStringRaw(s, true)
		if err != nil {
			return message{}, fieldErr(path+".content", "is not a valid Mustache template: %v", err)
		}
		m.content = tmpl
	case '[':
		var parts []map[string]json.RawMessage
		if json.Unmarshal(content, &parts) != nil {
			return message{}, fieldErr(path+".content", "must be a string or an array of parts")
		}
		m.parts = []part{}
		for j, p := range parts {
			var cp part
			for k, v := range p {
				if k == "text" && kindOf(v) == '"' {
					var s string
					json.Unmarshal(v, &s)
					tmpl, err := mustache.ParseStringRaw(s, true)
					if err != nil {
						return message{}, fieldErr(fmt.Sprintf("%s.content[%d].text", path, j), "is not a valid Mustache template: %v", err)
					}
					cp.text = tmpl
					continue
				}
				cp.fields = append(cp.fields, newMember(k, v))
			}
			sortMembers(cp.fields)
			m.parts = append(m.parts, cp)
		}
	case 'n':
		m.raw = content
	default:
		return message{}, fieldErr(path+".content", "must be a string or an array of parts")
	}
	for k, v := range fields {
		if k != "content" {
			m.fields = append(m.fields, newMember(k, v))
		}
	}
	sortMembers(m.fields)
	return m, nil
}

func newMember(key string, raw json.RawMessage) member {
	var compact bytes.Buffer
	if json.Compact(&compact, raw) == nil {
		raw = compact.Bytes()
	}
	q := jsonstr.AppendString(nil, key)
	return member{key: key, quote: append(q, ':'), raw: raw}
}

func sortMembers(ms []member) {
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
}

func kindOf(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func isNull(raw json.RawMessage) bool { return kindOf(raw) == 'n' }

// Render returns the chat completion body of the template with vars substituted: the template's
// hyperparameters, each replaced by the caller's override of the same key, the overrides the template lacks,
// then the rendered messages.
func (t *Template) Render(vars map[string]any, overrides map[string]json.RawMessage) ([]byte, error) {
	b := make([]byte, 0, t.size)
	b = append(b, '{')
	first := true
	comma := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	for _, p := range t.params {
		if _, ok := overrides[p.key]; ok {
			continue
		}
		comma()
		b = append(b, p.quote...)
		b = append(b, p.raw...)
	}
	if len(overrides) > 0 {
		keys := make([]string, 0, len(overrides))
		for k := range overrides {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			comma()
			b = jsonstr.AppendString(b, k)
			b = append(b, ':')
			b = append(b, overrides[k]...)
		}
	}
	comma()
	b = append(b, `"messages":[`...)
	for i := range t.messages {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = t.messages[i].render(b, vars, i); err != nil {
			return nil, err
		}
	}
	b = append(b, "]}"...)
	return b, nil
}

func (m *message) render(b []byte, vars map[string]any, i int) ([]byte, error) {
	b = append(b, '{')
	for _, f := range m.fields {
		b = append(b, f.quote...)
		b = append(b, f.raw...)
		b = append(b, ',')
	}
	b = append(b, `"content":`...)
	switch {
	case m.content != nil:
		s, err := m.content.Render(vars)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("messages[%d].content", i), "%v", err)
		}
		b = jsonstr.AppendString(b, s)
	case m.parts != nil:
		b = append(b, '[')
		for j := range m.parts {
			if j > 0 {
				b = append(b, ',')
			}
			p := &m.parts[j]
			b = append(b, '{')
			for k, f := range p.fields {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, f.quote...)
				b = append(b, f.raw...)
			}
			if p.text != nil {
				s, err := p.text.Render(vars)
				if err != nil {
					return nil, fieldErr(fmt.Sprintf("messages[%d].content[%d].text", i, j), "%v", err)
				}
				if len(p.fields) > 0 {
					b = append(b, ',')
				}
				b = append(b, `"text":`...)
				b = jsonstr.AppendString(b, s)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	default:
		b = append(b, m.raw...)
	}
	return append(b, '}'), nil
}

// Ref is a prompt reference of the path: an ID with an optional version selector.
type Ref struct {
	ID      string
	Latest  bool // "@latest"
	Version int  // "@<n>"; 0 with Latest false: the published version
}

// ParseRef reads "id", "id@latest" or "id@<n>".
func ParseRef(s string) (Ref, error) {
	id, sel, has := strings.Cut(s, "@")
	if err := storage.CheckID("prompt id", id); err != nil {
		return Ref{}, &Error{Field: "promptId", Message: err.Error()}
	}
	r := Ref{ID: id}
	switch {
	case !has:
	case sel == "latest":
		r.Latest = true
	default:
		n, err := strconv.Atoi(sel)
		if err != nil || n < 1 || strings.HasPrefix(sel, "+") {
			return Ref{}, &Error{Field: "promptId", Message: fmt.Sprintf("%q: the version after @ must be latest or a version number (1, 2, ...)", s)}
		}
		r.Version = n
	}
	return r, nil
}

// String is the reference as written.
func (r Ref) String() string {
	switch {
	case r.Latest:
		return r.ID + "@latest"
	case r.Version > 0:
		return r.ID + "@" + strconv.Itoa(r.Version)
	}
	return r.ID
}

// ErrNoVersion is returned by Select when the prompt has no such version (or none published).
var ErrNoVersion = errors.New("prompt: no such version")

// Select returns the version of p that r names.
func Select(p *storage.Prompt, r Ref) (*storage.PromptVersion, error) {
	switch {
	case len(p.Versions) == 0:
		return nil, fmt.Errorf("%w: prompt %q has no versions", ErrNoVersion, p.ID)
	case r.Latest:
		return &p.Versions[len(p.Versions)-1], nil
	case r.Version > 0:
		for i := range p.Versions {
			if p.Versions[i].Version == r.Version {
				return &p.Versions[i], nil
			}
		}
		return nil, fmt.Errorf("%w: prompt %q has no version %d (it has 1 to %d)", ErrNoVersion, p.ID, r.Version, p.Versions[len(p.Versions)-1].Version)
	}
	for i := range p.Versions {
		if p.Versions[i].Published {
			return &p.Versions[i], nil
		}
	}
	return nil, fmt.Errorf("%w: prompt %q has no published version; name one with %s@latest or %s@<version>", ErrNoVersion, p.ID, p.ID, p.ID)
}

// Cache keeps compiled templates by the hash of their JSON. It is safe for concurrent use.
type Cache struct {
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]*Template
	max int
}

// NewCache returns a cache of at most max templates (1024 when max <= 0).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = 1024
	}
	return &Cache{m: make(map[[sha256.Size]byte]*Template), max: max}
}

// Compile returns the compiled template of raw, compiling it on its first use.
func (c *Cache) Compile(raw []byte) (*Template, error) {
	h := sha256.Sum256(raw)
	c.mu.RLock()
	t, ok := c.m[h]
	c.mu.RUnlock()
	if ok {
		return t, nil
	}
	t, err := Compile(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		for k := range c.m { // an arbitrary entry: templates are cheap to compile again
			delete(c.m, k)
			break
		}
	}
	c.m[h] = t
	c.mu.Unlock()
	return t, nil
}
