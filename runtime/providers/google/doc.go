// Package google is the adapter for the Gemini API (provider identifier "google"): it builds the HTTP requests of
// generateContent, streamGenerateContent (server-sent events), embedContent and batchEmbedContents, authenticates
// them with the x-goog-api-key header, and hands the translation of bodies to runtime/providers/internal/gemini,
// which it shares with the Vertex AI adapter.
//
// URLs are {base}/v1beta/models/{model}:{method}, with base https://generativelanguage.googleapis.com or the
// target's custom_host (which replaces the scheme and host before /v1beta; a custom_host that already ends with
// /v1beta is accepted too). A model named "tunedModels/{id}" is called as such.
//
// It imports runtime/providers, runtime/gwerr, runtime/schema and runtime/providers/internal/gemini, never another
// adapter. Chat requests are decoded once through providers.Call.Chat and handed to gemini decoded.
//
// Its descriptor declares the identifier google and the default base URL; it reads no provider fields.
//
// models.go lists the Gemini API's models (models.list) in OpenAI's shape (providers.ModelLister).
package google
