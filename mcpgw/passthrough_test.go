package mcpgw

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/llmgw/gateway/storage"
)

// contentServer is an upstream with a resource, a resource template and a prompt, recording the URIs read
// and the prompts got as they reach it.
type contentServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	reads   []string
	prompts []string
	args    []map[string]string
}

func (s *contentServer) reached() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads) + len(s.prompts)
}

func newContentServer(t *testing.T, id string) *contentServer {
	t.Helper()
	cs := &contentServer{}
	server := mcp.NewServer(&mcp.Implementation{Name: id, Version: "1"}, nil)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cs.mu.Lock()
		cs.reads = append(cs.reads, req.Params.URI)
		cs.mu.Unlock()
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain",
			Text: id + " has " + req.Params.URI}}}, nil
	}
	server.AddResource(&mcp.Resource{URI: "file:///readme", Name: "readme", MIMEType: "text/plain"}, read)
	server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///docs/{name}", Name: "docs"}, read)
	server.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			cs.mu.Lock()
			cs.prompts = append(cs.prompts, req.Params.Name)
			cs.args = append(cs.args, req.Params.Arguments)
			cs.mu.Unlock()
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"] + " from " + id}}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	cs.srv = httptest.NewServer(h)
	t.Cleanup(cs.srv.Close)
	return cs
}

// Resources, templates and prompts of two servers are listed under their server's prefix; read and get reach
// the right server with the bare URI or name, once, including a URI the caller expanded from a prefixed
// template; another workspace sees only its own server's; a tools-only server is left out without error.
func TestResourcesAndPromptsAcrossServers(t *testing.T) {
	alpha, beta, gamma := newContentServer(t, "alpha"), newContentServer(t, "beta"), newContentServer(t, "gamma")
	toolsOnly := newUpstream(t, []string{"echo"}, nil)
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "alpha", WorkspaceID: "ws-one", URL: alpha.srv.URL})
	// allow_tools and deny_tools are about tools: beta's resources and prompts are all offered.
	reg.add(&storage.MCPServer{ID: "be__ta", WorkspaceID: "ws-one", URL: beta.srv.URL, AllowTools: []string{"none"}})
	reg.add(&storage.MCPServer{ID: "tools", WorkspaceID: "ws-one", URL: toolsOnly.srv.URL})
	reg.add(&storage.MCPServer{ID: "gamma", WorkspaceID: "ws-two", URL: gamma.srv.URL})
	front := newFront(t, reg)
	cs := connect(t, front, "gw-key-one-5d1f")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI+" "+r.Name)
	}
	if want := []string{"alpha__file:///readme readme", "be__ta__file:///readme readme"}; !slices.Equal(uris, want) || resources.NextCursor != "" {
		t.Errorf("resources %v (cursor %q), want %v", uris, resources.NextCursor, want)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tmpls []string
	for _, tm := range templates.ResourceTemplates {
		tmpls = append(tmpls, tm.URITemplate)
	}
	if want := []string{"alpha__file:///docs/{name}", "be__ta__file:///docs/{name}"}; !slices.Equal(tmpls, want) {
		t.Fatalf("templates %v, want %v", tmpls, want)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if want := []string{"alpha__greet", "be__ta__greet"}; !slices.Equal(names, want) {
		t.Errorf("prompts %v, want %v", names, want)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "alpha__file:///readme"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "alpha has file:///readme" ||
		read.Contents[0].URI != "alpha__file:///readme" {
		t.Errorf("read alpha's readme: %v, %+v", err, read)
	}
	// The caller expands the template as listed, prefix and all.
	expanded, err := uritemplate.MustNew(tmpls[1]).Expand(uritemplate.Values{"name": uritemplate.String("intro")})
	if err != nil {
		t.Fatal(err)
	}
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: expanded})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "beta has file:///docs/intro" {
		t.Errorf("read %s: %v, %+v", expanded, err, read)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "be__ta__greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "hello ann from beta" {
		t.Errorf("get be__ta__greet: %v, %+v", err, got)
	}
	alpha.mu.Lock()
	if !slices.Equal(alpha.reads, []string{"file:///readme"}) || len(alpha.prompts) != 0 {
		t.Errorf("alpha reached by %v %v", alpha.reads, alpha.prompts)
	}
	alpha.mu.Unlock()
	beta.mu.Lock()
	if !slices.Equal(beta.reads, []string{"file:///docs/intro"}) || !slices.Equal(beta.prompts, []string{"greet"}) ||
		beta.args[0]["who"] != "ann" {
		t.Errorf("beta reached by %v %v %v", beta.reads, beta.prompts, beta.args)
	}
	beta.mu.Unlock()

	other := connect(t, front, "gw-key-two-8c2e")
	if res, err := other.ListResources(ctx, nil); err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "gamma__file:///readme" {
		t.Errorf("ws-two resources: %v, %+v", err, res)
	}
	if res, err := other.ListPrompts(ctx, nil); err != nil || len(res.Prompts) != 1 || res.Prompts[0].Name != "gamma__greet" {
		t.Errorf("ws-two prompts: %v, %+v", err, res)
	}
}

// A URI or prompt name of no server of the caller's workspace is invalid params, and reaches no server.
func TestUnknownResourceOrPromptReachesNoServer(t *testing.T) {
	alpha, gamma := newContentServer(t, "alpha"), newContentServer(t, "gamma")
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "alpha", WorkspaceID: "ws-one", URL: alpha.srv.URL})
	reg.add(&storage.MCPServer{ID: "gamma", WorkspaceID: "ws-two", URL: gamma.srv.URL})
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tests := []struct{ name, target string }{
		{"no prefix", "file:///readme"},
		{"unknown server", "nope__file:///readme"},
		{"empty bare", "alpha__"},
		{"empty server", "__file:///readme"},
		{"other workspace", "gamma__file:///readme"},
		{"one underscore", "alpha_file:///readme"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rpcErr *jsonrpc.Error
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.target}); !errors.As(err, &rpcErr) ||
				rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("read %q: %v", tc.target, err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.target}); !errors.As(err, &rpcErr) ||
				rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("get %q: %v", tc.target, err)
			}
		})
	}
	if alpha.reached() != 0 || gamma.reached() != 0 {
		t.Errorf("reached: alpha %d, gamma %d", alpha.reached(), gamma.reached())
	}
}
