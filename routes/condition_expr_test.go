package routes

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// exprConfig is a conditional config whose only condition is the $expr src, routing to "hit" when it
// matches and to "miss" otherwise.
func exprConfig(t *testing.T, src string, hit, miss *upstream) string {
	t.Helper()
	q, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"strategy":{"mode":"conditional","conditions":[{"query":{"$expr":%s},"then":"hit"}],"default":"miss"},`+
		`"targets":[{"name":"hit","provider":"openai","api_key":"sk","custom_host":%q},`+
		`{"name":"miss","provider":"openai","api_key":"sk","custom_host":%q}]}`, q, hit.URL+"/v1", miss.URL+"/v1")
}

// TestConditionExprBomb sends issue 12's kind of $expr, nested replace and repeat, in an inline config. Two
// levels ask for some 27 MB (three would ask for 8 GB and kill the process); the query is refused at
// validation with a 400 naming it, nothing is called, and the gateway keeps serving.
func TestConditionExprBomb(t *testing.T) {
	f := newFixture(t, Options{})
	hit, miss := newUpstream(t, nil), newUpstream(t, nil)
	bomb := `replace(replace(repeat("a",300),"",repeat("b",300)),"",repeat("b",300)) != ""`
	a := f.chat(t, chatBody, HeaderConfig, exprConfig(t, bomb, hit, miss))
	checkError(t, a, 400, "invalid_config", "strategy.conditions[0].query.$expr")
	if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "replace is not allowed") {
		t.Errorf("message %q does not name replace", msg)
	}
	if hit.calls.Load()+miss.calls.Load() != 0 {
		t.Errorf("a target was called")
	}

	// Still serving, and an allowed $expr still routes.
	a = f.chat(t, chatBody, HeaderConfig, exprConfig(t, `any(params.messages, lower(.content) == "hi")`, hit, miss))
	if a.status != 200 || hit.calls.Load() != 1 {
		t.Fatalf("after the bomb: %d %s, hit called %d times", a.status, a.body, hit.calls.Load())
	}
}

// TestConditionExprRunLimit sends a valid $expr that would build more than its string budget on this request
// (lower of a 2 MiB message): the request fails with a 400 naming the query rather than going to the default.
func TestConditionExprRunLimit(t *testing.T) {
	f := newFixture(t, Options{})
	hit, miss := newUpstream(t, nil), newUpstream(t, nil)
	cfg := exprConfig(t, `lower(params.messages[0].content) contains "secret"`, hit, miss)
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("A", 2<<20) + `"}]}`
	a := f.chat(t, body, HeaderConfig, cfg)
	checkError(t, a, 400, "invalid_request", "strategy.conditions[0].query.$expr")
	if hit.calls.Load()+miss.calls.Load() != 0 {
		t.Errorf("a target was called")
	}

	a = f.chat(t, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"a SECRET"}]}`, HeaderConfig, cfg)
	if a.status != 200 || hit.calls.Load() != 1 {
		t.Fatalf("a small request: %d %s, hit called %d times", a.status, a.body, hit.calls.Load())
	}
}
