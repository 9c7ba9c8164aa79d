package mcpgw

import (
	"context"
	"errors"
	"fmt"
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
	// UpstreamTimeout bounds connecting to a server (its initialize handshake) and listing its tools.
	UpstreamTimeout = 10 * time.Second
	// MaxMessageBytes bounds a response body or server-sent event from an upstream server.
	MaxMessageBytes = 16 << 20
	// MaxRequestBytes bounds a caller's request body.
	MaxRequestBytes = 4 << 20

	// toolSeparator joins a server's id and its tool's name in the aggregated list.
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

	sessionsPerWorkspace int
	sessionsMu           sync.Mutex
	sessions             map[string]string // session ID → workspace, of the sessions this Gateway opened
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
		sessionsPerWorkspace: opts.SessionsPerWorkspace, sessions: map[string]string{}, intercept: opts.Intercept}
	// The tools capability is declared: the tools are the upstreams', answered by the middleware, never
	// registered with the server. No list-changed notices: nothing is streamed to the caller (doc.go).
	server := mcp.NewServer(&mcp.Implementation{Name: "gateway", Title: "LLM gateway MCP endpoint", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}, Logger: opts.Logger})
	server.AddReceivingMiddleware(g.aggregate)
	g.server = server
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			JSONResponse:               true, // see doc.go: the HTTP front cannot stream
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
// naming the session, and hands the request's Caller to its handlers.
func verifyWorkspace(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	caller, _ := ctx.Value(callerKey{}).(*Caller)
	if caller == nil || caller.WorkspaceID == "" {
		return nil, fmt.Errorf("%w: no workspace", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: caller.WorkspaceID, Extra: map[string]any{callerExtra: caller}}, nil
}

// callerExtra is the TokenInfo.Extra key of the request's *Caller.
const callerExtra = "gateway.caller"

// Serve answers an MCP request of a caller authenticated by the HTTP front.
func (g *Gateway) Serve(w http.ResponseWriter, r *http.Request, caller *Caller) {
	workspaceID := caller.WorkspaceID
	if r.Method == http.MethodGet {
		// The optional server-to-client stream is not offered (doc.go).
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "this endpoint offers no server-sent event stream: send requests with POST", http.StatusMethodNotAllowed)
		return
	}
	// A fresh context: the request's own may be the HTTP front's, recycled once the answer is written, and
	// the SDK keeps the first request's context values for the session's life.
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), callerKey{}, caller),
		g.callTimeout+UpstreamTimeout)
	defer cancel()
	r = r.Clone(ctx)
	for name := range r.Header {
		if strings.HasPrefix(name, "X-Gateway-") || strings.HasPrefix(name, "X-Portkey-") {
			r.Header.Del(name)
		}
	}
	r.Header.Set("Authorization", placeholderBearer)
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		g.handler.ServeHTTP(w, r)
		return
	}
	// A request without a session opens one: bounded per workspace, since each holds memory until it idles out.
	if g.openSessions(workspaceID) >= g.sessionsPerWorkspace {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"error":{"message":"this workspace has %d open MCP sessions, the most it may: close one (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to expire","type":"rate_limit_error","code":"too_many_sessions","param":null}}`,
			g.sessionsPerWorkspace)
		return
	}
	g.handler.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		g.sessionsMu.Lock()
		g.sessions[id] = workspaceID
		g.sessionsMu.Unlock()
	}
}

// openSessions counts the workspace's live sessions, forgetting those the SDK has closed (deleted or idle).
func (g *Gateway) openSessions(workspaceID string) int {
	live := map[string]bool{}
	for ss := range g.server.Sessions() {
		live[ss.ID()] = true
	}
	g.sessionsMu.Lock()
	defer g.sessionsMu.Unlock()
	n := 0
	for id, ws := range g.sessions {
		switch {
		case !live[id]:
			delete(g.sessions, id)
		case ws == workspaceID:
			n++
		}
	}
	return n
}

// aggregate answers tools/list and tools/call from the upstream servers; every other method is the SDK's.
func (g *Gateway) aggregate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "tools/call":
		default:
			return next(ctx, method, req)
		}
		caller := callerOf(req)
		if caller == nil {
			return nil, errors.New("mcpgw: request without a workspace")
		}
		if method == "tools/list" {
			return g.listTools(ctx, caller.WorkspaceID)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return nil, invalidParams("tools/call without params")
		}
		return g.callTool(ctx, caller, call)
	}
}

// callerOf is the Caller of the request (verifyWorkspace), nil when it has none.
func callerOf(req mcp.Request) *Caller {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		c, _ := extra.TokenInfo.Extra[callerExtra].(*Caller)
		return c
	}
	return nil
}
