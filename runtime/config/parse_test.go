package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// validConfigs are accepted by Parse: one row per SPEC.md key set, then fuller examples.
var validConfigs = []struct {
	name string
	json string
}{
	{"provider+api_key", `{"provider": "openai", "api_key": "sk-1"}`},
	{"provider+custom_host", `{"provider": "openai", "custom_host": "http://127.0.0.1:8000/v1"}`},
	{"anthropic fields its adapter declares", `{"provider": "anthropic", "api_key": "k", "anthropic_version": "2023-06-01", "anthropic_beta": "tools-2024-04-04"}`},
	{"virtual_key", `{"virtual_key": "vk-1"}`},
	{"strategy+targets", `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a"}, {"virtual_key": "b"}]}`},
	{"cache", `{"cache": {"mode": "simple"}}`},
	{"retry", `{"retry": {"attempts": 3}}`},
	{"prompt_id", `{"prompt_id": "pp-1"}`},
	{"forward_headers", `{"forward_headers": ["X-Trace", "x-user"]}`},
	{"request_timeout", `{"request_timeout": 1000}`},
	{"provider+cloudz keys", `{"provider": "bedrock", "cloudz_access_key_id": "AK", "cloudz_secret_access_key": "SK", "cloudz_region": "us-east-1"}`},
	{"provider+cloudy_region+service_account", `{"provider": "vertex-ai", "cloudy_region": "us-central1", "cloudy_service_account_json": {"type": "service_account"}}`},
	{"provider+cloudy_region+project", `{"provider": "cloudy", "cloudy_region": "us-central1", "cloudy_project_id": "proj"}`},
	{"provider+cloudx deployment", `{"provider": "azure-openai", "cloudx_deployment_name": "d", "cloudx_deployment_type": "managed", "cloudx_region": "eu", "cloudx_api_version": "2024-06-01"}`},
	{"provider+cloudx endpoint", `{"provider": "cloudx", "cloudx_endpoint_name": "e", "cloudx_deployment_type": "serverless"}`},
	{"after_request_hooks", `{"after_request_hooks": [{"id": "h1", "async": true, "on_fail": {"feedback": {"value": -1, "weight": 1, "metadata": {"k": "v"}}}}]}`},
	{"before_request_hooks", `{"before_request_hooks": [{"id": "h1", "type": "guardrail", "on_fail": {"deny": true}, "checks": [{"id": "default.wordCount", "parameters": {"maxWords": 10}}]}]}`},
	{"input_guardrails", `{"input_guardrails": ["no-emails", {"id": "g", "deny": true, "async": false, "default.regexMatch": {"rule": "x"}}]}`},
	{"output_guardrails", `{"output_guardrails": [{"default.wordCount": {"maxWords": 10}, "on_fail": {"deny": true, "feedback": {"value": 0}}}]}`},
	{"guardrail checks list with top-level deny", `{"input_guardrails": [{"checks": [{"id": "default.wordCount", "parameters": {"maxWords": 10}}], "deny": true}]}`},
	{"guardrail plugin check", `{"input_guardrails": [{"type": "guardrail", "pii.detect": {"action": "redact"}}]}`},
	{"provider @slug alone", `{"provider": "@mock-openai"}`},
	{"nulls mean unset", `{"virtual_key": "a", "name": null, "retry": null}`},
	{"integral float", `{"request_timeout": 2.0, "retry": {"attempts": 1e0}}`},
	{"retry attempts above cap", `{"retry": {"attempts": 9}}`},
	{"weight 0", `{"strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "a", "weight": 0}, {"virtual_key": "b", "weight": 0.5}]}`},
	{"single with one target", `{"strategy": {"mode": "single"}, "targets": [{"virtual_key": "a"}]}`},
	{"conditional", `{"strategy": {"mode": "conditional", "conditions": [{"query": {"tier": "pro"}, "then": "fast"}], "default": "cheap"},
		"targets": [{"name": "fast", "virtual_key": "a"}, {"name": "cheap", "virtual_key": "b"}]}`},
	{"kitchen sink", `{"name": "all", "strict_llmvendor_compliance": false, "provider": "llmvendor", "api_key": "sk",
		"prompt_id": "p", "request_timeout": 30000, "override_params": {"model": "gpt-4o", "temperature": 0.2},
		"custom_host": "https://llm.example.com/v1", "forward_headers": ["X-A"], "weight": 2, "on_status_codes": [429, 500],
		"cache": {"mode": "semantic", "max_age": 60}, "retry": {"attempts": 2, "on_status_codes": [429], "use_retry_after_headers": true},
		"cb_config": {"failure_threshold": 3, "cooldown_interval": 30000, "failure_status_codes": [502, 503]},
		"resource_name": "r", "deployment_id": "d", "api_version": "v",
		"deployments": [{"deployment_id": "d1", "alias": "a1", "api_version": "v", "is_default": true}, {"deployment_id": "d2", "alias": "a2", "api_version": "v"}],
		"llmvendor_organization": "org", "llmvendor_project": "proj",
		"before_request_hooks": [], "after_request_hooks": [], "input_guardrails": [], "output_guardrails": []}`},
	{"nested", `{"retry": {"attempts": 1}, "strategy": {"mode": "fallback", "on_status_codes": [429]},
		"targets": [{"provider": "@a"}, {"strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "b", "weight": 1}, {"provider": "anthropic", "api_key": "k"}]}]}`},
	{"max depth", nest(MaxDepth)},
	{"max targets", manyTargets(MaxTargets)},
	{"tool hooks alone", `{"before_tool_call": [{"id": "a", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["x"]}}], "on_fail": {"deny": true}}], "after_tool_call": [{"id": "b", "async": true, "checks": []}]}`},
}

func TestParseValid(t *testing.T) {
	for _, tc := range validConfigs {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.json))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c == nil {
				t.Fatal("Parse returned no config")
			}
		})
	}
}

// invalidConfigs each break one rule; param is the exact expected Param and word a piece of the message.
var invalidConfigs = []struct {
	name  string
	json  string
	param string
	word  string
}{
	// The body.
	{"empty body", ``, "", "empty"},
	{"not json", `{"virtual_key": `, "", "not valid JSON"},
	{"trailing data", `{"virtual_key": "a"} {}`, "", "not valid JSON"},
	{"array", `[{"virtual_key": "a"}]`, "", "must be a JSON object"},
	{"null", `null`, "", "must be a JSON object"},
	{"string", `"cfg-1"`, "", "must be a JSON object"},
	{"empty object", `{}`, "", "key sets"},
	{"only name", `{"name": "x", "override_params": {"model": "m"}}`, "", "provider + api_key"},

	// Unknown keys, first alphabetically, before anything else.
	{"unknown key suggests", `{"retyr": {"attempts": 1}}`, "retyr", `did you mean "retry"`},
	{"unknown key lists", `{"virtual_key": "a", "zzzzzzzz": 1}`, "zzzzzzzz", "unknown field"},
	{"unknown keys in order", `{"virtual_key": "a", "b_unknown": 1, "a_unknown": 1}`, "a_unknown", "unknown field"},
	{"unknown before type", `{"name": 1, "zz": 1}`, "zz", "unknown field"},
	{"unknown odd key", `{"virtual_key": "a", "x.y": 1}`, `["x.y"]`, "unknown field"},

	// Field types and values, in table order.
	{"name type", `{"name": 1, "virtual_key": "a"}`, "name", "string"},
	{"strict type", `{"strict_llmvendor_compliance": "yes", "virtual_key": "a"}`, "strict_llmvendor_compliance", "boolean"},
	{"provider type", `{"provider": 1, "api_key": "k"}`, "provider", "string"},
	{"provider empty", `{"provider": "", "api_key": "k"}`, "provider", "empty"},
	{"provider unknown", `{"provider": "nope", "api_key": "k"}`, "provider", "unknown provider"},
	{"provider bad slug", `{"provider": "@bad slug"}`, "provider", "slug"},
	{"provider bare at", `{"provider": "@"}`, "provider", "slug"},
	{"api_key type", `{"provider": "openai", "api_key": 5}`, "api_key", "string"},
	{"api_key line break", `{"provider": "openai", "api_key": "sk\r\nX-Evil: 1"}`, "api_key", "control characters"},
	{"provider field line break", `{"virtual_key": "a", "cloudz_session_token": "t\n"}`, "cloudz_session_token", "control characters"},
	{"virtual_key invalid", `{"virtual_key": "has space"}`, "virtual_key", "valid virtual key"},
	{"prompt_id empty", `{"prompt_id": ""}`, "prompt_id", "empty"},
	{"request_timeout fraction", `{"request_timeout": 2.5}`, "request_timeout", "integer"},
	{"request_timeout string", `{"request_timeout": "100"}`, "request_timeout", "integer"},
	{"request_timeout zero", `{"request_timeout": 0}`, "request_timeout", "at least 1"},
	{"request_timeout huge", `{"request_timeout": 1e30}`, "request_timeout", "at most"},
	{"request_timeout too long for a duration", `{"request_timeout": 9000000000000000}`, "request_timeout", "at most"},
	{"override_params array", `{"virtual_key": "a", "override_params": []}`, "override_params", "object"},
	{"custom_host scheme", `{"provider": "openai", "custom_host": "ftp://h/v1"}`, "custom_host", "http or https"},
	{"custom_host no host", `{"provider": "openai", "custom_host": "http:///v1"}`, "custom_host", "http or https"},
	{"custom_host relative", `{"provider": "openai", "custom_host": "llm.example.com"}`, "custom_host", "http or https"},
	{"forward_headers string", `{"forward_headers": "X-A"}`, "forward_headers", "array"},
	{"forward_headers bad name", `{"forward_headers": ["X-A", "bad header"]}`, "forward_headers[1]", "header name"},
	{"forward_headers number", `{"forward_headers": [1]}`, "forward_headers[0]", "header name"},
	{"weight huge", `{"strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "a", "weight": 1e300}]}`, "targets[0].weight", "at most 1000000"},
	{"weight type", `{"virtual_key": "a", "weight": "1"}`, "weight", "number"},
	{"weight negative", `{"strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "a", "weight": -1}]}`, "targets[0].weight", "0 or more"},
	{"on_status_codes range", `{"virtual_key": "a", "on_status_codes": [429, 99]}`, "on_status_codes[1]", "status code"},
	{"on_status_codes fraction", `{"virtual_key": "a", "on_status_codes": [500.5]}`, "on_status_codes[0]", "integer"},
	{"targets type", `{"strategy": {"mode": "fallback"}, "targets": {}}`, "targets", "array"},
	{"target not object", `{"strategy": {"mode": "fallback"}, "targets": ["vk"]}`, "targets[0]", "object"},

	// Strategy.
	{"strategy type", `{"strategy": "fallback", "targets": [{"virtual_key": "a"}]}`, "strategy", "object"},
	{"strategy unknown key", `{"strategy": {"mode": "fallback", "on_status": [500]}, "targets": [{"virtual_key": "a"}]}`, "strategy.on_status", "on_status_codes"},
	{"mode missing", `{"strategy": {}, "targets": [{"virtual_key": "a"}]}`, "strategy.mode", "required"},
	{"mode unknown", `{"strategy": {"mode": "random"}, "targets": [{"virtual_key": "a"}]}`, "strategy.mode", "unknown mode"},
	{"targets need strategy", `{"targets": [{"virtual_key": "a"}]}`, "targets", "needs a strategy"},
	{"fallback needs targets", `{"strategy": {"mode": "fallback"}, "retry": {"attempts": 1}}`, "targets", "required"},
	{"fallback empty targets", `{"strategy": {"mode": "fallback"}, "targets": []}`, "targets", "empty"},
	{"single several targets", `{"strategy": {"mode": "single"}, "targets": [{"virtual_key": "a"}, {"virtual_key": "b"}]}`, "targets", "single"},
	{"loadbalance all zero", `{"strategy": {"mode": "loadbalance"}, "targets": [{"virtual_key": "a", "weight": 0}]}`, "targets", "weight 0"},
	{"strategy status codes", `{"strategy": {"mode": "fallback", "on_status_codes": [600]}, "targets": [{"virtual_key": "a"}]}`, "strategy.on_status_codes[0]", "status code"},
	{"conditional no conditions", `{"strategy": {"mode": "conditional", "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions", "required"},
	{"conditional empty conditions", `{"strategy": {"mode": "conditional", "conditions": [], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions", "empty"},
	{"conditional no default", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "a"}]}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.default", "required"},
	{"condition not object", `{"strategy": {"mode": "conditional", "conditions": ["x"], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0]", "object"},
	{"condition unknown key", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "a", "else": "b"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0].else", "unknown field"},
	{"condition query missing", `{"strategy": {"mode": "conditional", "conditions": [{"then": "a"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0].query", "required"},
	{"condition query type", `{"strategy": {"mode": "conditional", "conditions": [{"query": "x", "then": "a"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0].query", "object"},
	{"condition query gwerr passes through", `{"strategy": {"mode": "conditional", "conditions": [{"query": {"x": {"$bad": 1}}, "then": "a"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0].query.$bad", "unsupported operator"},
	{"condition query plain error", `{"strategy": {"mode": "conditional", "conditions": [{"query": {"$plain": 1}, "then": "a"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0].query", "plain failure"},
	{"condition then missing", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[0].then", "required"},
	{"condition then unknown", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "a"}, {"query": {}, "then": "zz"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.conditions[1].then", `names no target: "zz"`},
	{"condition default unknown", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "a"}], "default": "b"}, "targets": [{"name": "a", "virtual_key": "a"}]}`, "strategy.default", `names no target: "b"`},
	{"condition unnamed targets", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "a"}], "default": "a"}, "targets": [{"virtual_key": "a"}]}`, "strategy.conditions[0].then", "give targets a"},
	{"tool hook in a target", `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a", "after_tool_call": []}]}`, "targets[0].after_tool_call", "top level"},
	{"tool hook not a list", `{"before_tool_call": {"id": "x"}}`, "before_tool_call", "array"},
	{"duplicate target names", `{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "a"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}, {"name": "a", "virtual_key": "b"}]}`, "targets[1].name", "twice"},

	// Cache, retry, cb_config.
	{"cache type", `{"cache": "simple"}`, "cache", "object"},
	{"cache unknown key", `{"cache": {"mode": "simple", "ttl": 5}}`, "cache.ttl", "unknown field"},
	{"cache mode missing", `{"cache": {"max_age": 5}}`, "cache.mode", "required"},
	{"cache mode unknown", `{"cache": {"mode": "exact"}}`, "cache.mode", "simple"},
	{"cache max_age negative", `{"cache": {"mode": "simple", "max_age": -1}}`, "cache.max_age", "at least 0"},
	{"cache max_age fraction", `{"cache": {"mode": "simple", "max_age": 1.5}}`, "cache.max_age", "integer"},
	{"retry attempts missing", `{"retry": {}}`, "retry.attempts", "required"},
	{"retry attempts fraction", `{"retry": {"attempts": 2.5}}`, "retry.attempts", "integer"},
	{"retry attempts negative", `{"retry": {"attempts": -1}}`, "retry.attempts", "at least 0"},
	{"retry status codes", `{"retry": {"attempts": 1, "on_status_codes": [429, 1000]}}`, "retry.on_status_codes[1]", "status code"},
	{"retry use_retry_after_headers", `{"retry": {"attempts": 1, "use_retry_after_headers": "yes"}}`, "retry.use_retry_after_headers", "boolean"},
	{"retry unknown key", `{"retry": {"attempts": 1, "backoff": 2}}`, "retry.backoff", "unknown field"},
	{"cb threshold zero", `{"virtual_key": "a", "cb_config": {"failure_threshold": 0, "cooldown_interval": 30000}}`, "cb_config.failure_threshold", "at least 1"},
	{"cb threshold missing", `{"virtual_key": "a", "cb_config": {"cooldown_interval": 30000}}`, "cb_config.failure_threshold", "required"},
	{"cb cooldown short", `{"virtual_key": "a", "cb_config": {"failure_threshold": 1, "cooldown_interval": 1000}}`, "cb_config.cooldown_interval", "at least 30000"},
	{"cb cooldown missing", `{"virtual_key": "a", "cb_config": {"failure_threshold": 1}}`, "cb_config.cooldown_interval", "required"},
	{"cb status codes", `{"virtual_key": "a", "cb_config": {"failure_threshold": 1, "cooldown_interval": 30000, "failure_status_codes": ["500"]}}`, "cb_config.failure_status_codes[0]", "integer"},

	// Provider fields.
	{"resource_name type", `{"virtual_key": "a", "resource_name": 1}`, "resource_name", "string"},
	{"deployments type", `{"virtual_key": "a", "deployments": {}}`, "deployments", "array"},
	{"deployment alias missing", `{"virtual_key": "a", "deployments": [{"deployment_id": "d", "api_version": "v"}]}`, "deployments[0].alias", "required"},
	{"deployment unknown key", `{"virtual_key": "a", "deployments": [{"deployment_id": "d", "alias": "a", "api_version": "v", "model": "m"}]}`, "deployments[0].model", "unknown field"},
	{"deployment two defaults", `{"virtual_key": "a", "deployments": [{"deployment_id": "d", "alias": "a", "api_version": "v", "is_default": true}, {"deployment_id": "e", "alias": "b", "api_version": "v", "is_default": true}]}`, "deployments[1].is_default", "only one"},
	{"deployment duplicate alias", `{"virtual_key": "a", "deployments": [{"deployment_id": "d", "alias": "a", "api_version": "v"}, {"deployment_id": "e", "alias": "a", "api_version": "v"}]}`, "deployments[1].alias", "twice"},
	{"cloudx_deployment_type value", `{"provider": "cloudx", "cloudx_endpoint_name": "e", "cloudx_deployment_type": "hosted"}`, "cloudx_deployment_type", "serverless"},
	{"anthropic_version empty", `{"provider": "anthropic", "api_key": "k", "anthropic_version": ""}`, "anthropic_version", "empty"},
	{"cloudy_service_account_json type", `{"provider": "cloudy", "cloudy_region": "r", "cloudy_service_account_json": "{}"}`, "cloudy_service_account_json", "object"},

	// Hooks and guardrails.
	{"hooks type", `{"before_request_hooks": {}}`, "before_request_hooks", "array"},
	{"hook not object", `{"before_request_hooks": ["h"]}`, "before_request_hooks[0]", "object"},
	{"hook id missing", `{"before_request_hooks": [{"type": "guardrail"}]}`, "before_request_hooks[0].id", "required"},
	{"before hook async", `{"before_request_hooks": [{"id": "h", "async": true}]}`, "before_request_hooks[0].async", "unknown field"},
	{"hook deny type", `{"before_request_hooks": [{"id": "h", "on_fail": {"deny": "yes"}}]}`, "before_request_hooks[0].on_fail.deny", "boolean"},
	{"hook feedback value", `{"before_request_hooks": [{"id": "h", "on_success": {"feedback": {"value": "x"}}}]}`, "before_request_hooks[0].on_success.feedback.value", "number"},
	{"hook feedback metadata", `{"before_request_hooks": [{"id": "h", "on_fail": {"feedback": {"metadata": 1}}}]}`, "before_request_hooks[0].on_fail.feedback.metadata", "object"},
	{"hook feedback unknown", `{"before_request_hooks": [{"id": "h", "on_fail": {"feedback": {"score": 1}}}]}`, "before_request_hooks[0].on_fail.feedback.score", "unknown field"},
	{"hook check parameters missing", `{"before_request_hooks": [{"id": "h", "checks": [{"id": "default.log"}]}]}`, "before_request_hooks[0].checks[0].parameters", "required"},
	{"hook check id missing", `{"before_request_hooks": [{"id": "h", "checks": [{"parameters": {}}]}]}`, "before_request_hooks[0].checks[0].id", "required"},
	{"after hook deny", `{"after_request_hooks": [{"id": "h", "on_fail": {"deny": true}}]}`, "after_request_hooks[0].on_fail.deny", "not allowed"},
	{"after hook async type", `{"after_request_hooks": [{"id": "h", "async": "no"}]}`, "after_request_hooks[0].async", "boolean"},
	{"guardrail number", `{"input_guardrails": [1]}`, "input_guardrails[0]", "guardrail object"},
	{"guardrail bad id", `{"input_guardrails": ["no such id!"]}`, "input_guardrails[0]", "valid guardrail ID"},
	{"input guardrail on_fail deny", `{"input_guardrails": [{"on_fail": {"deny": true}}]}`, "input_guardrails[0].on_fail.deny", "not allowed"},
	{"guardrail deny type", `{"output_guardrails": [{"deny": 1}]}`, "output_guardrails[0].deny", "boolean"},
	{"guardrail check not object", `{"input_guardrails": [{"default.wordCount": 10}]}`, "input_guardrails[0].default.wordCount", "check parameters"},
	{"guardrail unknown check id", `{"input_guardrails": [{"deny": true, "default.wordCountt": {}}]}`, "input_guardrails[0].default.wordCountt", "unknown check"},
	{"guardrail bad parameter", `{"output_guardrails": [{"default.regexMatch": {"rule": "("}}]}`, "output_guardrails[0].default.regexMatch.rule", "regular expression"},
	{"guardrail without checks", `{"input_guardrails": [{"id": "g", "deny": true}]}`, "input_guardrails[0]", "no checks"},
	{"guardrail checks list item", `{"input_guardrails": [{"checks": [{"id": "word count", "parameters": {}}]}]}`, "input_guardrails[0].checks[0].id", "not a check id"},
	{"hook unknown check id", `{"before_request_hooks": [{"id": "h", "checks": [{"id": "nope", "parameters": {}}]}]}`, "before_request_hooks[0].checks[0].id", "unknown check"},

	// Rules that tie fields together.
	{"provider and virtual_key", `{"provider": "@a", "virtual_key": "b"}`, "virtual_key", "one way"},
	{"identifier needs api_key", `{"provider": "openai"}`, "api_key", "required"},
	{"identifier needs api_key beside retry", `{"provider": "anthropic", "retry": {"attempts": 1}}`, "api_key", "required"},
	{"partial cloud credentials", `{"provider": "bedrock", "cloudz_access_key_id": "a"}`, "cloudz_secret_access_key", "required with cloudz_access_key_id"},
	{"another provider's cloud credentials", `{"provider": "openai", "cloudz_access_key_id": "a", "cloudz_secret_access_key": "s"}`, "api_key", "required"},
	{"partial cloudx", `{"provider": "azure-openai", "cloudx_deployment_name": "d", "cloudx_region": "r"}`, "cloudx_deployment_type", "required"},

	// Nesting.
	{"nested retry", `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a"}, {"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "b", "retry": {"attempts": 1.5}}]}]}`, "targets[1].targets[0].retry.attempts", "integer"},
	{"nested key sets", `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a"}, {"name": "x"}]}`, "targets[1]", "this target has none of the key sets"},
	{"nested unknown", `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a", "wieght": 1}]}`, "targets[0].wieght", `did you mean "weight"`},
	{"nested api_key", `{"strategy": {"mode": "fallback"}, "targets": [{"provider": "openai"}]}`, "targets[0].api_key", "required"},
	{"nested condition", `{"strategy": {"mode": "fallback"}, "targets": [{"strategy": {"mode": "conditional", "conditions": [{"query": {}, "then": "x"}], "default": "a"}, "targets": [{"name": "a", "virtual_key": "a"}]}]}`, "targets[0].strategy.conditions[0].then", "names no target"},
	{"too deep", nest(MaxDepth + 1), strings.Repeat("targets[0].", MaxDepth) + "targets", "16 levels"},
	{"too many targets", manyTargets(MaxTargets + 1), "targets", "at most 256"},

	// Which problem is first.
	{"table order: cache before retry", `{"retry": {"attempts": -1}, "cache": {"mode": "x"}}`, "cache.mode", "cache mode"},
	{"child before parent rules", `{"targets": [{"retry": {"attempts": "x"}}]}`, "targets[0].retry.attempts", "integer"},
	{"items in order", `{"forward_headers": ["a b", "c d"]}`, "forward_headers[0]", "header name"},
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range invalidConfigs {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.json))
			if err == nil {
				t.Fatalf("Parse accepted %s", tc.json)
			}
			if c != nil {
				t.Fatalf("Parse returned a config beside its error")
			}
			ge := asConfigError(t, err)
			if ge.Param != tc.param {
				t.Errorf("Param = %q, want %q (message %q)", ge.Param, tc.param, ge.Message)
			}
			if !strings.Contains(ge.Message, tc.word) {
				t.Errorf("message %q does not contain %q", ge.Message, tc.word)
			}
			if ge.Code == CodeInvalidConfig {
				want := "invalid config: "
				if tc.param != "" {
					want += tc.param + ": "
				}
				if !strings.HasPrefix(ge.Message, want) {
					t.Errorf("message %q does not start with %q", ge.Message, want)
				}
			}
			// The same input gives the same error every time (map order must not leak into it).
			for range 5 {
				if _, again := Parse([]byte(tc.json)); again.Error() != err.Error() {
					t.Fatalf("second Parse gave %v, first %v", again, err)
				}
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	i := func(n int) *int { return &n }
	f := func(x float64) *float64 { return &x }
	b := func(v bool) *bool { return &v }
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name string
		json string
		want *Config
	}{
		{
			name: "alias stored canonical",
			json: `{"provider": "llmvendor", "api_key": "sk"}`,
			want: &Config{Provider: "openai", APIKey: "sk"},
		},
		{
			name: "slug kept as written",
			json: `{"provider": "@Mock.1", "weight": 0.5, "strict_llmvendor_compliance": true}`,
			want: &Config{Provider: "@Mock.1", Weight: f(0.5), StrictLLMVendorCompliance: b(true)},
		},
		{
			name: "numbers and objects",
			json: `{"request_timeout": 1.5e3, "retry": {"attempts": 9, "on_status_codes": [429]}, "cache": {"mode": "simple", "max_age": 0},
				"cb_config": {"failure_threshold": 2, "cooldown_interval": 60000}, "override_params": {"model": "m"}}`,
			want: &Config{RequestTimeout: i(1500), Retry: &Retry{Attempts: 9, OnStatusCodes: []int{429}},
				Cache: &Cache{Mode: "simple", MaxAge: i(0)}, CBConfig: &CircuitBreaker{FailureThreshold: 2, CooldownInterval: 60000},
				OverrideParams: map[string]json.RawMessage{"model": raw(`"m"`)}},
		},
		{
			name: "provider fields kept raw",
			json: `{"provider": "cloudy", "cloudy_region": "eu", "cloudy_service_account_json": {"a": 1}, "llmvendor_project": "p"}`,
			want: &Config{Provider: "vertex-ai", ProviderFields: map[string]json.RawMessage{"cloudy_region": raw(`"eu"`),
				"cloudy_service_account_json": raw(`{"a": 1}`), "llmvendor_project": raw(`"p"`)}},
		},
		{
			name: "empty lists are set, not absent",
			json: `{"forward_headers": [], "input_guardrails": [], "on_status_codes": []}`,
			want: &Config{ForwardHeaders: []string{}, InputGuardrails: []json.RawMessage{}, OnStatusCodes: []int{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.json))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseDoesNotAliasInput(t *testing.T) {
	in := []byte(`{"virtual_key": "a", "override_params": {"model": "m"}}`)
	c, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = ' ' // fasthttp reuses header buffers
	}
	if got := string(c.OverrideParams["model"]); got != `"m"` {
		t.Fatalf("override_params.model = %s after the input changed", got)
	}
}

// TestFieldTables guards what config validation takes from the providers registry: every key set names
// fields a config accepts, and the shipped adapters bring SPEC.md's five cloud key sets.
func TestFieldTables(t *testing.T) {
	sets := len(keySets)
	for _, id := range providers.Registered() {
		d, _ := providers.Describe(id)
		sets += len(d.KeySets)
		for _, set := range d.KeySets {
			for _, k := range set {
				if !isConfigField(k) {
					t.Errorf("%s: key set names unknown field %q", id, k)
				}
			}
		}
	}
	if sets != 20 || strings.Count(keySetList(), ";") != 19 { // SPEC.md's 18 and the two tool hook lists
		t.Errorf("%d key sets, listed as %s", sets, keySetList())
	}
	for _, set := range keySets {
		for _, k := range set {
			if !isConfigField(k) {
				t.Errorf("key set names unknown field %q", k)
			}
		}
	}
	if names := configFields(); len(names) != len(commonFields)+len(providers.Fields())+len(hookFields) {
		t.Errorf("configFields() = %v", names)
	}
}

// TestToolHooks: before_tool_call and after_tool_call are a config on their own, stand at the top level only,
// and are validated as hooks with their own names in errors.
func TestToolHooks(t *testing.T) {
	plan, err := Load([]byte(`{"before_tool_call": [{"id": "no-rm", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["rm -rf"]}}], "deny": true}]}`))
	if err == nil {
		t.Fatalf("a hook with a top-level deny was accepted: %+v", plan)
	}
	plan, err = Load([]byte(`{"before_tool_call": [{"id": "no-rm", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["rm -rf"]}}], "on_fail": {"deny": true}}],
		"after_tool_call": [{"id": "redact", "checks": [{"id": "default.regexReplace", "parameters": {"rule": "\\d{4}", "replacement": "****"}}], "on_fail": {"deny": true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.BeforeToolCall) != 1 || len(plan.AfterToolCall) != 1 || len(plan.Hooked) != 0 {
		t.Fatalf("plan: before %d after %d hooked %d", len(plan.BeforeToolCall), len(plan.AfterToolCall), len(plan.Hooked))
	}
	for _, tc := range []struct{ config, param string }{
		{`{"strategy": {"mode": "fallback"}, "targets": [{"provider": "openai", "api_key": "k", "before_tool_call": []}]}`, "targets[0].before_tool_call"},
		{`{"after_tool_call": [{"id": "x", "checks": [{"id": "default.nope", "parameters": {}}]}]}`, "after_tool_call[0].checks[0].id"},
		{`{"before_tool_call": {"id": "x"}}`, "before_tool_call"},
		{`{"before_tool_call": [{"checks": []}]}`, "before_tool_call[0].id"},
	} {
		_, err := Load([]byte(tc.config))
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Param != tc.param {
			t.Errorf("%s: error %v, want one naming %s", tc.config, err, tc.param)
		}
	}
}
