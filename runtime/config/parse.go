package config

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/condition"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// CodeInvalidConfig is the gwerr code of every error this package finds in a config.
const CodeInvalidConfig = jsonfield.CodeInvalidConfig

// Kind names the JSON type of a value for error messages (object, array, string, boolean, null, number). It
// is jsonfield.Kind, kept here for the validators outside runtime that name types the way config errors do.
func Kind(raw json.RawMessage) string { return jsonfield.Kind(raw) }

// Limits of a config's shape.
const (
	// MaxDepth is how deep targets may nest: the top level is depth 0, its targets depth 1, and so on.
	MaxDepth = 16
	// MaxTargets bounds the targets of one config object.
	MaxTargets = 256
	// MaxWeight bounds a target's weight, so that sums of weights stay exact and far from overflow.
	MaxWeight = 1_000_000
	// MaxRetryAttempts caps retry.attempts in a Plan (DESIGN.md); larger values are accepted and capped.
	MaxRetryAttempts = 5
)

// Largest millisecond and second counts that still fit a time.Duration.
const (
	maxMillis  = math.MaxInt64 / int64(time.Millisecond)
	maxSeconds = math.MaxInt64 / int64(time.Second)
)

// compileCondition compiles a strategy condition's query. It is a variable so that tests can run without the
// real query language.
var compileCondition = condition.Compile

// commonFields are the keys every config object has, in SPEC.md's table order; provider fields (each
// adapter's, from the providers registry) follow them, then hookFields. Fields are checked in that order.
var commonFields = []string{
	"name", "strict_llmvendor_compliance", "provider", "api_key", "virtual_key", "prompt_id", "request_timeout",
	"override_params", "custom_host", "forward_headers", "weight", "on_status_codes", "targets", "strategy",
	"cache", "retry", "cb_config",
}

var hookFields = []string{"before_request_hooks", "after_request_hooks", "input_guardrails", "output_guardrails",
	"before_tool_call", "after_tool_call"}

// configFields lists every key a config object may have, for error messages.
func configFields() []string {
	pf := providers.Fields()
	names := make([]string, 0, len(commonFields)+len(pf)+len(hookFields))
	names = append(names, commonFields...)
	for _, f := range pf {
		names = append(names, f.Name)
	}
	return append(names, hookFields...)
}

func isConfigField(k string) bool {
	if jsonfield.Contains(commonFields, k) || jsonfield.Contains(hookFields, k) {
		return true
	}
	_, ok := providers.FieldByName(k)
	return ok
}

// keySets are SPEC.md's key sets that name no provider: a config object is valid only when every key of at
// least one set is present. Each provider adds its own, with "provider" (Descriptor.KeySets); DESIGN.md adds
// provider "@slug" on its own. The sets before the hooks' are listed first in messages, as SPEC.md does.
var keySets = [][]string{
	{"provider", "api_key"},
	{"provider", "custom_host"},
	{"virtual_key"},
	{"strategy", "targets"},
	{"cache"},
	{"retry"},
	{"prompt_id"},
	{"forward_headers"},
	{"request_timeout"},
	{"after_request_hooks"},
	{"before_request_hooks"},
	{"input_guardrails"},
	{"output_guardrails"},
	{"before_tool_call"},
	{"after_tool_call"},
}

// keySetList names every key set for an error message, the providers' in the middle.
func keySetList() string {
	var parts []string
	add := func(set []string) { parts = append(parts, strings.Join(set, " + ")) }
	for _, set := range keySets[:9] {
		add(set)
	}
	for _, id := range providers.Registered() {
		d, _ := providers.Describe(id)
		for _, set := range d.KeySets {
			add(append([]string{"provider"}, set...))
		}
	}
	for _, set := range keySets[9:] {
		add(set)
	}
	return strings.Join(parts, "; ")
}

// Parse parses and validates one config object (SPEC.md "Config object", with DESIGN.md's decisions) at every
// level of targets. It reports the first problem as a *gwerr.Error with Status 400, Code CodeInvalidConfig,
// Param the offending field's JSON path (targets[1].retry.attempts; "" when the body as a whole is wrong) and
// a Message that names the path and says what to change.
//
// Problems are looked for in a fixed order, so the same config always yields the same error: in each object,
// unknown keys first (alphabetically), then the fields in SPEC.md's table order (nested objects and array
// items likewise, in order), then the rules that tie fields together (provider credentials, strategy and
// targets, condition targets, key sets).
//
// Provider identifiers are stored canonical ("llmvendor" becomes "openai"); "@slug" is kept as written.
func Parse(raw []byte) (*Config, error) {
	if len(raw) == 0 {
		return nil, jsonfield.Invalid("", "the config is empty; send a JSON object")
	}
	var top json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, jsonfield.Invalid("", "not valid JSON (offset %d): %v", se.Offset, err)
		}
		return nil, jsonfield.Invalid("", "not valid JSON: %v", err)
	}
	return parseConfig(top, "", 0)
}

// parseConfig parses the config object raw found at path, depth levels of targets below the top.
func parseConfig(raw json.RawMessage, path string, depth int) (*Config, error) {
	o, err := jsonfield.NewObject(raw, path)
	if err != nil {
		return nil, err
	}
	if key, found := o.UnknownKey(isConfigField); found {
		return nil, o.UnknownError(key, configFields())
	}
	c := &Config{}
	if c.Name, _, err = o.Str("name", false, false); err != nil {
		return nil, err
	}
	if c.StrictLLMVendorCompliance, err = o.Boolean("strict_llmvendor_compliance"); err != nil {
		return nil, err
	}
	if err := parseProvider(o, c); err != nil {
		return nil, err
	}
	if c.APIKey, _, err = o.Str("api_key", false, true); err != nil {
		return nil, err
	}
	if jsonfield.HasControl(c.APIKey) {
		return nil, jsonfield.Invalid(o.At("api_key"), "must not contain control characters such as line breaks (it is sent in an HTTP header)")
	}
	if c.VirtualKey, _, err = o.Str("virtual_key", false, true); err != nil {
		return nil, err
	}
	if c.VirtualKey != "" && !storage.ValidID(c.VirtualKey) {
		return nil, jsonfield.Invalid(o.At("virtual_key"), "%q is not a valid virtual key ID (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", c.VirtualKey)
	}
	if c.PromptID, _, err = o.Str("prompt_id", false, true); err != nil {
		return nil, err
	}
	if c.RequestTimeout, err = o.Integer("request_timeout", false, 1, maxMillis); err != nil {
		return nil, err
	}
	if c.OverrideParams, err = rawMap(o, "override_params"); err != nil {
		return nil, err
	}
	if err := parseCustomHost(o, c); err != nil {
		return nil, err
	}
	if c.ForwardHeaders, err = headerNames(o, "forward_headers"); err != nil {
		return nil, err
	}
	if c.Weight, err = o.Number("weight", false); err != nil {
		return nil, err
	}
	if c.Weight != nil && *c.Weight < 0 {
		return nil, jsonfield.Invalid(o.At("weight"), "must be 0 or more, not %v", *c.Weight)
	}
	if c.Weight != nil && *c.Weight > MaxWeight {
		return nil, jsonfield.Invalid(o.At("weight"), "must be at most %d (weights are relative: 1 and 3 split traffic 25/75), not %v", MaxWeight, *c.Weight)
	}
	if c.OnStatusCodes, err = o.StatusCodes("on_status_codes"); err != nil {
		return nil, err
	}
	if err := parseTargets(o, c, depth); err != nil {
		return nil, err
	}
	if err := parseStrategy(o, c); err != nil {
		return nil, err
	}
	if err := parseCache(o, c); err != nil {
		return nil, err
	}
	if err := parseRetry(o, c); err != nil {
		return nil, err
	}
	if err := parseCircuitBreaker(o, c); err != nil {
		return nil, err
	}
	if err := parseProviderFields(o, c); err != nil {
		return nil, err
	}
	if c.BeforeRequestHooks, err = items(o, "before_request_hooks", func(raw json.RawMessage, path string) error {
		return guardrails.ValidateHook(raw, path, false)
	}); err != nil {
		return nil, err
	}
	if c.AfterRequestHooks, err = items(o, "after_request_hooks", func(raw json.RawMessage, path string) error {
		return guardrails.ValidateHook(raw, path, true)
	}); err != nil {
		return nil, err
	}
	if c.InputGuardrails, err = items(o, "input_guardrails", func(raw json.RawMessage, path string) error {
		return checkGuardrail(raw, path, false)
	}); err != nil {
		return nil, err
	}
	if c.OutputGuardrails, err = items(o, "output_guardrails", func(raw json.RawMessage, path string) error {
		return checkGuardrail(raw, path, true)
	}); err != nil {
		return nil, err
	}
	if err := parseToolHooks(o, c, depth); err != nil {
		return nil, err
	}
	if err := checkRules(o, c); err != nil {
		return nil, err
	}
	return c, nil
}

// parseProvider reads "provider": "@<slug>" (kept as written) or a known identifier or alias (stored canonical).
func parseProvider(o *jsonfield.Object, c *Config) error {
	p, ok, err := o.Str("provider", false, true)
	if err != nil || !ok {
		return err
	}
	if slug, isSlug := strings.CutPrefix(p, "@"); isSlug {
		if !storage.ValidID(slug) {
			return jsonfield.Invalid(o.At("provider"), "%q is not a valid provider slug: after \"@\" give 1-128 characters (letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", p)
		}
		c.Provider = p
		return nil
	}
	id, known := providers.Canonical(p)
	if !known {
		return jsonfield.Invalid(o.At("provider"), "unknown provider %q: give \"@<slug>\" for a stored provider, or one of: %s", p, strings.Join(providers.Identifiers(), ", "))
	}
	c.Provider = id
	return nil
}

func parseCustomHost(o *jsonfield.Object, c *Config) error {
	h, ok, err := o.Str("custom_host", false, true)
	if err != nil || !ok {
		return err
	}
	u, perr := url.Parse(h)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return jsonfield.Invalid(o.At("custom_host"), "%q is not an http or https URL with a host (e.g. \"https://llm.example.com/v1\")", netguard.RedactURL(h))
	}
	c.CustomHost = h
	return nil
}

// rawMap reads an object field as a map of raw values; nil when absent.
func rawMap(o *jsonfield.Object, key string) (map[string]json.RawMessage, error) {
	raw, err := o.RawObject(key, false)
	if raw == nil || err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, jsonfield.Invalid(o.At(key), "must be an object: %v", err)
	}
	return m, nil
}

// headerNames reads an array of HTTP header names (RFC 9110 tokens); nil when absent.
func headerNames(o *jsonfield.Object, key string) ([]string, error) {
	list, err := o.Array(key, false)
	if list == nil || err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, raw := range list {
		path := jsonfield.Index(o.At(key), i)
		var s string
		if jsonfield.Kind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
			return nil, jsonfield.Invalid(path, "must be a header name (a string), not %s", jsonfield.Describe(raw))
		}
		if !isToken(s) {
			return nil, jsonfield.Invalid(path, "%q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons)", s)
		}
		names[i] = s
	}
	return names, nil
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2), the syntax of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// parseTargets reads "targets", parsing each item as a config one level deeper.
func parseTargets(o *jsonfield.Object, c *Config, depth int) error {
	list, err := o.Array("targets", false)
	if list == nil || err != nil {
		return err
	}
	path := o.At("targets")
	if depth+1 > MaxDepth {
		return jsonfield.Invalid(path, "targets nest more than %d levels deep; flatten the config", MaxDepth)
	}
	if len(list) > MaxTargets {
		return jsonfield.Invalid(path, "has %d items; at most %d targets are allowed in one config object", len(list), MaxTargets)
	}
	c.Targets = make([]*Config, len(list))
	for i, raw := range list {
		t, err := parseConfig(raw, jsonfield.Index(path, i), depth+1)
		if err != nil {
			return err
		}
		c.Targets[i] = t
	}
	return nil
}

var modes = []string{ModeSingle, ModeLoadbalance, ModeFallback, ModeConditional}

// parseStrategy reads "strategy" and compiles its condition queries; names are resolved by checkRules.
func parseStrategy(o *jsonfield.Object, c *Config) error {
	raw, err := o.RawObject("strategy", false)
	if raw == nil || err != nil {
		return err
	}
	s, err := jsonfield.NewObject(raw, o.At("strategy"))
	if err != nil {
		return err
	}
	if err := s.OnlyKeys("mode", "conditions", "default", "on_status_codes"); err != nil {
		return err
	}
	st := &Strategy{}
	if st.Mode, _, err = s.Str("mode", true, true); err != nil {
		return err
	}
	if !jsonfield.Contains(modes, st.Mode) {
		return jsonfield.Invalid(s.At("mode"), "unknown mode %q: use one of %s", st.Mode, strings.Join(modes, ", "))
	}
	conds, err := s.Array("conditions", false)
	if err != nil {
		return err
	}
	if conds == nil && st.Mode == ModeConditional {
		return jsonfield.Invalid(s.At("conditions"), "is required when mode is conditional (an array of {\"query\": {...}, \"then\": \"<target name>\"})")
	}
	if conds != nil && len(conds) == 0 {
		return jsonfield.Invalid(s.At("conditions"), "must not be empty: give at least one {\"query\": {...}, \"then\": \"<target name>\"}")
	}
	if conds != nil {
		st.Conditions = make([]Condition, len(conds))
	}
	for i, raw := range conds {
		if err := parseCondition(raw, jsonfield.Index(s.At("conditions"), i), &st.Conditions[i]); err != nil {
			return err
		}
	}
	var hasDefault bool
	if st.Default, hasDefault, err = s.Str("default", false, true); err != nil {
		return err
	}
	if !hasDefault && st.Mode == ModeConditional {
		return jsonfield.Invalid(s.At("default"), "is required when mode is conditional: name the target used when no condition matches")
	}
	if st.OnStatusCodes, err = s.StatusCodes("on_status_codes"); err != nil {
		return err
	}
	c.Strategy = st
	return nil
}

func parseCondition(raw json.RawMessage, path string, cond *Condition) error {
	o, err := jsonfield.NewObject(raw, path)
	if err != nil {
		return err
	}
	if err := o.OnlyKeys("query", "then"); err != nil {
		return err
	}
	if cond.Query, err = o.RawObject("query", true); err != nil {
		return err
	}
	m, err := compileCondition(cond.Query, o.At("query"))
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return ge
		}
		e := jsonfield.Invalid(o.At("query"), "%v", err)
		e.Err = err
		return e
	}
	if m == nil {
		return jsonfield.Invalid(o.At("query"), "the query compiled to nothing")
	}
	cond.matcher = m
	cond.Then, _, err = o.Str("then", true, true)
	return err
}

var cacheModes = []string{"simple", "semantic"}

func parseCache(o *jsonfield.Object, c *Config) error {
	raw, err := o.RawObject("cache", false)
	if raw == nil || err != nil {
		return err
	}
	co, err := jsonfield.NewObject(raw, o.At("cache"))
	if err != nil {
		return err
	}
	if err := co.OnlyKeys("mode", "max_age"); err != nil {
		return err
	}
	cache := &Cache{}
	if cache.Mode, _, err = co.Str("mode", true, true); err != nil {
		return err
	}
	if !jsonfield.Contains(cacheModes, cache.Mode) {
		return jsonfield.Invalid(co.At("mode"), "unknown cache mode %q: use \"simple\" or \"semantic\"", cache.Mode)
	}
	if cache.MaxAge, err = co.Integer("max_age", false, 0, maxSeconds); err != nil {
		return err
	}
	c.Cache = cache
	return nil
}

func parseRetry(o *jsonfield.Object, c *Config) error {
	raw, err := o.RawObject("retry", false)
	if raw == nil || err != nil {
		return err
	}
	ro, err := jsonfield.NewObject(raw, o.At("retry"))
	if err != nil {
		return err
	}
	if err := ro.OnlyKeys("attempts", "on_status_codes", "use_retry_after_headers"); err != nil {
		return err
	}
	r := &Retry{}
	attempts, err := ro.Integer("attempts", true, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	r.Attempts = *attempts
	if r.OnStatusCodes, err = ro.StatusCodes("on_status_codes"); err != nil {
		return err
	}
	use, err := ro.Boolean("use_retry_after_headers")
	if err != nil {
		return err
	}
	r.UseRetryAfterHeaders = use != nil && *use
	c.Retry = r
	return nil
}

func parseCircuitBreaker(o *jsonfield.Object, c *Config) error {
	raw, err := o.RawObject("cb_config", false)
	if raw == nil || err != nil {
		return err
	}
	co, err := jsonfield.NewObject(raw, o.At("cb_config"))
	if err != nil {
		return err
	}
	if err := co.OnlyKeys("failure_threshold", "cooldown_interval", "failure_status_codes"); err != nil {
		return err
	}
	cb := &CircuitBreaker{}
	threshold, err := co.Integer("failure_threshold", true, 1, math.MaxInt32)
	if err != nil {
		return err
	}
	cb.FailureThreshold = *threshold
	cooldown, err := co.Integer("cooldown_interval", true, 30000, maxMillis)
	if err != nil {
		return err
	}
	cb.CooldownInterval = *cooldown
	if cb.FailureStatusCodes, err = co.StatusCodes("failure_status_codes"); err != nil {
		return err
	}
	c.CBConfig = cb
	return nil
}

// parseProviderFields checks the provider-specific fields, each as the adapter that declares it says, and keeps
// them, as written, in ProviderFields. Any provider's fields are accepted on any target: the provider may come
// from the request's headers or a stored provider.
func parseProviderFields(o *jsonfield.Object, c *Config) error {
	for _, f := range providers.Fields() {
		raw := o.Get(f.Name)
		if raw == nil {
			continue
		}
		if err := f.Validate(o); err != nil {
			return err
		}
		if c.ProviderFields == nil {
			c.ProviderFields = map[string]json.RawMessage{}
		}
		c.ProviderFields[f.Name] = raw
	}
	return nil
}

// items reads an array field whose items check validates, keeping the items as raw JSON; nil when absent.
func items(o *jsonfield.Object, key string, check func(raw json.RawMessage, path string) error) ([]json.RawMessage, error) {
	list, err := o.Array(key, false)
	if list == nil || err != nil {
		return nil, err
	}
	for i, raw := range list {
		if err := check(raw, jsonfield.Index(o.At(key), i)); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// parseToolHooks reads before_tool_call and after_tool_call, the hooks of /mcp tool calls (DESIGN.md "MCP
// gateway"). A tool call has no targets, so they stand at the top level only.
func parseToolHooks(o *jsonfield.Object, c *Config, depth int) error {
	for _, key := range []string{"before_tool_call", "after_tool_call"} {
		if depth > 0 && o.Has(key) {
			return jsonfield.Invalid(o.At(key), "stands at the top level of a config only: tool hooks run on /mcp tool calls, which are not routed to targets")
		}
	}
	var err error
	if c.BeforeToolCall, err = items(o, "before_tool_call", func(raw json.RawMessage, path string) error {
		return guardrails.ValidateToolHook(raw, path, false)
	}); err != nil {
		return err
	}
	c.AfterToolCall, err = items(o, "after_tool_call", func(raw json.RawMessage, path string) error {
		return guardrails.ValidateToolHook(raw, path, true)
	})
	return err
}

// checkGuardrail validates an item of input_guardrails (output false) or output_guardrails (output true). The
// shape belongs to guardrails; a saved guardrail's ID is storage's syntax, checked here.
func checkGuardrail(raw json.RawMessage, path string, output bool) error {
	if jsonfield.Kind(raw) == "string" {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil || !storage.ValidID(id) {
			return jsonfield.Invalid(path, "%s is not a valid guardrail ID (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", raw)
		}
	}
	return guardrails.ValidateGuardrail(raw, path, output)
}

// checkRules checks the rules that tie a config object's fields together, once each field is valid.
func checkRules(o *jsonfield.Object, c *Config) error {
	// A config names its provider one way.
	if c.Provider != "" && c.VirtualKey != "" {
		return jsonfield.Invalid(o.At("virtual_key"), "cannot be combined with provider: name the provider one way, with provider (\"@<slug>\" or an identifier) or with virtual_key")
	}
	// SPEC.md rules 1 and 3: a provider identifier needs credentials: api_key, custom_host, or one of the key
	// sets its adapter declares.
	if c.Provider != "" && !strings.HasPrefix(c.Provider, "@") && c.APIKey == "" && c.CustomHost == "" && !providerKeySet(o, c.Provider) {
		for _, set := range providerKeySets(c.Provider) {
			started := false
			for _, k := range set {
				started = started || o.Has(k)
			}
			if !started {
				continue
			}
			for _, k := range set {
				if !o.Has(k) {
					return jsonfield.Invalid(o.At(k), "is required with %s when provider %q has no api_key (complete the key set %s, or give api_key)", presentKeys(o, set), c.Provider, "provider + "+strings.Join(set, " + "))
				}
			}
		}
		return jsonfield.Invalid(o.At("api_key"), "is required with provider %q (or give custom_host, or the provider's cloud credentials; or use \"@<slug>\" for a stored provider)", c.Provider)
	}
	// Strategy and targets go together.
	if c.Targets != nil && c.Strategy == nil {
		return jsonfield.Invalid(o.At("targets"), "needs a strategy: add \"strategy\": {\"mode\": \"fallback\"} (or loadbalance, conditional, single)")
	}
	if c.Strategy != nil {
		mode := c.Strategy.Mode
		switch {
		case mode != ModeSingle && c.Targets == nil:
			return jsonfield.Invalid(o.At("targets"), "is required when strategy.mode is %s: list the configs to route to", mode)
		case c.Targets != nil && len(c.Targets) == 0:
			return jsonfield.Invalid(o.At("targets"), "must not be empty: list the configs to route to")
		case mode == ModeSingle && len(c.Targets) > 1:
			return jsonfield.Invalid(o.At("targets"), "has %d targets, but strategy.mode single routes to one; use fallback or loadbalance for several", len(c.Targets))
		case mode == ModeLoadbalance && allZeroWeights(c.Targets):
			return jsonfield.Invalid(o.At("targets"), "every target has weight 0, so loadbalance could pick none; give at least one a weight above 0")
		}
		if err := resolveNames(o, c); err != nil {
			return err
		}
	}
	// SPEC.md's key sets.
	if !hasKeySet(o, c) {
		subject := "the config"
		if o.Path != "" {
			subject = "this target"
		}
		return jsonfield.Invalid(o.Path, "%s has none of the key sets a config needs; give at least one of: %s (or provider \"@<slug>\" alone)", subject, keySetList())
	}
	return nil
}

// providerKeySets are the key sets, without "provider", that the adapter of a canonical identifier declares.
func providerKeySets(id string) [][]string {
	d, ok := providers.Describe(id)
	if !ok {
		return nil
	}
	return d.KeySets
}

// providerKeySet reports whether o holds a whole key set of provider id.
func providerKeySet(o *jsonfield.Object, id string) bool {
	for _, set := range providerKeySets(id) {
		if hasAll(o, set) {
			return true
		}
	}
	return false
}

func hasKeySet(o *jsonfield.Object, c *Config) bool {
	if strings.HasPrefix(c.Provider, "@") {
		return true
	}
	for _, set := range keySets {
		if hasAll(o, set) {
			return true
		}
	}
	return c.Provider != "" && providerKeySet(o, c.Provider)
}

func hasAll(o *jsonfield.Object, keys []string) bool {
	for _, k := range keys {
		if !o.Has(k) {
			return false
		}
	}
	return true
}

func presentKeys(o *jsonfield.Object, keys []string) string {
	var have []string
	for _, k := range keys {
		if o.Has(k) {
			have = append(have, k)
		}
	}
	return strings.Join(have, " and ")
}

func allZeroWeights(targets []*Config) bool {
	for _, t := range targets {
		if t.Weight == nil || *t.Weight > 0 {
			return false
		}
	}
	return true
}

// resolveNames checks that a strategy's then and default name targets, by their name, unambiguously.
func resolveNames(o *jsonfield.Object, c *Config) error {
	st := c.Strategy
	if len(st.Conditions) == 0 && st.Default == "" {
		return nil
	}
	seen := make(map[string]int, len(c.Targets))
	for i, t := range c.Targets {
		if t.Name == "" {
			continue
		}
		if j, dup := seen[t.Name]; dup {
			return jsonfield.Invalid(jsonfield.Join(jsonfield.Index(o.At("targets"), i), "name"), "target name %q is used twice (also by targets[%d]); conditions name targets by name, so names must be unique", t.Name, j)
		}
		seen[t.Name] = i
	}
	spath := o.At("strategy")
	for i, cond := range st.Conditions {
		if _, ok := seen[cond.Then]; !ok {
			return jsonfield.Invalid(jsonfield.Join(jsonfield.Index(jsonfield.Join(spath, "conditions"), i), "then"), "names no target: %q (%s)", cond.Then, targetNames(c))
		}
	}
	if st.Default != "" {
		if _, ok := seen[st.Default]; !ok {
			return jsonfield.Invalid(jsonfield.Join(spath, "default"), "names no target: %q (%s)", st.Default, targetNames(c))
		}
	}
	return nil
}

func targetNames(c *Config) string {
	var names []string
	for _, t := range c.Targets {
		if t.Name != "" {
			names = append(names, "\""+t.Name+"\"")
		}
	}
	if len(names) == 0 {
		return "no target has a name; give targets a \"name\""
	}
	return "target names: " + strings.Join(names, ", ")
}
