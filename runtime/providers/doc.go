// Package providers holds what every provider adapter shares: the adapter contract (Adapter and its optional
// translators, Target, Call) and the registry of provider descriptors. media.go says which endpoints are
// OpenAI's media endpoints (images, audio, moderations, rerank), how each one's request and answer travel
// (multipart uploads, raw audio, text transcripts), and which adapters serve them (MediaServer, Serves).
//
// Each adapter package registers one Descriptor per identifier it serves, from init: the identifier and its
// aliases (llmvendor = openai, cloudx = azure-openai, cloudy = vertex-ai, cloudz = bedrock), the default base
// URL, the provider fields it reads with their kinds and checks, the caller's headers it reads, the fields that
// stand in for api_key on a stored provider, the key sets that complete a config target, which fields and
// headers address a target, and the constructor. The registry is the only list of providers: config
// validation (runtime/config), the bootstrap file (runtime/bootstrap), the x-gateway-provider header and the
// circuit breaker's and cache's target identity (runtime) ask it, so a provider exists exactly when its adapter
// is linked in (cmd/gateway blank-imports the ones it ships). The registry is safe for concurrent use; a
// duplicate identifier, alias or conflicting field panics at registration.
//
// It imports runtime/jsonfield (the field checks are made of its readers), runtime/schema (Call.Chat decodes
// the request once for every adapter; PostJSON builds the request every adapter sends) and the standard
// library; adapters, in subpackages one per provider family, import it, runtime/schema (OpenAI's side of
// every translation) and runtime's shared types, never each other.
//
//	providers.Register(providers.Descriptor{ID: "groq", BaseURL: "https://api.groq.com/openai/v1",
//		New: func() providers.Adapter { return openai.Adapter{} }})
package providers
