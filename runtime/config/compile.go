package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
)

// Load parses, validates and compiles a config: Parse, then Compile. Errors are Parse's and Compile's.
func Load(raw []byte) (*Plan, error) {
	return load(raw, sha256.Sum256(raw))
}

func load(raw []byte, sum [sha256.Size]byte) (*Plan, error) {
	c, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return compile(c, sum)
}

// Compile builds the Plan of a parsed config: a tree of Nodes with every inherited setting resolved, per
// DESIGN.md ("Inheritance down nested targets"). raw is the config's JSON as received; Plan.Hash is the hex
// SHA-256 of it.
//
// Each Node's effective settings:
//   - Retry, Cache, CircuitBreaker: the node's own object when it sets one, replacing the parent's whole; else
//     the parent's. Retry.Attempts is capped at MaxRetryAttempts.
//   - OverrideParams: the parent's merged with the node's, key by key, the node's value winning.
//   - RequestTimeout, CustomHost, ForwardHeaders, StrictCompliance, hooks and guardrails: the node's own when
//     set (an empty list counts as set, and clears the parent's), else the parent's.
//   - Provider, APIKey, VirtualKey, ProviderFields: a node that names a provider (provider or virtual_key) uses
//     its own; a node that names none takes its parent's, with its own api_key and provider fields laid over
//     them (ProviderFields merged key by key). PromptID is the node's own, else the parent's.
//   - Weights: one per child, default 1. OnStatusCodes: the node's strategy.on_status_codes. TargetOnStatus:
//     the node's own on_status_codes (not inherited). DefaultNext: the index of strategy.default, -1 without.
//
// Compile accepts a Config that Parse returned; for one built by hand it checks the strategy's names and
// compiles condition queries that Parse did not. The Plan shares raw JSON values with c: modify neither.
func Compile(c *Config, raw []byte) (*Plan, error) {
	return compile(c, sha256.Sum256(raw))
}

func compile(c *Config, sum [sha256.Size]byte) (*Plan, error) {
	if c == nil {
		return nil, jsonfield.Invalid("", "no config to compile")
	}
	root, err := compileNode(c, nil, "config", 0)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Root: root, Hash: hex.EncodeToString(sum[:])}
	plan.Hooked = hookedLeaves(root, nil)
	plan.BeforeToolCall, plan.AfterToolCall = c.BeforeToolCall, c.AfterToolCall
	return plan, nil
}

// hookedLeaves appends the leaves under n that carry hooks or guardrails. Only leaves run checks: a
// strategy's hooks are inherited by its targets.
func hookedLeaves(n *Node, out []*Node) []*Node {
	if len(n.Children) == 0 {
		if len(n.BeforeHooks)+len(n.AfterHooks)+len(n.InputGuardrails)+len(n.OutputGuardrails) > 0 {
			out = append(out, n)
		}
		return out
	}
	for _, c := range n.Children {
		out = hookedLeaves(c, out)
	}
	return out
}

// param turns a node path ("config.targets[1]") into the Param prefix of its fields ("targets[1]").
func param(nodePath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(nodePath, "config"), ".")
}

func compileNode(c *Config, parent *Node, path string, depth int) (*Node, error) {
	if depth > MaxDepth {
		return nil, jsonfield.Invalid(param(path), "targets nest more than %d levels deep; flatten the config", MaxDepth)
	}
	if len(c.Targets) > MaxTargets {
		return nil, jsonfield.Invalid(jsonfield.Join(param(path), "targets"), "has %d items; at most %d targets are allowed in one config object", len(c.Targets), MaxTargets)
	}
	if parent == nil {
		parent = &Node{}
	}
	n := &Node{Path: path, Name: c.Name, Mode: ModeSingle, DefaultNext: -1}

	// Settings replaced whole.
	n.Retry = parent.Retry
	if c.Retry != nil {
		r := *c.Retry
		r.Attempts = min(r.Attempts, MaxRetryAttempts)
		r.OnStatusCodes = cloneInts(r.OnStatusCodes)
		n.Retry = &r
	}
	n.Cache = parent.Cache
	if c.Cache != nil {
		cc := *c.Cache
		if cc.MaxAge != nil {
			age := *cc.MaxAge
			cc.MaxAge = &age
		}
		n.Cache = &cc
	}
	n.CircuitBreaker = parent.CircuitBreaker
	if c.CBConfig != nil {
		cb := *c.CBConfig
		cb.FailureStatusCodes = cloneInts(cb.FailureStatusCodes)
		n.CircuitBreaker = &cb
	}

	// Settings inherited unless set.
	n.RequestTimeout = parent.RequestTimeout
	if c.RequestTimeout != nil {
		n.RequestTimeout = time.Duration(*c.RequestTimeout) * time.Millisecond
	}
	n.CustomHost = parent.CustomHost
	if c.CustomHost != "" {
		n.CustomHost = c.CustomHost
	}
	n.ForwardHeaders = parent.ForwardHeaders
	if c.ForwardHeaders != nil {
		n.ForwardHeaders = append([]string{}, c.ForwardHeaders...)
	}
	n.StrictCompliance = parent.StrictCompliance
	if c.StrictLLMVendorCompliance != nil {
		n.StrictCompliance = *c.StrictLLMVendorCompliance
	}
	n.BeforeHooks = inheritRaw(parent.BeforeHooks, c.BeforeRequestHooks)
	n.AfterHooks = inheritRaw(parent.AfterHooks, c.AfterRequestHooks)
	n.InputGuardrails = inheritRaw(parent.InputGuardrails, c.InputGuardrails)
	n.OutputGuardrails = inheritRaw(parent.OutputGuardrails, c.OutputGuardrails)

	// Merged key by key.
	n.OverrideParams = mergeRaw(parent.OverrideParams, c.OverrideParams)

	// The provider reference.
	if c.Provider != "" || c.VirtualKey != "" {
		n.Provider, n.APIKey, n.VirtualKey = c.Provider, c.APIKey, c.VirtualKey
		n.ProviderFields = mergeRaw(nil, c.ProviderFields)
	} else {
		n.Provider, n.APIKey, n.VirtualKey = parent.Provider, parent.APIKey, parent.VirtualKey
		if c.APIKey != "" {
			n.APIKey = c.APIKey
		}
		n.ProviderFields = mergeRaw(parent.ProviderFields, c.ProviderFields)
	}
	n.PromptID = parent.PromptID
	if c.PromptID != "" {
		n.PromptID = c.PromptID
	}
	n.TargetOnStatus = cloneInts(c.OnStatusCodes)

	if c.Strategy != nil {
		n.Mode = c.Strategy.Mode
		n.OnStatusCodes = cloneInts(c.Strategy.OnStatusCodes)
	}
	if len(c.Targets) > 0 {
		n.Children = make([]*Node, len(c.Targets))
		n.Weights = make([]float64, len(c.Targets))
		for i, t := range c.Targets {
			if t == nil {
				return nil, jsonfield.Invalid(jsonfield.Index(jsonfield.Join(param(path), "targets"), i), "is empty")
			}
			child, err := compileNode(t, n, jsonfield.Index(path+".targets", i), depth+1)
			if err != nil {
				return nil, err
			}
			n.Children[i] = child
			n.Weights[i] = 1
			if t.Weight != nil {
				n.Weights[i] = *t.Weight
			}
		}
	}
	if c.Strategy != nil {
		if err := compileConditions(c, n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// compileConditions resolves the strategy's then and default to child indexes and compiles the queries Parse
// has not compiled already.
func compileConditions(c *Config, n *Node) error {
	st := c.Strategy
	prefix := jsonfield.Join(param(n.Path), "strategy")
	byName := make(map[string]int, len(c.Targets))
	for i, t := range c.Targets {
		if _, dup := byName[t.Name]; !dup && t.Name != "" {
			byName[t.Name] = i
		}
	}
	if len(st.Conditions) > 0 {
		n.Conditions = make([]CompiledCondition, len(st.Conditions))
	}
	for i, cond := range st.Conditions {
		cpath := jsonfield.Index(jsonfield.Join(prefix, "conditions"), i)
		m := cond.matcher
		if m == nil {
			var err error
			if m, err = compileCondition(cond.Query, jsonfield.Join(cpath, "query")); err != nil {
				var ge *gwerr.Error
				if errors.As(err, &ge) {
					return ge
				}
				e := jsonfield.Invalid(jsonfield.Join(cpath, "query"), "%v", err)
				e.Err = err
				return e
			}
			if m == nil {
				return jsonfield.Invalid(jsonfield.Join(cpath, "query"), "the query compiled to nothing")
			}
		}
		next, ok := byName[cond.Then]
		if !ok {
			return jsonfield.Invalid(jsonfield.Join(cpath, "then"), "names no target: %q (%s)", cond.Then, targetNames(c))
		}
		n.Conditions[i] = CompiledCondition{Match: m, Next: next}
	}
	if st.Default != "" {
		next, ok := byName[st.Default]
		if !ok {
			return jsonfield.Invalid(jsonfield.Join(prefix, "default"), "names no target: %q (%s)", st.Default, targetNames(c))
		}
		n.DefaultNext = next
	}
	return nil
}

func cloneInts(s []int) []int {
	if s == nil {
		return nil
	}
	return append([]int{}, s...)
}

// inheritRaw is own when set (even empty), else the parent's.
func inheritRaw(parent, own []json.RawMessage) []json.RawMessage {
	if own == nil {
		return parent
	}
	return append([]json.RawMessage{}, own...)
}

// mergeRaw merges own over parent key by key. With nothing of its own a node shares the parent's map, which
// nothing writes once the Plan is built.
func mergeRaw(parent, own map[string]json.RawMessage) map[string]json.RawMessage {
	if len(own) == 0 {
		if own != nil && parent == nil {
			return map[string]json.RawMessage{}
		}
		return parent
	}
	out := make(map[string]json.RawMessage, len(parent)+len(own))
	maps.Copy(out, parent)
	maps.Copy(out, own)
	return out
}
