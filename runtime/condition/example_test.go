package condition_test

import (
	"encoding/json"
	"fmt"

	"github.com/llmgw/gateway/runtime/condition"
)

func ExampleCompile() {
	m, err := condition.Compile(json.RawMessage(`{
		"metadata.tier": {"$in": ["gold", "platinum"]},
		"$or": [{"params.max_tokens": {"$gt": 1000}}, {"$expr": "len(params.messages) > 20"}]
	}`), "strategy.conditions[0].query")
	if err != nil {
		fmt.Println(err)
		return
	}
	env := &condition.Env{
		Metadata: map[string]string{"tier": "gold"},
		Params:   map[string]any{"model": "gpt-4o", "max_tokens": 4096.0, "messages": []any{}},
		URLPath:  "/v1/chat/completions",
	}
	fmt.Println(m.Match(env))

	_, err = condition.Compile(json.RawMessage(`{"metadata.tier": {"$near": 1}}`), "strategy.conditions[0].query")
	fmt.Println(err)
	// Output:
	// true
	// 400 invalid_config: invalid config: strategy.conditions[0].query.metadata.tier.$near: unsupported operator "$near" (a field allows $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $regex with $options, and $exists)
}
