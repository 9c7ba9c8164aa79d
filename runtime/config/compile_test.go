package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/condition"
)

// node walks from the root down the child indexes in at.
func node(t *testing.T, p *Plan, at ...int) *Node {
	t.Helper()
	n := p.Root
	for _, i := range at {
		if i >= len(n.Children) {
			t.Fatalf("%s has %d children, no %d", n.Path, len(n.Children), i)
		}
		n = n.Children[i]
	}
	return n
}

func rawJSON(m map[string]json.RawMessage) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestCompileInheritance(t *testing.T) {
	const parentRetry = `{"retry": {"attempts": 2, "on_status_codes": [429], "use_retry_after_headers": true},
		"cache": {"mode": "semantic", "max_age": 60}, "cb_config": {"failure_threshold": 3, "cooldown_interval": 30000},
		"request_timeout": 1000, "custom_host": "http://h.example/v1", "forward_headers": ["X-A"],
		"strict_llmvendor_compliance": true, "override_params": {"model": "a", "temperature": 0.1},
		"before_request_hooks": [{"id": "b"}], "after_request_hooks": [{"id": "a"}],
		"input_guardrails": ["in"], "output_guardrails": ["out"],
		"provider": "openai", "api_key": "sk-parent", "llmvendor_organization": "org", "prompt_id": "pp",
		"strategy": {"mode": "fallback", "on_status_codes": [500]},`
	tests := []struct {
		name  string
		json  string
		at    []int
		check func(t *testing.T, n *Node)
	}{
		{
			name: "child retry replaces the parent's whole",
			json: parentRetry + `"targets": [{"virtual_key": "a", "retry": {"attempts": 1}}]}`,
			at:   []int{0},
			check: func(t *testing.T, n *Node) {
				if want := (&Retry{Attempts: 1}); !reflect.DeepEqual(n.Retry, want) {
					t.Errorf("Retry = %+v, want %+v", n.Retry, want)
				}
			},
		},
		{
			name: "retry, cache and cb_config inherited when the child sets none",
			json: parentRetry + `"targets": [{"strategy": {"mode": "single"}, "targets": [{"virtual_key": "a"}], "retry": {"attempts": 3}}]}`,
			at:   []int{0, 0},
			check: func(t *testing.T, n *Node) {
				if n.Retry == nil || n.Retry.Attempts != 3 {
					t.Errorf("Retry = %+v, want the middle node's attempts 3", n.Retry)
				}
				if n.Cache == nil || n.Cache.Mode != "semantic" || *n.Cache.MaxAge != 60 {
					t.Errorf("Cache = %+v, want the root's", n.Cache)
				}
				if n.CircuitBreaker == nil || n.CircuitBreaker.FailureThreshold != 3 {
					t.Errorf("CircuitBreaker = %+v, want the root's", n.CircuitBreaker)
				}
			},
		},
		{
			name: "child cache and cb_config replace",
			json: parentRetry + `"targets": [{"virtual_key": "a", "cache": {"mode": "simple"}, "cb_config": {"failure_threshold": 1, "cooldown_interval": 60000}}]}`,
			at:   []int{0},
			check: func(t *testing.T, n *Node) {
				if want := (&Cache{Mode: "simple"}); !reflect.DeepEqual(n.Cache, want) {
					t.Errorf("Cache = %+v, want %+v", n.Cache, want)
				}
				if want := (&CircuitBreaker{FailureThreshold: 1, CooldownInterval: 60000}); !reflect.DeepEqual(n.CircuitBreaker, want) {
					t.Errorf("CircuitBreaker = %+v, want %+v", n.CircuitBreaker, want)
				}
			},
		},
		{
			name: "retry attempts capped at 5",
			json: `{"retry": {"attempts": 9}}`,
			check: func(t *testing.T, n *Node) {
				if n.Retry.Attempts != MaxRetryAttempts {
					t.Errorf("Attempts = %d, want %d", n.Retry.Attempts, MaxRetryAttempts)
				}
			},
		},
		{
			name: "override_params merge key by key, child wins",
			json: parentRetry + `"targets": [{"virtual_key": "a", "override_params": {"model": "b", "top_p": 1}}]}`,
			at:   []int{0},
			check: func(t *testing.T, n *Node) {
				want := map[string]string{"model": `"b"`, "temperature": "0.1", "top_p": "1"}
				if got := rawJSON(n.OverrideParams); !reflect.DeepEqual(got, want) {
					t.Errorf("OverrideParams = %v, want %v", got, want)
				}
			},
		},
		{
			name: "the rest inherited unless set",
			json: parentRetry + `"targets": [{"virtual_key": "a"}]}`,
			at:   []int{0},
			check: func(t *testing.T, n *Node) {
				if n.RequestTimeout != time.Second || n.CustomHost != "http://h.example/v1" || !n.StrictCompliance {
					t.Errorf("timeout %v, host %q, strict %v: want the root's", n.RequestTimeout, n.CustomHost, n.StrictCompliance)
				}
				if !reflect.DeepEqual(n.ForwardHeaders, []string{"X-A"}) || len(n.BeforeHooks) != 1 || len(n.AfterHooks) != 1 ||
					len(n.InputGuardrails) != 1 || len(n.OutputGuardrails) != 1 || n.PromptID != "pp" {
					t.Errorf("headers %v, hooks %d/%d, guardrails %d/%d, prompt %q: want the root's", n.ForwardHeaders,
						len(n.BeforeHooks), len(n.AfterHooks), len(n.InputGuardrails), len(n.OutputGuardrails), n.PromptID)
				}
				if got := rawJSON(n.OverrideParams); !reflect.DeepEqual(got, map[string]string{"model": `"a"`, "temperature": "0.1"}) {
					t.Errorf("OverrideParams = %v, want the root's", got)
				}
			},
		},
		{
			name: "set on the child wins; an empty list clears",
			json: parentRetry + `"targets": [{"virtual_key": "a", "request_timeout": 500, "custom_host": "https://c.example",
				"forward_headers": [], "strict_llmvendor_compliance": false, "before_request_hooks": [], "output_guardrails": ["o2"], "prompt_id": "p2"}]}`,
			at: []int{0},
			check: func(t *testing.T, n *Node) {
				if n.RequestTimeout != 500*time.Millisecond || n.CustomHost != "https://c.example" || n.StrictCompliance {
					t.Errorf("timeout %v, host %q, strict %v: want the child's", n.RequestTimeout, n.CustomHost, n.StrictCompliance)
				}
				if n.ForwardHeaders == nil || len(n.ForwardHeaders) != 0 || n.BeforeHooks == nil || len(n.BeforeHooks) != 0 {
					t.Errorf("headers %#v, before hooks %#v: want set and empty", n.ForwardHeaders, n.BeforeHooks)
				}
				if len(n.OutputGuardrails) != 1 || string(n.OutputGuardrails[0]) != `"o2"` || n.PromptID != "p2" {
					t.Errorf("output guardrails %s, prompt %q: want the child's", n.OutputGuardrails, n.PromptID)
				}
			},
		},
		{
			name: "provider inherited by a leaf that names none",
			json: parentRetry + `"targets": [{"request_timeout": 5}]}`,
			at:   []int{0},
			check: func(t *testing.T, n *Node) {
				if n.Provider != "openai" || n.APIKey != "sk-parent" || n.VirtualKey != "" {
					t.Errorf("provider %q key %q vk %q: want the root's", n.Provider, n.APIKey, n.VirtualKey)
				}
				if got := rawJSON(n.ProviderFields); !reflect.DeepEqual(got, map[string]string{"llmvendor_organization": `"org"`}) {
					t.Errorf("ProviderFields = %v, want the root's", got)
				}
			},
		},
		{
			name: "a leaf that names none overlays its api_key and provider fields",
			json: parentRetry + `"targets": [{"request_timeout": 5, "api_key": "sk-child", "llmvendor_project": "proj"}]}`,
			at:   []int{0},
			check: func(t *testing.T, n *Node) {
				if n.Provider != "openai" || n.APIKey != "sk-child" {
					t.Errorf("provider %q key %q: want openai with the child's key", n.Provider, n.APIKey)
				}
				want := map[string]string{"llmvendor_organization": `"org"`, "llmvendor_project": `"proj"`}
				if got := rawJSON(n.ProviderFields); !reflect.DeepEqual(got, want) {
					t.Errorf("ProviderFields = %v, want %v", got, want)
				}
			},
		},
		{
			name: "a leaf that names a provider uses its own reference only",
			json: parentRetry + `"targets": [{"virtual_key": "vk"}, {"provider": "@slug"}]}`,
			at:   []int{1},
			check: func(t *testing.T, n *Node) {
				if n.Provider != "@slug" || n.APIKey != "" || n.VirtualKey != "" || n.ProviderFields != nil {
					t.Errorf("provider %q key %q vk %q fields %v: want @slug alone", n.Provider, n.APIKey, n.VirtualKey, n.ProviderFields)
				}
			},
		},
		{
			name: "status codes: strategy's on the node, target's own not inherited",
			json: parentRetry + `"targets": [{"virtual_key": "a", "on_status_codes": [429]}, {"virtual_key": "b"}]}`,
			check: func(t *testing.T, n *Node) {
				if !reflect.DeepEqual(n.OnStatusCodes, []int{500}) || n.TargetOnStatus != nil {
					t.Errorf("root OnStatusCodes %v TargetOnStatus %v", n.OnStatusCodes, n.TargetOnStatus)
				}
				if !reflect.DeepEqual(n.Children[0].TargetOnStatus, []int{429}) || n.Children[1].TargetOnStatus != nil || n.Children[0].OnStatusCodes != nil {
					t.Errorf("children TargetOnStatus %v, %v", n.Children[0].TargetOnStatus, n.Children[1].TargetOnStatus)
				}
			},
		},
		{
			name: "weights default to 1, 0 kept",
			json: `{"strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "a"}, {"virtual_key": "b", "weight": 0}, {"virtual_key": "c", "weight": 2.5}]}`,
			check: func(t *testing.T, n *Node) {
				if !reflect.DeepEqual(n.Weights, []float64{1, 0, 2.5}) || n.Mode != ModeLoadbalance || n.DefaultNext != -1 {
					t.Errorf("weights %v mode %q default %d", n.Weights, n.Mode, n.DefaultNext)
				}
			},
		},
		{
			name: "paths and modes",
			json: `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a"}, {"name": "inner", "strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "b"}]}]}`,
			at:   []int{1, 0},
			check: func(t *testing.T, n *Node) {
				if n.Path != "config.targets[1].targets[0]" || n.Mode != ModeSingle || n.VirtualKey != "b" {
					t.Errorf("path %q mode %q vk %q", n.Path, n.Mode, n.VirtualKey)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, node(t, mustLoad(t, tc.json), tc.at...))
		})
	}
}

func TestCompilePlan(t *testing.T) {
	raw := `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a"}, {"name": "n", "strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "b"}]}]}`
	p := mustLoad(t, raw)
	sum := sha256.Sum256([]byte(raw))
	if p.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("Hash = %s, want the hex SHA-256 of the text", p.Hash)
	}
	paths := []string{}
	var walk func(n *Node)
	walk = func(n *Node) {
		paths = append(paths, n.Path)
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(p.Root)
	want := []string{"config", "config.targets[0]", "config.targets[1]", "config.targets[1].targets[0]"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	if p.Root.Children[1].Name != "n" {
		t.Errorf("name %q", p.Root.Children[1].Name)
	}

	// Parse then Compile is Load.
	c, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Compile(c, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, p2) {
		t.Error("Compile(Parse(raw)) differs from Load(raw)")
	}
}

func TestCompileConditional(t *testing.T) {
	raw := `{"strategy": {"mode": "conditional", "default": "cheap",
		"conditions": [{"query": {"tier": "pro"}, "then": "fast"}, {"query": {"tier": "free"}, "then": "cheap"}, {"query": {"x": "y"}, "then": "mid"}]},
		"targets": [{"name": "cheap", "virtual_key": "c"}, {"name": "mid", "virtual_key": "m"}, {"name": "fast", "virtual_key": "f"}]}`
	n := mustLoad(t, raw).Root
	if n.Mode != ModeConditional || n.DefaultNext != 0 {
		t.Fatalf("mode %q default %d", n.Mode, n.DefaultNext)
	}
	var next []int
	for _, c := range n.Conditions {
		next = append(next, c.Next)
	}
	if !reflect.DeepEqual(next, []int{2, 0, 1}) {
		t.Errorf("Next = %v, want [2 0 1]", next)
	}
	tests := []struct {
		name  string
		tier  string
		match []bool
	}{
		{"pro", "pro", []bool{true, false, false}},
		{"free", "free", []bool{false, true, false}},
		{"none", "x", []bool{false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &condition.Env{Metadata: map[string]string{"tier": tc.tier}}
			for i, c := range n.Conditions {
				if got := c.Match.Match(env); got != tc.match[i] {
					t.Errorf("condition %d matched %v, want %v", i, got, tc.match[i])
				}
			}
		})
	}
}

func TestCompileHandBuilt(t *testing.T) {
	tests := []struct {
		name  string
		c     *Config
		param string
	}{
		{"nil", nil, ""},
		{"unknown then", &Config{Strategy: &Strategy{Mode: ModeConditional, Conditions: []Condition{{Query: json.RawMessage(`{}`), Then: "x"}}, Default: "a"},
			Targets: []*Config{{Name: "a"}}}, "strategy.conditions[0].then"},
		{"unknown default", &Config{Strategy: &Strategy{Mode: ModeConditional, Conditions: []Condition{{Query: json.RawMessage(`{}`), Then: "a"}}, Default: "b"},
			Targets: []*Config{{Name: "a"}}}, "strategy.default"},
		{"query error", &Config{Strategy: &Strategy{Mode: ModeFallback}, Targets: []*Config{{Strategy: &Strategy{Mode: ModeConditional,
			Conditions: []Condition{{Query: json.RawMessage(`{"$plain": 1}`), Then: "a"}}, Default: "a"}, Targets: []*Config{{Name: "a"}}}}},
			"targets[0].strategy.conditions[0].query"},
		{"nil target", &Config{Strategy: &Strategy{Mode: ModeFallback}, Targets: []*Config{nil}}, "targets[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(tc.c, nil)
			if err == nil || p != nil {
				t.Fatalf("Compile = %v, %v; want an error", p, err)
			}
			if ge := asConfigError(t, err); ge.Param != tc.param {
				t.Errorf("Param = %q, want %q (%v)", ge.Param, tc.param, err)
			}
		})
	}

	// A hand-built conditional compiles its queries itself.
	c := &Config{Strategy: &Strategy{Mode: ModeConditional, Conditions: []Condition{{Query: json.RawMessage(`{"k": "v"}`), Then: "b"}}, Default: "a"},
		Targets: []*Config{{Name: "a"}, {Name: "b"}}}
	p, err := Compile(c, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if cc := p.Root.Conditions[0]; cc.Next != 1 || !cc.Match.Match(&condition.Env{Metadata: map[string]string{"k": "v"}}) {
		t.Errorf("condition %+v", cc)
	}

	// A cycle cannot hang Compile.
	loop := &Config{Strategy: &Strategy{Mode: ModeFallback}}
	loop.Targets = []*Config{loop}
	if _, err := Compile(loop, nil); err == nil {
		t.Fatal("Compile accepted a cyclic config")
	}
}

func TestPlanDoesNotShareParentMaps(t *testing.T) {
	p := mustLoad(t, `{"override_params": {"model": "a"}, "strategy": {"mode": "fallback"},
		"targets": [{"virtual_key": "x", "override_params": {"top_p": 1}}, {"virtual_key": "y"}]}`)
	if len(p.Root.OverrideParams) != 1 {
		t.Fatalf("root override_params %v changed by a child's merge", rawJSON(p.Root.OverrideParams))
	}
	if len(p.Root.Children[0].OverrideParams) != 2 || len(p.Root.Children[1].OverrideParams) != 1 {
		t.Fatalf("children %v %v", rawJSON(p.Root.Children[0].OverrideParams), rawJSON(p.Root.Children[1].OverrideParams))
	}
}
