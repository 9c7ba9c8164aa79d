package providers

import "sort"

// identifiers are the provider identifiers the gateway knows, the ecosystem's names, with their default base
// URL (before the endpoint paths the provider documents). Providers whose URL depends on the request (Azure,
// Bedrock, Vertex) have none here: their adapters build it.
var identifiers = map[string]string{
	"openai":        "https://api.openai.com/v1",
	"anthropic":     "https://api.anthropic.com/v1",
	"azure-openai":  "",
	"bedrock":       "",
	"vertex-ai":     "",
	"google":        "https://generativelanguage.googleapis.com",
	"groq":          "https://api.groq.com/openai/v1",
	"mistral-ai":    "https://api.mistral.ai/v1",
	"together-ai":   "https://api.together.xyz/v1",
	"deepseek":      "https://api.deepseek.com/v1",
	"fireworks-ai":  "https://api.fireworks.ai/inference/v1",
	"openrouter":    "https://openrouter.ai/api/v1",
	"perplexity-ai": "https://api.perplexity.ai",
	"ollama":        "http://localhost:11434/v1",
	"vllm":          "http://localhost:8000/v1",
	"lm-studio":     "http://localhost:1234/v1",
	"x-ai":          "https://api.x.ai/v1",
}

// DefaultBaseURL returns a canonical identifier's default base URL, or "" when its adapter builds one.
func DefaultBaseURL(id string) string { return identifiers[id] }

// aliases map SPEC.md's family names to identifiers.
var aliases = map[string]string{
	"llmvendor": "openai",
	"cloudx":    "azure-openai",
	"cloudy":    "vertex-ai",
	"cloudz":    "bedrock",
}

// Canonical returns the identifier that name stands for (an identifier or an alias) and whether it is known.
func Canonical(name string) (string, bool) {
	if _, ok := identifiers[name]; ok {
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
