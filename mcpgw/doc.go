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
//     (invalid params), as the SDK answers for its own unknown tools; so does a name its server does not list,
//     exactly (toolnames.go: the servers' lists are kept a minute, and read again at most every 5 s for a name
//     they lack), so that made-up names never reach a server, the log or the metrics;
//   - the pass-through of resources and prompts, under the same naming rule: a prompt is "<serverId>__<name>",
//     a resource's uri and a template's uriTemplate are "<serverId>__<uri>" (so are the uris of the contents
//     resources/read answers). resources/list, resources/templates/list and prompts/list ask every server (those
//     that declare the capability) and answer the whole list, without a cursor; resources/read and prompts/get
//     resolve the prefix as tools/call does (server IDs may hold "__": every split, shortest first) and send the
//     bare uri or name once. A caller expands a template with the prefix still in front. An unknown uri or name
//     reaches no server (invalid params). allow_tools and deny_tools are about tools only. resources/subscribe is
//     not offered;
//   - the relay of an upstream's notifications during a call: its notifications/progress, when the caller's
//     tools/call carries _meta.progressToken (the call goes upstream with a token of the gateway's, and the
//     progress comes back under the caller's), and its notifications/message, when the caller has set a level
//     (logging/setLevel: the call's upstream session asks for the same level; the logger is renamed
//     "<serverId>__<logger>"). Closing the upstream session waits for the relay, so that what the server sent
//     before its result reaches the caller before the result;
//   - the upstream HTTP client: every connection passes the address policy at dial time (netguard), the
//     server's stored headers are added to its requests only (no redirect is followed), and the caller's
//     headers (its gateway key first) are never forwarded, since upstream requests are built by the SDK's
//     client, not copied from the caller's;
//   - the session ownership: a session belongs to the workspace of the key that opened it. The SDK refuses a
//     request naming a session opened by another user (403), the user being the TokenInfo that only its bearer
//     middleware can attach; Serve therefore hands the SDK a request whose Authorization is a placeholder, after
//     removing the caller's own credentials, and the verifier reads the workspace from the context.
//
// Transport choice. A POST is answered with an SSE stream (the SDK's choice whenever JSONResponse is off: even a
// lone result is one event), which carries a call's notifications before its result; Serve needs a
// ResponseWriter that flushes, which the HTTP front provides over fasthttp (routes' serveStreaming), since
// fiber's own adaptor buffers whole answers. GET, the optional standalone server-to-client stream, is answered
// 405, which the transport allows for servers that do not offer one: nothing is sent outside a call (no
// list-changed notices, no resource updates, no server-initiated requests). The SDK's DNS-rebinding guard for
// loopback servers is off: every request carries a gateway key, which a rebinding page cannot forge.
//
// Upstream sessions are kept between operations (pool.go): a list, a read, a get or a call takes an idle
// session of its server's record when there is one and gives it back when it ended cleanly, so that an
// operation costs one round trip instead of four; a call whose caller asked for progress or log messages has a
// session of its own, closed before its result is answered, so that every notification reaches the caller
// first. A changed record (url, headers) never reuses a session of the old one; a session the server ended is
// replaced and the request sent again (the server answered 404: it did not run it). Cancellation: the caller's notifications/cancelled cancels the
// handler's context (the SDK), which cancels the upstream call, whose client sends its own notifications/cancelled.
// The SDK runs a session's calls on contexts of the session's, detached from the HTTP request that carried them:
// the gateway ties each call to its request's context as well, so that a caller that drops its connection
// (which ends the request's context) cancels its calls the same way, and Close, which ends every request's
// context, ends them all.
//
// Bounds: a workspace runs at most ListsPerWorkspace lists over its servers at once (fanout.go); MaxServers
// servers per workspace are listed, MaxToolsPerServer tools each and MaxListedPerServer
// resources, templates or prompts each (following the server's cursors, MaxPagesPerList pages at most);
// a JSON-RPC batch holds at most MaxBatchMessages messages (400 past it); connecting and listing take at most
// UpstreamTimeout; a call, a read or a get at most Options.CallTimeout; a message from an upstream at most
// MaxMessageBytes; at most MaxRelayedPerCall notifications of a call are relayed (the rest dropped, logged once);
// an idle session is closed after Options.SessionTimeout, and a workspace holds at most
// Options.SessionsPerWorkspace sessions (429 past it; a place is taken before the session opens, so that
// concurrent initializes cannot overshoot).
//
// What stands around a call is not this package's: Options.Intercept (an Interceptor) wraps every tools/call
// that names an offered tool with the single Forward to its server, and routes' interceptor runs there the rate
// limits and budgets, the config's before_tool_call and after_tool_call hooks, the request-log entry and the
// metrics. A server that fails is an *UpstreamError through the Interceptor, so that it can count it, and the
// caller's tool error after it.
package mcpgw
