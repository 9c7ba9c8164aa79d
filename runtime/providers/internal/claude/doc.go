// Package claude shapes a caller's own Anthropic Messages request for the clouds that publish Claude models
// under their own addressing (Vertex AI's rawPredict, Bedrock's InvokeModel): the model moves from the body to
// the URL, and the body names the cloud's anthropic_version. It is what the vertex and bedrock adapters share
// of the native /v1/messages path (runtime/messages_step.go); the translated path is runtime/internal/
// anthropicmsg's.
//
// It imports only the standard library and runtime/gwerr; it must not import runtime/providers or any adapter.
// Its functions are safe for concurrent use.
//
// Example:
//
//	body, model, err := claude.CloudBody(call.Body, "bedrock-2023-05-31", false)
//	// POST body to {base}/model/{model}/invoke
package claude
