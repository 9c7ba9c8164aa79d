package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// What the bootstrap file defines, and the requests name.
const (
	apiKey        = "gw-loadbench-key"
	virtualKey    = "mock"
	cachedConfig  = "cached"
	guardedConfig = "guarded"
	pluginID      = "denylist"
	inferencePath = "/v1/chat/completions"
	// mockProviderKey is the provider key the stored provider and the floor proxy send the mock (which ignores it).
	mockProviderKey = "sk-loadbench"
)

// target is one row of the table: one kind of request, sent to the mock directly, through the gateway or
// through the floor proxy.
type target struct {
	row      string
	through  bool // sent to the gateway
	floor    bool // sent to the floor proxy (neither: to the mock)
	stream   bool
	body     []byte
	headers  [][2]string
	conns    int    // fixed connections (latency1); 0: the -c flag
	baseline string // the direct row whose throughput this row's is a share of; "" for a direct row
	// probe checks, before the load, that the gateway does what the row claims (a second call of a cached row
	// must be a hit, a guarded row must carry the check's result).
	probe func(status int, header func(string) string, body []byte, second bool) error
}

// proxy names the process between the load and the mock: "gateway", "floor", or "" when the mock is called directly.
func (t target) proxy() string {
	switch {
	case t.through:
		return "gateway"
	case t.floor:
		return "floor"
	}
	return ""
}

// scenario is what -scenarios names: one or two rows, and the direct rows its shares need.
type scenario struct {
	name  string
	needs []string // scenarios whose rows are this one's baselines
	rows  []target
}

// scenarioNames lists every scenario, in the order they run.
var scenarioNames = []string{"direct", "plain", "floor", "limited", "stream", "cached", "guarded", "body64k", "latency1"}

const bigPromptSize = 64 << 10

func chatBody(stream bool, prompt string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, _ := json.Marshal(struct {
		Model    string    `json:"model"`
		Stream   bool      `json:"stream,omitempty"`
		Messages []message `json:"messages"`
	}{mockModel, stream, []message{{"user", prompt}}})
	return b
}

// bigPrompt is 64 KiB of plain words, as agents and retrieval send all day.
func bigPrompt() string {
	const sentence = "The quick brown fox jumps over the lazy dog while the load benchmark measures the gateway. "
	return strings.Repeat(sentence, bigPromptSize/len(sentence)+1)[:bigPromptSize]
}

func scenarios(chunks int) map[string]scenario {
	small := chatBody(false, "Say hello in one short sentence.")
	streamed := chatBody(true, "Say hello in one short sentence.")
	big := chatBody(false, bigPrompt())
	viaKey := [][2]string{{"x-gateway-api-key", apiKey}, {"x-gateway-virtual-key", virtualKey}}
	viaConfig := func(id string) [][2]string {
		return [][2]string{{"x-gateway-api-key", apiKey}, {"x-gateway-config", id}}
	}
	wholeStream := func(status int, _ func(string) string, body []byte, _ bool) error {
		if err := okStatus(status, body); err != nil {
			return err
		}
		if n := bytes.Count(body, []byte(`"tok `)); n != chunks || !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
			return fmt.Errorf("the stream held %d of %d chunks, or did not end with [DONE]", n, chunks)
		}
		return nil
	}
	plain := func(status int, _ func(string) string, body []byte, _ bool) error { return okStatus(status, body) }
	return map[string]scenario{
		"direct": {name: "direct", rows: []target{{row: "direct", body: small, probe: plain}}},
		"plain": {name: "plain", needs: []string{"direct"}, rows: []target{
			{row: "plain", through: true, body: small, headers: viaKey, baseline: "direct", probe: plain}}},
		// plain's request counted by a rate-limit policy (one that never refuses): the limiter's cost, embedded or
		// (with -gateway-args "--redis URL") shared.
		"limited": {name: "limited", needs: []string{"direct"}, rows: []target{
			{row: "limited", through: true, body: small, baseline: "direct",
				headers: append(viaKey[:len(viaKey):len(viaKey)], [2]string{"x-gateway-metadata", `{"bench":"limited"}`}),
				probe: func(status int, header func(string) string, body []byte, _ bool) error {
					if err := okStatus(status, body); err != nil {
						return err
					}
					if header("x-ratelimit-limit") == "" {
						return fmt.Errorf("the answer carries no x-ratelimit-limit: the policy did not count it")
					}
					return nil
				}}}},
		// plain's request through the most minimal proxy: what any proxy costs here, the floor under plain.
		"floor": {name: "floor", needs: []string{"direct"}, rows: []target{
			{row: "floor", floor: true, body: small, baseline: "direct", probe: plain}}},
		"stream": {name: "stream", rows: []target{
			{row: "stream direct", stream: true, body: streamed, probe: wholeStream},
			{row: "stream", through: true, stream: true, body: streamed, headers: viaKey, baseline: "stream direct", probe: wholeStream}}},
		"cached": {name: "cached", needs: []string{"direct"}, rows: []target{
			{row: "cached", through: true, body: small, headers: viaConfig(cachedConfig), baseline: "direct",
				probe: func(status int, header func(string) string, body []byte, second bool) error {
					if err := okStatus(status, body); err != nil {
						return err
					}
					if got := header("x-gateway-cache-status"); second && got != "HIT" {
						return fmt.Errorf("a repeated request was not a cache hit: x-gateway-cache-status %q", got)
					}
					return nil
				}}}},
		"guarded": {name: "guarded", needs: []string{"direct"}, rows: []target{
			{row: "guarded", through: true, body: small, headers: viaConfig(guardedConfig), baseline: "direct",
				probe: func(status int, _ func(string) string, body []byte, _ bool) error {
					if err := okStatus(status, body); err != nil {
						return err
					}
					if !bytes.Contains(body, []byte(`"hook_results"`)) || !bytes.Contains(body, []byte(pluginID+".words")) {
						return fmt.Errorf("the answer carries no result of the wasm check: %.300s", body)
					}
					return nil
				}}}},
		"body64k": {name: "body64k", rows: []target{
			{row: "body64k direct", body: big, probe: plain},
			{row: "body64k", through: true, body: big, headers: viaKey, baseline: "body64k direct", probe: plain}}},
		"latency1": {name: "latency1", rows: []target{
			{row: "latency1 direct", body: small, conns: 1, probe: plain},
			{row: "latency1", through: true, body: small, headers: viaKey, conns: 1, baseline: "latency1 direct", probe: plain}}},
	}
}

func okStatus(status int, body []byte) error {
	if status != 200 {
		return fmt.Errorf("status %d: %.300s", status, body)
	}
	return nil
}

// selectScenarios resolves -scenarios ("all" or a comma-separated list) into the scenarios to run, in the
// canonical order, with the direct scenarios that through rows are compared with added.
func selectScenarios(list string, all map[string]scenario) ([]scenario, error) {
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "all":
			for _, n := range scenarioNames {
				want[n] = true
			}
		case all[name].name == "":
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (known: all, %s)", name, strings.Join(scenarioNames, ", "))
		default:
			want[name] = true
		}
	}
	for name := range want {
		for _, n := range all[name].needs {
			want[n] = true
		}
	}
	var out []scenario
	for _, n := range scenarioNames {
		if want[n] {
			out = append(out, all[n])
		}
	}
	return out, nil
}

// writeBootstrap writes the gateway's bootstrap file: a workspace, an API key, the stored provider pointing at
// the mock, the saved configs and, when wasmPath is set, the plugin the guarded config's check runs.
func writeBootstrap(path, mockAddr, wasmPath string) error {
	configs := []map[string]any{
		{"id": cachedConfig, "workspace": "default",
			"config": map[string]any{"provider": "@" + virtualKey, "cache": map[string]any{"mode": "simple", "max_age": 3600}}},
	}
	file := map[string]any{
		"workspaces": []map[string]any{{"id": "0b6f3c2e-5a41-4d7e-9c8b-1f2a3b4c5d6e", "slug": "default",
			"organisation_id": "7e1d2c3b-4a5f-4e6d-8c7b-9a0b1c2d3e4f", "name": "Load benchmark"}},
		"api_keys": []map[string]any{{"key": apiKey, "workspace": "default", "admin": true, "name": "loadbench"}},
		"providers": []map[string]any{{"slug": virtualKey, "workspace": "default", "provider": "openai",
			"api_key": mockProviderKey, "custom_host": "http://" + mockAddr + "/v1"}},
		"rate_limit_policies": []map[string]any{{"id": "3c9a4b1e-2d5f-4a6b-8c7d-0e1f2a3b4c5d", "workspace": "default",
			"type": "requests", "unit": "rpm", "value": 1e12, "status": "active", "name": "loadbench limited row",
			"conditions": []map[string]any{{"key": "metadata.bench", "value": "limited"}}, "group_by": []map[string]any{{"key": "api_key"}}}},
	}
	if wasmPath != "" {
		configs = append(configs, map[string]any{"id": guardedConfig, "workspace": "default",
			"config": map[string]any{"provider": "@" + virtualKey, "input_guardrails": []map[string]any{{
				"id": "no-secrets", "deny": true, pluginID + ".words": map[string]any{"words": []string{"secret", "password"}}}}}})
		file["plugins"] = []map[string]any{{"id": pluginID, "workspace": "default", "wasm": wasmPath}}
	}
	file["configs"] = configs
	b, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
