// Package anthropicmsg translates between OpenAI's chat completions format and Anthropic's Messages API, for
// every adapter that reaches Claude models: the direct Anthropic API (runtime/providers/anthropic) and Anthropic
// models published on Vertex AI. It owns the wire types of the Messages API (types.go), the request translation
// (request.go), the non-streamed answer (response.go), the server-sent event stream (stream.go, with its
// allocation-free reader of text deltas in fastpath.go) and the error body (errors.go). OpenAI's side is
// runtime/schema's: the decoded request it reads, the answer and error envelope it writes, and the
// ChunkWriter every chunk of a stream goes through. It knows nothing of URLs, headers or authentication: those
// are the adapters'.
//
// The ingress direction serves callers of the gateway's own POST /v1/messages whose model is not reached by
// pass-through to Anthropic: ToChat turns their Messages request into a chat completion request (ingress.go),
// FromChat the chat answer into a Messages answer, with Usage and the CountTokens estimate
// (ingress_answer.go), StreamFromChat the chunk stream into Anthropic's events (ingress_stream.go, with its
// allocation-free reader of text and argument chunks in ingress_fastpath.go), and ErrorBody, ErrorFromChat
// and ErrorType the errors into Anthropic's envelope (ingress_errors.go). Their golden files are under
// testdata/ingress.
//
// For the cache, Record assembles a Messages event stream as it passes into the whole message it stands for
// (record.go, golden files under testdata/record), and Replay writes a stored message back as such a stream
// (replay.go).
//
// It imports only the standard library, runtime/gwerr, runtime/schema, runtime/catalog (the token estimate
// of CountTokens) and internal/jsonstr; it must not import runtime/providers or any adapter. Its functions
// are safe for concurrent use; a reader returned by Stream, StreamFromChat or Record belongs to one goroutine.
//
// Example:
//
//	in, err := call.Chat() // or schema.DecodeChat(openAIBody)
//	body, model, err := anthropicmsg.Request(in, anthropicmsg.RequestOptions{})
//	// POST body to https://api.anthropic.com/v1/messages, then:
//	completion, err := anthropicmsg.Response(answer, strict)
//
//	// and for a caller of /v1/messages routed to an OpenAI-format provider:
//	chatBody, err := anthropicmsg.ToChat(messagesBody)
//	message, err := anthropicmsg.FromChat(chatAnswer, requestedModel)
package anthropicmsg
