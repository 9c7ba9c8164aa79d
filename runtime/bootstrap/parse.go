package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/prompt"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// File is a parsed and validated bootstrap file.
type File struct {
	Workspaces        []Workspace
	APIKeys           []APIKey
	Providers         []Provider
	Configs           []Config
	Prompts           []Prompt
	RateLimitPolicies []Policy
	UsageLimits       []UsageLimit // "usage_limit_policies" (usagelimits.go)
	Guardrails        []Guardrail
	Plugins           []Plugin
	MCPServers        []MCPServer // "mcp_servers" (mcpservers.go)
}

// Workspace is an entry of "workspaces". ID and OrganisationID are optional: a new workspace gets random
// UUIDs, an existing one (by slug) keeps its own.
type Workspace struct {
	Path                     string
	ID, Slug, OrganisationID string
	Name                     string
	SemanticCache            *storage.SemanticCacheSettings // "semantic_cache"; nil when absent
}

// APIKey is an entry of "api_keys": a gateway API key chosen by the operator.
type APIKey struct {
	Path      string
	Key       string
	Workspace string
	Admin     bool
	// OrganisationAdmin ("organisation_admin") lets the key manage workspaces; it needs Admin.
	OrganisationAdmin bool
	Name              string
}

// Provider is an entry of "providers": a stored provider reachable as a virtual key or "@slug".
type Provider struct {
	Path      string
	Slug      string
	Workspace string
	Provider  string // canonical identifier
	Name      string
	Fields    map[string]json.RawMessage
}

// Config is an entry of "configs": a saved routing config.
type Config struct {
	Path      string
	ID        string
	Workspace string
	Config    json.RawMessage
}

// Prompt is an entry of "prompts" with its versions in order (numbered from 1).
type Prompt struct {
	Path      string
	ID        string
	Workspace string
	Name      string
	Versions  []storage.PromptVersion
}

// Policy is an entry of "rate_limit_policies".
type Policy struct {
	Path       string
	ID         string
	Workspace  string
	Type, Unit string
	Value      float64
	Status     string
	Name       *string
	Conditions []storage.PolicyMatch
	GroupBy    []storage.PolicyGroup
}

// Guardrail is an entry of "guardrails": a saved guardrail object.
type Guardrail struct {
	Path      string
	ID        string
	Workspace string
	Object    json.RawMessage // the guardrail without id and workspace
}

// Plugin is an entry of "plugins": a wasm module read from a file.
type Plugin struct {
	Path      string
	ID        string
	Workspace string
	File      string // resolved path
	Wasm      []byte
}

// MaxPluginSize bounds a plugin's wasm file.
const MaxPluginSize = 64 << 20

// Load reads, parses and validates the bootstrap file at path. Relative plugin paths are resolved against the
// file's folder first, then the working folder. A *ValidationError lists every problem found.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bootstrap file: %w", err)
	}
	f, err := Parse(data, filepath.Dir(path))
	var ve *ValidationError
	if errors.As(err, &ve) {
		ve.File = path
	}
	return f, err
}

// sections are the known top-level keys, in the order they are parsed and applied.
var sections = []string{"workspaces", "api_keys", "providers", "configs", "prompts", "rate_limit_policies", "usage_limit_policies", "guardrails", "plugins", "mcp_servers"}

// Parse parses and validates a bootstrap document. baseDir resolves relative plugin paths.
func Parse(data []byte, baseDir string) (*File, error) {
	p := &problems{}
	f := &File{}
	dec := json.NewDecoder(bytes.NewReader(data))
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, &ValidationError{Problems: []Problem{{Path: "(file)", Message: "not a JSON object: " + err.Error()}}}
	}
	if _, err := dec.Token(); err != io.EOF { // Decode reads one value: anything after it would be ignored
		return nil, &ValidationError{Problems: []Problem{{Path: "(file)", Message: "unexpected data after the JSON object"}}}
	}
	if top == nil {
		return nil, &ValidationError{Problems: []Problem{{Path: "(file)", Message: "must be a JSON object, not null"}}}
	}
	var unknown []string
	for name := range top {
		if !contains(sections, name) {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		path := name
		if path == "" {
			path = `""`
		}
		p.Add(path, "unknown section (known: %s)", strings.Join(sections, ", "))
	}
	each := func(section string, fn func(o *object)) {
		raw, ok := top[section]
		if !ok || kind(raw) == "null" {
			return
		}
		var items []json.RawMessage
		if kind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
			p.Add(section, "must be an array, not %s", kind(raw))
			return
		}
		for i, item := range items {
			if o := newObject(p, fmt.Sprintf("%s[%d]", section, i), item); o != nil {
				fn(o)
			}
		}
	}
	each("workspaces", func(o *object) { f.Workspaces = append(f.Workspaces, parseWorkspace(o)) })
	each("api_keys", func(o *object) { f.APIKeys = append(f.APIKeys, parseAPIKey(o)) })
	each("providers", func(o *object) { f.Providers = append(f.Providers, parseProvider(o)) })
	each("configs", func(o *object) { f.Configs = append(f.Configs, parseConfig(o)) })
	each("prompts", func(o *object) { f.Prompts = append(f.Prompts, parsePrompt(o)) })
	each("rate_limit_policies", func(o *object) { f.RateLimitPolicies = append(f.RateLimitPolicies, parsePolicy(o)) })
	each("usage_limit_policies", func(o *object) { f.UsageLimits = append(f.UsageLimits, parseUsageLimit(o)) })
	each("guardrails", func(o *object) { f.Guardrails = append(f.Guardrails, parseGuardrail(o)) })
	each("plugins", func(o *object) { f.Plugins = append(f.Plugins, parsePlugin(o, baseDir)) })
	each("mcp_servers", func(o *object) { f.MCPServers = append(f.MCPServers, parseMCPServer(o)) })
	checkDuplicates(p, f)
	if len(p.List) > 0 {
		return nil, &ValidationError{Problems: p.List}
	}
	return f, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// id reads an identifier field (required) and checks its form.
func readID(o *object, name string) string {
	s := o.Str(name, true)
	if s != "" && !storage.ValidID(s) {
		o.P.Add(o.At(name), "%q is not a valid identifier (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", s)
	}
	return s
}

func readUUID(o *object, name string, required bool) string {
	s := o.Str(name, required)
	if s != "" {
		if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
			o.P.Add(o.At(name), "%q is not a UUID", s)
		}
	}
	return s
}

// workspaceRef reads the optional "workspace" field: a workspace ID or slug, "default" when absent.
func workspaceRef(o *object) string {
	s := o.Str("workspace", false)
	if s == "" {
		return storage.DefaultWorkspaceSlug
	}
	if !storage.ValidID(s) {
		o.P.Add(o.At("workspace"), "%q is not a workspace ID or slug", s)
	}
	return s
}

func parseWorkspace(o *object) Workspace {
	w := Workspace{Path: o.Path, ID: readUUID(o, "id", false), Slug: readID(o, "slug"), OrganisationID: readUUID(o, "organisation_id", false),
		Name: o.Str("name", false)}
	if err := control.CheckWorkspaceName(w.Name); err != nil {
		o.P.Add(o.At("name"), "%s", err.Message)
	}
	if raw := o.RawObject("semantic_cache", false); raw != nil {
		sc := newObject(o.P, o.At("semantic_cache"), raw)
		if sc != nil {
			s := &storage.SemanticCacheSettings{EmbeddingProvider: sc.Str("embedding_provider", false),
				EmbeddingModel: sc.Str("embedding_model", false)}
			if p := s.EmbeddingProvider; p != "" && !storage.ValidID(strings.TrimPrefix(p, "@")) {
				sc.P.Add(sc.At("embedding_provider"), "must name a stored provider as \"@slug\", not %q", p)
			}
			if v, ok := sc.Number("threshold", false); ok {
				if v <= 0 || v > 1 {
					sc.P.Add(sc.At("threshold"), "must be greater than 0 and at most 1 (a cosine similarity)")
				}
				s.Threshold = v
			}
			sc.Finish()
			w.SemanticCache = s
		}
	}
	o.Finish()
	return w
}

func parseAPIKey(o *object) APIKey {
	k := APIKey{Path: o.Path, Key: o.Str("key", true), Workspace: workspaceRef(o), Admin: o.Bool("admin"),
		OrganisationAdmin: o.Bool("organisation_admin"), Name: o.Str("name", false)}
	if err := control.CheckAPIKey(k.Name, k.Admin, k.OrganisationAdmin); err != nil {
		o.P.Add(o.At(err.Param), "%s", err.Message)
	}
	switch {
	case k.Key == "":
	case len(k.Key) < storage.MinAPIKeyLength || len(k.Key) > 512:
		o.P.Add(o.At("key"), "must be %d to 512 characters long", storage.MinAPIKeyLength)
	case strings.IndexFunc(k.Key, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		o.P.Add(o.At("key"), "must be printable ASCII without spaces (it travels in an HTTP header)")
	}
	o.Finish()
	return k
}

// parseProvider reads a stored provider: its workspace, and the rest as the admin API reads a provider's body
// (control.ReadProvider), so that both accept and refuse the same things.
func parseProvider(o *object) Provider {
	sp := control.ReadProvider(o)
	pr := Provider{Path: o.Path, Slug: sp.Slug, Workspace: workspaceRef(o), Provider: sp.Provider, Name: sp.Name, Fields: sp.Fields}
	o.Finish()
	return pr
}

// parseConfig checks a saved config with the same validation as configs sent in x-gateway-config, its hooks'
// and guardrails' check ids and parameters included, so that a config that would be refused at request time is
// refused at start instead. Whether the plugins its checks name exist is checked by Apply (checkPlugins).
func parseConfig(o *object) Config {
	c := Config{Path: o.Path, ID: readID(o, "id"), Workspace: workspaceRef(o), Config: o.RawObject("config", true)}
	o.Finish()
	// An empty object is let through, as DESIGN.md's example file has one: it is stored, and a request that
	// names it gets the validation error then.
	if c.Config != nil && !bytes.Equal(bytes.Join(bytes.Fields(c.Config), nil), []byte("{}")) {
		if err := control.CheckConfig(c.Config); err != nil {
			path, msg := compileProblem(o.At("config"), err)
			o.P.Add(path, "%s", msg)
		}
	}
	return c
}

func parsePrompt(o *object) Prompt {
	pr := Prompt{Path: o.Path, ID: readID(o, "id"), Workspace: workspaceRef(o), Name: o.Str("name", false)}
	versions := o.Array("versions", true)
	if versions != nil && len(versions) == 0 {
		o.P.Add(o.At("versions"), "must hold at least one version")
	}
	published := 0
	for i, raw := range versions {
		v := newObject(o.P, fmt.Sprintf("%s[%d]", o.At("versions"), i), raw)
		if v == nil {
			continue
		}
		pv := storage.PromptVersion{Version: i + 1, Published: v.Bool("published")}
		if pv.Published {
			published++
		}
		if t := v.Sub("template", true); t != nil {
			pv.Template = v.Get("template")
			prompt.ReadTemplate(t)
		}
		v.Finish()
		pr.Versions = append(pr.Versions, pv)
	}
	if published > 1 {
		o.P.Add(o.At("versions"), "at most one version may be published, found %d", published)
	}
	o.Finish()
	return pr
}

// parsePolicy reads an entry of "rate_limit_policies": a policy object (runtime/ratelimit's rules, as
// POST /v1/policies/rate-limits checks them) with a required id and a "workspace".
func parsePolicy(o *object) Policy {
	pol := Policy{Path: o.Path, ID: ratelimit.ReadPolicyID(o, true), Workspace: workspaceRef(o)}
	r := ratelimit.ReadPolicy(o)
	o.Finish()
	pol.Type, pol.Unit, pol.Value, pol.Status, pol.Name = r.Type, r.Unit, r.Value, r.Status, r.Name
	pol.Conditions, pol.GroupBy = r.Conditions, r.GroupBy
	return pol
}

// parseGuardrail reads a saved guardrail: its id and workspace are the entry's, the rest is the guardrail object,
// whose shape, check ids and parameters guardrails checks as PUT /v1/guardrails/{id} does. Plugin checks
// ("<plugin>.<check>") are accepted here; Apply checks that their plugins exist, in the file or the store
// (checkPlugins).
func parseGuardrail(o *object) Guardrail {
	g := Guardrail{Path: o.Path, ID: readID(o, "id"), Workspace: workspaceRef(o)}
	obj := make(map[string]json.RawMessage, len(o.Fields))
	for name, raw := range o.Fields {
		if name != "id" && name != "workspace" {
			obj[name] = raw
		}
	}
	g.Object, _ = json.Marshal(obj)
	if err := guardrails.ValidateSaved(g.Object); err != nil {
		path, msg := compileProblem(o.Path, err)
		if path == o.Path {
			msg = fmt.Sprintf("guardrail %q %s", g.ID, msg) // the entry's own problem: say which guardrail
		}
		o.P.Add(path, "%s", msg)
	}
	return g
}

func parsePlugin(o *object, baseDir string) Plugin {
	pl := Plugin{Path: o.Path, ID: readID(o, "id"), Workspace: workspaceRef(o)}
	file := o.Str("wasm", true)
	o.Finish()
	if file == "" {
		return pl
	}
	pl.File, pl.Wasm = readWasm(o.P, o.At("wasm"), file, baseDir)
	return pl
}

var wasmMagic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00} // "\0asm" version 1

// readWasm reads a plugin file, trying baseDir before the working folder for a relative path.
func readWasm(p *problems, path, file, baseDir string) (string, []byte) {
	candidates := []string{file}
	if !filepath.IsAbs(file) && baseDir != "" {
		candidates = []string{filepath.Join(baseDir, file), file}
	}
	for _, c := range candidates {
		info, err := os.Stat(c)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			p.Add(path, "%v", err)
			return c, nil
		}
		if !info.Mode().IsRegular() {
			p.Add(path, "%s is not a regular file", c)
			return c, nil
		}
		if info.Size() > MaxPluginSize {
			p.Add(path, "%s is %d bytes, more than the limit of %d", c, info.Size(), MaxPluginSize)
			return c, nil
		}
		data, err := os.ReadFile(c)
		if err != nil {
			p.Add(path, "%v", err)
			return c, nil
		}
		if !bytes.HasPrefix(data, wasmMagic) {
			p.Add(path, "%s is not a WebAssembly module (no \\0asm version 1 header)", c)
			return c, nil
		}
		return c, data
	}
	p.Add(path, "file %q not found (looked in %s)", file, strings.Join(candidates, " and "))
	return "", nil
}

// checkDuplicates reports entries that name the same thing twice within a file.
func checkDuplicates(p *problems, f *File) {
	seen := map[string]string{}
	dup := func(path, what, k string) {
		if first, ok := seen[what+"\x00"+k]; ok {
			p.Add(path, "duplicate %s: %s already defines it", what, first)
			return
		}
		seen[what+"\x00"+k] = path
	}
	for _, w := range f.Workspaces {
		dup(w.Path+".slug", "workspace slug", w.Slug)
		if w.ID != "" {
			dup(w.Path+".id", "workspace id", w.ID)
		}
	}
	for _, k := range f.APIKeys {
		dup(k.Path+".key", "api key", k.Key)
	}
	for _, x := range f.Providers {
		dup(x.Path+".slug", "provider slug in workspace "+x.Workspace, x.Slug)
	}
	for _, x := range f.Configs {
		dup(x.Path+".id", "config id in workspace "+x.Workspace, x.ID)
	}
	for _, x := range f.Prompts {
		dup(x.Path+".id", "prompt id in workspace "+x.Workspace, x.ID)
	}
	for _, x := range f.RateLimitPolicies {
		dup(x.Path+".id", "policy id", x.ID)
	}
	for _, x := range f.UsageLimits {
		dup(x.Path+".id", "usage-limit policy id", x.Policy.ID)
	}
	for _, x := range f.Guardrails {
		dup(x.Path+".id", "guardrail id in workspace "+x.Workspace, x.ID)
	}
	for _, x := range f.Plugins {
		dup(x.Path+".id", "plugin id in workspace "+x.Workspace, x.ID)
	}
	for _, x := range f.MCPServers {
		dup(x.Path+".id", "MCP server id in workspace "+x.Workspace, x.Server.ID)
	}
}

// acceptAll stands for a plugin check while a bootstrap file is validated.
type acceptAll struct{}

func (acceptAll) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	return hostapi.NewOutput(), nil
}
