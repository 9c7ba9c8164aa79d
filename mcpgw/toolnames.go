package mcpgw

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// A tools/call must name a tool its server lists, exactly: a made-up name reaches no server, and cannot grow
// the log, the metrics' series or the rate limits' groups, nor slip past deny_tools and tool policies in
// another case or spelling that a lenient server would accept. The names come from the server's tools/list,
// kept per server record (the pool's key) and refreshed when a call names a tool the kept list lacks and the
// list is older than toolListRecheck, or when it is older than toolListFresh. A server whose list cannot be read
// is not second-guessed: the call goes on, and fails or not on its own.

const (
	// toolListFresh is how long a server's tool names are trusted.
	toolListFresh = time.Minute
	// toolListRecheck is how soon a name the list lacks may make the gateway ask the server again: a caller
	// sending made-up names makes at most one list a server every toolListRecheck.
	toolListRecheck = 5 * time.Second
	// maxToolLists bounds the servers whose names are kept; past it the cache starts over.
	maxToolLists = 4096
)

type toolLists struct {
	mu    sync.Mutex
	lists map[string]*toolList // by poolKey
}

type toolList struct {
	names map[string]bool
	at    time.Time
}

// remember keeps the tool names srv listed (all of them, before allow_tools and deny_tools).
func (t *toolLists) remember(srv *storage.MCPServer, names []string) {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lists == nil || len(t.lists) >= maxToolLists {
		t.lists = map[string]*toolList{}
	}
	t.lists[poolKey(srv)] = &toolList{names: set, at: time.Now()}
}

// lookup says whether srv's kept list has tool, and whether the list is recent enough to trust that answer.
func (t *toolLists) lookup(srv *storage.MCPServer, tool string) (has, trusted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lists[poolKey(srv)]
	if l == nil {
		return false, false
	}
	age := time.Since(l.at)
	has = l.names[tool]
	return has, has && age < toolListFresh || !has && age < toolListRecheck
}

// listsTool reports whether srv lists tool, reading its list when the kept one cannot tell. A list that cannot
// be read counts as listing it (see above).
func (g *Gateway) listsTool(ctx context.Context, srv *storage.MCPServer, tool string) bool {
	if has, trusted := g.toolNames.lookup(srv, tool); trusted {
		return has
	}
	ctx, cancel := context.WithTimeout(ctx, UpstreamTimeout)
	defer cancel()
	tools, err := withPooledSession(ctx, g, srv, func(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Tool, error) {
		return g.serverTools(ctx, srv, session)
	})
	if err != nil {
		g.log.Warn("MCP server's tools could not be listed to check a call's tool name", "mcp_server", srv.ID,
			"err", hideURL(err, srv.URL))
		return true
	}
	for _, t := range tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}
