// Package openai is the adapter for OpenAI and every provider that speaks OpenAI's wire format (groq, mistral-ai,
// together-ai, deepseek, fireworks-ai, openrouter, perplexity-ai, ollama, vllm, lm-studio, x-ai). Requests and
// answers pass through unchanged; only the URL and the authentication headers are the adapter's. Error bodies of
// these providers pass through unchanged too (DESIGN.md). It imports only runtime/providers.
package openai
