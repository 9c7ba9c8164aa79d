package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
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
// has delivered a notifications/cancelled.
func (g *Gateway) connect(ctx context.Context, srv *storage.MCPServer) (session *mcp.ClientSession, cancelSent <-chan struct{}, err error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway", Version: "1"}, &mcp.ClientOptions{Logger: g.log})
	headers := &serverHeaders{base: g.transport, headers: srv.Headers, cancelSent: make(chan struct{}, 1)}
	transport := &mcp.StreamableClientTransport{
		Endpoint:             srv.URL,
		HTTPClient:           &http.Client{Transport: headers},
		MaxRetries:           -1,   // a session lives for one operation: a lost stream is that operation's error
		DisableStandaloneSSE: true, // nothing the server would send unasked is relayed (doc.go)
		MaxEventSize:         MaxMessageBytes,
	}
	ctx, cancel := context.WithTimeout(ctx, UpstreamTimeout)
	defer cancel()
	session, err = client.Connect(ctx, transport, nil)
	return session, headers.cancelSent, err
}

// offered reports whether srv's lists let the tool through.
func offered(srv *storage.MCPServer, tool string) bool {
	if len(srv.AllowTools) > 0 && !slices.Contains(srv.AllowTools, tool) {
		return false
	}
	return !slices.Contains(srv.DenyTools, tool)
}

// listTools asks every server of the workspace at once; a server that fails is left out of the list.
func (g *Gateway) listTools(ctx context.Context, workspaceID string) (*mcp.ListToolsResult, error) {
	servers, err := g.registry.List(workspaceID)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: list servers: %w", err)
	}
	if len(servers) > MaxServers {
		g.log.Warn("MCP servers past the limit left out of tools/list", "workspace_id", workspaceID,
			"servers", len(servers), "limit", MaxServers)
		servers = servers[:MaxServers]
	}
	perServer := make([][]*mcp.Tool, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() {
			tools, err := g.serverTools(ctx, srv)
			if err != nil {
				g.log.Warn("MCP server left out of tools/list", "workspace_id", workspaceID, "mcp_server", srv.ID,
					"err", netguard.RedactError(err))
			}
			perServer[i] = tools
		})
	}
	wg.Wait()
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, tools := range perServer {
		out.Tools = append(out.Tools, tools...)
	}
	return out, nil
}

// serverTools is srv's offered tools, renamed "<serverId>__<tool>".
func (g *Gateway) serverTools(ctx context.Context, srv *storage.MCPServer) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, UpstreamTimeout)
	defer cancel()
	session, _, err := g.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	var tools []*mcp.Tool
	seen := 0
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if seen++; seen > MaxToolsPerServer {
			g.log.Warn("MCP server tools past the limit left out", "mcp_server", srv.ID, "limit", MaxToolsPerServer)
			break
		}
		if tool == nil || !offered(srv, tool.Name) {
			continue
		}
		renamed := *tool
		renamed.Name = srv.ID + toolSeparator + tool.Name
		tools = append(tools, &renamed)
	}
	return tools, nil
}

// resolve finds the server and bare tool a prefixed name stands for. Server IDs may hold the separator
// themselves, so every split is tried, shortest server ID first.
func (g *Gateway) resolve(workspaceID, name string) (*storage.MCPServer, string, error) {
	for i := 0; ; {
		at := strings.Index(name[i:], toolSeparator)
		if at < 0 {
			return nil, "", nil
		}
		at += i
		srv, err := g.registry.Get(workspaceID, name[:at])
		switch {
		case err == nil:
			if tool := name[at+len(toolSeparator):]; tool != "" && offered(srv, tool) {
				return srv, tool, nil
			}
		case !errors.Is(err, storage.ErrNotFound):
			return nil, "", err
		}
		i = at + 1
	}
}

// forward sends the call to its server, once. A failure of the server (unreachable, gone mid-call) is the
// call's tool error; an error the server answers is passed on as it is.
func (g *Gateway) forward(ctx context.Context, srv *storage.MCPServer, tool, name string, arguments json.RawMessage) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, g.callTimeout)
	defer cancel()
	session, cancelSent, err := g.connect(ctx, srv)
	if err != nil {
		return g.upstreamFailed(ctx, srv, name, err)
	}
	defer session.Close()
	call := &mcp.CallToolParams{Name: tool}
	if len(arguments) > 0 {
		call.Arguments = arguments // the same JSON value (compacted, as any encoder does)
	}
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
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return nil, rpcErr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	err = netguard.RedactError(err)
	g.log.Warn("MCP tool call failed upstream", "mcp_server", srv.ID, "tool", name, "err", err)
	return &mcp.CallToolResult{IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("MCP server %s failed: %v", srv.ID, err)}}}, nil
}

func invalidParams(message string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: message}
}
