// Package gemini translates between OpenAI's chat completions and embeddings formats and Google's Gemini wire
// format, for the two adapters that speak it: the Gemini API (runtime/providers/google) and Vertex AI
// (runtime/providers/vertex). It owns the wire types of generateContent, streamGenerateContent, embedContent,
// batchEmbedContents and Vertex AI's :predict for text embeddings (types.go), the chat translation both ways
// (chat.go), the JSON Schema subset Gemini accepts (schema.go), the server-sent event stream (stream.go), the
// embeddings translation (embeddings.go) and Google's error bodies (errors.go).
//
// OpenAI's side is runtime/schema's: requests arrive decoded (a chat request from providers.Call.Chat, shared by
// the request's attempts and never modified here; an embeddings request from DecodeEmbeddings), answers are
// schema's types, chunks are written by schema.ChunkWriter, and request errors are schema.DecodeError's 400s.
//
// It knows nothing of URLs, headers or authentication: those are the adapters'. It imports only the standard
// library, runtime/gwerr, runtime/schema and internal/jsonstr; it must not import runtime/providers or any
// adapter. Its functions are safe for concurrent use; a reader returned by Stream belongs to one goroutine.
//
// Example:
//
//	in, err := call.Chat()
//	body, model, err := gemini.ChatRequest(in)
//	// POST body to .../models/{model}:generateContent, then:
//	completion, err := gemini.ChatResponse(answer, model, strict)
package gemini
