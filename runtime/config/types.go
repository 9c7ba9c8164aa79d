package config

import (
	"encoding/json"
	"time"

	"github.com/llmgw/gateway/runtime/condition"
)

// Config is one config object as SPEC.md defines it ("Config object"), parsed and validated. The same type serves
// the top level and every item of Targets. Pointer and nil-slice fields distinguish "not set" (inherit) from a
// zero value.
type Config struct {
	Name                      string
	StrictLLMVendorCompliance *bool
	Provider                  string // "@slug" or a provider identifier, as written
	APIKey                    string
	VirtualKey                string
	PromptID                  string
	RequestTimeout            *int // milliseconds
	OverrideParams            map[string]json.RawMessage
	CustomHost                string
	ForwardHeaders            []string // nil: not set
	Weight                    *float64
	OnStatusCodes             []int // nil: not set
	Targets                   []*Config
	Strategy                  *Strategy
	Cache                     *Cache
	Retry                     *Retry
	CBConfig                  *CircuitBreaker
	// ProviderFields holds the provider-specific fields as written: resource_name, deployment_id, api_version,
	// deployments, cloudz_*, cloudy_*, cloudx_*, llmvendor_organization, llmvendor_project.
	ProviderFields     map[string]json.RawMessage
	BeforeRequestHooks []json.RawMessage // shapes validated; semantics belong to guardrails
	AfterRequestHooks  []json.RawMessage
	InputGuardrails    []json.RawMessage // each a string (saved guardrail ID) or a guardrail object
	OutputGuardrails   []json.RawMessage
	// BeforeToolCall and AfterToolCall are the hooks of /mcp tool calls, at the top level only.
	BeforeToolCall, AfterToolCall []json.RawMessage
}

// Strategy modes.
const (
	ModeSingle      = "single"
	ModeLoadbalance = "loadbalance"
	ModeFallback    = "fallback"
	ModeConditional = "conditional"
)

// Strategy is a config's "strategy" object.
type Strategy struct {
	Mode          string
	Conditions    []Condition
	Default       string
	OnStatusCodes []int // nil: not set
}

// Condition is one item of strategy.conditions.
type Condition struct {
	Query json.RawMessage
	Then  string

	matcher condition.Matcher // compiled by Parse, so that Compile need not compile the query again
}

// Cache is a config's "cache" object.
type Cache struct {
	Mode   string // "simple" or "semantic"
	MaxAge *int   // seconds
}

// Retry is a config's "retry" object.
type Retry struct {
	Attempts             int
	OnStatusCodes        []int // nil: not set (DESIGN.md's defaults apply)
	UseRetryAfterHeaders bool
}

// CircuitBreaker is a config's "cb_config" object.
type CircuitBreaker struct {
	FailureThreshold   int
	CooldownInterval   int   // milliseconds, at least 30000
	FailureStatusCodes []int // nil: not set (statuses above 500)
}

// Plan is a compiled config: a tree of nodes with every inherited setting resolved, ready to execute without
// further parsing. A Plan is immutable and shared by all requests that use the config.
type Plan struct {
	Root *Node
	Hash string // hex SHA-256 of the config's JSON text as received; the cache key
	// Hooked lists the leaves that carry hooks or guardrails (their own or inherited), in depth-first order,
	// so that their checks can be validated before anything is sent without walking the whole tree.
	Hooked []*Node
	// BeforeToolCall and AfterToolCall are the config's tool hooks (the top level's), for /mcp tool calls.
	BeforeToolCall, AfterToolCall []json.RawMessage
}

// Node is one config object of a Plan. A node with Children is a strategy; a node without is a leaf target that
// names a provider (or takes it from the request's headers when it names none).
type Node struct {
	// Path is the node's place for x-gateway-last-used-option-index: "config", "config.targets[1]",
	// "config.targets[1].targets[0]".
	Path string
	Name string

	Mode        string  // strategy mode; ModeSingle for a leaf or a strategy without mode
	Children    []*Node // targets
	Weights     []float64
	Conditions  []CompiledCondition
	DefaultNext int // index into Children of the conditional default; -1 when the strategy names no default

	// Effective settings after inheritance (DESIGN.md: retry, cache and cb_config replace the parent's whole;
	// override_params merge key by key, child wins; the rest are inherited unless set).
	OnStatusCodes    []int // fallback triggers for this node's children: the strategy's, or nil for "any non-2xx"
	TargetOnStatus   []int // this target's own on_status_codes, overriding the parent strategy's for it
	Retry            *Retry
	Cache            *Cache
	CircuitBreaker   *CircuitBreaker
	RequestTimeout   time.Duration // 0: none
	CustomHost       string
	ForwardHeaders   []string
	OverrideParams   map[string]json.RawMessage
	StrictCompliance bool
	BeforeHooks      []json.RawMessage
	AfterHooks       []json.RawMessage
	InputGuardrails  []json.RawMessage
	OutputGuardrails []json.RawMessage

	// Provider reference of a leaf, inherited from ancestors when the leaf sets none.
	Provider       string // "@slug", an identifier (canonical), or "" (take it from the request)
	APIKey         string
	VirtualKey     string
	ProviderFields map[string]json.RawMessage
	PromptID       string
}

// CompiledCondition is a strategy condition with its query compiled and its "then" resolved to a child.
type CompiledCondition struct {
	Match condition.Matcher
	Next  int // index into Children
}
