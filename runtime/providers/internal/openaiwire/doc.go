// Package openaiwire holds OpenAI's wire format as the provider adapters read and write it: the chat completion
// request they translate from, the chat completion answer, tool calls, usage, the embeddings list and the error
// body they translate into. Only fields the adapters use are declared; field order and omitempty flags are part
// of the gateway's output and must not change. It uses the standard library only.
package openaiwire
