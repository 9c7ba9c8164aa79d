package routes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// maxHeaderBytes bounds a request's headers (x-gateway-config included); larger ones get 431.
const maxHeaderBytes = 64 << 10

// DefaultBodyLimit is the largest request body accepted when Options.BodyLimit is zero: 32 MiB.
const DefaultBodyLimit = 32 << 20

// Options configure the HTTP server. The zero value is usable.
type Options struct {
	// BodyLimit is the largest request body in bytes; larger ones get 413. Default DefaultBodyLimit.
	BodyLimit int
	// ReadTimeout bounds reading one request, headers and body. Default 60s.
	ReadTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long. Default 120s.
	IdleTimeout time.Duration
	// Logger receives request failures. Default slog.Default().
	Logger *slog.Logger
	// AccessLog writes one debug line per request. Off by default: the line costs more than the request.
	AccessLog bool
	// Plugins is the wasm engine behind /v1/plugins, given to the control plane New builds. Nil: uploads
	// answer 503. Ignored when Plane is set.
	Plugins PluginHost
	// Plane runs the management operations (API keys, policies, prompts, plugins). Nil: New builds one over
	// the store and the engine, with Plugins and Logger. Give one when other code in the process must share its
	// serialised writes and caches (one Plane per store).
	Plane *control.Plane
	// PluginChecks resolves wasm check ids when saved guardrails are validated. Nil: none.
	PluginChecks guardrails.PluginChecks
	// Metrics receives one report per inference request and is served on GET /metrics (organisation admin
	// keys). Nil: New builds one; Server.Metrics returns it, for a separate metrics listener.
	Metrics *metrics.Metrics
	// Logs receives one stored log entry per inference request (storeLog, logs.go). Nil: no stored logs.
	Logs *reqlog.Writer
	// HostPolicy decides which addresses the upstream MCP servers behind /mcp may have. Nil: netguard's default.
	HostPolicy *netguard.Policy
}

// Server is the gateway's HTTP front: the fiber app with its middleware and routes.
type Server struct {
	app    *fiber.App
	store  *storage.Store
	engine *runtime.Engine
	log    *slog.Logger

	accessLogs   bool
	plane        *control.Plane // management operations: handlers of the admin API decode, call it and encode
	pluginChecks guardrails.PluginChecks
	pluginStats  PluginStats // Options.Plugins, when it has them (plugins.go)
	metrics      *metrics.Metrics
	logs         *reqlog.Writer // Options.Logs
	mcp          *mcpgw.Gateway // /mcp (mcp.go)

	inflight inflight // inference requests being served, with their contexts
}

// New builds the server over the store and the engine. Call Serve to accept connections and Shutdown to stop.
func New(store *storage.Store, engine *runtime.Engine, opts Options) *Server {
	if opts.BodyLimit <= 0 {
		opts.BodyLimit = DefaultBodyLimit
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 60 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 120 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Plane == nil {
		opts.Plane = control.New(store, engine, control.Options{Plugins: opts.Plugins, PluginChecks: opts.PluginChecks, Logger: opts.Logger})
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	s := &Server{store: store, engine: engine, log: opts.Logger, accessLogs: opts.AccessLog, plane: opts.Plane,
		pluginChecks: opts.PluginChecks, metrics: opts.Metrics}
	s.pluginStats, _ = opts.Plugins.(PluginStats)
	s.logs = opts.Logs
	s.mcp = mcpgw.New(store.MCPServers, mcpgw.Options{HostPolicy: opts.HostPolicy, Logger: opts.Logger,
		Intercept: s.interceptToolCall}) // mcptools.go
	s.inflight.init(opts.Logger)
	s.app = fiber.New(fiber.Config{
		AppName:               "gateway",
		BodyLimit:             opts.BodyLimit,
		ReadBufferSize:        maxHeaderBytes, // configs travel in x-gateway-config: headers grow past fasthttp's 4 KiB
		ReadTimeout:           opts.ReadTimeout,
		IdleTimeout:           opts.IdleTimeout,
		DisableStartupMessage: true,
		// Buffers go back to fasthttp's pools while a connection idles, and its 64 KiB read buffer while a
		// stream is relayed: an open stream then holds what it uses, not a connection's worth of buffers.
		ReduceMemoryUsage: true,
		ErrorHandler:      s.handleError,
		// Bodies reach handlers as streams, so that an upload is never held whole in memory; limitBody
		// enforces BodyLimit on every other route. The multipart pre-parse would buffer uploads itself.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
	})
	// The connection watcher registers a connection once, on its first request, and forgets it here.
	s.app.Server().ConnState = func(conn net.Conn, state fasthttp.ConnState) {
		if state == fasthttp.StateClosed || state == fasthttp.StateHijacked {
			s.inflight.closed(conn)
		}
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.app.Use(portkeyHeaders) // portkey.go: x-portkey-* read as x-gateway-*, before the key and trace ID are
	s.app.Use(traceID)
	if s.accessLogs {
		s.app.Use(s.accessLog)
	}
	s.app.Use(limitBody) // bodylimit.go
	s.app.Get("/health", s.health)
	s.app.Get("/metrics", s.authenticate, s.serveMetrics()) // observe.go
	s.consoleRoutes()                                       // console.go: /console, public static files, no key
	s.messagesRoutes()                                      // messages.go: before the /v1 group, whose key check it replaces
	s.mcpRoutes()                                           // mcp.go: the MCP endpoint, /mcp

	v1 := s.app.Group("/v1", s.authenticate)
	v1.Get("/api-keys", s.listAPIKeys)
	v1.Post("/api-keys", s.createAPIKey)
	v1.Get("/api-keys/:id", adminOne("id", s.plane.GetAPIKey, viewAPIKey))
	v1.Delete("/api-keys/:id", s.deleteAPIKey)

	v1.Get("/guardrails", s.listGuardrails)
	v1.Put("/guardrails/:id", s.putGuardrail)
	v1.Get("/guardrails/:id", adminOne("id", s.plane.GetGuardrail, viewGuardrail))
	v1.Delete("/guardrails/:id", s.deleteGuardrail)

	v1.Get("/policies/rate-limits", s.listPolicies)
	v1.Post("/policies/rate-limits", s.createPolicy)
	v1.Get("/policies/rate-limits/:id", s.getPolicy)
	v1.Put("/policies/rate-limits/:id", s.updatePolicy)
	v1.Delete("/policies/rate-limits/:id", s.deletePolicy)
	s.usageLimitRoutes(v1) // usagelimits.go: /policies/usage-limits

	v1.Get("/prompts", s.listPrompts)
	v1.Post("/prompts", s.createPrompt)
	v1.Get("/prompts/:id", s.getPrompt)
	v1.Delete("/prompts/:id", s.deletePrompt)
	v1.Post("/prompts/:id/versions", s.addPromptVersion)
	v1.Post("/prompts/:id/versions/:version/publish", s.publishPromptVersion)
	v1.Post("/prompts/:id/render", s.renderPrompt) // prompts_render.go
	v1.Post("/prompts/:id/completions", s.promptCompletion)

	v1.Get("/plugins", s.listPlugins)
	v1.Put("/plugins/:id", s.putPlugin)
	v1.Get("/plugins/:id", adminOne("id", s.plane.GetPlugin, s.viewPluginFigures))
	v1.Delete("/plugins/:id", s.deletePlugin)

	v1.Get("/logs", s.listLogs)       // logs.go
	v1.Get("/logs/stats", s.logStats) // logs.go: before /logs/:id, which would take "stats" for an ID
	v1.Get("/logs/:id", s.getLog)     // logs.go

	s.fileRoutes(v1)       // files.go
	s.batchRoutes(v1)      // batches.go
	s.fineTuningRoutes(v1) // finetuning.go
	s.providerRoutes(v1)   // providers.go (also /v1/virtual-keys)
	s.mcpServerRoutes(v1)  // mcpservers.go: the MCP server registry
	s.pluginKVRoutes(v1)   // pluginkv.go: the plugins' key-value store
	s.configRoutes(v1)     // configs.go
	s.workspaceRoutes(v1)  // workspaces.go
	s.responseRoutes(v1)   // responses.go
	s.mediaRoutes(v1)      // media.go: images, audio, moderations, rerank

	v1.Get("/models", s.listModels) // models.go
	v1.Post("/chat/completions", s.inference(providers.ChatCompletions))
	v1.Post("/completions", s.inference(providers.Completions))
	v1.Post("/embeddings", s.inference(providers.Embeddings))
}

// callerOf is the request's caller as the control plane sees it.
func callerOf(c *fiber.Ctx) control.Caller {
	k := callerKey(c)
	return control.Caller{WorkspaceID: k.WorkspaceID, KeyID: k.ID, TraceID: ensureTraceID(c)}
}

// adminCaller is callerOf for the operations that need the admin right: a 403 without it.
func adminCaller(c *fiber.Ctx) (control.Caller, error) {
	if _, err := requireAdmin(c); err != nil {
		return control.Caller{}, err
	}
	return callerOf(c), nil
}

// Metrics returns the server's metrics, for serving them on a listener of their own.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Handler returns the fiber app, for tests that drive it with app.Test.
func (s *Server) Handler() *fiber.App { return s.app }

// Serve accepts connections on ln until Shutdown. It returns nil after a Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.app.Listener(ln) }

// Shutdown stops accepting connections and waits up to grace for requests in flight to finish. Inference
// requests still running after that are cancelled (their upstream calls and retries stop and they answer 503)
// and waited for a few seconds more, so that nothing uses the engine or the store once Shutdown has returned.
// It returns an error when the grace period ran out.
func (s *Server) Shutdown(grace time.Duration) error {
	// fasthttp's shutdown goes on past the grace period while cancelled requests write their answers: until it
	// returns, it closes each connection once its answer is written, so that none is cut off mid-answer.
	ctx, stop := context.WithTimeout(context.Background(), grace+drainAfterCancel)
	defer stop()
	overDone := make(chan struct{})
	over := time.AfterFunc(grace, func() {
		defer close(overDone)
		s.mcp.Close() // the MCP sessions' calls, which outlive their requests in the SDK, end with them
		if n := s.inflight.cancelAll(errShuttingDown); n > 0 {
			s.log.Warn("grace period over: cancelling the requests still running", "requests", n)
		} else {
			stop() // none of ours to wait for: the grace period was the deadline
		}
	})
	err := s.app.ShutdownWithContext(ctx)
	if !over.Stop() {
		<-overDone
		if errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("requests still running after they were cancelled at shutdown")
		}
		err = fmt.Errorf("shutdown: grace period of %v over: %w", grace, context.DeadlineExceeded)
	}
	s.inflight.stopWatching()
	return err
}
