// Package anthropicmsg translates between OpenAI's chat completions format and Anthropic's Messages API, for
// every adapter that reaches Claude models: the direct Anthropic API (runtime/providers/anthropic) and Anthropic
// models published on Vertex AI. It owns the wire types of the Messages API (types.go), the request translation
// (request.go), the non-streamed answer (response.go), the server-sent event stream (stream.go, with its
// allocation-free reader of text deltas in fastpath.go) and the error body (errors.go). OpenAI's side is
// runtime/schema's: the decoded request it reads, the answer and error envelope it writes, and the
// ChunkWriter every chunk of a stream goes through. It knows nothing of URLs, headers or authentication: those
// are the adapters'.
//
// It imports only the standard library, runtime/gwerr, runtime/schema and internal/jsonstr; it must
// not import runtime/providers or any adapter. Its functions are safe for concurrent use; a reader returned by
// Stream belongs to one goroutine.
//
// Example:
//
//	in, err := call.Chat() // or schema.DecodeChat(openAIBody)
//	body, model, err := anthropicmsg.Request(in, anthropicmsg.RequestOptions{})
//	// POST body to https://api.anthropic.com/v1/messages, then:
//	completion, err := anthropicmsg.Response(answer, strict)
package anthropicmsg
