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
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

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

// configFields are a config object's keys in SPEC.md's table order, the order in which they are checked.
var configFields = []string{
	"name", "strict_llmvendor_compliance", "provider", "api_key", "virtual_key", "prompt_id", "request_timeout",
	"override_params", "custom_host", "forward_headers", "weight", "on_status_codes", "targets", "strategy",
	"cache", "retry", "cb_config",
	"resource_name", "deployment_id", "api_version", "deployments",
	"cloudz_access_key_id", "cloudz_secret_access_key", "cloudz_region", "cloudz_session_token",
	"llmvendor_organization", "llmvendor_project",
	"cloudy_project_id", "cloudy_region", "cloudy_service_account_json",
	"cloudx_region", "cloudx_deployment_name", "cloudx_endpoint_name", "cloudx_api_version", "cloudx_deployment_type",
	"before_request_hooks", "after_request_hooks", "input_guardrails", "output_guardrails",
}

// providerFields are the provider-specific keys kept in Config.ProviderFields, in table order; all are
// non-empty strings except where providerFieldCheck says otherwise.
var providerFields = configFields[17:35]

// keySets are SPEC.md's key sets: a config object is valid only when every key of at least one set is present.
// (DESIGN.md adds one: provider "@slug" on its own.)
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
	{"provider", "cloudz_access_key_id", "cloudz_secret_access_key"},
	{"provider", "cloudy_region", "cloudy_service_account_json"},
	{"provider", "cloudy_region", "cloudy_project_id"},
	{"provider", "cloudx_deployment_name", "cloudx_deployment_type", "cloudx_region", "cloudx_api_version"},
	{"provider", "cloudx_endpoint_name", "cloudx_deployment_type"},
	{"after_request_hooks"},
	{"before_request_hooks"},
	{"input_guardrails"},
	{"output_guardrails"},
}

// cloudKeySets are the key sets that authenticate a provider identifier without api_key.
var cloudKeySets = keySets[9:14]

// keySetList is keySets for error messages.
var keySetList = func() string {
	parts := make([]string, len(keySets))
	for i, set := range keySets {
		parts[i] = strings.Join(set, " + ")
	}
	return strings.Join(parts, "; ")
}()

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
		return nil, invalid("", "the config is empty; send a JSON object")
	}
	var top json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, invalid("", "not valid JSON (offset %d): %v", se.Offset, err)
		}
		return nil, invalid("", "not valid JSON: %v", err)
	}
	return parseConfig(top, "", 0)
}

// parseConfig parses the config object raw found at path, depth levels of targets below the top.
func parseConfig(raw json.RawMessage, path string, depth int) (*Config, error) {
	o, err := newObject(raw, path)
	if err != nil {
		return nil, err
	}
	if err := o.unknown(isConfigField, configFields); err != nil {
		return nil, err
	}
	c := &Config{}
	if c.Name, _, err = o.str("name", false, false); err != nil {
		return nil, err
	}
	if c.StrictLLMVendorCompliance, err = o.boolean("strict_llmvendor_compliance"); err != nil {
		return nil, err
	}
	if err := parseProvider(o, c); err != nil {
		return nil, err
	}
	if c.APIKey, _, err = o.str("api_key", false, true); err != nil {
		return nil, err
	}
	if hasControl(c.APIKey) {
		return nil, invalid(o.at("api_key"), "must not contain control characters such as line breaks (it is sent in an HTTP header)")
	}
	if c.VirtualKey, _, err = o.str("virtual_key", false, true); err != nil {
		return nil, err
	}
	if c.VirtualKey != "" && !storage.ValidID(c.VirtualKey) {
		return nil, invalid(o.at("virtual_key"), "%q is not a valid virtual key ID (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", c.VirtualKey)
	}
	if c.PromptID, _, err = o.str("prompt_id", false, true); err != nil {
		return nil, err
	}
	if c.RequestTimeout, err = o.integer("request_timeout", false, 1, maxMillis); err != nil {
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
	if c.Weight, err = o.number("weight", false); err != nil {
		return nil, err
	}
	if c.Weight != nil && *c.Weight < 0 {
		return nil, invalid(o.at("weight"), "must be 0 or more, not %v", *c.Weight)
	}
	if c.Weight != nil && *c.Weight > MaxWeight {
		return nil, invalid(o.at("weight"), "must be at most %d (weights are relative: 1 and 3 split traffic 25/75), not %v", MaxWeight, *c.Weight)
	}
	if c.OnStatusCodes, err = o.statusCodes("on_status_codes"); err != nil {
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
	if err := checkRules(o, c); err != nil {
		return nil, err
	}
	return c, nil
}

func isConfigField(k string) bool { return contains(configFields, k) }

// parseProvider reads "provider": "@<slug>" (kept as written) or a known identifier or alias (stored canonical).
func parseProvider(o *object, c *Config) error {
	p, ok, err := o.str("provider", false, true)
	if err != nil || !ok {
		return err
	}
	if slug, isSlug := strings.CutPrefix(p, "@"); isSlug {
		if !storage.ValidID(slug) {
			return invalid(o.at("provider"), "%q is not a valid provider slug: after \"@\" give 1-128 characters (letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", p)
		}
		c.Provider = p
		return nil
	}
	id, known := providers.Canonical(p)
	if !known {
		return invalid(o.at("provider"), "unknown provider %q: give \"@<slug>\" for a stored provider, or one of: %s", p, strings.Join(providers.Identifiers(), ", "))
	}
	c.Provider = id
	return nil
}

func parseCustomHost(o *object, c *Config) error {
	h, ok, err := o.str("custom_host", false, true)
	if err != nil || !ok {
		return err
	}
	u, perr := url.Parse(h)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return invalid(o.at("custom_host"), "%q is not an http or https URL with a host (e.g. \"https://llm.example.com/v1\")", netguard.RedactURL(h))
	}
	c.CustomHost = h
	return nil
}

// rawMap reads an object field as a map of raw values; nil when absent.
func rawMap(o *object, key string) (map[string]json.RawMessage, error) {
	raw, err := o.rawObject(key, false)
	if raw == nil || err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid(o.at(key), "must be an object: %v", err)
	}
	return m, nil
}

// headerNames reads an array of HTTP header names (RFC 9110 tokens); nil when absent.
func headerNames(o *object, key string) ([]string, error) {
	list, err := o.array(key, false)
	if list == nil || err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, raw := range list {
		path := index(o.at(key), i)
		var s string
		if kind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
			return nil, invalid(path, "must be a header name (a string), not %s", describe(raw))
		}
		if !isToken(s) {
			return nil, invalid(path, "%q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces or colons)", s)
		}
		names[i] = s
	}
	return names, nil
}

// hasControl reports whether s holds an ASCII control character, which no header value or URL part may carry.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
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
func parseTargets(o *object, c *Config, depth int) error {
	list, err := o.array("targets", false)
	if list == nil || err != nil {
		return err
	}
	path := o.at("targets")
	if depth+1 > MaxDepth {
		return invalid(path, "targets nest more than %d levels deep; flatten the config", MaxDepth)
	}
	if len(list) > MaxTargets {
		return invalid(path, "has %d items; at most %d targets are allowed in one config object", len(list), MaxTargets)
	}
	c.Targets = make([]*Config, len(list))
	for i, raw := range list {
		t, err := parseConfig(raw, index(path, i), depth+1)
		if err != nil {
			return err
		}
		c.Targets[i] = t
	}
	return nil
}

var modes = []string{ModeSingle, ModeLoadbalance, ModeFallback, ModeConditional}

// parseStrategy reads "strategy" and compiles its condition queries; names are resolved by checkRules.
func parseStrategy(o *object, c *Config) error {
	raw, err := o.rawObject("strategy", false)
	if raw == nil || err != nil {
		return err
	}
	s, err := newObject(raw, o.at("strategy"))
	if err != nil {
		return err
	}
	if err := s.onlyKeys("mode", "conditions", "default", "on_status_codes"); err != nil {
		return err
	}
	st := &Strategy{}
	if st.Mode, _, err = s.str("mode", true, true); err != nil {
		return err
	}
	if !contains(modes, st.Mode) {
		return invalid(s.at("mode"), "unknown mode %q: use one of %s", st.Mode, strings.Join(modes, ", "))
	}
	conds, err := s.array("conditions", false)
	if err != nil {
		return err
	}
	if conds == nil && st.Mode == ModeConditional {
		return invalid(s.at("conditions"), "is required when mode is conditional (an array of {\"query\": {...}, \"then\": \"<target name>\"})")
	}
	if conds != nil && len(conds) == 0 {
		return invalid(s.at("conditions"), "must not be empty: give at least one {\"query\": {...}, \"then\": \"<target name>\"}")
	}
	if conds != nil {
		st.Conditions = make([]Condition, len(conds))
	}
	for i, raw := range conds {
		if err := parseCondition(raw, index(s.at("conditions"), i), &st.Conditions[i]); err != nil {
			return err
		}
	}
	var hasDefault bool
	if st.Default, hasDefault, err = s.str("default", false, true); err != nil {
		return err
	}
	if !hasDefault && st.Mode == ModeConditional {
		return invalid(s.at("default"), "is required when mode is conditional: name the target used when no condition matches")
	}
	if st.OnStatusCodes, err = s.statusCodes("on_status_codes"); err != nil {
		return err
	}
	c.Strategy = st
	return nil
}

func parseCondition(raw json.RawMessage, path string, cond *Condition) error {
	o, err := newObject(raw, path)
	if err != nil {
		return err
	}
	if err := o.onlyKeys("query", "then"); err != nil {
		return err
	}
	if cond.Query, err = o.rawObject("query", true); err != nil {
		return err
	}
	m, err := compileCondition(cond.Query, o.at("query"))
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return ge
		}
		e := invalid(o.at("query"), "%v", err)
		e.Err = err
		return e
	}
	if m == nil {
		return invalid(o.at("query"), "the query compiled to nothing")
	}
	cond.matcher = m
	cond.Then, _, err = o.str("then", true, true)
	return err
}

var cacheModes = []string{"simple", "semantic"}

func parseCache(o *object, c *Config) error {
	raw, err := o.rawObject("cache", false)
	if raw == nil || err != nil {
		return err
	}
	co, err := newObject(raw, o.at("cache"))
	if err != nil {
		return err
	}
	if err := co.onlyKeys("mode", "max_age"); err != nil {
		return err
	}
	cache := &Cache{}
	if cache.Mode, _, err = co.str("mode", true, true); err != nil {
		return err
	}
	if !contains(cacheModes, cache.Mode) {
		return invalid(co.at("mode"), "unknown cache mode %q: use \"simple\" or \"semantic\"", cache.Mode)
	}
	if cache.MaxAge, err = co.integer("max_age", false, 0, maxSeconds); err != nil {
		return err
	}
	c.Cache = cache
	return nil
}

func parseRetry(o *object, c *Config) error {
	raw, err := o.rawObject("retry", false)
	if raw == nil || err != nil {
		return err
	}
	ro, err := newObject(raw, o.at("retry"))
	if err != nil {
		return err
	}
	if err := ro.onlyKeys("attempts", "on_status_codes", "use_retry_after_headers"); err != nil {
		return err
	}
	r := &Retry{}
	attempts, err := ro.integer("attempts", true, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	r.Attempts = *attempts
	if r.OnStatusCodes, err = ro.statusCodes("on_status_codes"); err != nil {
		return err
	}
	use, err := ro.boolean("use_retry_after_headers")
	if err != nil {
		return err
	}
	r.UseRetryAfterHeaders = use != nil && *use
	c.Retry = r
	return nil
}

func parseCircuitBreaker(o *object, c *Config) error {
	raw, err := o.rawObject("cb_config", false)
	if raw == nil || err != nil {
		return err
	}
	co, err := newObject(raw, o.at("cb_config"))
	if err != nil {
		return err
	}
	if err := co.onlyKeys("failure_threshold", "cooldown_interval", "failure_status_codes"); err != nil {
		return err
	}
	cb := &CircuitBreaker{}
	threshold, err := co.integer("failure_threshold", true, 1, math.MaxInt32)
	if err != nil {
		return err
	}
	cb.FailureThreshold = *threshold
	cooldown, err := co.integer("cooldown_interval", true, 30000, maxMillis)
	if err != nil {
		return err
	}
	cb.CooldownInterval = *cooldown
	if cb.FailureStatusCodes, err = co.statusCodes("failure_status_codes"); err != nil {
		return err
	}
	c.CBConfig = cb
	return nil
}

// parseProviderFields checks the provider-specific fields and keeps them, as written, in ProviderFields.
func parseProviderFields(o *object, c *Config) error {
	for _, key := range providerFields {
		raw := o.get(key)
		if raw == nil {
			continue
		}
		switch key {
		case "deployments":
			if err := checkDeployments(o); err != nil {
				return err
			}
		case "cloudy_service_account_json":
			if _, err := o.rawObject(key, false); err != nil {
				return err
			}
		case "cloudx_deployment_type":
			s, _, err := o.str(key, false, true)
			if err != nil {
				return err
			}
			if s != "serverless" && s != "managed" {
				return invalid(o.at(key), "must be \"serverless\" or \"managed\", not %q", s)
			}
		default:
			v, _, err := o.str(key, false, true)
			if err != nil {
				return err
			}
			if hasControl(v) {
				return invalid(o.at(key), "must not contain control characters such as line breaks (it is sent in an HTTP header or URL)")
			}
		}
		if c.ProviderFields == nil {
			c.ProviderFields = map[string]json.RawMessage{}
		}
		c.ProviderFields[key] = raw
	}
	return nil
}

func checkDeployments(o *object) error {
	list, err := o.array("deployments", false)
	if err != nil {
		return err
	}
	defaultAt := ""
	aliases := map[string]string{}
	for i, raw := range list {
		d, err := newObject(raw, index(o.at("deployments"), i))
		if err != nil {
			return err
		}
		if err := d.onlyKeys("deployment_id", "alias", "api_version", "is_default"); err != nil {
			return err
		}
		if _, _, err := d.str("deployment_id", true, true); err != nil {
			return err
		}
		alias, _, err := d.str("alias", true, true)
		if err != nil {
			return err
		}
		if prev, dup := aliases[alias]; dup {
			return invalid(d.at("alias"), "alias %q is used twice (also at %s); aliases must be unique", alias, prev)
		}
		aliases[alias] = d.at("alias")
		if _, _, err := d.str("api_version", true, true); err != nil {
			return err
		}
		isDefault, err := d.boolean("is_default")
		if err != nil {
			return err
		}
		if isDefault != nil && *isDefault {
			if defaultAt != "" {
				return invalid(d.at("is_default"), "only one deployment may be the default (%s is already)", defaultAt)
			}
			defaultAt = d.path
		}
	}
	return nil
}

// items reads an array field whose items check validates, keeping the items as raw JSON; nil when absent.
func items(o *object, key string, check func(raw json.RawMessage, path string) error) ([]json.RawMessage, error) {
	list, err := o.array(key, false)
	if list == nil || err != nil {
		return nil, err
	}
	for i, raw := range list {
		if err := check(raw, index(o.at(key), i)); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// checkGuardrail validates an item of input_guardrails (output false) or output_guardrails (output true). The
// shape belongs to guardrails; a saved guardrail's ID is storage's syntax, checked here.
func checkGuardrail(raw json.RawMessage, path string, output bool) error {
	if kind(raw) == "string" {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil || !storage.ValidID(id) {
			return invalid(path, "%s is not a valid guardrail ID (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", raw)
		}
	}
	return guardrails.ValidateGuardrail(raw, path, output)
}

// checkRules checks the rules that tie a config object's fields together, once each field is valid.
func checkRules(o *object, c *Config) error {
	// A config names its provider one way.
	if c.Provider != "" && c.VirtualKey != "" {
		return invalid(o.at("virtual_key"), "cannot be combined with provider: name the provider one way, with provider (\"@<slug>\" or an identifier) or with virtual_key")
	}
	// SPEC.md rules 1 and 3: a provider identifier needs credentials.
	if c.Provider != "" && !strings.HasPrefix(c.Provider, "@") && c.APIKey == "" && c.CustomHost == "" && !cloudCredentials(o) {
		for _, set := range cloudKeySets {
			started := false
			for _, k := range set[1:] {
				started = started || o.has(k)
			}
			if !started {
				continue
			}
			for _, k := range set[1:] {
				if !o.has(k) {
					return invalid(o.at(k), "is required with %s when provider %q has no api_key (complete the key set %s, or give api_key)", presentKeys(o, set[1:]), c.Provider, strings.Join(set, " + "))
				}
			}
		}
		return invalid(o.at("api_key"), "is required with provider %q (or give custom_host, or the provider's cloud credentials; or use \"@<slug>\" for a stored provider)", c.Provider)
	}
	// Strategy and targets go together.
	if c.Targets != nil && c.Strategy == nil {
		return invalid(o.at("targets"), "needs a strategy: add \"strategy\": {\"mode\": \"fallback\"} (or loadbalance, conditional, single)")
	}
	if c.Strategy != nil {
		mode := c.Strategy.Mode
		switch {
		case mode != ModeSingle && c.Targets == nil:
			return invalid(o.at("targets"), "is required when strategy.mode is %s: list the configs to route to", mode)
		case c.Targets != nil && len(c.Targets) == 0:
			return invalid(o.at("targets"), "must not be empty: list the configs to route to")
		case mode == ModeSingle && len(c.Targets) > 1:
			return invalid(o.at("targets"), "has %d targets, but strategy.mode single routes to one; use fallback or loadbalance for several", len(c.Targets))
		case mode == ModeLoadbalance && allZeroWeights(c.Targets):
			return invalid(o.at("targets"), "every target has weight 0, so loadbalance could pick none; give at least one a weight above 0")
		}
		if err := resolveNames(o, c); err != nil {
			return err
		}
	}
	// SPEC.md's key sets.
	if !hasKeySet(o) {
		subject := "the config"
		if o.path != "" {
			subject = "this target"
		}
		return invalid(o.path, "%s has none of the key sets a config needs; give at least one of: %s (or provider \"@<slug>\" alone)", subject, keySetList)
	}
	return nil
}

func cloudCredentials(o *object) bool {
	for _, set := range cloudKeySets {
		if hasAll(o, set) {
			return true
		}
	}
	return false
}

func hasKeySet(o *object) bool {
	if p, _, _ := o.str("provider", false, false); strings.HasPrefix(p, "@") {
		return true
	}
	for _, set := range keySets {
		if hasAll(o, set) {
			return true
		}
	}
	return false
}

func hasAll(o *object, keys []string) bool {
	for _, k := range keys {
		if !o.has(k) {
			return false
		}
	}
	return true
}

func presentKeys(o *object, keys []string) string {
	var have []string
	for _, k := range keys {
		if o.has(k) {
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
func resolveNames(o *object, c *Config) error {
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
			return invalid(join(index(o.at("targets"), i), "name"), "target name %q is used twice (also by targets[%d]); conditions name targets by name, so names must be unique", t.Name, j)
		}
		seen[t.Name] = i
	}
	spath := o.at("strategy")
	for i, cond := range st.Conditions {
		if _, ok := seen[cond.Then]; !ok {
			return invalid(join(index(join(spath, "conditions"), i), "then"), "names no target: %q (%s)", cond.Then, targetNames(c))
		}
	}
	if st.Default != "" {
		if _, ok := seen[st.Default]; !ok {
			return invalid(join(spath, "default"), "names no target: %q (%s)", st.Default, targetNames(c))
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
