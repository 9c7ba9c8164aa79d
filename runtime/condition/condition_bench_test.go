package condition

import (
	"encoding/json"
	"testing"
)

// TestMatchAllocs pins the common cases to zero allocations per Match.
func TestMatchAllocs(t *testing.T) {
	env := sampleEnv(t)
	tests := []struct {
		name  string
		query string
	}{
		{"metadata $eq", `{"metadata.tier": "gold"}`},
		{"metadata $eq miss", `{"metadata.tier": "silver"}`},
		{"params.model $in", `{"params.model": {"$in": ["gpt-4o-mini", "gpt-4o"]}}`},
		{"numeric $gt params", `{"params.max_tokens": {"$gt": 50}}`},
		{"numeric $gt metadata", `{"metadata.count": {"$gt": 1}}`},
		{"numeric $gt metadata non-number", `{"metadata.tier": {"$gt": 1}}`},
		{"nested array path", `{"params.messages.0.role": "system"}`},
		{"$regex", `{"url.pathname": {"$regex": "^/v1/chat/"}}`},
		{"$or", `{"$or": [{"metadata.tier": "silver"}, {"params.stream": true}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, tc.query)
			if n := testing.AllocsPerRun(100, func() { m.Match(env) }); n != 0 {
				t.Errorf("Match allocates %v times, want 0", n)
			}
		})
	}
}

func benchmarkMatch(b *testing.B, query string, want bool) {
	env := sampleEnv(b)
	m := mustCompile(b, query)
	if got := m.Match(env); got != want {
		b.Fatalf("Match = %v, want %v", got, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Match(env)
	}
}

func BenchmarkMatchMetadataEq(b *testing.B) {
	benchmarkMatch(b, `{"metadata.tier": "gold"}`, true)
}

func BenchmarkMatchParamsIn(b *testing.B) {
	benchmarkMatch(b, `{"params.model": {"$in": ["gpt-4o-mini", "claude-3-5-sonnet", "gpt-4o"]}}`, true)
}

func BenchmarkMatchMetadataGt(b *testing.B) {
	benchmarkMatch(b, `{"metadata.count": {"$gt": 1}}`, true)
}

func BenchmarkMatchExpr(b *testing.B) {
	benchmarkMatch(b, `{"$expr": "metadata.tier == 'gold' && params.max_tokens > 50"}`, true)
}

// BenchmarkEvalExpr is BenchmarkMatchExpr through Eval, the way the engine runs conditions.
func BenchmarkEvalExpr(b *testing.B) {
	env := sampleEnv(b)
	m := mustCompile(b, `{"$expr": "metadata.tier == 'gold' && params.max_tokens > 50"}`)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := Eval(m, env); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkMatchExprMetered runs a loop and a string function, which go through the budget functions.
func BenchmarkMatchExprMetered(b *testing.B) {
	benchmarkMatch(b, `{"$expr": "any(params.messages, .role == 'user') && lower(metadata.word) == 'premium'"}`, true)
}

func BenchmarkMatchExprParallel(b *testing.B) {
	env := sampleEnv(b)
	m := mustCompile(b, `{"$expr": "metadata.tier == 'gold' && params.max_tokens > 50"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Match(env)
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	q := json.RawMessage(`{"metadata.tier": "gold", "params.model": {"$in": ["a", "b"]}, "$or": [{"params.max_tokens": {"$gt": 10}}, {"url.pathname": {"$regex": "^/v1/"}}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(q, "q"); err != nil {
			b.Fatal(err)
		}
	}
}
