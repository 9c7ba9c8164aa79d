package config

import "testing"

const fallbackConfig = `{"retry": {"attempts": 2, "on_status_codes": [429, 503]}, "request_timeout": 30000,
	"strategy": {"mode": "fallback", "on_status_codes": [429, 500, 502, 503]},
	"targets": [
		{"provider": "@primary", "override_params": {"model": "gpt-4o", "temperature": 0.2}},
		{"provider": "anthropic", "api_key": "sk-ant", "override_params": {"model": "claude-sonnet", "max_tokens": 1024}},
		{"virtual_key": "backup", "cache": {"mode": "simple", "max_age": 600}}
	]}`

func BenchmarkCacheHit(b *testing.B) {
	c := NewPlanCache(1024)
	raw := []byte(fallbackConfig)
	if _, err := c.Load(raw); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		if p, err := c.Load(raw); p == nil || err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCacheHitParallel(b *testing.B) {
	c := NewPlanCache(1024)
	raw := []byte(fallbackConfig)
	if _, err := c.Load(raw); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if p, err := c.Load(raw); p == nil || err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkParseFallbackConfig(b *testing.B) {
	raw := []byte(fallbackConfig)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadFallbackConfig(b *testing.B) {
	raw := []byte(fallbackConfig)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(raw); err != nil {
			b.Fatal(err)
		}
	}
}
