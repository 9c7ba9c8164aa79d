package providers

import "sort"

// identifiers are the provider identifiers the gateway knows, the ecosystem's names.
var identifiers = map[string]bool{
	"openai":        true,
	"anthropic":     true,
	"azure-openai":  true,
	"bedrock":       true,
	"vertex-ai":     true,
	"google":        true,
	"groq":          true,
	"mistral-ai":    true,
	"together-ai":   true,
	"deepseek":      true,
	"fireworks-ai":  true,
	"openrouter":    true,
	"perplexity-ai": true,
	"ollama":        true,
	"vllm":          true,
	"lm-studio":     true,
	"x-ai":          true,
}

// aliases map SPEC.md's family names to identifiers.
var aliases = map[string]string{
	"llmvendor": "openai",
	"cloudx":    "azure-openai",
	"cloudy":    "vertex-ai",
	"cloudz":    "bedrock",
}

// Canonical returns the identifier that name stands for (an identifier or an alias) and whether it is known.
func Canonical(name string) (string, bool) {
	if identifiers[name] {
		return name, true
	}
	id, ok := aliases[name]
	return id, ok
}

// Identifiers lists the known identifiers and aliases in order, for error messages.
func Identifiers() []string {
	out := make([]string, 0, len(identifiers)+len(aliases))
	for id := range identifiers {
		out = append(out, id)
	}
	for a := range aliases {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
