package ratelimit

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/storage"
)

const examplePolicyID = "c0ffee00-0000-4000-8000-000000000001"

func TestParsePolicy(t *testing.T) {
	name := "n"
	valid := []struct {
		name string
		doc  string
		want *storage.RateLimitPolicy
	}{
		{"minimal: no id, defaults", `{"type": "requests", "unit": "rpm", "value": 60}`,
			&storage.RateLimitPolicy{Type: "requests", Unit: "rpm", Value: 60, Status: "active",
				Conditions: []storage.PolicyMatch{}, GroupBy: []storage.PolicyGroup{}}},
		{"every field", `{"id": "` + examplePolicyID + `", "type": "tokens", "unit": "rpd", "value": 1.5, "status": "archived",
			"name": "n", "conditions": [{"key": "metadata.team", "value": "a"}], "group_by": [{"key": "api_key"}]}`,
			&storage.RateLimitPolicy{ID: examplePolicyID, Type: "tokens", Unit: "rpd", Value: 1.5, Status: "archived", Name: &name,
				Conditions: []storage.PolicyMatch{{Key: "metadata.team", Value: "a"}},
				GroupBy:    []storage.PolicyGroup{{Key: "api_key"}}}},
		{"nulls mean absent", `{"id": null, "type": "requests", "unit": "rph", "value": 1, "status": null, "name": null,
			"conditions": null, "group_by": null}`,
			&storage.RateLimitPolicy{Type: "requests", Unit: "rph", Value: 1, Status: "active",
				Conditions: []storage.PolicyMatch{}, GroupBy: []storage.PolicyGroup{}}},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePolicy([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("policy = %+v, want %+v", got, tc.want)
			}
		})
	}

	const ok = `"type": "requests", "unit": "rpm", "value": 1`
	invalid := []struct {
		name string
		doc  string
		// paths are the problems' paths in order; message is part of the first problem's message.
		paths   []string
		message string
	}{
		{"not an object", `[1]`, []string{""}, "must be an object, not array"},
		{"null", `null`, []string{""}, "must be an object, not null"},
		{"malformed", `{"type": `, []string{""}, "unexpected end of JSON input"},
		{"everything missing", `{}`, []string{"type", "unit", "value"}, "is required"},
		{"value zero", `{"type": "requests", "unit": "rpm", "value": 0}`, []string{"value"}, "must be greater than 0"},
		{"value negative", `{"type": "requests", "unit": "rpm", "value": -1}`, []string{"value"}, "must be greater than 0"},
		{"value a string", `{"type": "requests", "unit": "rpm", "value": "60"}`, []string{"value"}, "must be a number, not string"},
		{"unknown type", `{"type": "bytes", "unit": "rpm", "value": 1}`, []string{"type"}, `must be one of requests, tokens, not "bytes"`},
		{"unknown unit", `{"type": "requests", "unit": "rps", "value": 1}`, []string{"unit"}, `must be one of rpm, rph, rpd, not "rps"`},
		{"unknown status", `{` + ok + `, "status": "paused"}`, []string{"status"}, `must be one of active, archived`},
		{"id not a UUID", `{` + ok + `, "id": "pol-1"}`, []string{"id"}, `"pol-1" is not a UUID`},
		{"name a number", `{` + ok + `, "name": 3}`, []string{"name"}, "must be a string, not number"},
		{"unknown condition key", `{` + ok + `, "conditions": [{"key": "colour", "value": "red"}]}`,
			[]string{"conditions[0].key"}, `unknown key "colour"`},
		{"condition without value", `{` + ok + `, "conditions": [{"key": "model"}]}`, []string{"conditions[0].value"}, "is required"},
		{"condition not an object", `{` + ok + `, "conditions": ["model"]}`, []string{"conditions[0]"}, "must be an object, not string"},
		{"empty metadata key", `{` + ok + `, "group_by": [{"key": "api_key"}, {"key": "metadata."}]}`,
			[]string{"group_by[1].key"}, `unknown key "metadata."`},
		{"group_by not an array", `{` + ok + `, "group_by": {"key": "model"}}`, []string{"group_by"}, "must be an array, not object"},
		{"workspace is not a field", `{` + ok + `, "workspace": "default"}`, []string{"workspace"}, "unknown field"},
		{"unknown field", `{` + ok + `, "colour": "red"}`, []string{"colour"}, "unknown field"},
		{"every problem", `{"type": "x", "value": -1, "colour": 1}`, []string{"type", "unit", "value", "colour"}, "must be one of"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.doc))
			var pe *jsoncheck.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *jsoncheck.Error", err)
			}
			var paths []string
			for _, p := range pe.Problems {
				paths = append(paths, p.Path)
			}
			if !reflect.DeepEqual(paths, tc.paths) {
				t.Fatalf("problem paths = %q, want %q (%v)", paths, tc.paths, err)
			}
			if !strings.Contains(pe.Problems[0].Message, tc.message) {
				t.Fatalf("first problem %q does not say %q", pe.Problems[0].Message, tc.message)
			}
			// The error's text names the field of each problem.
			if tc.paths[0] != "" && !strings.HasPrefix(err.Error(), tc.paths[0]+": ") {
				t.Fatalf("error %q does not start with the field %q", err, tc.paths[0])
			}
		})
	}
}
