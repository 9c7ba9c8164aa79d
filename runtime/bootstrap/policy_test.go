package bootstrap

import (
	"reflect"
	"testing"

	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// A policy object that a bootstrap file accepts is accepted alone once its workspace is taken out, with the
// same values: both ways of making a policy share one set of rules.
func TestPolicyRulesMatchTheBootstrapFile(t *testing.T) {
	f := mustParse(t, designExample, exampleDir(t))
	fromFile := f.RateLimitPolicies[0]
	alone, err := ratelimit.ParsePolicy([]byte(`{"id": "` + examplePolicyID + `", "type": "requests", "unit": "rpm", "value": 60,
		"status": "active", "name": "n", "conditions": [], "group_by": [{"key": "api_key"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &storage.RateLimitPolicy{ID: fromFile.ID, Type: fromFile.Type, Unit: fromFile.Unit, Value: fromFile.Value,
		Status: fromFile.Status, Name: fromFile.Name, Conditions: fromFile.Conditions, GroupBy: fromFile.GroupBy}
	if !reflect.DeepEqual(alone, want) {
		t.Fatalf("alone = %+v, from the file = %+v", alone, fromFile)
	}
}
