// Package routes is the gateway's HTTP front: the fiber app, its middleware (trace ID, authentication by
// x-gateway-api-key), one file per endpoint group, JSON body decoding, and the mapping of errors to HTTP.
//
// It is the only package that imports fiber and the only place where an error becomes a status: handlers return
// *gwerr.Error (or any error, which becomes a 500 whose cause is logged), and Server.handleError writes the
// OpenAI-shaped body {"error": {"message", "type", "code", "param"}} (on /v1/messages, Anthropic's envelope:
// messages.go, which also authenticates those paths as Anthropic's SDKs do). Every answer carries
// x-gateway-trace-id.
//
// Portkey's x-portkey-* request headers are read as their x-gateway-* twins by the first middleware (portkey.go).
//
// Endpoints: GET /health and the web console under /console (console.go: package console's files; no key); under /v1, with a key: GET /v1/models (models.go), the inference endpoints (inference.go: gateway headers
// parsed in headers.go, the engine called; streams relayed by stream.go's reader, which fasthttp pulls and flushes
// when no further line is buffered), prompt render and completions, logs, metrics, and
// the admin endpoints (api-keys, policies, prompts, plugins, guardrails). Admin handlers decode, check the admin
// right, call the control plane (package control) and encode: management logic does not live here.
//
// /mcp (mcp.go) hands MCP requests to package mcpgw through serveStreaming (mcpstream.go), a bridge to net/http
// that relays what the handler flushes, and stands around each tool call (mcptools.go): policies, the config's
// tool hooks (run by the engine), one request-log entry and gateway_tool_calls_total.
//
// fasthttp's request context never ends, so run gives each inference request a context of its own (inflight.go)
// that ends when the caller closes its connection while the engine works (one epoll watcher for every
// connection, connwatch_linux.go, registered once per connection and reading nothing from the socket), when
// Shutdown's grace period is over, or once the answer is sent.
//
// The body of an inference request is read once, by limitBody (bodylimit.go), into a buffer the engine keeps
// (ownedBody): handlers must not copy it again.
//
// Fiber reuses a request's buffers once its handler returns: anything a handler keeps (strings from headers,
// params or the body) must be copied. Nothing imports routes but cmd.
package routes
