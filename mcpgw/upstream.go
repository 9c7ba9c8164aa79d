package mcpgw

//lint:file-ignore SA1019 the SDK deprecates MCP logging from protocol 2026-07-28 on; issue 22 asks for it to be relayed meanwhile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/runtime/httpclient"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/storage"
)

// newUpstreamTransport is the transport of every upstream MCP session: the gateway's upstream client (runtime/httpclient).
func newUpstreamTransport(policy *netguard.Policy) http.RoundTripper {
	// The gateway's upstream client: the address policy at every dial, verified TLS, HTTP(S)_PROXY, and its
	// bounds, as for providers.
	return httpclient.New(httpclient.Options{Policy: policy, DialTimeout: UpstreamTimeout,
		TLSHandshakeTimeout: UpstreamTimeout, MaxIdlePerHost: 8})
}

// serverHeaders adds a server's stored headers to each request of its session and bounds the bodies read back.
// It also tells when the session's notifications/cancelled has been delivered: the SDK's client sends it in the
// background once a call's context ends, and closing the session before would lose it.
type serverHeaders struct {
	base       http.RoundTripper
	headers    map[string]string
	cancelSent chan struct{} // capacity 1
}

// cancelNoticeWait bounds the wait for a cancelled call's notice to reach its server.
const cancelNoticeWait = 5 * time.Second

// cancelNoticeMax bounds the bodies looked into for a cancellation notice, which is a few dozen bytes.
const cancelNoticeMax = 4 << 10

func (s *serverHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	for name, value := range s.headers {
		req.Header.Set(name, value)
	}
	cancelNotice := isCancelNotice(req)
	resp, err := s.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if cancelNotice {
		select {
		case s.cancelSent <- struct{}{}:
		default:
		}
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxMessageBytes}
	return resp, nil
}

// isCancelNotice reads a copy of a small POST body (GetBody) to see whether it is a notifications/cancelled.
func isCancelNotice(req *http.Request) bool {
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > cancelNoticeMax {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, cancelNoticeMax))
	return err == nil && bytes.Contains(b, []byte(`"notifications/cancelled"`))
}

// boundedBody fails a body past MaxMessageBytes instead of letting it grow without end.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("mcpgw: upstream response larger than %d bytes", MaxMessageBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// connect opens an MCP session with srv; ctx bounds the handshake only. cancelSent yields once the session
// has delivered a notifications/cancelled. The server's notifications go to relay (nil: dropped).
func (g *Gateway) connect(ctx context.Context, srv *storage.MCPServer, relay *relay) (session *mcp.ClientSession, cancelSent <-chan struct{}, err error) {
	opts := &mcp.ClientOptions{Logger: g.log}
	if relay != nil {
		opts.ProgressNotificationHandler = relay.progress
		opts.LoggingMessageHandler = relay.message
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway", Version: "1"}, opts)
	headers := &serverHeaders{base: g.transport, headers: srv.Headers, cancelSent: make(chan struct{}, 1)}
	// No redirect is followed: headers adds the server's headers to every request it sends, a redirected one to
	// another host included.
	transport := &mcp.StreamableClientTransport{
		Endpoint:             srv.URL,
		HTTPClient:           &http.Client{Transport: headers, CheckRedirect: refuseRedirect},
		MaxRetries:           -1,   // a session lives for one operation: a lost stream is that operation's error
		DisableStandaloneSSE: true, // what a server sends outside a call has no call to be relayed with (doc.go)
		MaxEventSize:         MaxMessageBytes,
	}
	ctx, cancel := context.WithTimeout(ctx, UpstreamTimeout)
	defer cancel()
	session, err = client.Connect(ctx, transport, nil)
	return session, headers.cancelSent, err
}

// refuseRedirect answers a redirect as the server's response, which the SDK's client takes for a failure.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// offered reports whether srv's lists let the tool through.
func offered(srv *storage.MCPServer, tool string) bool {
	if len(srv.AllowTools) > 0 && !slices.Contains(srv.AllowTools, tool) {
		return false
	}
	return !slices.Contains(srv.DenyTools, tool)
}

// listTools asks every server of the workspace at once; a server that fails is left out of the list.
func (g *Gateway) listTools(ctx context.Context, workspaceID string) (*mcp.ListToolsResult, error) {
	tools, err := fromEachServer(ctx, g, workspaceID, "tools/list", func(ctx context.Context, srv *storage.MCPServer, session *mcp.ClientSession) ([]*mcp.Tool, error) {
		all, err := g.serverTools(ctx, srv, session)
		if err != nil {
			return nil, err
		}
		var offeredTools []*mcp.Tool
		for _, tool := range all {
			if offered(srv, tool.Name) {
				renamed := *tool
				renamed.Name = srv.ID + toolSeparator + tool.Name
				offeredTools = append(offeredTools, &renamed)
			}
		}
		return offeredTools, nil
	})
	if err != nil {
		return nil, err
	}
	return &mcp.ListToolsResult{Tools: tools, Cacheable: perWorkspace}, nil
}

// serverTools is srv's whole tool list (at most MaxToolsPerServer, as the server names them), which it also
// remembers for checking the names of calls (toolnames.go).
func (g *Gateway) serverTools(ctx context.Context, srv *storage.MCPServer, session *mcp.ClientSession) ([]*mcp.Tool, error) {
	tools, err := take(g, srv, "tools", MaxToolsPerServer, pages(g, srv, "tools", func(cursor string) ([]*mcp.Tool, string, error) {
		res, err := session.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	}), func(tool *mcp.Tool) *mcp.Tool { return tool })
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(tools))
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	g.toolNames.remember(srv, names)
	return tools, nil
}

// fromEachServer asks every server of the workspace at once (the first MaxServers), each over a session of
// its own opened and listed within UpstreamTimeout, and joins their answers in the registry's order; a server
// that fails is left out (and logged). The answer is never nil.
func fromEachServer[T any](ctx context.Context, g *Gateway, workspaceID, method string,
	list func(context.Context, *storage.MCPServer, *mcp.ClientSession) ([]T, error)) ([]T, error) {
	release, err := g.fanouts.acquire(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	defer release()
	servers, err := g.registry.List(workspaceID)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: list servers: %w", err)
	}
	if len(servers) > MaxServers {
		g.log.Warn("MCP servers past the limit left out of "+method, "workspace_id", workspaceID,
			"servers", len(servers), "limit", MaxServers)
		servers = servers[:MaxServers]
	}
	perServer := make([][]T, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, UpstreamTimeout)
			defer cancel()
			var err error
			perServer[i], err = withPooledSession(ctx, g, srv, func(ctx context.Context, session *mcp.ClientSession) ([]T, error) {
				return list(ctx, srv, session)
			})
			if err != nil {
				perServer[i] = nil
				g.log.Warn("MCP server left out of "+method, "workspace_id", workspaceID, "mcp_server", srv.ID,
					"err", hideURL(err, srv.URL))
			}
		})
	}
	wg.Wait()
	out := []T{}
	for _, items := range perServer {
		out = append(out, items...)
	}
	return out, nil
}

// pages is a server's list, page after page as its cursors lead, at most MaxPagesPerList pages: a server
// whose cursors never end (empty pages, or a cursor handed back again) is not asked until the timeout.
func pages[T any](g *Gateway, srv *storage.MCPServer, what string, list func(cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for range MaxPagesPerList {
			items, next, err := list(cursor)
			if err != nil {
				var none T
				yield(none, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
		g.log.Warn("MCP server "+what+" past the page limit left out", "mcp_server", srv.ID, "limit", MaxPagesPerList)
	}
}

// take reads up to limit items of a server's list, following its cursors, each through rename (which drops
// an item by answering nil).
func take[T comparable](g *Gateway, srv *storage.MCPServer, what string, limit int, items iter.Seq2[T, error], rename func(T) T) ([]T, error) {
	var out []T
	var none T
	seen := 0
	for item, err := range items {
		if err != nil {
			return nil, err
		}
		if seen++; seen > limit {
			g.log.Warn("MCP server "+what+" past the limit left out", "mcp_server", srv.ID, "limit", limit)
			break
		}
		if item == none {
			continue
		}
		if item = rename(item); item != none {
			out = append(out, item)
		}
	}
	return out, nil
}

// resolve finds the server and bare tool a prefixed name stands for, among the tools the servers offer.
func (g *Gateway) resolve(workspaceID, name string) (*storage.MCPServer, string, error) {
	return g.resolvePrefixed(workspaceID, name, offered)
}

// resolvePrefixed finds the server and bare name a prefixed name (or URI) stands for, a bare name that accept
// lets through. Server IDs may hold the separator themselves, so every split is tried, shortest server ID
// first. An unknown name is a nil server.
func (g *Gateway) resolvePrefixed(workspaceID, name string, accept func(srv *storage.MCPServer, bare string) bool) (*storage.MCPServer, string, error) {
	for i := 0; ; {
		at := strings.Index(name[i:], toolSeparator)
		if at < 0 {
			return nil, "", nil
		}
		at += i
		srv, err := g.registry.Get(workspaceID, name[:at])
		switch {
		case err == nil:
			if bare := name[at+len(toolSeparator):]; bare != "" && accept(srv, bare) {
				return srv, bare, nil
			}
		case !errors.Is(err, storage.ErrNotFound):
			return nil, "", err
		}
		i = at + 1
	}
}

// upstreamProgressToken is the progress token of every call forwarded for a caller that asked for progress:
// a call has its session to itself, so the token needs no uniqueness.
const upstreamProgressToken = "gateway"

// relay passes the notifications an upstream sends during one call on to the caller's session: progress
// under the caller's token, log messages under the caller's level. At most MaxRelayedPerCall are relayed.
// Closing the upstream session waits for its handlers, so that every notification the server sent before its
// result reaches the caller before the result does.
type relay struct {
	progress func(context.Context, *mcp.ProgressNotificationClientRequest)
	message  func(context.Context, *mcp.LoggingMessageRequest)
}

// newRelay relays to the session of the caller's request, whose context ctx is: the SDK sends a notification
// made under it on that request's stream.
func (g *Gateway) newRelay(ctx context.Context, req *mcp.CallToolRequest, srv *storage.MCPServer) *relay {
	caller := req.Session
	if caller == nil {
		return nil
	}
	var callerToken any
	if req.Params != nil {
		callerToken = req.Params.GetProgressToken()
	}
	var relayed atomic.Int64
	take := func(kind string) bool {
		n := relayed.Add(1)
		if n == MaxRelayedPerCall+1 {
			g.log.Warn("MCP notifications past the limit dropped", "mcp_server", srv.ID, "kind", kind,
				"limit", MaxRelayedPerCall)
		}
		return n <= MaxRelayedPerCall
	}
	return &relay{
		progress: func(_ context.Context, n *mcp.ProgressNotificationClientRequest) {
			// Only this call's progress, and only to a caller that asked for it.
			if token, _ := n.Params.ProgressToken.(string); callerToken == nil || token != upstreamProgressToken || !take("progress") {
				return
			}
			caller.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: callerToken,
				Progress: n.Params.Progress, Total: n.Params.Total, Message: n.Params.Message})
		},
		message: func(_ context.Context, n *mcp.LoggingMessageRequest) {
			if !take("log") {
				return
			}
			// Named after the server, as its tools are: the caller's session hears from every server.
			logger := srv.ID
			if n.Params.Logger != "" {
				logger += toolSeparator + n.Params.Logger
			}
			caller.Log(ctx, &mcp.LoggingMessageParams{Level: n.Params.Level, Logger: logger, Data: n.Params.Data})
		},
	}
}

// hideURL is err with the server's url left out of its text: the url is sealed with the server's headers (its
// query or userinfo may hold a token), and the SDK's client quotes it in transport errors.
func hideURL(err error, rawURL string) error {
	err = netguard.RedactError(err)
	text := err.Error()
	hidden := text
	for _, u := range []string{rawURL, netguard.RedactURL(rawURL)} {
		if u != "" {
			hidden = strings.ReplaceAll(hidden, u, "<server url>")
		}
	}
	if hidden == text {
		return err
	}
	return &hiddenURLError{text: hidden, err: err}
}

type hiddenURLError struct {
	text string
	err  error
}

func (e *hiddenURLError) Error() string { return e.text }
func (e *hiddenURLError) Unwrap() error { return e.err }

// perWorkspace is the caching hint of every list the gateway answers: it is the caller's workspace's (private),
// and the registry may change at any time (a TTL of 0: stale at once).
var perWorkspace = mcp.Cacheable{CacheScope: "private"}

// codeRejected is the code of the SDK client's ErrRejected, a *jsonrpc.Error in which it wraps every failure of
// its transport (a refused connection, a dead stream): not an answer of the server's.
const codeRejected = -32005

// answeredError is the JSON-RPC error the server answered, nil when err is a failure to reach it.
func answeredError(err error) *jsonrpc.Error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code != codeRejected {
		return rpcErr
	}
	return nil
}

// forward sends the call to its server, once. A failure of the server (unreachable, gone mid-call) is the
// call's tool error; an error the server answers is passed on as it is. The server's progress (when the
// caller asked for it) and log messages (at the level the caller set) are relayed to the caller.
func (g *Gateway) forward(ctx context.Context, req *mcp.CallToolRequest, srv *storage.MCPServer, tool string, arguments json.RawMessage) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	ctx, cancel := context.WithTimeout(ctx, g.callTimeout)
	defer cancel()
	call := &mcp.CallToolParams{Name: tool}
	if len(arguments) > 0 {
		call.Arguments = arguments // the same JSON value (compacted, as any encoder does)
	}
	if !g.relays(req) {
		res, err := withPooledSession(ctx, g, srv, func(ctx context.Context, session *mcp.ClientSession) (*mcp.CallToolResult, error) {
			return session.CallTool(ctx, call)
		})
		if err != nil {
			return g.upstreamFailed(ctx, srv, name, err)
		}
		return res, nil
	}
	// Notifications are relayed: a session of the call's own, closed before the result is answered (pool.go).
	session, cancelSent, err := g.connect(ctx, srv, g.newRelay(ctx, req, srv))
	if err != nil {
		return g.upstreamFailed(ctx, srv, name, err)
	}
	defer session.Close()
	if req.Params.GetProgressToken() != nil {
		call.SetProgressToken(upstreamProgressToken)
	}
	g.askLogLevel(ctx, req, srv, session)
	res, err := session.CallTool(ctx, call)
	if err != nil && ctx.Err() != nil {
		// The caller cancelled (or the call timed out): the server hears of it before the session closes.
		select {
		case <-cancelSent:
		case <-time.After(cancelNoticeWait):
		}
	}
	if err != nil {
		return g.upstreamFailed(ctx, srv, name, err)
	}
	return res, nil
}

func (g *Gateway) upstreamFailed(ctx context.Context, srv *storage.MCPServer, name string, err error) (*mcp.CallToolResult, error) {
	if rpcErr := answeredError(err); rpcErr != nil {
		return nil, rpcErr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	err = hideURL(err, srv.URL)
	g.log.Warn("MCP tool call failed upstream", "mcp_server", srv.ID, "tool", name, "err", err)
	return nil, &UpstreamError{Server: srv.ID, Err: err}
}

// askLogLevel asks the server for log messages at the level the caller set, when it set one and the server
// offers them: without a level, a server sends none.
// relays reports whether the call's caller asked for notifications: progress (a token) or log messages (a level).
func (g *Gateway) relays(req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	return req.Params.GetProgressToken() != nil || g.logLevel(req.Session.ID()) != ""
}

func (g *Gateway) askLogLevel(ctx context.Context, req *mcp.CallToolRequest, srv *storage.MCPServer, session *mcp.ClientSession) {
	if req.Session == nil {
		return
	}
	level := g.logLevel(req.Session.ID())
	if init := session.InitializeResult(); level == "" || init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	if err := session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		g.log.Info("MCP server refused a log level: its messages are not relayed", "mcp_server", srv.ID,
			"err", netguard.RedactError(err))
	}
}

func invalidParams(message string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: message}
}
