package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/storage"
)

// Upstream MCP servers of the caller's workspace (the registry the /mcp endpoint aggregates). A body is a
// bootstrap file's "mcp_servers" item without "workspace": {id, url, headers, allow_tools, deny_tools,
// cost_per_call}, read by ReadMCPServer, which the bootstrap file's entries go through too; every write path
// also runs CheckMCPServer, so that all of them accept and refuse the same things.
//
// Decisions:
//   - An id is unique in its workspace; another workspace's id is as unknown as a missing one (404).
//   - headers carry the server's credentials: they are sealed at rest and never shown (MaskMCPHeaders). PUT
//     replaces the whole record; a header value sent back as it reads keeps the stored value, as a provider's
//     api_key does.
//   - The url passes the custom-host address policy when it is written, as far as it can be checked without
//     resolving: an IP literal the policy refuses (metadata, link-local, private unless allowed) is a 400 naming
//     "url". A host name is not resolved here (its addresses may change); the /mcp path checks the addresses it
//     connects to, as custom hosts are checked.
//   - Tool names are kept as given; what they match is the /mcp path's business.
//   - cost_per_call (USD, 0 to MaxMCPCostPerCall, default 0) is what each forwarded tools/call costs the cost
//     budgets that match it (usage-limit policies naming mcp_server or tool; ratelimit.Budgets.ReserveTool).

// Bounds of an MCP server's fields.
const (
	MaxMCPServerURL       = 2048
	MaxMCPHeaders         = 32
	MaxMCPHeaderValue     = 8 << 10
	MaxMCPToolNames       = 1000
	MaxMCPToolNameLength  = 128
	MaxMCPCostPerCall     = 1000 // USD: a bound that catches a price typed in cents or micro-dollars
	maskedMCPHeaderPrefix = "…"
)

// refusedMCPHeaders are the headers a server's entry may not set: the transport's own (framing, the session,
// content negotiation) and hop-by-hop ones. The gateway's x-gateway-* headers are refused too (mcpHeaderRefused).
var refusedMCPHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Upgrade": true, "Content-Type": true, "Accept": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true,
}

// ReadMCPServer reads an MCP server's entry from o (a bootstrap file's "mcp_servers" item, or the body of
// POST /v1/mcp-servers) and checks its fields as CheckMCPServer does, but for the address policy. Problems go
// to o.P. It reads neither "workspace" nor calls o.Finish: the caller reads what else it allows, then finishes.
func ReadMCPServer(o *jsoncheck.Object) *storage.MCPServer {
	srv := readMCPServerShape(o)
	checkMCPServerFields(srv, func(field, format string, args ...any) { o.P.Add(o.At(field), format, args...) })
	return srv
}

// readMCPServerShape reads the entry's fields, checking only their JSON types.
func readMCPServerShape(o *jsoncheck.Object) *storage.MCPServer {
	srv := &storage.MCPServer{ID: o.Str("id", false), URL: o.Str("url", false)}
	if h := o.Sub("headers", false); h != nil {
		srv.Headers = make(map[string]string, len(h.Fields))
		for name := range h.Fields {
			if v := h.Str(name, false); jsoncheck.Kind(h.Fields[name]) == "string" {
				srv.Headers[name] = v
			}
		}
	}
	srv.AllowTools = readStrings(o, "allow_tools")
	srv.DenyTools = readStrings(o, "deny_tools")
	srv.CostPerCall, _ = o.Number("cost_per_call", false)
	return srv
}

// readStrings reads an optional array of strings.
func readStrings(o *jsoncheck.Object, name string) []string {
	items := o.Array(name, false)
	if len(items) > MaxMCPToolNames {
		o.P.Add(o.At(name), "has %d names, more than the limit of %d", len(items), MaxMCPToolNames)
		return nil
	}
	var out []string
	for i, raw := range items {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			o.P.Add(fmt.Sprintf("%s[%d]", o.At(name), i), "must be a string, not %s", jsoncheck.Kind(raw))
			continue
		}
		out = append(out, s)
	}
	return out
}

// checkMCPServerFields checks srv's fields but for the address policy, reporting each problem with add (field
// is a path relative to the entry: "url", "headers.Authorization", "allow_tools[2]", "cost_per_call"), and puts
// the headers under their canonical names.
func checkMCPServerFields(srv *storage.MCPServer, add func(field, format string, args ...any)) {
	switch {
	case srv.ID == "":
		add("id", "is required")
	case !storage.ValidID(srv.ID):
		add("id", "%q is not a valid identifier (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", clip(srv.ID))
	case strings.Contains(srv.ID, "__"):
		// "__" joins a server's ID and its tools' names at /mcp: an ID holding it could hide another's tools.
		add("id", "%q holds \"__\", which separates a server's id from its tool names at /mcp; use another id", clip(srv.ID))
	}
	if msg := mcpURLProblem(srv.URL); msg != "" {
		add("url", "%s", msg)
	}
	if c := srv.CostPerCall; !(c >= 0 && c <= MaxMCPCostPerCall) { // NaN too
		add("cost_per_call", "must be a number of USD from 0 to %d, not %v", MaxMCPCostPerCall, c)
	}
	if len(srv.Headers) > MaxMCPHeaders {
		add("headers", "has %d headers, more than the limit of %d", len(srv.Headers), MaxMCPHeaders)
	} else if len(srv.Headers) > 0 {
		canonical := make(map[string]string, len(srv.Headers))
		given := map[string]string{}
		names := make([]string, 0, len(srv.Headers))
		for name := range srv.Headers {
			names = append(names, name)
		}
		slices.Sort(names) // problems in a stable order
		for _, name := range names {
			value := srv.Headers[name]
			field := "headers." + name
			if msg := mcpHeaderProblem(name, value); msg != "" {
				add(field, "%s", msg)
				continue
			}
			c := textproto.CanonicalMIMEHeaderKey(name)
			if first, dup := given[c]; dup {
				add(field, "is the header %s again (already given as %q): header names are not case-sensitive", c, first)
				continue
			}
			given[c] = name
			canonical[c] = value
		}
		srv.Headers = canonical
	} else {
		srv.Headers = nil
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"allow_tools", srv.AllowTools}, {"deny_tools", srv.DenyTools}} {
		if len(list.names) > MaxMCPToolNames {
			add(list.field, "has %d names, more than the limit of %d", len(list.names), MaxMCPToolNames)
			continue
		}
		for i, name := range list.names {
			switch {
			case name == "":
				add(fmt.Sprintf("%s[%d]", list.field, i), "must not be empty")
			case len(name) > MaxMCPToolNameLength:
				add(fmt.Sprintf("%s[%d]", list.field, i), "is %d bytes long, more than the limit of %d", len(name), MaxMCPToolNameLength)
			case strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
				add(fmt.Sprintf("%s[%d]", list.field, i), "must not hold control characters")
			}
		}
	}
}

// mcpURLProblem says what is wrong with a server's url ("" for nothing), showing it with its userinfo
// redacted.
func mcpURLProblem(raw string) string {
	if raw == "" {
		return "is required: the server's Streamable HTTP endpoint, such as https://mcp.example.com/mcp"
	}
	if len(raw) > MaxMCPServerURL {
		return fmt.Sprintf("is %d bytes long, more than the limit of %d", len(raw), MaxMCPServerURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q must be an http or https URL, such as https://mcp.example.com/mcp", clip(netguard.RedactURL(raw)))
	}
	return ""
}

// mcpHeaderProblem says what is wrong with a header of a server's entry ("" for nothing). The value is never
// shown: it is a credential.
func mcpHeaderProblem(name, value string) string {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return "is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)"
	}
	c := textproto.CanonicalMIMEHeaderKey(name)
	if refusedMCPHeaders[c] || strings.HasPrefix(c, "X-Gateway-") || strings.HasPrefix(c, "X-Portkey-") {
		return fmt.Sprintf("%s cannot be set: the gateway sets it, or it is the gateway's own", c)
	}
	switch {
	case value == "":
		return "must not be empty"
	case len(value) > MaxMCPHeaderValue:
		return fmt.Sprintf("is %d bytes long, more than the limit of %d", len(value), MaxMCPHeaderValue)
	case strings.HasPrefix(value, maskedMCPHeaderPrefix):
		return "reads as a masked value; a masked value keeps the stored one only when it is this header's, as it reads: send the value itself"
	case strings.IndexFunc(value, func(r rune) bool { return (r < ' ' && r != '\t') || r > '~' }) >= 0:
		return "must be printable ASCII, on one line"
	}
	return ""
}

// isTokenChar reports whether r may be in a header name (RFC 9110 tchar).
func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// clip shortens s for a message, so that a huge input does not make a huge answer.
func clip(s string) string {
	const most = 200
	if len(s) > most {
		return s[:most] + "..."
	}
	return s
}

// errNotResolvedHere stands for the answer of a resolver that does not resolve: a server's url is checked
// when it is written only as far as it can be without DNS.
var errNotResolvedHere = errors.New("host names are checked when the gateway connects")

type literalsOnly struct{}

func (literalsOnly) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errNotResolvedHere
}

// CheckMCPServer checks srv as every write path does: its fields (ReadMCPServer's checks), then its url's
// address against the plane's host policy. The error is a *gwerr.Error 400 naming the first wrong field.
// It puts srv's headers under their canonical names.
func (p *Plane) CheckMCPServer(ctx context.Context, srv *storage.MCPServer) error {
	var first *gwerr.Error
	checkMCPServerFields(srv, func(field, format string, args ...any) {
		if first == nil {
			first = gwerr.BadRequest(field, "invalid MCP server: %s: %s", field, fmt.Sprintf(format, args...))
		}
	})
	if first != nil {
		return first
	}
	err := p.hostPolicy.CheckURLParam(ctx, literalsOnly{}, srv.URL, "url")
	var ge *gwerr.Error
	switch {
	case err == nil, errors.Is(err, errNotResolvedHere):
		return nil
	case errors.As(err, &ge):
		// The policy's code (host_not_allowed) tells a refusal from a malformed url, as for custom hosts.
		return &gwerr.Error{Status: http.StatusBadRequest, Code: ge.Code, Param: "url",
			Message: "invalid MCP server: url: " + strings.Replace(ge.Message, "custom host ", "", 1)}
	default:
		return gwerr.BadRequest("url", "invalid MCP server: url: %v", netguard.RedactError(err))
	}
}

// parseMCPServerBody reads a request body's fields with their JSON types; the caller checks them.
func parseMCPServerBody(body []byte) (*storage.MCPServer, error) {
	var srv *storage.MCPServer
	err := jsoncheck.Check(body, func(o *jsoncheck.Object) {
		srv = readMCPServerShape(o)
		o.Finish()
	})
	var je *jsoncheck.Error
	if errors.As(err, &je) && len(je.Problems) > 0 {
		return nil, gwerr.BadRequest(je.Problems[0].Path, "invalid MCP server: %s", je.Error())
	}
	if err != nil {
		return nil, gwerr.BadRequest("", "invalid MCP server: %v", err)
	}
	return srv, nil
}

// ListMCPServers returns a page of the caller's workspace's MCP servers, ordered by id, headers in clear:
// callers that show them mask them (MaskMCPHeaders).
func (p *Plane) ListMCPServers(_ context.Context, caller Caller, pg Page) ([]*storage.MCPServer, bool, error) {
	all, err := p.store.MCPServers.List(caller.WorkspaceID)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	items, more := PageOf(all, func(x *storage.MCPServer) string { return x.ID }, pg)
	return items, more, nil
}

// GetMCPServer returns the caller's workspace's MCP server id, headers in clear.
func (p *Plane) GetMCPServer(_ context.Context, caller Caller, id string) (*storage.MCPServer, error) {
	srv, err := p.store.MCPServers.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("MCP server", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return srv, nil
}

// CreateMCPServer registers an MCP server in the caller's workspace from body. A taken id is 409.
func (p *Plane) CreateMCPServer(ctx context.Context, caller Caller, body []byte) (*storage.MCPServer, error) {
	srv, err := parseMCPServerBody(body)
	if err != nil {
		return nil, err
	}
	if err := p.CheckMCPServer(ctx, srv); err != nil {
		return nil, err
	}
	srv.WorkspaceID = caller.WorkspaceID
	p.mcpServerWrites.Lock()
	defer p.mcpServerWrites.Unlock()
	switch _, err := p.store.MCPServers.Get(caller.WorkspaceID, srv.ID); {
	case err == nil:
		return nil, gwerr.Newf(http.StatusConflict, gwerr.CodeConflict, "MCP server %q already exists in this workspace (replace it with PUT /v1/mcp-servers/%s)", srv.ID, srv.ID)
	case !errors.Is(err, storage.ErrNotFound):
		return nil, gwerr.Internal(err)
	}
	if _, err := p.store.MCPServers.Put(srv); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("mcp server created", "trace_id", caller.TraceID, "mcp_server", srv.ID, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return p.GetMCPServer(ctx, caller, srv.ID)
}

// ReplaceMCPServer replaces the caller's workspace's MCP server id with body (CreateMCPServer's shape; its id,
// if given, must be id). A header value sent back masked, as it reads, keeps the stored value.
func (p *Plane) ReplaceMCPServer(ctx context.Context, caller Caller, id string, body []byte) (*storage.MCPServer, error) {
	srv, err := parseMCPServerBody(body)
	if err != nil {
		return nil, err
	}
	if srv.ID == "" {
		srv.ID = id // the path names it
	}
	if srv.ID != id {
		return nil, gwerr.BadRequest("id", "id %q in the body is not the MCP server's id %q in the path", clip(srv.ID), id)
	}
	srv.WorkspaceID = caller.WorkspaceID
	p.mcpServerWrites.Lock()
	defer p.mcpServerWrites.Unlock()
	old, err := p.GetMCPServer(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	for name, v := range srv.Headers {
		if stored, ok := old.Headers[textproto.CanonicalMIMEHeaderKey(name)]; ok && maskSecret(stored) == v {
			srv.Headers[name] = stored
		}
	}
	if err := p.CheckMCPServer(ctx, srv); err != nil {
		return nil, err
	}
	if _, err := p.store.MCPServers.Put(srv); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("mcp server replaced", "trace_id", caller.TraceID, "mcp_server", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return p.GetMCPServer(ctx, caller, id)
}

// DeleteMCPServer removes the caller's workspace's MCP server id.
func (p *Plane) DeleteMCPServer(_ context.Context, caller Caller, id string) error {
	p.mcpServerWrites.Lock()
	defer p.mcpServerWrites.Unlock()
	err := p.store.MCPServers.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("MCP server", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.log.Info("mcp server deleted", "trace_id", caller.TraceID, "mcp_server", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return nil
}

// UpsertMCPServer stores srv (a bootstrap entry) as the caller's workspace's MCP server srv.ID, checked as the
// admin API's bodies are. Writing the same content again changes nothing and reports false.
func (p *Plane) UpsertMCPServer(ctx context.Context, caller Caller, srv *storage.MCPServer) (changed bool, err error) {
	cp := *srv
	if err := p.CheckMCPServer(ctx, &cp); err != nil {
		return false, err
	}
	cp.WorkspaceID = caller.WorkspaceID
	p.mcpServerWrites.Lock()
	defer p.mcpServerWrites.Unlock()
	changed, err = p.store.MCPServers.Put(&cp)
	if err != nil {
		return false, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("mcp server applied", "trace_id", caller.TraceID, "mcp_server", cp.ID, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	}
	return changed, nil
}

// MaskMCPHeaders returns srv's headers as they may be shown: names, with every value masked.
func MaskMCPHeaders(srv *storage.MCPServer) map[string]string {
	out := make(map[string]string, len(srv.Headers))
	for name, v := range srv.Headers {
		out[name] = maskSecret(v)
	}
	return out
}
