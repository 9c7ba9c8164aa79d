// Package gemini translates between OpenAI's chat completions and embeddings formats and Google's Gemini wire
// format, for the two adapters that speak it: the Gemini API (runtime/providers/google) and Vertex AI
// (runtime/providers/vertex). It owns the wire types of generateContent, streamGenerateContent, embedContent,
// batchEmbedContents and Vertex AI's :predict for text embeddings (types.go), the chat translation both ways
// (chat.go), the JSON Schema subset Gemini accepts (schema.go), the server-sent event stream (stream.go), the
// embeddings translation (embeddings.go) and Google's error bodies (errors.go).
//
// It knows nothing of URLs, headers or authentication: those are the adapters'. It imports only the standard
// library and runtime/gwerr; it must not import runtime/providers or any adapter. Its functions are safe for
// concurrent use; a reader returned by Stream belongs to one goroutine.
//
// Example:
//
//	body, model, err := gemini.ChatRequest(openAIBody)
//	// POST body to .../models/{model}:generateContent, then:
//	completion, err := gemini.ChatResponse(answer, openAIBody, strict)
package gemini
