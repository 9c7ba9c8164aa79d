package providers

import (
	"slices"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"openai", "openai", true},
		{"llmvendor", "openai", true},
		{"cloudx", "azure-openai", true},
		{"cloudy", "vertex-ai", true},
		{"cloudz", "bedrock", true},
		{"anthropic", "anthropic", true},
		{"groq", "groq", true},
		{"OpenAI", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := Canonical(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	ids := Identifiers()
	if !slices.IsSorted(ids) || !slices.Contains(ids, "cloudz") || !slices.Contains(ids, "vertex-ai") {
		t.Errorf("Identifiers() = %v", ids)
	}
}
