// Package anthropic is the adapter for Anthropic's Messages API (provider identifier "anthropic"). It owns the
// URL ({base}/messages, the base ending with /v1 as custom_host must), the authentication and version headers
// (x-api-key, anthropic-version, anthropic-beta) and the wiring of the translators; the translation between
// OpenAI's chat completions and the Messages API itself lives in runtime/internal/anthropicmsg, which
// the Vertex AI adapter shares for Claude models on Vertex. Anthropic has no text completions or embeddings
// endpoint: those calls are refused with a 400. Anthropic's own /v1/messages and /v1/messages/count_tokens
// requests are sent as the caller wrote them (messages.go, NativeMessages).
//
// It imports only the standard library, runtime/gwerr, runtime/providers and runtime/providers/internal/...;
// never another adapter.
//
// Its descriptor declares the fields anthropic_version and anthropic_beta (they win over the caller's
// anthropic-version and anthropic-beta headers), so configs and stored providers accept them.
//
// models.go lists Anthropic's models (GET {base}/models) in OpenAI's shape (providers.ModelLister).
package anthropic
