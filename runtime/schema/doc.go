// Package schema owns OpenAI's wire format as the gateway reads and writes it, and the one view of a caller's
// request body.
//
//   - request.go: the chat completion request translating adapters read (ChatRequest, Message, ContentPart,
//     Tool, ...) and the embeddings request, with decoders whose errors name the field (messages[2].content).
//   - answer.go: the chat completion answer, logprobs, usage, the embeddings list and the error body.
//   - chunk.go: the stream chunk and ChunkWriter, the one encoder of chat.completion.chunk events.
//   - models.go: the model list of GET /v1/models.
//   - responses.go: the responses API's request (DecodeResponseRequest validates it, naming the field) and
//     response object.
//   - body.go: Body, the caller's body read once at the edge; the limiter, conditions, checks and adapters ask
//     it for the model, the stream flag, the decoded object or the decoded chat request instead of decoding the
//     bytes again.
//   - decode.go: DecodeError, the one translation of encoding/json errors into 400s naming the field.
//
// Field order and omitempty flags are part of the gateway's output and must not change. schema is a leaf: it
// imports only gwerr, jsonfield and the JSON scanner of internal/jsonstr.
package schema
