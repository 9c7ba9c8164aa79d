package condition

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// issueBomb is the expression of issue 12: each replace with an empty needle inserts its third argument
// between every byte, so three levels ask for about 8 GB.
const issueBomb = `replace(replace(repeat("a",300),"",repeat("b",300)),"",repeat("b",300)) != ""`

func exprQuery(src string) string {
	raw, _ := json.Marshal(map[string]string{"$expr": src})
	return string(raw)
}

// TestExprRefused checks that what the bounds cannot cover fails to compile, as a 400 naming the $expr and
// the construct, before anything runs.
func TestExprRefused(t *testing.T) {
	tests := []struct {
		name string
		src  string
		msg  string
	}{
		{"issue bomb", issueBomb, "function replace is not allowed"},
		{"repeat", `repeat("a", 1000000) != ""`, "function repeat is not allowed"},
		{"repeat of a field", `len(repeat(params.model, 1000)) > 0`, "function repeat is not allowed"},
		{"replace with an empty needle", `replace(params.model, "", params.model) != ""`, "function replace is not allowed"},
		{"join of split", `join(split(params.model, ""), ",") != ""`, "function join is not allowed"},
		{"split", `len(split(params.model, "")) > 0`, "function split is not allowed"},
		{"toJSON", `toJSON(params) != ""`, "function toJSON is not allowed"},
		{"fromJSON", `fromJSON(params.model) != nil`, "function fromJSON is not allowed"},
		{"date", `date("2024-01-01") != nil`, "function date is not allowed"},
		{"timezone", `timezone(params.model) != nil`, "function timezone is not allowed"},
		{"now", `now() != nil`, "function now is not allowed"},
		{"uniq", `len(uniq(params.tags)) > 0`, "function uniq is not allowed"},
		{"sort", `len(sort(params.tags)) > 0`, "function sort is not allowed"},
		{"keys", `len(keys(params)) > 0`, "function keys is not allowed"},
		{"unknown function", `foo(1) == 1`, "function foo is not allowed"},
		{"filter over a range", `len(filter(1..99999, # > 0)) > 0`, "function filter is not allowed"},
		{"map over a range", `len(map(1..99999, # * 2)) > 0`, "function map is not allowed"},
		{"reduce doubling a string", `reduce(1..40, #acc + #acc, "ab") != ""`, "function reduce is not allowed"},
		{"sum", `sum(1..10) > 0`, "function sum is not allowed"},
		{"groupBy", `groupBy(params.messages, .role) != nil`, "function groupBy is not allowed"},
		{"sortBy", `sortBy(params.messages, .role) != nil`, "function sortBy is not allowed"},
		{"findLast", `findLast(params.messages, .role == "user") != nil`, "function findLast is not allowed"},
		{"let doubling a string", `let a = "xxxxxxxx"; let b = a + a; let c = b + b; c != ""`, "let is not allowed"},
		{"huge literal", `"` + strings.Repeat("a", exprMaxLiteral+1) + `" != ""`, "string literal of 1025 bytes"},
		{"huge source", strings.Repeat(`params.model == "aaaaaaaa" || `, 300) + `true`, "at most 8192 are allowed"},
		{"big constant range", `len(1..10000000) > 0`, "the range 1..10000000 is longer than the 100000"},
		{"big negative range", `len(-9223372036854775807..9223372036854775807) > 0`, "is longer than the 100000"},
		{"any over a big range", `any(0..100000, # < 0)`, "is longer than the 100000"},
		{"dynamic regex", `params.model matches metadata.tier`, "matches takes a string literal as its pattern"},
		{"dynamic trim cutset", `trim(params.model, metadata.tier) != ""`, "trim takes a string literal as its cutset"},
		{"$env", `$env.params != nil`, "$env is not available"},
		{"request field in a loop", `any(params.messages, .content contains params.model)`, "inside any() only the element"},
		{"loop over the request in a loop", `all(params.messages, {any(params.messages, .role == "user")})`, "any() loops over a field of the element"},
		{"loop over a repeated field", `any([params.model, params.model], # == "x")`, "any() loops over a field of params or metadata"},
		{"loop over a call", `any(split(params.model, ""), # == "x")`, "any() loops over"},
		{"method call", `params.model.Len() > 0`, "is not allowed"},
		{"concatenation keeps its type", `metadata.tier + "x" > 5`, "mismatched types string and int"},
		{"map literal in a loop", `count(params.messages, ({"k": .role}) != nil) > 0`, "map literals are not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(json.RawMessage(exprQuery(tc.src)), testPath)
			if err == nil {
				t.Fatalf("Compile(%s) = %v, want an error", tc.src, m)
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Code != codeInvalidConfig || ge.Param != testPath+".$expr" {
				t.Fatalf("Compile(%s): %v, want a 400 invalid_config on %s.$expr", tc.src, err, testPath)
			}
			if !strings.Contains(ge.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", ge.Message, tc.msg)
			}
		})
	}
}

// limitEnv is a request whose fields are large enough to push a careless program over its budgets.
func limitEnv() *Env {
	arr := make([]any, 10_000)
	for i := range arr {
		arr[i] = "x"
	}
	row := make([]any, 1000)
	for i := range row {
		row[i] = float64(i)
	}
	rows := make([]any, 1000)
	for i := range rows {
		rows[i] = row
	}
	parts := make([]any, 100)
	for i := range parts {
		parts[i] = strings.Repeat("p", 20<<10)
	}
	return &Env{Params: map[string]any{
		"s":     strings.Repeat("s", 600<<10),
		"big":   strings.Repeat("b", 2<<20),
		"arr":   arr,
		"rows":  rows,
		"parts": parts,
		"n":     1e7,
	}}
}

// TestExprRunLimits checks that a program that compiles but goes over a budget on a request stops before it
// spends much, and fails with a 400 that names the $expr, rather than not matching.
func TestExprRunLimits(t *testing.T) {
	env := limitEnv()
	long := strings.Repeat("z", 900)
	tests := []struct {
		name   string
		src    string
		reason string
	}{
		{"concatenation doubling a field", `params.s + params.s != ""`, "bytes of strings"},
		{"concatenation chain", `params.s + "-" + params.s + "-" + params.s != ""`, "bytes of strings"},
		{"lower of a long field", `lower(params.big) != ""`, "bytes of strings"},
		{"upper in a loop", `any(params.parts, upper(#) == "X")`, "bytes of strings"},
		{"concatenation in a loop", `any(params.parts, # + # == "X")`, "bytes of strings"},
		{"loop with a heavy predicate", `any(params.arr, # == "` + long + `")`, "steps"},
		{"nested loops", `any(params.rows, any(#, # < 0))`, "steps"},
		{"range past the memory budget", `len(1..params.n) > 0`, "more than 100000 elements"},
		{"range in a loop", `any(params.arr, len(1..1000) == 0)`, "more than 100000 elements"},
		{"array literals in a loop", `any(params.rows, len([#, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #, #]) == 0)`, "more than 100000 elements"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, exprQuery(tc.src))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			ok, err := Eval(m, env)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("Eval(%s) = %v, nil; want an error", tc.src, ok)
			}
			if ok {
				t.Errorf("Eval matched and failed at once")
			}
			if err.Status != 400 || err.Code != gwerr.CodeInvalidRequest || err.Param != testPath+".$expr" {
				t.Errorf("error %v: status %d code %q param %q; want 400 invalid_request on %s.$expr",
					err, err.Status, err.Code, err.Param, testPath)
			}
			if !strings.HasPrefix(err.Message, testPath+".$expr: ") || !strings.Contains(err.Message, tc.reason) {
				t.Errorf("Message = %q, want it to name the $expr and say %q", err.Message, tc.reason)
			}
			// The budgets stop a run before it spends much more than they allow.
			if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
				t.Errorf("the run allocated %d bytes before it stopped", d)
			}
			if m.Match(env) {
				t.Errorf("Match = true")
			}
		})
	}
}

// TestExprBudgetIsPerRun checks that the budgets reset: a program that spends most of its string budget in
// one run can run again, and concurrently.
func TestExprBudgetIsPerRun(t *testing.T) {
	env := limitEnv()
	m := mustCompile(t, exprQuery(`len(params.s + params.s[0:300000]) == 914400`))
	done := make(chan error, 8)
	for i := 0; i < cap(done); i++ {
		go func() {
			for j := 0; j < 5; j++ {
				if ok, err := Eval(m, env); !ok || err != nil {
					done <- errors.New("a run within budget failed: " + err.Error())
					return
				}
			}
			done <- nil
		}()
	}
	for i := 0; i < cap(done); i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestExprAllowed runs every allowed function and operator, metered or not, on the sample request.
func TestExprAllowed(t *testing.T) {
	env := sampleEnv(t)
	var parts []any
	if err := json.Unmarshal([]byte(`[{"role": "user", "content": [{"type": "text"}, {"type": "image_url"}]}]`), &parts); err != nil {
		t.Fatal(err)
	}
	env.Params["parts"] = parts
	tests := []struct {
		src  string
		want bool
	}{
		{`len(params.model) == 6 && len(params.messages) == 2 && len(metadata) == 6`, true},
		{`type(params.messages) == "array" && type(params.model) == "string" && type(params.max_tokens) == "float"`, true},
		{`abs(-2) == 2 && ceil(1.2) == 2 && floor(1.8) == 1 && round(1.5) == 2`, true},
		{`int(params.n) == 5 && float(metadata.score) == 7.5 && int(params.temperature * 10) == 7`, true},
		{`string(params.max_tokens) == "100" && string(true) == "true" && string(params.model) == "gpt-4o"`, true},
		{`string(params.messages) == ""`, false},     // string() of an array is a run-time error: no match
		{`lower(params.max_tokens) == "100"`, false}, // so is lower() of a number
		{`lower(metadata.word) == "premium" && upper(params.model) == "GPT-4O"`, true},
		{`trim("  a ") == "a" && trim("xxaxx", "x") == "a" && trimPrefix(url.pathname, "/v1") == "/chat/completions"`, true},
		{`trimSuffix(url.pathname, "/completions") == "/v1/chat" && trimPrefix(" a") == "a"`, true},
		{`hasPrefix(params.model, "gpt") && hasSuffix(params.model, "4o") && !hasPrefix(params.model, "o1")`, true},
		{`indexOf(params.model, "4") == 4 && lastIndexOf(url.pathname, "/") == 8`, true},
		{`min(3, 1, 2) == 1 && max(params.max_tokens, 5) == 100 && max([1, 7, 3]) == 7`, true},
		{`first(params.messages).role == "system" && last(params.tags) == "b" && get(params, "model") == "gpt-4o"`, true},
		{`params.model + "-" + metadata.tier == "gpt-4o-gold" && "a" + "b" == "ab" && params.max_tokens + 1 == 101`, true},
		{`any(params.messages, .role == "user") && all(params.messages, .content != "") && none(params.tags, # == "c")`, true},
		{`one(params.messages, .role == "system") && count(params.messages, .role == "user") == 1`, true},
		{`find(params.messages, .role == "user").content == "Hello there" && findIndex(params.tags, # == "b") == 1`, true},
		{`any(params.messages, lower(.content) contains "hello") && any(params.messages, any(.role, # == "x")) == false`, true},
		{`count(1..10, # % 2 == 0) == 5 && any(["a", "b"], # == "b") && all(params.tags, len(#) == 1)`, true},
		{`params.messages | any(.role == "system")`, true},
		{`params.model in ["gpt-4o", "o1"] && "tags" in params && params.max_tokens in 1..1000 && 5 not in [1, 2]`, true},
		{`url.pathname matches "^/v1/(chat|completions)" && params.model startsWith "gpt" && url.pathname endsWith "s"`, true},
		{`params.model contains "4o" && params.temperature < 1 && params.max_tokens >= 100 && 2 ** 3 == 8 && 7 % 4 == 3`, true},
		{`(params.stream ? "s" : "n") == "s" && (params.nope ?? "d") == "d" && params.nope?.x == nil`, true},
		{`params.model[0:3] == "gpt" && params.messages[-1].role == "user" && [1, 2][1] == 2`, true},
		{`if params.stream { true } else { false }`, true},
		{`params.max_tokens + params.temperature == 100.7 && params.model + params.tags[0] == "gpt-4oa"`, true},
		{`any(params.parts, any(.content, .type == "image_url")) && !any(params.parts, any(.content, .type == "audio"))`, true},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			m := mustCompile(t, exprQuery(tc.src))
			ok, err := Eval(m, env)
			if err != nil || ok != tc.want {
				t.Errorf("Eval(%s) = %v, %v; want %v", tc.src, ok, err, tc.want)
			}
		})
	}
}

// TestEvalPropagates checks that $and and $or pass a run-time limit up to the caller.
func TestEvalPropagates(t *testing.T) {
	env := limitEnv()
	env.Metadata = map[string]string{"tier": "gold"}
	over := exprQuery(`params.s + params.s != ""`)
	tests := []struct {
		name  string
		query string
		param string // "" means no error
		want  bool
	}{
		{"$or", `{"$or": [{"metadata.tier": "silver"}, ` + over + `]}`, testPath + ".$or[1].$expr", false},
		{"$or matched first", `{"$or": [{"metadata.tier": "gold"}, ` + over + `]}`, "", true},
		{"$and", `{"$and": [{"metadata.tier": "gold"}, ` + over + `]}`, testPath + ".$and[1].$expr", false},
		{"$and failed first", `{"$and": [{"metadata.tier": "silver"}, ` + over + `]}`, "", false},
		{"field", `{"metadata.tier": "gold", "$expr": "params.s + params.s != ''"}`, testPath + ".$expr", false},
		{"plain query", `{"metadata.tier": "gold"}`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, tc.query)
			ok, err := Eval(m, env)
			if ok != tc.want {
				t.Errorf("Eval = %v, want %v", ok, tc.want)
			}
			switch {
			case tc.param == "" && err != nil:
				t.Errorf("Eval error %v, want none", err)
			case tc.param != "" && (err == nil || err.Param != tc.param):
				t.Errorf("Eval error %v, want one on %s", err, tc.param)
			}
		})
	}
}
