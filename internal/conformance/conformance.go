package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/plugins"
)

// Workspace and PluginID are where Run loads the guest; every check id is PluginID + "." + the case's check.
const (
	Workspace = "conformance"
	PluginID  = "conf"
)

// Case is one row of the table.
type Case struct {
	Name   string                     `json:"name"`
	Kind   string                     `json:"kind"` // "check" or "condition"
	Check  string                     `json:"check"`
	Input  CaseInput                  `json:"input"`
	Fields map[string]json.RawMessage `json:"fields"` // what request_field answers, by path
	Want   Want                       `json:"want"`
}

// CaseInput is the Input of a case; metadata and params are [key, value] pairs, in order.
type CaseInput struct {
	Text      string      `json:"text"`
	Model     string      `json:"model"`
	Stage     string      `json:"stage"`
	Endpoint  string      `json:"endpoint"`
	Tool      string      `json:"tool"`
	MCPServer string      `json:"mcp_server"`
	Metadata  [][2]string `json:"metadata"`
	Params    [][2]string `json:"params"`
	Body      string      `json:"body"` // TagBody's bytes; a check's guest skips or ignores it
}

// Want is what a case expects; see the package documentation for what null means in each field.
type Want struct {
	Verdict         *bool           `json:"verdict"`
	Data            json.RawMessage `json:"data"`
	TransformedText *string         `json:"transformed_text"`
	ErrorContains   *string         `json:"error_contains"`
	Match           *bool           `json:"match"`
}

// maxTable bounds the table file read, so that a broken checkout fails quickly rather than exhausting memory.
const maxTable = 16 << 20

// TablePath returns the path of hostapi/testdata/conformance.json in the source tree this package was built
// from.
func TablePath() string { return SourcePath("hostapi", "testdata", "conformance.json") }

// SourcePath returns the path of a file given relative to the root of the source tree this package was built
// from (tests run in their package's folder, so a table shared by several packages is found from here).
func SourcePath(elem ...string) string {
	rel := filepath.Join(elem...)
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return rel
	}
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// ReadTable reads the file at path, refusing one of more than limit bytes, so that a broken checkout fails
// quickly rather than exhausting memory. Errors start with prefix.
func ReadTable(prefix, path string, limit int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: %s is %d bytes, more than %d", prefix, path, len(b), limit)
	}
	return b, nil
}

// Cases reads and checks the table at TablePath.
func Cases() ([]Case, error) {
	b, err := ReadTable("conformance", TablePath(), maxTable)
	if err != nil {
		return nil, err
	}
	return parseCases(b)
}

func parseCases(b []byte) ([]Case, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt field would silently test nothing
	var cases []Case
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("conformance: table: %w", err)
	}
	seen := make(map[string]bool, len(cases))
	for i, c := range cases {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("conformance: table: case %d: name is required", i)
		case seen[c.Name]:
			return nil, fmt.Errorf("conformance: table: case %d: name %q is taken", i, c.Name)
		case c.Kind != "check" && c.Kind != "condition":
			return nil, fmt.Errorf("conformance: table: case %q: kind %q is neither check nor condition", c.Name, c.Kind)
		case c.Kind == "check" && c.Check == "":
			return nil, fmt.Errorf("conformance: table: case %q: check is required for kind check", c.Name)
		case c.Kind == "condition" && c.Check != "":
			return nil, fmt.Errorf("conformance: table: case %q: check must be empty for kind condition", c.Name)
		}
		seen[c.Name] = true
		for path, v := range c.Fields {
			if !json.Valid(v) {
				return nil, fmt.Errorf("conformance: table: case %q: fields[%q] is not JSON", c.Name, path)
			}
		}
	}
	return cases, nil
}

// HostInput is the Input the host sends for c.
func (c *Case) HostInput() *hostapi.Input {
	in := &hostapi.Input{
		Text: c.Input.Text, Model: c.Input.Model, Stage: c.Input.Stage, Endpoint: c.Input.Endpoint,
		Tool: c.Input.Tool, MCPServer: c.Input.MCPServer, Body: []byte(c.Input.Body),
	}
	if c.Kind == "check" {
		in.CheckID = PluginID + "." + c.Check
	}
	for _, kv := range c.Input.Metadata {
		in.Metadata = append(in.Metadata, hostapi.KV{Key: kv[0], Value: kv[1]})
	}
	for _, kv := range c.Input.Params {
		in.Params = append(in.Params, hostapi.KV{Key: kv[0], Value: kv[1]})
	}
	return in
}

// fields is a case's RequestView.
type fields map[string]json.RawMessage

func (f fields) Field(path string) ([]byte, bool) {
	v, ok := f[path]
	return v, ok
}

// Run loads wasm into a fresh plugins.Engine (workspace Workspace, plugin PluginID) and runs every case of the
// table through Engine.Call, each as a subtest named after the case. The table runs twice on one instance, so
// that a guest's buffers are reused across inputs of every size (the 64 KiB cases come between small ones).
func Run(t *testing.T, wasm []byte) {
	t.Helper()
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	// One instance, so that every call after the first reuses what the previous ones left; a generous deadline,
	// since tests run under -race on small machines.
	e, err := plugins.New(plugins.Options{MaxInstances: 1, CallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Load(ctx, Workspace, PluginID, wasm); err != nil {
		t.Fatalf("load the conformance guest: %v", err)
	}
	for pass := range 2 {
		for i := range cases {
			c := &cases[i]
			t.Run(fmt.Sprintf("%d/%s", pass+1, c.Name), func(t *testing.T) {
				kind := hostapi.KindCheck
				if c.Kind == "condition" {
					kind = hostapi.KindCondition
				}
				out, err := e.Call(ctx, Workspace, PluginID, kind, c.HostInput(), fields(c.Fields))
				if err != nil {
					t.Fatalf("case %q: call failed: %v", c.Name, err)
				}
				for _, problem := range Compare(&c.Want, out) {
					t.Errorf("case %q: %s", c.Name, problem)
				}
			})
		}
	}
}

// Compare returns every way out differs from want, or nothing.
func Compare(want *Want, out *hostapi.Output) []string {
	var problems []string
	if want.Verdict != nil && *want.Verdict != out.Verdict {
		problems = append(problems, fmt.Sprintf("verdict %v, want %v", out.Verdict, *want.Verdict))
	}
	if want.Match != nil && *want.Match != out.Match {
		problems = append(problems, fmt.Sprintf("match %v, want %v", out.Match, *want.Match))
	}
	if p := compareData(want.Data, out.Data); p != "" {
		problems = append(problems, p)
	}
	text, transformed := out.Transformed()
	switch {
	case want.TransformedText == nil && transformed:
		problems = append(problems, fmt.Sprintf("transformed text %s, want none", quoteCut(text)))
	case want.TransformedText != nil && !transformed:
		problems = append(problems, fmt.Sprintf("no transformed text, want %s", quoteCut(*want.TransformedText)))
	case want.TransformedText != nil && text != *want.TransformedText:
		problems = append(problems, fmt.Sprintf("transformed text %s, want %s (first difference at byte %d)",
			quoteCut(text), quoteCut(*want.TransformedText), firstDiff(text, *want.TransformedText)))
	}
	switch {
	case want.ErrorContains == nil && out.Error != "":
		problems = append(problems, fmt.Sprintf("error %q, want none", out.Error))
	case want.ErrorContains != nil && !strings.Contains(out.Error, *want.ErrorContains):
		problems = append(problems, fmt.Sprintf("error %q, want one containing %q", out.Error, *want.ErrorContains))
	}
	return problems
}

func compareData(want json.RawMessage, got []byte) string {
	wantNone := len(want) == 0 || string(want) == "null"
	switch {
	case wantNone && got == nil:
		return ""
	case wantNone:
		return fmt.Sprintf("data %s, want none", cut(string(got)))
	case got == nil:
		return fmt.Sprintf("no data, want %s", cut(string(want)))
	}
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("the table's data does not parse: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("data %s does not parse: %v", cut(string(got)), err)
	}
	if !reflect.DeepEqual(w, g) {
		return fmt.Sprintf("data %s, want %s", cut(string(got)), cut(string(want)))
	}
	return ""
}

// cut shortens what a failure prints: a 64 KiB text helps no one.
func cut(s string) string {
	const max = 300
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:max], len(s))
}

func quoteCut(s string) string { return cut(fmt.Sprintf("%q", s)) }

func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
