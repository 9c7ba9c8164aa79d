// Package vertex is the adapter for Vertex AI (provider identifier "vertex-ai", SPEC.md's "cloudy"). It builds
// the HTTP requests of Gemini models published on Vertex AI (generateContent, streamGenerateContent with
// server-sent events, :predict for text embeddings), of Anthropic models published there (rawPredict and
// streamRawPredict), authenticates them, and hands the translation of bodies to runtime/providers/internal/gemini
// and runtime/internal/anthropicmsg. Anthropic's own Messages requests for Claude models go to rawPredict as the
// caller wrote them (messages.go, NativeMessages).
//
// Addressing. URLs are {base}/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:{method};
// models whose name starts with "claude" go to publishers/anthropic; a model named "endpoints/{id}" (a tuned or
// deployed model) goes to .../locations/{region}/endpoints/{id}. base is https://{region}-aiplatform.googleapis.com
// (https://aiplatform.googleapis.com for region "global"), or the target's custom_host, which replaces the scheme
// and host before /v1 (a custom_host that already ends with /v1 is accepted too). The project is the config's
// cloudy_project_id, else the caller's x-gateway-cloudy-project-id header, else the service account's project_id;
// the region is cloudy_region, else x-gateway-cloudy-region. The config wins over the headers: a stored provider
// or a config pins where its credentials are used. A missing project or region is a 400 that names it.
//
// Authentication. With cloudy_service_account_json (an object, or a string holding one, with client_email,
// private_key (PEM, RSA), token_uri and project_id), the adapter signs a JWT (RS256, scope cloud-platform, one
// hour) with the standard library, exchanges it at token_uri through Target.Client
// (grant_type urn:ietf:params:oauth:grant-type:jwt-bearer) and sends the access token as a Bearer token. Tokens
// are cached per service account in the Adapter until five minutes before they expire; one exchange runs at a
// time per service account while the others wait for it. Without a service account, the target's API key (the
// caller's Bearer token, an access token) is sent as it is. The service account wins over an API key.
//
// The caller's X-cloudy-LLM-Request-Type header goes upstream as X-Vertex-AI-LLM-Request-Type.
//
// It imports runtime/providers, runtime/gwerr, runtime/schema and runtime/providers/internal/..., never another
// adapter. Chat requests are decoded once through providers.Call.Chat, and the decoded model decides between
// Claude and Gemini. An Adapter is safe for concurrent use.
//
// Its descriptor declares the cloudy_* fields and x-gateway-cloudy-* headers (all address the target), the
// alias cloudy, and the key sets cloudy_region with cloudy_service_account_json or cloudy_project_id.
package vertex
