package routes

import (
	"fmt"
	"testing"
)

// TestGuardrailShapeSavedAndInline: PUT /v1/guardrails/{id} and a guardrail object sent inline in
// x-gateway-config give the same answer, the form with a checks list and top-level deny included (accepted on
// both, and it denies on both), and a refusal names the same field, relative to the object when saved.
func TestGuardrailShapeSavedAndInline(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	put := func(id, body string) answer {
		return f.do(t, "PUT", "/v1/guardrails/"+id, body, HeaderAPIKey, f.admin, "Content-Type", "application/json")
	}
	inline := func(item string) answer {
		cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"output_guardrails":[%s]}`, up.URL+"/v1", item)
		return f.chat(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, HeaderConfig, cfg)
	}

	// Accepted on both paths, and it denies on both ("Hello!" has 1 word, minWords 5).
	form := `{"checks": [{"id": "default.wordCount", "parameters": {"minWords": 5}}], "deny": true}`
	if a := put("words", form); a.status != 200 {
		t.Fatalf("saved: %d %s", a.status, a.body)
	}
	if a := inline(`"words"`); a.status != 446 {
		t.Fatalf("saved, named by a config: %d %s", a.status, a.body)
	}
	if a := inline(form); a.status != 446 {
		t.Fatalf("inline: %d %s", a.status, a.body)
	}

	// Refused on both paths, naming the same field.
	tests := []struct{ name, object, param string }{
		{"no checks", `{"deny": true}`, ""},
		{"check parameters missing", `{"checks": [{"id": "default.notNull"}]}`, "checks[0].parameters"},
		{"not a check id", `{"notNull": {}, "a.b.c": {}}`, "a.b.c"},
		{"unknown check", `{"default.wordCountt": {}}`, "default.wordCountt"},
		{"bad parameter", `{"default.regexMatch": {"rule": "("}}`, "default.regexMatch.rule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var savedParam, inlineParam any = nil, "output_guardrails[0]"
			if tc.param != "" {
				savedParam, inlineParam = tc.param, "output_guardrails[0]."+tc.param
			}
			checkError(t, put("bad", tc.object), 400, "invalid_config", savedParam)
			checkError(t, inline(tc.object), 400, "invalid_config", inlineParam)
		})
	}
	if up.calls.Load() != 2 {
		t.Errorf("upstream called %d times, want 2 (the two denies, on the answer; no refused config reaches it)", up.calls.Load())
	}
}
