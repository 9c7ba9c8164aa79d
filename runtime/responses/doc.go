// Package responses translates the responses API (POST /v1/responses) to and from chat completions, for the
// providers that have no native responses API (Anthropic, Bedrock, Gemini, Vertex, OpenAI-compatible hosts):
//
//   - ToChat: a schema.ResponseRequest → a chat completion request body (instructions → the first system
//     message, input items → messages, function tools, tool_choice, sampling, text.format → response_format,
//     reasoning.effort → reasoning_effort).
//   - FromChat: a chat.completion answer → the response object (output items message, function_call and
//     reasoning; output_text; usage; status completed or incomplete).
//   - Stream: a chat completion SSE stream → the responses event stream (response.created ...
//     response.completed), each event written as soon as the chunk that makes it is read.
//   - NewID and FinalResponse: response ids, and the response object of a stream's last event, for storing.
//
// It owns the mapping between the two shapes and nothing else: the wire shapes live in runtime/schema, provider
// facts in the adapters (which turn their answers into chat completions first), routing and storing in runtime.
// It imports only runtime/schema, runtime/gwerr, runtime/jsonfield, internal/jsonstr and the standard
// library; it must not import runtime, runtime/providers or routes (its tests use the adapters). Its functions
// are safe for concurrent use; a stream is read by one goroutine.
package responses
