package examplecases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/conformance"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// Examples are the example plugins every guest language has.
var Examples = []string{"denylist", "pii", "router"}

// Case is one row of the table; see the package documentation for what each field means.
type Case struct {
	Example   string                     `json:"example"`
	Name      string                     `json:"name"`
	Kind      string                     `json:"kind"` // "check" or "condition"
	CheckID   string                     `json:"check_id"`
	Input     Input                      `json:"input"`
	Fields    map[string]json.RawMessage `json:"fields"`
	KV        map[string]json.RawMessage `json:"kv"`
	Want      Want                       `json:"want"`
	Languages []wasmtest.Language        `json:"languages"`
	Why       string                     `json:"why"`

	kv map[string]string // KV's values as the store holds them, read by validate
}

// Input is the Input of a case.
type Input struct {
	Text      string                     `json:"text"`
	Repeat    int                        `json:"repeat"`
	Model     string                     `json:"model"`
	Stage     string                     `json:"stage"`
	Endpoint  string                     `json:"endpoint"`
	Tool      string                     `json:"tool"`
	MCPServer string                     `json:"mcp_server"`
	Metadata  [][2]string                `json:"metadata"`
	Params    map[string]json.RawMessage `json:"params"`
}

// kvValue is one value of a case's plugin key-value store: in the table a JSON string, or an object
// {"text": t, "repeat": n, "suffix": s} for t written n times then s (a value too long to write out).
type kvValue struct {
	Text   string `json:"text"`
	Repeat int    `json:"repeat"`
	Suffix string `json:"suffix"`
}

// parseKVValue reads a string or the object form, refusing unknown fields in it as the table does, and bounds
// the value as the store does.
func parseKVValue(raw json.RawMessage) (string, error) {
	var v kvValue
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &v.Text); err != nil {
			return "", err
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf(`a string or {"text", "repeat", "suffix"}: %w`, err)
		}
	}
	if v.Repeat < 0 {
		return "", fmt.Errorf("repeat %d is negative", v.Repeat)
	}
	if max(v.Repeat, 1)*len(v.Text)+len(v.Suffix) > maxText {
		return "", fmt.Errorf("more than %d bytes", maxText)
	}
	return strings.Repeat(v.Text, max(v.Repeat, 1)) + v.Suffix, nil
}

// Want is what a case expects.
type Want struct {
	Verdict         *bool           `json:"verdict"`
	Match           *bool           `json:"match"`
	Data            json.RawMessage `json:"data"`
	TransformedText *string         `json:"transformed_text"`
	ErrorContains   *string         `json:"error_contains"`
	Logs            []LogLine       `json:"logs"`
}

// LogLine is one line a guest logs: its level ("debug", "info", "warn" or "error") and message.
type LogLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
}

type table struct {
	Notes []string `json:"notes"`
	Cases []Case   `json:"cases"`
}

// Bounds of the table, so that a broken checkout fails quickly rather than exhausting memory.
const (
	maxTable = 4 << 20
	maxText  = 1 << 20 // bytes of one case's text, repeats included, and of one kv value (the store's own limit)
	maxKVKey = 256     // bytes of a kv key, as the store allows
)

// TablePath returns the path of examples/testdata/cases.json in the source tree this package was built from.
func TablePath() string { return conformance.SourcePath("examples", "testdata", "cases.json") }

// All reads and checks the whole table at TablePath.
func All() ([]Case, error) {
	b, err := conformance.ReadTable("examplecases", TablePath(), maxTable)
	if err != nil {
		return nil, err
	}
	return parse(b)
}

// Cases returns the cases of example that apply to lang, in the table's order. An example without any is an
// error: a misspelt name would otherwise test nothing.
func Cases(example string, lang wasmtest.Language) ([]Case, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	var cases []Case
	for _, c := range all {
		if c.Example == example && (len(c.Languages) == 0 || slices.Contains(c.Languages, lang)) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("examplecases: no case of example %q for language %q", example, lang)
	}
	return cases, nil
}

func parse(b []byte) ([]Case, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt field would silently test nothing
	var t table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("examplecases: table: %w", err)
	}
	seen := map[[2]string]bool{}
	for i := range t.Cases {
		c := &t.Cases[i]
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("examplecases: table: case %d (%s/%s): %w", i, c.Example, c.Name, err)
		}
		key := [2]string{c.Example, c.Name}
		if seen[key] {
			return nil, fmt.Errorf("examplecases: table: case %d: name %q is taken in example %q", i, c.Name, c.Example)
		}
		seen[key] = true
	}
	return t.Cases, nil
}

var levels = map[string]bool{"debug": true, "info": true, "warn": true, "error": true}

func (c *Case) validate() error {
	switch {
	case !slices.Contains(Examples, c.Example):
		return fmt.Errorf("example %q is none of %v", c.Example, Examples)
	case c.Name == "":
		return fmt.Errorf("name is required")
	case c.Kind != "check" && c.Kind != "condition":
		return fmt.Errorf("kind %q is neither check nor condition", c.Kind)
	case c.Kind == "check" && c.CheckID == "":
		return fmt.Errorf("check_id is required for kind check")
	case c.Kind == "condition" && c.CheckID != "":
		return fmt.Errorf("check_id must be empty for kind condition")
	case c.Input.Repeat < 0:
		return fmt.Errorf("input.repeat %d is negative", c.Input.Repeat)
	case max(c.Input.Repeat, 1)*len(c.Input.Text) > maxText:
		return fmt.Errorf("input.text repeated is more than %d bytes", maxText)
	case c.Kind == "check" && c.Want.ErrorContains == nil && c.Want.Verdict == nil:
		return fmt.Errorf("want.verdict is required for a check that wants no error")
	case c.Kind == "condition" && c.Want.ErrorContains == nil && c.Want.Match == nil:
		return fmt.Errorf("want.match is required for a condition that wants no error")
	case (len(c.Languages) == 0) != (c.Why == ""):
		return fmt.Errorf("why must say why when, and only when, languages narrows the case")
	}
	for name, v := range c.Input.Params {
		if !json.Valid(v) {
			return fmt.Errorf("input.params[%q] is not JSON", name)
		}
	}
	for path, v := range c.Fields {
		if !json.Valid(v) {
			return fmt.Errorf("fields[%q] is not JSON", path)
		}
	}
	if c.KV != nil {
		c.kv = make(map[string]string, len(c.KV))
	}
	for key, raw := range c.KV {
		if err := validKVKey(key); err != nil {
			return fmt.Errorf("kv key %q %w", key, err)
		}
		v, err := parseKVValue(raw)
		if err != nil {
			return fmt.Errorf("kv[%q]: %w", key, err)
		}
		c.kv[key] = v
	}
	if len(c.Want.Data) > 0 {
		var compact bytes.Buffer
		if err := json.Compact(&compact, c.Want.Data); err != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' {
			return fmt.Errorf("want.data must be a JSON object")
		}
		c.Want.Data = compact.Bytes()
	}
	for i, l := range c.Want.Logs {
		if !levels[l.Level] {
			return fmt.Errorf("want.logs[%d].level %q is none of debug, info, warn, error", i, l.Level)
		}
	}
	for i, lang := range c.Languages {
		if !slices.Contains(wasmtest.Languages, lang) {
			return fmt.Errorf("languages[%d] %q is none of %v", i, lang, wasmtest.Languages)
		}
		if slices.Contains(c.Languages[:i], lang) {
			return fmt.Errorf("languages[%d] %q is repeated", i, lang)
		}
	}
	return nil
}

// validKVKey applies the store's rule for keys (1 to 256 bytes of printable ASCII without spaces or '/'), so
// that the table holds only keys the admin API would take.
func validKVKey(key string) error {
	if len(key) == 0 || len(key) > maxKVKey {
		return fmt.Errorf("must be 1 to %d bytes", maxKVKey)
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; b <= ' ' || b > '~' || b == '/' {
			return fmt.Errorf("has byte %#x at %d: printable ASCII without spaces or '/' only", b, i)
		}
	}
	return nil
}

// KVStore is the plugin key-value store of the case's workspace during its call (a copy), nil when the case
// has none.
func (c *Case) KVStore() map[string]string {
	return maps.Clone(c.kv)
}

// HostInput is the Input the host sends for c.
func (c *Case) HostInput() *hostapi.Input {
	in := &hostapi.Input{
		Text: strings.Repeat(c.Input.Text, max(c.Input.Repeat, 1)), Model: c.Input.Model, Stage: c.Input.Stage,
		Endpoint: c.Input.Endpoint, Tool: c.Input.Tool, MCPServer: c.Input.MCPServer, CheckID: c.CheckID,
	}
	for _, kv := range c.Input.Metadata {
		in.Metadata = append(in.Metadata, hostapi.KV{Key: kv[0], Value: kv[1]})
	}
	names := make([]string, 0, len(c.Input.Params))
	for name := range c.Input.Params {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		in.Params = append(in.Params, hostapi.KV{Key: name, Value: string(c.Input.Params[name])})
	}
	return in
}

// HostKind is the call's kind.
func (c *Case) HostKind() hostapi.Kind {
	if c.Kind == "condition" {
		return hostapi.KindCondition
	}
	return hostapi.KindCheck
}

// Compare returns every way out differs from want, the logs aside, or nothing. It is conformance.Compare (data
// compared as parsed JSON) with data compared byte for byte besides.
func Compare(want *Want, out *hostapi.Output) []string {
	problems := conformance.Compare(&conformance.Want{Verdict: want.Verdict, Match: want.Match, Data: want.Data,
		TransformedText: want.TransformedText, ErrorContains: want.ErrorContains}, out)
	if len(problems) == 0 && !bytes.Equal(out.Data, want.Data) {
		problems = append(problems, fmt.Sprintf("data %s, want %s: the same JSON written otherwise (SDKs write keys sorted, as Go writes a map)", out.Data, want.Data))
	}
	return problems
}
