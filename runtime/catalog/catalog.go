package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/llmgw/gateway/runtime/gwerr"
)

//go:embed models.json
var modelsJSON []byte

// Capabilities a model may list.
const (
	Chat       = "chat"
	Vision     = "vision"
	Tools      = "tools"
	Reasoning  = "reasoning"
	Embeddings = "embeddings"
	Responses  = "responses" // the provider serves the model on a native responses API
)

var knownCapabilities = map[string]bool{Chat: true, Vision: true, Tools: true, Reasoning: true, Embeddings: true, Responses: true}

// Model is what the catalogue knows of one model of one provider. A zero price is unknown (null in the file),
// a zero MaxOutputTokens likewise; ContextWindow is always positive for a catalogue entry.
type Model struct {
	Provider, ID                   string
	ContextWindow, MaxOutputTokens int
	InputPerMTok, OutputPerMTok    float64 // USD per million tokens
	Capabilities                   []string
}

// Has reports whether the model lists the capability.
func (m *Model) Has(capability string) bool {
	for _, c := range m.Capabilities {
		if c == capability {
			return true
		}
	}
	return false
}

// Catalog is an immutable set of models by provider. The embedded file makes the default one (Default);
// WithOverrides derives another for a stored provider. Safe for concurrent use.
type Catalog struct {
	providers map[string]*index
}

// index is one provider's models: by exact name, and by base name (the name without the date, version,
// region or "models/" decorations base strips), first entry wins.
type index struct {
	exact map[string]*Model
	base  map[string]*Model
}

func (x *index) add(m *Model, names ...string) {
	for _, n := range names {
		if n == "" {
			continue
		}
		x.exact[n] = m
		if b := base(n); b != "" {
			if _, taken := x.base[b]; !taken {
				x.base[b] = m
			}
		}
	}
}

// fileModel is an entry of models.json.
type fileModel struct {
	Provider        string   `json:"provider"`
	ID              string   `json:"id"`
	Aliases         []string `json:"aliases"`
	ContextWindow   int      `json:"context_window"`
	MaxOutputTokens int      `json:"max_output_tokens"`
	InputPerMTok    *float64 `json:"input_per_mtok"`
	OutputPerMTok   *float64 `json:"output_per_mtok"`
	Capabilities    []string `json:"capabilities"`
}

// file is models.json: the entries, and providers that also serve another's models ("azure-openai" serves
// "openai"'s, "vertex-ai" "google"'s Gemini models besides its own Claude entries); "prices" says whether the
// other's prices hold too (when the pages did not say, they don't: the copies have none).
type file struct {
	Models  []fileModel `json:"models"`
	Inherit []struct {
		Provider string `json:"provider"`
		From     string `json:"from"`
		Prices   bool   `json:"prices"`
		// Only, when given, limits the models taken to those whose id starts with one of these prefixes.
		Only []string `json:"only"`
	} `json:"inherit"`
}

var (
	defaultOnce    sync.Once
	defaultCatalog *Catalog
	defaultErr     error
)

// Default is the catalogue of the embedded models.json, parsed on first use. It panics if the embedded file
// is invalid, which TestEmbeddedFile rules out.
func Default() *Catalog {
	defaultOnce.Do(func() { defaultCatalog, defaultErr = parse(modelsJSON) })
	if defaultErr != nil {
		panic(defaultErr)
	}
	return defaultCatalog
}

// Lookup finds a model of a provider in the default catalogue; see Catalog.Lookup.
func Lookup(provider, model string) (Model, bool) { return Default().Lookup(provider, model) }

// Cost prices a request's tokens in USD at the model's catalogue prices, as a stored provider's overrides (the
// raw "models" field, nil when none) amend them (LookupWith): ok is false when the model is unknown or has no
// price (a 0 price means unknown, not free).
func Cost(provider, model string, overrides json.RawMessage, inputTokens, outputTokens int64) (usd float64, ok bool) {
	m, found := LookupWith(provider, model, overrides)
	if !found || (m.InputPerMTok <= 0 && m.OutputPerMTok <= 0) {
		return 0, false
	}
	return Price(&m, inputTokens, outputTokens), true
}

// Price is the cost in USD of tokens at the model's prices: the one pricing formula.
func Price(m *Model, inputTokens, outputTokens int64) float64 {
	return (float64(inputTokens)*m.InputPerMTok + float64(outputTokens)*m.OutputPerMTok) / 1e6
}

// Lookup finds a model of a provider (the canonical provider identifier: "openai", "anthropic", "bedrock",
// "vertex-ai", ...): by its exact name first, then by its base name, which drops a "models/" prefix
// ("models/gemini-2.5-pro"), a Bedrock cross-region prefix ("us.", "eu.", "apac.", "global." ...), a Vertex
// "@" version ("claude-3-5-sonnet@20240620"), a Bedrock model version ("-v1:0"), a date
// ("gpt-4o-2024-08-06", "claude-3-5-haiku-20241022"), a Gemini revision ("-001") and "-latest". It does not
// allocate. The Model returned shares its Capabilities with the catalogue: do not modify them.
func (c *Catalog) Lookup(provider, model string) (Model, bool) {
	x := c.providers[provider]
	if x == nil || model == "" {
		return Model{}, false
	}
	if m := x.exact[model]; m != nil {
		return *m, true
	}
	if m := x.base[base(model)]; m != nil {
		return *m, true
	}
	return Model{}, false
}

// LookupWith is Lookup for a request through a stored provider whose "models" field (overrides, the raw
// value of Target.Fields[OverridesField]; nil when it has none) may hold its own facts: an override matched
// by exact or base name wins, otherwise the default catalogue answers. Without overrides it is Lookup and
// allocates nothing; with them it decodes them (the bootstrap file validated them; if they do not decode,
// they are ignored). A caller that serves many requests through one stored provider can instead keep
// Default().WithOverrides(provider, models) with the provider record.
func LookupWith(provider, model string, overrides json.RawMessage) (Model, bool) {
	if len(overrides) == 0 {
		return Lookup(provider, model)
	}
	models, err := ParseOverrides(overrides)
	if err != nil || len(models) == 0 {
		return Lookup(provider, model)
	}
	b := base(model)
	for _, exact := range []bool{true, false} {
		for _, m := range models {
			if (exact && m.ID == model) || (!exact && base(m.ID) == b) {
				m.Provider = provider
				return m, true
			}
		}
	}
	return Lookup(provider, model)
}

// Models lists a provider's models (each once, in no particular order), for /v1/models.
func (c *Catalog) Models(provider string) []Model {
	x := c.providers[provider]
	if x == nil {
		return nil
	}
	seen := make(map[*Model]bool, len(x.exact))
	out := make([]Model, 0, len(x.exact))
	for _, m := range x.exact {
		if !seen[m] {
			seen[m] = true
			out = append(out, *m)
		}
	}
	return out
}

// WithOverrides returns a catalogue in which provider's models are c's with the given ones added or put in
// place (matched by exact ID; a base name an override shares with a catalogue entry then finds the override).
// It is how a stored provider's own facts (a fine-tuned model, a deployment with another window, negotiated
// prices) take precedence for requests through it: the caller builds it once per stored provider (see
// ParseOverrides) and keeps it with the provider record. c is not modified.
func (c *Catalog) WithOverrides(provider string, models []Model) *Catalog {
	if len(models) == 0 {
		return c
	}
	out := &Catalog{providers: maps.Clone(c.providers)}
	x := &index{exact: map[string]*Model{}, base: map[string]*Model{}}
	for i := range models {
		m := models[i]
		m.Provider = provider
		x.add(&m, m.ID)
	}
	if old := c.providers[provider]; old != nil {
		for n, m := range old.exact {
			if _, over := x.exact[n]; !over {
				x.exact[n] = m
			}
		}
		for n, m := range old.base {
			if _, over := x.base[n]; !over {
				x.base[n] = m
			}
		}
	}
	out.providers[provider] = x
	return out
}

// OverridesField is the optional field of a stored provider that carries its model overrides: an array of
// objects {"id", "context_window", "max_output_tokens", "input_per_mtok", "output_per_mtok", "capabilities"}
// (id and context_window required).
const OverridesField = "models"

// maxOverrides bounds a stored provider's overrides.
const maxOverrides = 256

// ParseOverrides reads and validates a stored provider's "models" field (nil or null: none). Errors are 400s
// naming the member at fault ("models[2].context_window").
func ParseOverrides(raw json.RawMessage) ([]Model, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var in []json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, gwerr.BadRequest(OverridesField, "must be an array of model objects")
	}
	if len(in) > maxOverrides {
		return nil, gwerr.BadRequest(OverridesField, "must have at most %d models, not %d", maxOverrides, len(in))
	}
	out := make([]Model, 0, len(in))
	seen := map[string]bool{}
	for i, item := range in {
		var fm fileModel
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fm); err != nil {
			return nil, gwerr.BadRequest(fmt.Sprintf("%s[%d]", OverridesField, i), "must be a model object with id, context_window, max_output_tokens, input_per_mtok, output_per_mtok and capabilities: %v", err)
		}
		fm.Provider = "override"
		if fm.Aliases != nil {
			return nil, gwerr.BadRequest(fmt.Sprintf("%s[%d].aliases", OverridesField, i), "is not accepted in an override; give each name its own entry")
		}
		m, param, msg := fm.model()
		if msg != "" {
			return nil, gwerr.BadRequest(fmt.Sprintf("%s[%d].%s", OverridesField, i, param), "%s", msg)
		}
		if seen[m.ID] {
			return nil, gwerr.BadRequest(fmt.Sprintf("%s[%d].id", OverridesField, i), "%q is given twice", m.ID)
		}
		seen[m.ID] = true
		m.Provider = ""
		out = append(out, m)
	}
	return out, nil
}

// model checks an entry; msg names what is wrong with the member param.
func (fm *fileModel) model() (m Model, param, msg string) {
	switch {
	case fm.Provider == "":
		return m, "provider", "is required"
	case fm.ID == "" || len(fm.ID) > 256 || strings.ContainsAny(fm.ID, " \t\r\n"):
		return m, "id", "is required: a model name of at most 256 characters without spaces"
	case fm.ContextWindow <= 0 || fm.ContextWindow > 100_000_000:
		return m, "context_window", "must be a positive number of tokens (at most 100000000)"
	case fm.MaxOutputTokens < 0 || fm.MaxOutputTokens > fm.ContextWindow:
		return m, "max_output_tokens", "must be between 0 (unknown) and the context window"
	case fm.InputPerMTok != nil && (*fm.InputPerMTok < 0 || *fm.InputPerMTok > 1e6):
		return m, "input_per_mtok", "must be a price in USD per million tokens, 0 or more"
	case fm.OutputPerMTok != nil && (*fm.OutputPerMTok < 0 || *fm.OutputPerMTok > 1e6):
		return m, "output_per_mtok", "must be a price in USD per million tokens, 0 or more"
	}
	for j, c := range fm.Capabilities {
		if !knownCapabilities[c] {
			return m, fmt.Sprintf("capabilities[%d]", j), fmt.Sprintf("%q is not one of chat, vision, tools, reasoning, embeddings, responses", c)
		}
	}
	m = Model{Provider: fm.Provider, ID: fm.ID, ContextWindow: fm.ContextWindow, MaxOutputTokens: fm.MaxOutputTokens, Capabilities: fm.Capabilities}
	if fm.InputPerMTok != nil {
		m.InputPerMTok = *fm.InputPerMTok
	}
	if fm.OutputPerMTok != nil {
		m.OutputPerMTok = *fm.OutputPerMTok
	}
	return m, "", ""
}

// parse builds a catalogue from models.json's text, checking every entry.
func parse(data []byte) (*Catalog, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("catalog: models.json: %w", err)
	}
	c := &Catalog{providers: map[string]*index{}}
	type key struct{ provider, name string }
	seen := map[key]bool{}
	for i := range f.Models {
		fm := &f.Models[i]
		m, param, msg := fm.model()
		if msg != "" {
			return nil, fmt.Errorf("catalog: models.json: models[%d] (%s).%s %s", i, fm.ID, param, msg)
		}
		x := c.providers[m.Provider]
		if x == nil {
			x = &index{exact: map[string]*Model{}, base: map[string]*Model{}}
			c.providers[m.Provider] = x
		}
		for _, n := range append([]string{fm.ID}, fm.Aliases...) {
			if seen[key{m.Provider, n}] {
				return nil, fmt.Errorf("catalog: models.json: %s model %q is listed twice", m.Provider, n)
			}
			seen[key{m.Provider, n}] = true
		}
		x.add(&m, append([]string{fm.ID}, fm.Aliases...)...)
	}
	for _, in := range f.Inherit {
		from := c.providers[in.From]
		if from == nil || in.Provider == "" || in.Provider == in.From {
			return nil, fmt.Errorf("catalog: models.json: inherit %q from %q: no such provider", in.Provider, in.From)
		}
		x := c.providers[in.Provider]
		if x == nil {
			x = &index{exact: map[string]*Model{}, base: map[string]*Model{}}
			c.providers[in.Provider] = x
		}
		copies := map[*Model]*Model{}
		clone := func(m *Model) *Model {
			if cp, ok := copies[m]; ok {
				return cp
			}
			cp := *m
			cp.Provider = in.Provider
			if !in.Prices {
				cp.InputPerMTok, cp.OutputPerMTok = 0, 0
			}
			copies[m] = &cp
			return &cp
		}
		// The provider's own entries come first: an inherited name never replaces one.
		for n, m := range from.exact {
			if _, own := x.exact[n]; !own && hasPrefix(m.ID, in.Only) {
				x.exact[n] = clone(m)
			}
		}
		for n, m := range from.base {
			if _, own := x.base[n]; !own && hasPrefix(m.ID, in.Only) {
				x.base[n] = clone(m)
			}
		}
	}
	return c, nil
}

func hasPrefix(s string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// bedrockRegions are the prefixes of Bedrock's cross-region inference profiles ("us.anthropic.claude-...").
var bedrockRegions = []string{"us.", "eu.", "apac.", "global.", "jp.", "au.", "ca.", "us-gov."}

// base strips a model name's decorations, in this order: a "models/" prefix (Gemini's resource name), a
// Bedrock cross-region prefix, a Vertex "@" version, a Bedrock version ("-v1:0", ":0"), "-latest", a date
// ("-2024-08-06", "-20241022") and a three- or four-digit revision ("-001", "-0125", "-2411"). It returns a
// part of name, so that Lookup allocates nothing.
func base(name string) string {
	name = strings.TrimPrefix(name, "models/")
	for _, r := range bedrockRegions {
		if rest, ok := strings.CutPrefix(name, r); ok && strings.IndexByte(rest, '.') > 0 {
			name = rest
			break
		}
	}
	if at := strings.IndexByte(name, '@'); at > 0 {
		name = name[:at]
	}
	// Bedrock: "...-v1:0", "...-v2:0", "...-v1", ":0"
	if colon := strings.LastIndexByte(name, ':'); colon > 0 && digits(name[colon+1:]) {
		name = name[:colon]
	}
	if dash := strings.LastIndexByte(name, '-'); dash > 0 && len(name)-dash >= 3 && name[dash+1] == 'v' && digits(name[dash+2:]) &&
		strings.IndexByte(name[:dash], '.') > 0 { // only Bedrock's "vendor.model-v1": "deepseek-v3" keeps its v3
		name = name[:dash]
	}
	name = strings.TrimSuffix(name, "-latest")
	// "-2024-08-06"
	if n := len(name); n > 11 && name[n-11] == '-' && name[n-6] == '-' && name[n-3] == '-' &&
		digits(name[n-10:n-6]) && digits(name[n-5:n-3]) && digits(name[n-2:]) {
		name = name[:n-11]
	}
	// "-20241022"
	if n := len(name); n > 9 && name[n-9] == '-' && digits(name[n-8:]) {
		name = name[:n-9]
	}
	// "-001" (Gemini revisions), "-0125", "-2411" (OpenAI's and Mistral's short dates)
	if dash := strings.LastIndexByte(name, '-'); dash > 0 && (len(name)-dash == 4 || len(name)-dash == 5) && digits(name[dash+1:]) {
		name = name[:dash]
	}
	return name
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
