// Package bedrock is the adapter for Amazon Bedrock (identifier "bedrock"; SPEC.md's alias "cloudz" maps to it).
// It owns the translation between OpenAI's chat completions and embeddings and Bedrock's runtime API:
//
//   - chat completions ↔ the Converse API (POST {base}/model/{modelId}/converse), and streamed chat completions
//     ↔ ConverseStream (POST {base}/model/{modelId}/converse-stream), whose binary
//     application/vnd.amazon.eventstream framing this package decodes itself (stream.go), checking both CRCs of
//     every message and bounding its size (MaxMessageLen);
//   - embeddings ↔ InvokeModel (POST {base}/model/{modelId}/invoke) for Titan text embeddings
//     (amazon.titan-embed-*) and Cohere Embed (cohere.embed-*);
//   - Anthropic's Messages requests for Claude models → InvokeModel / InvokeModelWithResponseStream as the
//     caller wrote them (messages.go, NativeMessages), the streamed answer's event stream turned into
//     Anthropic's server-sent events;
//   - Bedrock error bodies ({"message"}) ↔ OpenAI's error shape, the raw body kept in error.provider_error;
//   - authentication: AWS Signature Version 4 (service "bedrock", the signer of github.com/aws/aws-sdk-go-v2)
//     with the cloudz_* config fields or the x-gateway-cloudz-* headers (config wins), or a Bedrock API key
//     (the target's api_key or the caller's Bearer token) sent as Authorization: Bearer.
//
// base is https://bedrock-runtime.{region}.amazonaws.com, or the custom_host when one is given. modelId is the
// request's model with every byte but the unreserved ones percent-encoded, so model ids (":") and inference
// profile ARNs ("/") stay one path segment; the signature covers the path exactly as it is sent.
//
// Chat: roles system and developer become "system"; user text and data: URL images (png, jpeg, gif, webp)
// become content blocks; assistant tool_calls become toolUse blocks and tool messages toolResult blocks in a user
// turn; consecutive turns of one role are merged. max_completion_tokens (or max_tokens), temperature, top_p and
// stop go to inferenceConfig; tools and tool_choice to toolConfig; response_format json_schema to
// outputConfig.textFormat. Answers map stopReason to finish_reason and usage (cache reads and writes added to
// prompt_tokens, cache reads reported as cached_tokens); reasoning becomes content_blocks thinking items unless
// the target is strict.
//
// Not supported, and why: remote image URLs (Converse takes bytes or S3 locations and the gateway does not fetch
// caller-given URLs: 400); audio and file parts (400); n, logprobs, penalties, seed, logit_bias and user (no
// Converse equivalent: ignored); response_format json_object (no equivalent: ignored); tool_choice "none"
// cannot forbid tool use, so tools are dropped unless the history holds tool blocks (Converse then requires
// toolConfig, and tools are sent without a choice); /v1/completions (no common text-completion API: 400); Titan
// embeddings of more than one input (one text per call: 400 rather than several signed calls); token-array
// embedding inputs (400); embedding models other than Titan and Cohere, including application inference profile
// ARNs that don't name their model (400).
//
// OpenAI's side of every translation is runtime/schema's: chat requests are read through providers.Call.Chat
// (decoded once per request; errors name the index), embeddings requests as schema.EmbeddingsRequest, answers
// written as schema's types, stream chunks only through schema.ChunkWriter, and decoding errors translated by
// schema.DecodeError. This package declares only Bedrock's shapes.
//
// Layout: bedrock.go (the adapter, URLs), auth.go (credentials and signing), types.go (Bedrock's wire types),
// chat.go, embeddings.go, stream.go, errors.go.
//
// It imports the standard library, runtime/gwerr, internal/jsonstr, runtime/netguard (to redact a custom
// host it quotes), runtime/providers, runtime/schema and the AWS SDK's SigV4 signer; it must not import another
// adapter package. An Adapter is safe for concurrent use; the reader TranslateStream returns is not.
//
// Its descriptor declares the cloudz_* fields and x-gateway-cloudz-* headers (the access key ID and region
// address the target), the alias cloudz, and the key set cloudz_access_key_id + cloudz_secret_access_key.
package bedrock
