// Package mcpgw is the core of the gateway's MCP endpoint, /mcp: it speaks MCP's Streamable HTTP transport (the
// official Go SDK, github.com/modelcontextprotocol/go-sdk, does the protocol: version negotiation, sessions,
// cancellation notices) to callers the HTTP front has already authenticated with a gateway key, and aggregates
// the upstream MCP servers registered in the caller's workspace (storage.MCPServer).
//
// It owns:
//   - the aggregated tool list: each upstream tool the server's allow_tools (when not empty) and deny_tools let
//     through, named "<serverId>__<tool>";
//   - the forwarding of tools/call: the bare tool name and the arguments, byte for byte, go to that server once;
//     a name that matches no registered server or a filtered tool reaches no server and is a JSON-RPC error
//     (invalid params), as the SDK answers for its own unknown tools;
//   - the upstream HTTP client: every connection passes the address policy at dial time (netguard), the
//     server's stored headers are added to its requests only, and the caller's headers (its gateway key first)
//     are never forwarded, since upstream requests are built by the SDK's client, not copied from the caller's;
//   - the session ownership: a session belongs to the workspace of the key that opened it. The SDK refuses a
//     request naming a session opened by another user (403), the user being the TokenInfo that only its bearer
//     middleware can attach; Serve therefore hands the SDK a request whose Authorization is a placeholder, after
//     removing the caller's own credentials, and the verifier reads the workspace from the context.
//
// Transport choice. The HTTP front is fiber (fasthttp), whose net/http adaptor buffers a whole response before
// sending it: an SSE stream would never reach the caller. The handler therefore answers every POST with a single
// JSON body (StreamableHTTPOptions.JSONResponse), and GET, the optional server-to-client SSE stream, with 405,
// which the transport allows for servers that do not offer one. Notifications an upstream sends during a call
// (progress, logs) are not relayed for the same reason. The SDK's DNS-rebinding guard for loopback servers is
// off: every request carries a gateway key, which a rebinding page cannot forge.
//
// Upstream sessions are opened per operation (one for each server on tools/list, one for tools/call) and closed
// after it: nothing upstream outlives a call, a server that dies fails only the calls in flight on it, and the
// registry's changes apply to the next call. Cancellation: the caller's notifications/cancelled cancels the
// handler's context (the SDK), which cancels the upstream call, whose client sends its own notifications/cancelled.
//
// Bounds: MaxServers servers per workspace are listed, MaxToolsPerServer tools each; connecting and listing take
// at most UpstreamTimeout; a call at most Options.CallTimeout; a message from an upstream at most MaxMessageBytes;
// an idle session is closed after Options.SessionTimeout, and a workspace holds at most Options.SessionsPerWorkspace sessions (429 past it).
//
// Not here yet (the rest of issue 22, next session): tool hooks and guardrails (before_tool_call,
// after_tool_call), rate limits and budgets on tools, request-log entries and the gateway_tool_calls_total
// metric, and the pass-through of resources/* and prompts/*.
package mcpgw
