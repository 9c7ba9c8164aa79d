package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/batch"
	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/runtime/upstream"
	// The adapters this binary ships.
	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
	_ "github.com/llmgw/gateway/runtime/providers/bedrock"
	_ "github.com/llmgw/gateway/runtime/providers/google"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	_ "github.com/llmgw/gateway/runtime/providers/vertex"
	"github.com/llmgw/gateway/storage"
	"github.com/llmgw/gateway/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	args := os.Args[1:]
	if isCLI(args) { // gateway NOUN VERB: the CLI (cli.go); anything else serves
		code := runCLI(ctx, args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	err := run(ctx, stop, args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// run starts the gateway and serves until ctx is done, then shuts down gracefully. stopSignals is called once
// shutdown begins, so that a second Ctrl-C kills the process at once.
func run(ctx context.Context, stopSignals func(), args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseSettings(args, getenv, stderr)
	if err != nil {
		return err
	}
	logOut := newLogWriter(stderr)
	defer logOut.Close() // runs very last: every line of the shutdown is written
	log := newLogger(cfg, logOut)
	stopTracing, err := tracing.Setup(ctx, log) // the OTEL_* variables; off without an endpoint
	if err != nil {
		return err
	}
	defer func() { // runs last: the spans of the drained requests are flushed, within a bound of their own
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Warn("spans not all exported", "err", err)
		}
	}()

	master, err := masterKey(cfg.dataDir, getenv, log)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, cfg, master, log)
	if err != nil {
		return err
	}
	defer store.Close()
	// Uploads a crash cut short left chunks behind a pending marker: drop them before serving. Replicas sharing
	// the store drop only old ones: another replica may be uploading now.
	sweepAge := time.Duration(0)
	if store.Shared() {
		sweepAge = pendingUploadAge
	}
	if n, err := store.Files.SweepPendingOlder(sweepAge); err != nil {
		return fmt.Errorf("sweep half-written files: %w", err)
	} else if n > 0 {
		log.Info("dropped files a crash left half written", "files", n)
	}
	initialized, err := store.Initialized()
	if err != nil {
		return err
	}
	// One set of metrics, which the engine, the plugins and the server all report to.
	meters := metrics.New()
	// The engine comes before the bootstrap file, which loads its plugins before storing them.
	wasm, err := plugins.New(plugins.Options{CacheDir: filepath.Join(cfg.dataDir, "wasm-cache"), Logger: log,
		PluginsPerWorkspace: cfg.pluginsPerWorkspace, MemoryPerWorkspace: int64(cfg.pluginMemoryPerWorkspace),
		OnCall: meters.PluginCall, OnCompile: meters.PluginCompiled, OnInstantiate: meters.PluginInstantiated,
		KV: store.PluginKV.Lookup}) // kv_get reads the store's in-memory copy; the admin API writes through control
	if err != nil {
		return fmt.Errorf("plugin engine: %w", err)
	}
	defer wasm.Close(context.WithoutCancel(ctx))
	if cfg.bootstrap != "" {
		if err := applyBootstrap(ctx, store, wasm, cfg.bootstrap, &cfg.hosts, log); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	guardrails.SetOutboundAllowList(cfg.webhookHosts)
	guardrails.SetOutboundAddressPolicy(&cfg.hosts) // webhooks reach only the addresses custom hosts may
	pluginChecks := func(workspaceID, pluginID, check string, params json.RawMessage) (guardrails.Check, error) {
		c, err := wasm.CheckFor(workspaceID, pluginID, check, params)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	// With --redis, limits, budgets, the response cache and breakers are shared with the other replicas. A
	// Redis that does not answer is not fatal: the replica serves with local state until it does.
	var shared *redisstate.Client
	if cfg.redisURL != "" {
		shared, err = redisstate.Open(cfg.redisURL, redisstate.Options{Logger: log, OnState: meters.RedisState,
			OnError: meters.RedisError})
		if err != nil {
			return err
		}
		defer shared.Close()
		store.Cache.UseRemote(shared.Cache(), storage.DefaultRemoteHotLife)
	}
	// The limiter saves its counters every second and on Close, which must come before the store closes.
	limiter := ratelimit.New(store, ratelimit.Options{Logger: log, Redis: shared})
	defer limiter.Close()
	// Budgets save their spend the same way; Close after the server drained, before the store closes.
	budgets := ratelimit.NewBudgets(store, ratelimit.BudgetOptions{Logger: log, Redis: shared,
		OnAlert: func(string) { meters.BudgetAlert() }, OnExceeded: func(string) { meters.BudgetExceeded() }})
	defer budgets.Close()
	// Request logs are written in the background; Close writes what is queued, once the server has drained
	// and before the store closes.
	logs := reqlog.New(store.Logs, reqlog.Options{Retention: cfg.logRetention, Bodies: cfg.logBodies, Logger: log,
		OnDrop: meters.LogEntriesDropped})
	defer logs.Close()
	engine := runtime.New(store, runtime.Options{HostPolicy: &cfg.hosts, Logger: log,
		PluginChecks: pluginChecks, PluginCondition: wasm.Condition, RateLimiter: limiter, Budgets: budgets,
		CheckErrorsFail: cfg.checkErrorsFail, Observer: meters,
		RequestDeadline: cfg.requestDeadline, MaxUpstreamAttempts: cfg.maxUpstreamAttempts, Redis: shared})
	defer engine.Close() // its breakers' subscription ends before the Redis client closes
	// One client of the providers' management APIs, so that its per-file locks cover every caller.
	mgmt := upstream.New(store, engine, log).WithFileLimit(cfg.fileLimit)
	// One control plane serves the admin API and the plugins folder, so that their writes are serialised and
	// invalidate the same caches.
	// Batch lines are request bodies: the body limit bounds them too.
	batches := batch.New(store, engine, batch.Options{Concurrency: cfg.batchConcurrency, MaxLineBytes: cfg.bodyLimit,
		LeaseTTL: cfg.batchLease,
		Upstream: mgmt, Logger: log})
	plane := control.New(store, engine, control.Options{Plugins: wasm, PluginChecks: pluginChecks, Logger: log, Upstream: mgmt,
		FileLimit: cfg.fileLimit, Batches: batches, HostPolicy: &cfg.hosts})
	server := routes.New(store, engine, routes.Options{BodyLimit: cfg.bodyLimit, Logger: log,
		AccessLog: cfg.logLevel <= slog.LevelDebug, Plugins: wasm, PluginChecks: pluginChecks, Plane: plane, Metrics: meters, Logs: logs,
		HostPolicy: &cfg.hosts})
	if !initialized {
		// The bootstrap file is applied by now: Initialize makes a key only when it left no admin key.
		secret, err := store.Initialize()
		if err != nil {
			ln.Close()
			return fmt.Errorf("first start: %w", err)
		}
		if secret != "" {
			printFirstStart(stdout, secret, ln.Addr())
		}
	}

	// The batch runner stops before the store closes, after the background work below (which starts it).
	defer batches.Stop()

	var metricsServer *http.Server
	if cfg.metricsListen != "" {
		mln, err := net.Listen("tcp", cfg.metricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (--metrics-listen): %w", cfg.metricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", server.Metrics().Handler())
		metricsServer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		defer metricsServer.Close() // also when serving fails
		go func() {
			if err := metricsServer.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener stopped", "err", err)
			}
		}()
		log.Info("metrics listening", "addr", "http://"+mln.Addr().String()+"/metrics")
	}

	served := make(chan error, 1)
	go func() { served <- server.Serve(ln) }()
	log.Info("gateway listening", "addr", "http://"+ln.Addr().String(), "data", cfg.dataDir)

	// Stored plugins compile in the background (a cold Go guest takes seconds): the gateway serves meanwhile,
	// and a check that names a plugin still loading gets a check error.
	// They stop, and are waited for, before the store closes.
	background, stopBackground := context.WithCancel(ctx)
	var backgroundWork sync.WaitGroup
	defer backgroundWork.Wait()
	defer stopBackground()
	backgroundWork.Go(func() {
		if err := wasm.LoadStored(background, store); err != nil && background.Err() == nil {
			log.Warn("stored plugins did not all load", "err", err)
		}
		if background.Err() != nil {
			return
		}
		// Batches a previous process left unfinished resume once the stored plugins are loaded, so that their
		// lines are not judged by checks still compiling; batches made meanwhile wait for it too.
		if err := batches.Start(ctx); err != nil {
			log.Error("unfinished batches could not be resumed", "err", err)
		}
	})
	backgroundWork.Go(func() { sweepCache(background, engine, log, time.Minute) })
	if store.Shared() {
		follower := followReplicas(store, wasm, engine, log)
		backgroundWork.Go(func() { follower.run(background) })
	}
	if cfg.plugins != "" {
		watcher := newPluginWatcher(cfg.plugins, store, wasm, plane, log)
		backgroundWork.Go(func() { watcher.run(background, 2*time.Second) })
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stopSignals()
	log.Info("shutting down: no new connections; waiting for requests in flight", "grace", cfg.grace)
	if err := server.Shutdown(cfg.grace); err != nil {
		log.Warn("grace period over; closing the connections still open", "err", err)
	}
	if err := <-served; err != nil {
		log.Warn("server stopped with an error", "err", err)
	}
	if metricsServer != nil {
		metricsServer.Close() // scrapes are short: no grace period
	}
	stopBackground()
	backgroundWork.Wait()
	batches.Stop() // lines in flight are dropped without a result: they run again at the next start
	logs.Close()
	if err := limiter.Close(); err != nil {
		log.Warn("rate-limit counters not all saved", "err", err)
	}
	if err := budgets.Close(); err != nil {
		log.Warn("budget spend not all saved", "err", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	log.Info("gateway stopped")
	return nil
}

// sweepCache deletes expired cache entries every interval until ctx ends.
func sweepCache(ctx context.Context, engine *runtime.Engine, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := engine.SweepCache(); err != nil {
				log.Warn("cache sweep failed", "err", err)
			} else if n > 0 {
				log.Debug("cache sweep", "deleted", n)
			}
		}
	}
}

func newLogger(cfg settings, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.logLevel}
	if cfg.logJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// masterKey returns the key that seals secrets: GATEWAY_MASTER_KEY when set, else the key file in the data
// folder, created on the first start. A store without its key file is not given a new key: that would make
// every stored secret unreadable.
func masterKey(dataDir string, getenv func(string) string, log *slog.Logger) ([]byte, error) {
	if v := getenv("GATEWAY_MASTER_KEY"); v != "" {
		key, err := storage.ParseMasterKey(v)
		if err != nil {
			return nil, fmt.Errorf("GATEWAY_MASTER_KEY: %w", err)
		}
		return key, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	keyPath := filepath.Join(dataDir, storage.MasterKeyFile)
	if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
		if entries, _ := os.ReadDir(filepath.Join(dataDir, "db")); len(entries) > 0 {
			return nil, fmt.Errorf("%s holds a store but no %s: restore the key file or set GATEWAY_MASTER_KEY to the key it was written with", dataDir, storage.MasterKeyFile)
		}
	}
	key, created, err := storage.LoadOrCreateMasterKeyFile(dataDir)
	if err != nil {
		return nil, err
	}
	if created {
		log.Info("created a master key for secrets at rest; back it up with the data folder", "file", keyPath)
	}
	return key, nil
}

func applyBootstrap(ctx context.Context, store *storage.Store, wasm *plugins.Engine, path string, hosts *netguard.Policy, log *slog.Logger) error {
	f, err := bootstrap.Load(path)
	if err != nil {
		return err
	}
	// The file is applied before the gateway serves, so this Plane's writes cannot interleave with the one
	// routes builds over the same store.
	plane := control.New(store, nil, control.Options{Plugins: wasm, Logger: log, HostPolicy: hosts})
	res, err := bootstrap.ApplyThrough(ctx, plane, store, f, bootstrap.Options{LoadPlugin: func(workspaceID, id string, module []byte) error {
		return wasm.Load(ctx, workspaceID, id, module)
	}})
	var ve *bootstrap.ValidationError
	if errors.As(err, &ve) {
		ve.File = path
	}
	if err != nil {
		return err
	}
	log.Info("bootstrap file applied", "file", path, "changed", res.Changed, "unchanged", res.Unchanged)
	return nil
}

// printFirstStart shows the first admin key once, with a request to paste.
func printFirstStart(w io.Writer, secret string, addr net.Addr) {
	host := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	fmt.Fprintf(w, `
First start: created workspace %q and an admin API key for it.
The key is shown only this once; keep it somewhere safe:

    %s

Try it (lists the workspace's API keys):

    curl -s http://%s/v1/api-keys -H 'x-gateway-api-key: %s'

or open the console and sign in with the key:

    http://%s/console

`, storage.DefaultWorkspaceSlug, secret, host, secret, host)
}
