package condition

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

const testPath = "strategy.conditions[0].query"

const sampleBody = `{
	"model": "gpt-4o",
	"temperature": 0.7,
	"max_tokens": 100,
	"stream": true,
	"user": null,
	"n": "5",
	"messages": [
		{"role": "system", "content": "Be brief"},
		{"role": "user", "content": "Hello there"}
	],
	"tags": ["a", "b"],
	"meta": {"x": 1, "y": {"z": "deep"}, "0": "zero-key"}
}`

// sampleEnv returns the Env the tests (and the fuzz target) match against.
func sampleEnv(tb testing.TB) *Env {
	tb.Helper()
	var params map[string]any
	if err := json.Unmarshal([]byte(sampleBody), &params); err != nil {
		tb.Fatal(err)
	}
	return &Env{
		Metadata: map[string]string{
			"tier":  "gold",
			"count": "5",
			"score": "7.5",
			"empty": "",
			"word":  "Premium",
			"neg":   "-2e1",
		},
		Params:  params,
		URLPath: "/v1/chat/completions",
	}
}

func mustCompile(tb testing.TB, q string) Matcher {
	tb.Helper()
	m, err := Compile(json.RawMessage(q), testPath)
	if err != nil {
		tb.Fatalf("Compile(%s): %v", q, err)
	}
	return m
}

func TestMatch(t *testing.T) {
	env := sampleEnv(t)
	tests := []struct {
		name  string
		query string
		want  bool
	}{
		// Implicit AND and the empty query.
		{"empty query matches everything", `{}`, true},
		{"two fields both hold", `{"metadata.tier": "gold", "params.model": "gpt-4o"}`, true},
		{"two fields one fails", `{"metadata.tier": "gold", "params.model": "gpt-3"}`, false},

		// Bare values mean $eq.
		{"bare string metadata", `{"metadata.tier": "gold"}`, true},
		{"bare string metadata mismatch", `{"metadata.tier": "silver"}`, false},
		{"bare string missing metadata", `{"metadata.nope": "gold"}`, false},
		{"bare string is case-sensitive", `{"metadata.tier": "Gold"}`, false},
		{"bare number params", `{"params.max_tokens": 100}`, true},
		{"bare number params mismatch", `{"params.max_tokens": 101}`, false},
		{"bare bool params", `{"params.stream": true}`, true},
		{"bare bool params mismatch", `{"params.stream": false}`, false},
		{"bare null matches null", `{"params.user": null}`, true},
		{"bare null matches missing", `{"params.nope": null}`, true},
		{"bare null does not match a value", `{"params.model": null}`, false},
		{"bare array deep equal", `{"params.tags": ["a", "b"]}`, true},
		{"bare array order matters", `{"params.tags": ["b", "a"]}`, false},
		{"bare array is not containment", `{"params.tags": "a"}`, false},
		{"bare object deep equal", `{"params.meta.y": {"z": "deep"}}`, true},
		{"bare object mismatch", `{"params.meta.y": {"z": "shallow"}}`, false},
		{"bare empty object", `{"params.meta.y": {}}`, false},
		{"bare url.pathname", `{"url.pathname": "/v1/chat/completions"}`, true},
		{"bare url.pathname mismatch", `{"url.pathname": "/v1/embeddings"}`, false},

		// Paths.
		{"nested object path", `{"params.meta.y.z": "deep"}`, true},
		{"array index path", `{"params.messages.0.role": "system"}`, true},
		{"array index path second", `{"params.messages.1.role": "user"}`, true},
		{"array index out of range", `{"params.messages.5.role": {"$exists": false}}`, true},
		{"non-index segment on array", `{"params.messages.first.role": {"$exists": true}}`, false},
		{"numeric segment on a map is a key", `{"params.meta.0": "zero-key"}`, true},
		{"path through a scalar", `{"params.model.name": {"$exists": true}}`, false},
		{"metadata key keeps dots", `{"metadata.a.b": {"$exists": false}}`, true},

		// $eq / $ne.
		{"$eq string", `{"metadata.tier": {"$eq": "gold"}}`, true},
		{"$eq string mismatch", `{"metadata.tier": {"$eq": "silver"}}`, false},
		{"$eq missing", `{"metadata.nope": {"$eq": "gold"}}`, false},
		{"$eq metadata numeric string equals number", `{"metadata.count": {"$eq": 5}}`, true},
		{"$eq metadata numeric string as string", `{"metadata.count": {"$eq": "5"}}`, true},
		{"$eq metadata exponent string equals number", `{"metadata.neg": {"$eq": -20}}`, true},
		{"$eq params string is not a number", `{"params.n": {"$eq": 5}}`, false},
		{"$eq params number is not a string", `{"params.max_tokens": {"$eq": "100"}}`, false},
		{"$eq float", `{"params.temperature": {"$eq": 0.7}}`, true},
		{"$eq number equals 1e2", `{"params.max_tokens": {"$eq": 1e2}}`, true},
		{"$eq null on missing", `{"params.nope": {"$eq": null}}`, true},
		{"$eq array elements", `{"params.messages": {"$eq": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hello there"}]}}`, true},
		{"$eq url.pathname", `{"url.pathname": {"$eq": "/v1/chat/completions"}}`, true},
		{"$ne string", `{"metadata.tier": {"$ne": "silver"}}`, true},
		{"$ne string same", `{"metadata.tier": {"$ne": "gold"}}`, false},
		{"$ne missing", `{"metadata.nope": {"$ne": "gold"}}`, true},
		{"$ne null on missing", `{"params.nope": {"$ne": null}}`, false},
		{"$ne null on value", `{"params.model": {"$ne": null}}`, true},
		{"$ne number on metadata", `{"metadata.count": {"$ne": 5}}`, false},
		{"$ne url.pathname", `{"url.pathname": {"$ne": "/v1/embeddings"}}`, true},
		{"$ne object", `{"params.meta.y": {"$ne": {"z": "deep"}}}`, false},

		// $gt $gte $lt $lte.
		{"$gt params", `{"params.max_tokens": {"$gt": 50}}`, true},
		{"$gt params equal", `{"params.max_tokens": {"$gt": 100}}`, false},
		{"$gte params equal", `{"params.max_tokens": {"$gte": 100}}`, true},
		{"$gte params below", `{"params.max_tokens": {"$gte": 101}}`, false},
		{"$lt params", `{"params.temperature": {"$lt": 1}}`, true},
		{"$lt params not", `{"params.temperature": {"$lt": 0.5}}`, false},
		{"$lte params equal", `{"params.temperature": {"$lte": 0.7}}`, true},
		{"$lte params above", `{"params.temperature": {"$lte": 0.69}}`, false},
		{"$gt metadata numeric string", `{"metadata.count": {"$gt": 4}}`, true},
		{"$gt metadata numeric string not", `{"metadata.count": {"$gt": 5}}`, false},
		{"$lt metadata float string", `{"metadata.score": {"$lt": 8}}`, true},
		{"$lt metadata negative exponent string", `{"metadata.neg": {"$lt": -19.5}}`, true},
		{"$gt metadata non-number", `{"metadata.tier": {"$gt": 0}}`, false},
		{"$lt metadata non-number", `{"metadata.tier": {"$lt": 0}}`, false},
		{"$gt metadata empty string", `{"metadata.empty": {"$gte": 0}}`, false},
		{"$gt missing", `{"metadata.nope": {"$gt": 0}}`, false},
		{"$lte missing", `{"params.nope": {"$lte": 0}}`, false},
		{"$gt params string never", `{"params.n": {"$gt": 1}}`, false},
		{"$gt params bool never", `{"params.stream": {"$gt": 0}}`, false},
		{"$gt url.pathname never", `{"url.pathname": {"$gt": 0}}`, false},
		{"$gt nested array element", `{"params.meta.x": {"$gt": 0.5}}`, true},
		{"range both bounds", `{"params.max_tokens": {"$gt": 10, "$lt": 1000}}`, true},
		{"range both bounds fails one", `{"params.max_tokens": {"$gt": 10, "$lt": 100}}`, false},

		// $in / $nin.
		{"$in params string", `{"params.model": {"$in": ["gpt-4o", "gpt-4o-mini"]}}`, true},
		{"$in params string not", `{"params.model": {"$in": ["claude", "gemini"]}}`, false},
		{"$in missing", `{"params.nope": {"$in": ["a"]}}`, false},
		{"$in missing with null", `{"params.nope": {"$in": ["a", null]}}`, true},
		{"$in null value", `{"params.user": {"$in": [null]}}`, true},
		{"$in empty", `{"params.model": {"$in": []}}`, false},
		{"$in number", `{"params.max_tokens": {"$in": [1, 100]}}`, true},
		{"$in metadata numeric string vs number", `{"metadata.count": {"$in": [4, 5]}}`, true},
		{"$in metadata string", `{"metadata.tier": {"$in": ["gold", "platinum"]}}`, true},
		{"$in metadata mismatch", `{"metadata.tier": {"$in": ["silver"]}}`, false},
		{"$in bool", `{"params.stream": {"$in": [true]}}`, true},
		{"$in bool mismatch", `{"params.stream": {"$in": [false]}}`, false},
		{"$in array member", `{"params.tags": {"$in": [["a", "b"], "x"]}}`, true},
		{"$in url.pathname", `{"url.pathname": {"$in": ["/v1/chat/completions", "/v1/completions"]}}`, true},
		{"$in nested array path", `{"params.messages.1.role": {"$in": ["user", "assistant"]}}`, true},
		{"$nin params string", `{"params.model": {"$nin": ["claude"]}}`, true},
		{"$nin params string listed", `{"params.model": {"$nin": ["gpt-4o"]}}`, false},
		{"$nin missing", `{"params.nope": {"$nin": ["a"]}}`, true},
		{"$nin missing with null", `{"params.nope": {"$nin": [null]}}`, false},
		{"$nin metadata number", `{"metadata.count": {"$nin": [5]}}`, false},
		{"$nin url.pathname", `{"url.pathname": {"$nin": ["/v1/embeddings"]}}`, true},

		// $regex.
		{"$regex metadata", `{"metadata.tier": {"$regex": "^go"}}`, true},
		{"$regex metadata mismatch", `{"metadata.tier": {"$regex": "^si"}}`, false},
		{"$regex case-sensitive", `{"metadata.word": {"$regex": "^premium$"}}`, false},
		{"$regex option i", `{"metadata.word": {"$regex": "^premium$", "$options": "i"}}`, true},
		{"$regex options before regex", `{"metadata.word": {"$options": "i", "$regex": "^PREMIUM$"}}`, true},
		{"$regex missing", `{"metadata.nope": {"$regex": ".*"}}`, false},
		{"$regex non-string never", `{"params.max_tokens": {"$regex": "1"}}`, false},
		{"$regex params nested", `{"params.messages.1.content": {"$regex": "hello", "$options": "i"}}`, true},
		{"$regex url.pathname", `{"url.pathname": {"$regex": "^/v1/chat/"}}`, true},
		{"$regex url.pathname mismatch", `{"url.pathname": {"$regex": "embeddings$"}}`, false},
		{"$regex with other operator", `{"params.model": {"$regex": "^gpt", "$ne": "gpt-4o"}}`, false},

		// $exists.
		{"$exists true present", `{"metadata.tier": {"$exists": true}}`, true},
		{"$exists true present empty string", `{"metadata.empty": {"$exists": true}}`, true},
		{"$exists true missing", `{"metadata.nope": {"$exists": true}}`, false},
		{"$exists false missing", `{"metadata.nope": {"$exists": false}}`, true},
		{"$exists false present", `{"params.model": {"$exists": false}}`, false},
		{"$exists true null", `{"params.user": {"$exists": true}}`, true},
		{"$exists nested", `{"params.meta.y.z": {"$exists": true}}`, true},
		{"$exists url.pathname", `{"url.pathname": {"$exists": true}}`, true},

		// $and / $or.
		{"$and all hold", `{"$and": [{"metadata.tier": "gold"}, {"params.stream": true}]}`, true},
		{"$and one fails", `{"$and": [{"metadata.tier": "gold"}, {"params.stream": false}]}`, false},
		{"$or one holds", `{"$or": [{"metadata.tier": "silver"}, {"params.stream": true}]}`, true},
		{"$or none holds", `{"$or": [{"metadata.tier": "silver"}, {"params.stream": false}]}`, false},
		{"$or nested in $and", `{"$and": [{"$or": [{"metadata.tier": "silver"}, {"metadata.tier": "gold"}]}, {"params.max_tokens": {"$lte": 100}}]}`, true},
		{"$and nested in $or", `{"$or": [{"$and": [{"metadata.tier": "gold"}, {"params.model": "x"}]}, {"$and": [{"url.pathname": "/v1/chat/completions"}, {"params.temperature": {"$lt": 1}}]}]}`, true},
		{"$or with sibling field", `{"$or": [{"metadata.tier": "gold"}], "params.model": "x"}`, false},

		// $expr.
		{"$expr true", `{"$expr": "metadata.tier == 'gold' && params.max_tokens > 50"}`, true},
		{"$expr false", `{"$expr": "metadata.tier == 'silver'"}`, false},
		{"$expr url", `{"$expr": "url.pathname startsWith '/v1/chat'"}`, true},
		{"$expr nested params", `{"$expr": "params.messages[0].role == 'system' && len(params.tags) == 2"}`, true},
		{"$expr any over messages", `{"$expr": "any(params.messages, .role == 'user')"}`, true},
		{"$expr missing metadata is empty", `{"$expr": "metadata.nope == ''"}`, true},
		{"$expr runtime error is no match", `{"$expr": "params.nope.deeper[3] == 1"}`, false},
		{"$expr runtime type error is no match", `{"$expr": "params.model > 3"}`, false},
		{"$expr non-bool result is no match", `{"$expr": "params.model"}`, false},
		{"$expr memory budget is no match", `{"$expr": "len(1..params.max_tokens * 10000) > 0"}`, false},
		{"$expr with field", `{"$expr": "true", "metadata.tier": "silver"}`, false},
		{"$expr in $or", `{"$or": [{"$expr": "false"}, {"$expr": "params.stream"}]}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, tc.query)
			if got := m.Match(env); got != tc.want {
				t.Errorf("Match(%s) = %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}

func TestMatchEmptyEnv(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  bool
	}{
		{"$eq", `{"metadata.tier": "gold"}`, false},
		{"$eq null", `{"params.x": null}`, true},
		{"$ne", `{"params.model": {"$ne": "x"}}`, true},
		{"$exists false", `{"params.a.b": {"$exists": false}}`, true},
		{"$nin", `{"metadata.tier": {"$nin": ["gold"]}}`, true},
		{"$in", `{"metadata.tier": {"$in": ["gold"]}}`, false},
		{"url empty", `{"url.pathname": ""}`, true},
		{"$expr", `{"$expr": "params.model == nil && metadata.tier == '' && url.pathname == ''"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, tc.query)
			if got := m.Match(&Env{}); got != tc.want {
				t.Errorf("Match(&Env{}) = %v, want %v", got, tc.want)
			}
			if got := m.Match(nil); got != tc.want {
				t.Errorf("Match(nil) = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	p := testPath
	tests := []struct {
		name  string
		query string
		param string
		msg   string // a substring of the message
	}{
		{"not JSON", `{"metadata.tier": `, p, "not valid JSON"},
		{"empty", ``, p, "not valid JSON"},
		{"array", `[]`, p, "must be a JSON object"},
		{"string", `"x"`, p, "must be a JSON object"},
		{"null", `null`, p, "must be a JSON object"},
		{"duplicate key", `{"metadata.a": 1, "metadata.a": 2}`, p + ".metadata.a", `duplicate key "metadata.a"`},
		{"unknown root", `{"headers.x": "y"}`, p + ".headers.x", `unknown field "headers.x"; a field is metadata.<name>, params.<path> or url.pathname`},
		{"bare root metadata", `{"metadata": "y"}`, p + ".metadata", `unknown field "metadata"`},
		{"bare root params", `{"params": {}}`, p + ".params", `unknown field "params"`},
		{"url other than pathname", `{"url.host": "x"}`, p + ".url.host", `unknown field "url.host"`},
		{"metadata without key", `{"metadata.": "x"}`, p + ".metadata.", "names no metadata key"},
		{"params empty segment", `{"params.a..b": 1}`, p + ".params.a..b", "empty path segment"},
		{"params trailing dot", `{"params.a.": 1}`, p + ".params.a.", "empty path segment"},
		{"unknown field operator", `{"metadata.tier": {"$near": 1}}`, p + ".metadata.tier.$near", `unsupported operator "$near"`},
		{"unknown field operator after a good one", `{"metadata.tier": {"$eq": "a", "$size": 1}}`, p + ".metadata.tier.$size", `unsupported operator "$size"`},
		{"$or inside a field", `{"metadata.tier": {"$or": []}}`, p + ".metadata.tier.$or", `unsupported operator "$or"`},
		{"unknown top-level operator", `{"$nor": []}`, p + ".$nor", `unsupported operator "$nor"`},
		{"$where", `{"$where": "x"}`, p + ".$where", `unsupported operator "$where"`},
		{"mixed operator object", `{"params.x": {"$eq": 1, "y": 2}}`, p + ".params.x.$eq", "mixes operators and plain keys"},
		{"$gt string", `{"metadata.tier": {"$gt": "5"}}`, p + ".metadata.tier.$gt", "$gt compares numbers"},
		{"$gte null", `{"metadata.tier": {"$gte": null}}`, p + ".metadata.tier.$gte", "$gte compares numbers"},
		{"$lt bool", `{"metadata.tier": {"$lt": true}}`, p + ".metadata.tier.$lt", "$lt compares numbers"},
		{"$lte array", `{"metadata.tier": {"$lte": [1]}}`, p + ".metadata.tier.$lte", "$lte compares numbers"},
		{"$in not array", `{"params.model": {"$in": "gpt-4o"}}`, p + ".params.model.$in", "takes an array"},
		{"$nin null", `{"params.model": {"$nin": null}}`, p + ".params.model.$nin", "takes an array"},
		{"$exists not bool", `{"params.model": {"$exists": 1}}`, p + ".params.model.$exists", "takes true or false"},
		{"$exists null", `{"params.model": {"$exists": null}}`, p + ".params.model.$exists", "takes true or false"},
		{"$regex not string", `{"params.model": {"$regex": 1}}`, p + ".params.model.$regex", "takes a string"},
		{"$regex invalid", `{"params.model": {"$regex": "a("}}`, p + ".params.model.$regex", "invalid regular expression"},
		{"$regex backreference", `{"params.model": {"$regex": "(a)\\1"}}`, p + ".params.model.$regex", "invalid regular expression"},
		{"$options without $regex", `{"params.model": {"$options": "i"}}`, p + ".params.model.$options", "$options needs $regex"},
		{"$options not string", `{"params.model": {"$regex": "a", "$options": 1}}`, p + ".params.model.$options", "takes a string"},
		{"$options unknown flag", `{"params.model": {"$regex": "a", "$options": "x"}}`, p + ".params.model.$options", `unsupported regex option 'x'`},
		{"$and not array", `{"$and": {"metadata.a": "b"}}`, p + ".$and", "must be an array of queries"},
		{"$or null", `{"$or": null}`, p + ".$or", "must be an array of queries"},
		{"$and empty", `{"$and": []}`, p + ".$and", "must not be empty"},
		{"$or element not object", `{"$or": [{"metadata.a": "b"}, 3]}`, p + ".$or[1]", "a query must be a JSON object"},
		{"$or element bad field", `{"$or": [{"metadata.a": "b"}, {"foo": 1}]}`, p + ".$or[1].foo", `unknown field "foo"`},
		{"deep nesting path", `{"$and": [{"$or": [{"params.x": {"$in": 1}}]}]}`, p + ".$and[0].$or[0].params.x.$in", "takes an array"},
		{"$expr not string", `{"$expr": true}`, p + ".$expr", "$expr takes a string"},
		{"$expr empty", `{"$expr": "  "}`, p + ".$expr", "$expr is empty"},
		{"$expr syntax", `{"$expr": "metadata.tier =="}`, p + ".$expr", "unexpected token EOF (1:16)"},
		{"$expr unknown variable", `{"$expr": "headers.x == 'y'"}`, p + ".$expr", "unknown name headers"},
		{"$expr not bool", `{"$expr": "1 + 2"}`, p + ".$expr", "expected bool, but got int"},
		{"$expr too big", `{"$expr": "` + strings.Repeat("1 + ", 2000) + `1 > 0"}`, p + ".$expr", "exceeds maximum allowed nodes"},
		{"$expr in $or", `{"$or": [{"$expr": "nope"}]}`, p + ".$or[0].$expr", "unknown name nope"},
		{"$plugin not an id", `{"$plugin": 5}`, p + ".$plugin", "id of a workspace plugin"},
		{"$plugin bad id", `{"$plugin": "a/b"}`, p + ".$plugin", "id of a workspace plugin"},
		{"$params not an object", `{"$plugin": "router", "$params": [1]}`, p + ".$params", "object"},
		{"$params alone", `{"$params": {}}`, p + ".$params", "goes with $plugin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(json.RawMessage(tc.query), testPath)
			if err == nil {
				t.Fatalf("Compile(%s) = %v, want an error", tc.query, m)
			}
			if m != nil {
				t.Errorf("Compile returned a Matcher with its error")
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("error %T %v is not a *gwerr.Error", err, err)
			}
			if ge.Status != 400 || ge.Code != "invalid_config" {
				t.Errorf("status, code = %d, %q; want 400, invalid_config", ge.Status, ge.Code)
			}
			if ge.Param != tc.param {
				t.Errorf("Param = %q, want %q", ge.Param, tc.param)
			}
			prefix := "invalid config: " + tc.param + ": "
			if !strings.HasPrefix(ge.Message, prefix) {
				t.Errorf("Message = %q, want prefix %q", ge.Message, prefix)
			}
			if !strings.Contains(ge.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", ge.Message, tc.msg)
			}
			if strings.Contains(ge.Message, "\n") {
				t.Errorf("Message %q spans lines", ge.Message)
			}
		})
	}
}

func TestCompileEmptyPath(t *testing.T) {
	_, err := Compile(json.RawMessage(`{"metadata.x": {"$bad": 1}}`), "")
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Param != "metadata.x.$bad" {
		t.Fatalf("err = %v, want Param metadata.x.$bad", err)
	}
}

// TestMatchConcurrent hammers one set of Matchers from many goroutines; run it with -race.
func TestMatchConcurrent(t *testing.T) {
	env := sampleEnv(t)
	other := &Env{Metadata: map[string]string{"tier": "silver"}, URLPath: "/v1/embeddings"}
	queries := []struct {
		query    string
		onSample bool
		onOther  bool
	}{
		{query: `{"metadata.tier": "gold"}`, onSample: true},
		{query: `{"params.model": {"$in": ["gpt-4o", "x"]}}`, onSample: true},
		{query: `{"metadata.count": {"$gt": 1}}`, onSample: true},
		{query: `{"url.pathname": {"$regex": "embed"}}`, onOther: true},
		{query: `{"$or": [{"metadata.tier": "silver"}, {"params.stream": true}]}`, onSample: true, onOther: true},
		{query: `{"$expr": "metadata.tier == 'gold' && params.messages[1].role == 'user'"}`, onSample: true},
		{query: `{"$expr": "params.messages[1].role == 'user'"}`, onSample: true}, // errors on other
	}
	ms := make([]Matcher, len(queries))
	for i, q := range queries {
		ms[i] = mustCompile(t, q.query)
	}
	const goroutines, rounds = 16, 500
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for i, m := range ms {
					e, want := env, queries[i].onSample
					if (g+r)%2 == 1 {
						e, want = other, queries[i].onOther
					}
					if got := m.Match(e); got != want {
						errc <- fmt.Errorf("goroutine %d round %d: %s = %v, want %v", g, r, queries[i].query, got, want)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestPluginConditions(t *testing.T) {
	m, err := Compile(json.RawMessage(`{"$plugin": "router", "$params": {"min_chars": 10}, "metadata.tier": "pro"}`), "q")
	if err != nil {
		t.Fatal(err)
	}
	var gotID string
	var gotParams json.RawMessage
	env := &Env{Metadata: map[string]string{"tier": "pro"}, Plugin: func(id string, params json.RawMessage) bool {
		gotID, gotParams = id, params
		return true
	}}
	if !m.Match(env) || gotID != "router" || string(gotParams) != `{"min_chars": 10}` {
		t.Fatalf("match with the plugin saying yes: id %q params %s", gotID, gotParams)
	}
	env.Plugin = func(string, json.RawMessage) bool { return false }
	if m.Match(env) {
		t.Fatal("matched although the plugin said no")
	}
	env.Plugin = nil
	if m.Match(env) {
		t.Fatal("matched without a plugin host")
	}
	env.Plugin = func(string, json.RawMessage) bool { return true }
	env.Metadata["tier"] = "free"
	if m.Match(env) {
		t.Fatal("the other keys of the query must hold too")
	}
}
