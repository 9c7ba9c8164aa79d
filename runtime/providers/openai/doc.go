// Package openai is the adapter for OpenAI and every provider that speaks OpenAI's wire format (groq, mistral-ai,
// together-ai, deepseek, fireworks-ai, openrouter, perplexity-ai, ollama, vllm, lm-studio, x-ai). Requests and
// answers pass through unchanged; only the URL and the authentication headers are the adapter's. Error bodies of
// these providers pass through unchanged too (DESIGN.md). It imports only runtime/providers.
//
// It registers one descriptor per provider above (Compatible: identifier, default base URL, keyless for the local
// ones) with the fields it reads, llmvendor_organization and llmvendor_project, which address the target; the
// alias llmvendor is openai's. Each provider's row also lists the media endpoints it serves at its base URL
// (images, audio, moderations, rerank; media.go, from each provider's API reference); openai serves them all.
//
// models.go: GET {base}/models, passed through (providers.ModelLister), and which providers take
// stream_options.include_usage, which the engine sets on every streamed chat completion (providers.StreamUsageAsker).
package openai
