package control

import (
	"context"
	"log/slog"
	"sync"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/prompt"
	"github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

// PluginHost is what plugin management needs of the wasm engine (plugins.Engine): check a module, install it
// into a workspace (load it, then save it, then serve it), and unload it.
type PluginHost interface {
	Validate(ctx context.Context, wasm []byte) error
	// Install loads wasm as the workspace's plugin id, runs save once it has loaded, and serves it only if
	// save returns nil. On any failure the plugin's current version, if any, keeps serving.
	Install(ctx context.Context, workspaceID, id string, wasm []byte, save func() error) error
	Remove(workspaceID, id string) bool
}

// HookCache is the engine's cache of compiled hooks and guardrails (runtime.Engine): a write that changes what a
// compiled check would accept makes it forget them.
type HookCache interface {
	ForgetCompiledHooks()
}

// Options configure a Plane. The zero value is usable.
type Options struct {
	// Plugins is the wasm engine. Nil: plugin uploads answer 503, and deletes only delete the record.
	Plugins PluginHost
	// Upstream calls the stored providers' management APIs (fine-tuning, 24h batches). Nil: those operations
	// answer 503.
	Upstream *upstream.Client
	// PluginChecks resolves "<plugin>.<check>" ids when a saved guardrail is checked; the Plane also requires
	// the plugin to be stored in the workspace. Nil: plugin check ids are refused.
	PluginChecks guardrails.PluginChecks
	// Batches runs batches (runtime/batch.Runner). Nil: the batch operations answer 503.
	Batches BatchRunner
	// Logger receives one line per change. Default slog.Default().
	Logger *slog.Logger
	// FileLimit is the largest file an upload may store, in bytes; larger ones get 413. Default
	// DefaultFileLimit (512 MiB).
	FileLimit int64
	// HostPolicy is the address policy of custom hosts (cmd's --allow-private-hosts, --allow-hosts); MCP server
	// URLs pass it too. Nil: the default policy.
	HostPolicy *netguard.Policy
}

// Caller is who asks for an operation: the workspace it acts in, and, for the log lines of changes, the API
// key and the request's trace ID. Authorisation (the admin right) is checked before the Plane is called.
type Caller struct {
	WorkspaceID string
	KeyID       string
	TraceID     string
}

// Plane runs the management operations over a store. Build one per store (two Planes over one store would
// not serialise each other's writes). It is safe for concurrent use.
type Plane struct {
	store   *storage.Store
	hooks   HookCache
	plugins PluginHost
	log     *slog.Logger

	upstream *upstream.Client // Options.Upstream

	fileLimit int64 // Options.FileLimit, defaulted

	pluginChecks guardrails.PluginChecks

	batches BatchRunner // Options.Batches

	// policyWrites serialises the writes of policies: the store's Put replaces whatever is there, so the check
	// that an id is free (create), the read-modify-write of an update and a delete must not interleave. One
	// lock per store is enough: policies change rarely, and reads do not take it. These locks are the store's
	// (storage.Store.Mutex): on a shared store they serialise the replicas too.
	policyWrites sync.Locker
	// promptWrites serialises the writes of prompts: a new version is a read-modify-write of the whole record,
	// so two versions added at once must not both read the same list, and the check that an id is free must
	// not interleave with another create.
	promptWrites sync.Locker
	// providerWrites and configWrites serialise the writes of stored providers and saved configs: a create checks
	// that the slug or id is free, a replace that it exists, a delete what still names a provider.
	providerWrites sync.Locker
	configWrites   sync.Locker
	// mcpServerWrites serialises the writes of MCP servers as providerWrites does providers'.
	mcpServerWrites sync.Locker
	hostPolicy      *netguard.Policy // Options.HostPolicy

	promptTemplates *prompt.Cache // compiled prompt template versions, by the hash of their JSON
	promptRecords   promptRecords // decoded prompts, until the next write to the prompt store
}

// New returns the control plane over store. hooks is the engine whose compiled hooks a write can make stale
// (nil: none compiles hooks).
func New(store *storage.Store, hooks HookCache, opts Options) *Plane {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FileLimit <= 0 {
		opts.FileLimit = DefaultFileLimit
	}
	return &Plane{store: store, hooks: hooks, plugins: opts.Plugins, log: opts.Logger, pluginChecks: opts.PluginChecks,
		fileLimit:       opts.FileLimit,
		upstream:        opts.Upstream,
		batches:         opts.Batches,
		promptTemplates: prompt.NewCache(4096),
		policyWrites:    store.Mutex("control.policies"),
		promptWrites:    store.Mutex("control.prompts"),
		providerWrites:  store.Mutex("control.providers"),
		configWrites:    store.Mutex("control.configs"),
		mcpServerWrites: store.Mutex("control.mcpservers"),
		hostPolicy:      opts.HostPolicy}
}

// forgetHooks drops the engine's compiled checks after a write that changes what they would accept (a saved
// guardrail, a plugin that went away).
func (p *Plane) forgetHooks() {
	if p.hooks != nil {
		p.hooks.ForgetCompiledHooks()
	}
}
