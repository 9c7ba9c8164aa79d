package mcpgw

//lint:file-ignore SA1019 the SDK deprecates MCP logging from protocol 2026-07-28 on; issue 22 asks for it to be relayed meanwhile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/storage"
)

const (
	// MaxServers bounds the servers of a workspace that tools/list asks; the others are left out (and logged).
	MaxServers = 64
	// MaxToolsPerServer bounds the tools taken from one server's list.
	MaxToolsPerServer = 1000
	// MaxListedPerServer bounds the resources, resource templates or prompts taken from one server's list,
	// following its cursors.
	MaxListedPerServer = 1000
	// MaxRelayedPerCall bounds the notifications (progress, log messages) of one upstream call relayed to the
	// caller; the rest are dropped.
	MaxRelayedPerCall = 1000
	// UpstreamTimeout bounds connecting to a server (its initialize handshake) and listing its tools.
	UpstreamTimeout = 10 * time.Second
	// MaxMessageBytes bounds a response body or server-sent event from an upstream server.
	MaxMessageBytes = 16 << 20
	// MaxRequestBytes bounds a caller's request body.
	MaxRequestBytes = 4 << 20
	// MaxBatchMessages bounds the messages of a JSON-RPC batch (protocol 2025-03-26, or a request without
	// Mcp-Protocol-Version): the SDK runs a batch's calls at once, and each list asks every server.
	MaxBatchMessages = 32
	// MaxPagesPerList bounds the pages asked of one server's list, however many cursors it hands out.
	MaxPagesPerList = 100

	// toolSeparator joins a server's id and its tool's, prompt's or resource's name (a resource's URI) in the
	// aggregated lists.
	toolSeparator = "__"
)

// Registry is where the workspace's upstream servers are read: storage.MCPServerStore. Get answers
// storage.ErrNotFound for an unknown server.
type Registry interface {
	Get(workspaceID, id string) (*storage.MCPServer, error)
	List(workspaceID string) ([]*storage.MCPServer, error)
}

// Options configure a Gateway. The zero value is usable.
type Options struct {
	// HostPolicy decides which addresses upstream servers may have, checked at every dial. Default: loopback
	// allowed, private ranges refused (netguard.Policy's zero value).
	HostPolicy *netguard.Policy
	// Logger receives upstream failures. Default slog.Default().
	Logger *slog.Logger
	// CallTimeout bounds one tools/call forwarded upstream. Default 5 minutes.
	CallTimeout time.Duration
	// SessionTimeout closes a caller's session idle this long. Default 30 minutes.
	SessionTimeout time.Duration
	// Transport, when set, replaces the upstream transport that enforces HostPolicy (tests).
	Transport http.RoundTripper
	// SessionsPerWorkspace bounds the open sessions of one workspace: a new session past it is refused (429)
	// until one is closed (DELETE) or idles out. Default DefaultSessionsPerWorkspace.
	SessionsPerWorkspace int
	// Intercept, when set, wraps every tools/call that names a tool the workspace offers (see Interceptor).
	Intercept Interceptor
}

// DefaultSessionsPerWorkspace is Options.SessionsPerWorkspace's default.
const DefaultSessionsPerWorkspace = 256

// Gateway is the /mcp endpoint: an MCP server whose tools are the workspace's upstream servers' tools.
type Gateway struct {
	registry    Registry
	log         *slog.Logger
	transport   http.RoundTripper // to the upstream servers, guarded by the address policy
	callTimeout time.Duration
	handler     http.Handler // the SDK's Streamable HTTP handler behind its bearer middleware
	server      *mcp.Server  // its sessions are the live ones
	intercept   Interceptor
	pool        *sessionPool // upstream sessions kept between operations (pool.go)
	toolNames   toolLists    // the servers' tool names, to check calls' (toolnames.go)
	fanouts     fanouts      // lists over every server running, per workspace (fanout.go)

	// base is the parent of every request's context: Close cancels it. The SDK detaches its sessions from the
	// requests' contexts, so the calls of a session are tied to their request's instead (aggregate).
	base context.Context
	stop context.CancelFunc

	sessionsPerWorkspace int
	sessionsMu           sync.Mutex
	sessions             map[string]string           // session ID → workspace, of the sessions this Gateway opened
	opening              map[string]int              // workspace → sessions being opened (reserveSession)
	logLevels            map[string]mcp.LoggingLevel // session ID → the level its caller set (logging/setLevel)
}

// New builds the endpoint over the registry.
func New(registry Registry, opts Options) *Gateway {
	if opts.HostPolicy == nil {
		opts.HostPolicy = &netguard.Policy{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 5 * time.Minute
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.Transport == nil {
		opts.Transport = newUpstreamTransport(opts.HostPolicy)
	}
	if opts.SessionsPerWorkspace <= 0 {
		opts.SessionsPerWorkspace = DefaultSessionsPerWorkspace
	}
	g := &Gateway{registry: registry, log: opts.Logger, transport: opts.Transport, callTimeout: opts.CallTimeout,
		sessionsPerWorkspace: opts.SessionsPerWorkspace, sessions: map[string]string{}, opening: map[string]int{}, intercept: opts.Intercept,
		logLevels: map[string]mcp.LoggingLevel{}, pool: newSessionPool()}
	g.base, g.stop = context.WithCancel(context.Background())
	// The capabilities are declared: the tools, resources and prompts are the upstreams', answered by the
	// middleware, never registered with the server; logging is the upstreams' messages, relayed during a call.
	// No list-changed notices and no subscriptions: there is no standalone stream to send them on (doc.go).
	server := mcp.NewServer(&mcp.Implementation{Name: "gateway", Title: "LLM gateway MCP endpoint", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{}, Prompts: &mcp.PromptCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
			Logger: opts.Logger})
	server.AddReceivingMiddleware(g.aggregate)
	g.server = server
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			// An answer is an event stream, so that a call's notifications reach the caller before its result.
			JSONResponse:               false,
			SessionTimeout:             opts.SessionTimeout,
			DisableLocalhostProtection: true, // see doc.go: every request carries a gateway key
			MaxRequestBodyBytes:        MaxRequestBytes,
			Logger:                     opts.Logger,
		})
	g.handler = auth.RequireBearerToken(verifyWorkspace, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	return g
}

// callerKey is the context key of the request's *Caller, set by Serve for verifyWorkspace.
type callerKey struct{}

// Caller is who sent an /mcp request, as the HTTP front authenticated it. It reaches the Interceptor with each
// tool call; it is read-only once given to Serve.
type Caller struct {
	WorkspaceID string
	APIKeyID    string
	// Config is the request's x-gateway-config as sent (a saved config's ID or a JSON object), "" for none.
	Config string
	// Metadata is the request's x-gateway-metadata.
	Metadata map[string]string
	TraceID  string
}

// placeholderBearer stands in for the caller's credentials in the request the SDK sees: its bearer middleware
// insists on an Authorization header, and the real key was judged before Serve.
const placeholderBearer = "Bearer authenticated-by-gateway"

// verifyWorkspace makes the workspace the session's user, so that the SDK refuses another workspace's request
// naming the session, and hands the request's Caller and context to its handlers. The TokenInfo is made for
// each HTTP request and travels with its messages only, which is what makes it the carrier of both.
func verifyWorkspace(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	caller, _ := ctx.Value(callerKey{}).(*Caller)
	if caller == nil || caller.WorkspaceID == "" {
		return nil, fmt.Errorf("%w: no workspace", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: caller.WorkspaceID, Extra: map[string]any{callerExtra: caller, requestExtra: ctx}}, nil
}

const (
	// callerExtra is the TokenInfo.Extra key of the request's *Caller.
	callerExtra = "gateway.caller"
	// requestExtra is the TokenInfo.Extra key of the HTTP request's context (Serve's).
	requestExtra = "gateway.request"
)

// Serve answers an MCP request of a caller authenticated by the HTTP front. An answer that is an event stream
// needs w to be an http.Flusher for its events to leave before its end. The request ends early when r's
// context does (the caller went away) or when Close is called.
func (g *Gateway) Serve(w http.ResponseWriter, r *http.Request, caller *Caller) {
	workspaceID := caller.WorkspaceID
	if g.base.Err() != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"the MCP endpoint is shutting down","type":"server_error","code":"shutting_down","param":null}}`)
		return
	}
	if r.Method == http.MethodGet {
		// The optional server-to-client stream is not offered (doc.go).
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "this endpoint offers no server-sent event stream: send requests with POST", http.StatusMethodNotAllowed)
		return
	}
	// A context of the Gateway's, not the request's: the SDK keeps the first request's context values for the
	// session's life, and the front's context may be recycled once the answer is written. It ends with the
	// request's all the same, so that a caller gone cancels the calls it made.
	ctx, cancel := context.WithTimeout(context.WithValue(g.base, callerKey{}, caller), g.callTimeout+UpstreamTimeout)
	defer cancel()
	defer context.AfterFunc(r.Context(), cancel)()
	r = r.Clone(ctx)
	for name := range r.Header {
		if strings.HasPrefix(name, "X-Gateway-") || strings.HasPrefix(name, "X-Portkey-") {
			r.Header.Del(name)
		}
	}
	r.Header.Set("Authorization", placeholderBearer)
	if r.Method == http.MethodPost && !g.boundedBatch(w, r) {
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		g.handler.ServeHTTP(w, r)
		return
	}
	// A request without a session opens one: bounded per workspace, since each holds memory until it idles out.
	// The place is taken before the SDK opens the session, so that concurrent initializes cannot all pass.
	if !g.reserveSession(workspaceID) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"error":{"message":"this workspace has %d open MCP sessions, the most it may: close one (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to expire","type":"rate_limit_error","code":"too_many_sessions","param":null}}`,
			g.sessionsPerWorkspace)
		return
	}
	// The reservation ends when the answer's headers are written, the session (if the answer opened one)
	// counting from then on: the caller may open another as soon as it has read them, before the stream ends.
	// The SDK writes them on a goroutine of its session's, hence the lock.
	reserved := true
	settle := func(id string) {
		g.sessionsMu.Lock()
		defer g.sessionsMu.Unlock()
		if id != "" {
			g.sessions[id] = workspaceID
		}
		if reserved {
			reserved = false
			if g.opening[workspaceID]--; g.opening[workspaceID] <= 0 {
				delete(g.opening, workspaceID)
			}
		}
	}
	defer settle("") // an answer without headers written
	g.handler.ServeHTTP(&sessionOpening{ResponseWriter: w, opened: settle}, r)
}

// boundedBatch refuses a JSON-RPC batch of more than MaxBatchMessages (400) and reports whether the request
// goes on; r's body is read whole (MaxRequestBytes at most, the SDK answers a longer one) and put back.
func (g *Gateway) boundedBatch(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	r.Body.Close()
	if err != nil {
		http.Error(w, "failed to read the request body", http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var batch []json.RawMessage
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '[' || len(body) > MaxRequestBytes ||
		json.Unmarshal(body, &batch) != nil || len(batch) <= MaxBatchMessages {
		return true // the SDK judges all else
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"error":{"message":"a JSON-RPC batch holds %d messages, more than the %d allowed: send them in smaller batches or one by one","type":"invalid_request_error","code":"batch_too_large","param":"body"}}`,
		len(batch), MaxBatchMessages)
	return false
}

// reserveSession takes a place for a session the workspace is about to open, and reports whether there was
// one: its open sessions and those being opened are fewer than the bound.
func (g *Gateway) reserveSession(workspaceID string) bool {
	live := map[string]bool{}
	for ss := range g.server.Sessions() {
		live[ss.ID()] = true
	}
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	n := g.opening[workspaceID]
	for id, ws := range g.sessions {
		switch {
		case !live[id]:
			delete(g.sessions, id)
			delete(g.logLevels, id)
		case ws == workspaceID:
			n++
		}
	}
	if n >= g.sessionsPerWorkspace {
		return false
	}
	g.opening[workspaceID]++
	return true
}

// sessionOpening tells opened the ID of the session an answer opens ("" for none), when the answer's headers
// are written.
type sessionOpening struct {
	http.ResponseWriter
	opened func(id string)
	noted  bool
}

func (s *sessionOpening) note() {
	if !s.noted {
		s.noted = true
		s.opened(s.Header().Get("Mcp-Session-Id"))
	}
}

func (s *sessionOpening) WriteHeader(status int) {
	s.note()
	s.ResponseWriter.WriteHeader(status)
}

func (s *sessionOpening) Write(p []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(p)
}

func (s *sessionOpening) Flush() { s.FlushError() }

func (s *sessionOpening) FlushError() error {
	s.note()
	return http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *sessionOpening) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Close ends every request being served, and the calls their sessions run, and refuses the requests that come
// after it (503). It closes the sessions in the background: each waits for its calls to return, which they do
// once their upstream has been told of the cancellation. Close is idempotent.
func (g *Gateway) Close() {
	g.stop()
	g.pool.close()
	for ss := range g.server.Sessions() {
		go ss.Close()
	}
}

// aggregate answers tools/*, resources/* and prompts/* from the upstream servers, and notes the log level a
// caller sets; every other method is the SDK's.
func (g *Gateway) aggregate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
			"prompts/list", "prompts/get":
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			if params, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && err == nil && params != nil {
				g.setLogLevel(req.GetSession().ID(), params.Level)
			}
			return res, err
		default:
			return next(ctx, method, req)
		}
		caller := callerOf(req)
		if caller == nil {
			return nil, errors.New("mcpgw: request without a workspace")
		}
		// The SDK runs a session's calls on contexts of the session's: without the request's, a call whose
		// caller has gone (or a Close) would run on to its timeout.
		if request, _ := tokenExtra(req)[requestExtra].(context.Context); request != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(request, cancel)()
		}
		switch req := req.(type) {
		case *mcp.ListToolsRequest:
			return g.listTools(ctx, caller.WorkspaceID)
		case *mcp.CallToolRequest:
			if req.Params == nil {
				return nil, invalidParams("tools/call without params")
			}
			return g.callTool(ctx, caller, req)
		case *mcp.ListResourcesRequest:
			return g.listResources(ctx, caller.WorkspaceID)
		case *mcp.ListResourceTemplatesRequest:
			return g.listResourceTemplates(ctx, caller.WorkspaceID)
		case *mcp.ReadResourceRequest:
			return g.readResource(ctx, caller.WorkspaceID, req.Params)
		case *mcp.ListPromptsRequest:
			return g.listPrompts(ctx, caller.WorkspaceID)
		case *mcp.GetPromptRequest:
			return g.getPrompt(ctx, caller.WorkspaceID, req.Params)
		}
		return nil, invalidParams(method + " with malformed params")
	}
}

// tokenExtra is the request's TokenInfo.Extra (verifyWorkspace), nil when it has none.
func tokenExtra(req mcp.Request) map[string]any {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		return extra.TokenInfo.Extra
	}
	return nil
}

// callerOf is the Caller of the request (verifyWorkspace), nil when it has none.
func callerOf(req mcp.Request) *Caller {
	c, _ := tokenExtra(req)[callerExtra].(*Caller)
	return c
}

// setLogLevel notes the level a session's caller asked for: its upstream calls ask their server for the same.
func (g *Gateway) setLogLevel(sessionID string, level mcp.LoggingLevel) {
	if sessionID == "" {
		return
	}
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	if _, ok := g.sessions[sessionID]; ok { // a session of this Gateway: forgotten with it (reserveSession)
		g.logLevels[sessionID] = level
	}
}

// logLevel is the level the session's caller set, "" for none.
func (g *Gateway) logLevel(sessionID string) mcp.LoggingLevel {
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	return g.logLevels[sessionID]
}
