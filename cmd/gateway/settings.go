package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/gateway/runtime/netguard"
)

// settings are the gateway's start-up settings: each flag's default comes from its environment variable, then
// from the built-in default, so a flag beats the environment and the environment beats the default.
type settings struct {
	listen string
	// metricsListen is the address of a second listener serving GET /metrics without a key; "" (the default):
	// none, and /metrics is served on the main listener to organisation admin keys only.
	metricsListen string
	dataDir       string
	bootstrap     string
	bodyLimit     int
	grace         time.Duration
	logLevel      slog.Level
	logJSON       bool
	hosts         netguard.Policy
	plugins       string // folder watched for plugin files, or ""
	// webhookHosts are the hosts the webhook and log checks may call; none by default.
	webhookHosts []string

	// requestDeadline bounds a whole inference request, retries and fallbacks included.
	requestDeadline time.Duration
	// maxUpstreamAttempts caps the upstream calls one request may make.
	maxUpstreamAttempts int
	// pluginsPerWorkspace and pluginMemoryPerWorkspace bound each workspace's loaded plugins: their number and
	// the wasm memory their instances may use together.
	pluginsPerWorkspace      int
	pluginMemoryPerWorkspace int
	// checkErrorsFail makes a check that errors count as failed unless its parameters say failOnError: false.
	checkErrorsFail bool
	// fileLimit is the largest file an upload may store.
	fileLimit int64
	// batchConcurrency is how many lines of one batch run at once.
	batchConcurrency int
	// batchLease is how long a replica's claim on a running batch lasts without renewal: a replica that died
	// leaves its batches to the others after it.
	batchLease time.Duration
	// logRetention is how long stored request logs are kept; logBodies keeps their request and response bodies.
	logRetention time.Duration
	logBodies    bool

	// redisURL and postgresURL make this process one of several replicas (DESIGN.md "Several replicas"): hot
	// shared state in Redis, every durable record in PostgreSQL. Empty: the embedded store alone.
	redisURL    string
	postgresURL string
}

const usageHeader = `gateway: an OpenAI-compatible model gateway.

Usage: gateway [flags]

Flags (each also read from the environment variable named in brackets):
`

const usageFooter = `
Environment only:
  GATEWAY_MASTER_KEY   32-byte key (64 hex digits or base64) that encrypts provider secrets at rest. When unset,
                       the key is read from (or created in) <data>/master.key with mode 0600.
`

func parseSettings(args []string, getenv func(string) string, stderr io.Writer) (settings, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", env("GATEWAY_LISTEN", "127.0.0.1:8787"), "address to serve on [GATEWAY_LISTEN]")
	metricsListen := fs.String("metrics-listen", env("GATEWAY_METRICS_LISTEN", ""), "address of a listener serving GET /metrics without a key; none when empty (the main listener serves it to organisation admin keys) [GATEWAY_METRICS_LISTEN]")
	dataDir := fs.String("data", env("GATEWAY_DATA_DIR", "./data"), "data folder: the store and the master key file [GATEWAY_DATA_DIR]")
	boot := fs.String("bootstrap", env("GATEWAY_BOOTSTRAP", ""), "JSON file applied at start: workspaces, keys, providers, configs, ... [GATEWAY_BOOTSTRAP]")
	bodyLimit := fs.String("body-limit", env("GATEWAY_BODY_LIMIT", "32MiB"), "largest request body, e.g. 32MiB or 1048576 [GATEWAY_BODY_LIMIT]")
	grace := fs.String("shutdown-grace", env("GATEWAY_SHUTDOWN_GRACE", "30s"), "how long requests in flight may finish after SIGINT or SIGTERM [GATEWAY_SHUTDOWN_GRACE]")
	logLevel := fs.String("log-level", env("GATEWAY_LOG_LEVEL", "info"), "debug, info, warn or error [GATEWAY_LOG_LEVEL]")
	logFormat := fs.String("log-format", env("GATEWAY_LOG_FORMAT", "text"), "text or json [GATEWAY_LOG_FORMAT]")
	webhookHosts := fs.String("webhook-hosts", env("GATEWAY_WEBHOOK_HOSTS", ""), "hosts (host or host:port, comma-separated) the webhook and log checks may call; none when empty. Their addresses must also pass the custom-host policy [GATEWAY_WEBHOOK_HOSTS]")
	pluginsDir := fs.String("plugins", env("GATEWAY_PLUGINS_DIR", ""), "folder of plugin files <workspace>/<id>.wasm, watched and hot-reloaded [GATEWAY_PLUGINS_DIR]")
	allowPrivate := fs.String("allow-private-hosts", env("GATEWAY_ALLOW_PRIVATE_HOSTS", "false"), "let custom hosts be private addresses (10/8, 172.16/12, 192.168/16, fc00::/7) [GATEWAY_ALLOW_PRIVATE_HOSTS]")
	allowHosts := fs.String("allow-hosts", env("GATEWAY_ALLOW_HOSTS", ""), "custom hosts allowed although private: CIDRs, addresses or host names, comma-separated [GATEWAY_ALLOW_HOSTS]")
	requestDeadline := fs.String("request-deadline", env("GATEWAY_REQUEST_DEADLINE", "10m"), "longest a whole inference request may take, retries and fallbacks included [GATEWAY_REQUEST_DEADLINE]")
	maxAttempts := fs.String("max-upstream-attempts", env("GATEWAY_MAX_UPSTREAM_ATTEMPTS", "50"), "most upstream calls one request may make, retries and fallbacks included [GATEWAY_MAX_UPSTREAM_ATTEMPTS]")
	pluginCount := fs.String("plugins-per-workspace", env("GATEWAY_PLUGINS_PER_WORKSPACE", "32"), "most plugins one workspace may have [GATEWAY_PLUGINS_PER_WORKSPACE]")
	pluginMemory := fs.String("plugin-memory-per-workspace", env("GATEWAY_PLUGIN_MEMORY_PER_WORKSPACE", "1GiB"), "wasm memory one workspace's plugin instances may use together [GATEWAY_PLUGIN_MEMORY_PER_WORKSPACE]")
	fileLimit := fs.String("file-limit", env("GATEWAY_FILE_LIMIT", "512MiB"), "largest file an upload to /v1/files may store [GATEWAY_FILE_LIMIT]")
	batchConcurrency := fs.String("batch-concurrency", env("GATEWAY_BATCH_CONCURRENCY", "8"), "how many lines of one batch run at once [GATEWAY_BATCH_CONCURRENCY]")
	batchLease := fs.String("batch-lease", env("GATEWAY_BATCH_LEASE", "15s"), "how long a replica's claim on a running batch lasts unrenewed; another replica takes over a dead one's batches after it [GATEWAY_BATCH_LEASE]")
	logRetention := fs.String("log-retention", env("GATEWAY_LOG_RETENTION", "7d"), "how long stored request logs (GET /v1/logs) are kept: a duration such as 72h, or days such as 7d [GATEWAY_LOG_RETENTION]")
	// A bool flag, so that a bare --log-bodies turns it on; the environment gives its default.
	logBodiesEnv := env("GATEWAY_LOG_BODIES", "false")
	logBodiesDefault, logBodiesEnvErr := strconv.ParseBool(logBodiesEnv)
	logBodies := fs.Bool("log-bodies", logBodiesDefault, "store each request's and answer's body with its log entry (GET /v1/logs/{id}); never headers or credentials [GATEWAY_LOG_BODIES]")
	checkErrors := fs.String("check-errors", env("GATEWAY_CHECK_ERRORS", "pass"), "pass or fail: what a check that errors counts as when its parameters do not say failOnError [GATEWAY_CHECK_ERRORS]")
	redisURL := fs.String("redis", env("GATEWAY_REDIS_URL", ""), "Redis or Valkey URL (redis://[:password@]host:port/db) shared by replicas: rate-limit and budget counters, the response cache, circuit breakers; none when empty [GATEWAY_REDIS_URL]")
	postgresURL := fs.String("postgres", env("GATEWAY_POSTGRES_URL", ""), "PostgreSQL URL (postgres://user:password@host:port/db) holding every durable record instead of the data folder's store, shared by replicas; none when empty [GATEWAY_POSTGRES_URL]")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHeader)
		fs.PrintDefaults()
		fmt.Fprint(stderr, usageFooter)
	}
	if err := fs.Parse(args); err != nil {
		return settings{}, err
	}
	if fs.NArg() > 0 {
		return settings{}, fmt.Errorf("unexpected argument %q (see gateway -h)", fs.Arg(0))
	}
	s := settings{listen: *listen, metricsListen: strings.TrimSpace(*metricsListen), dataDir: *dataDir, bootstrap: *boot, plugins: *pluginsDir}
	for _, h := range strings.Split(*webhookHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			s.webhookHosts = append(s.webhookHosts, h)
		}
	}
	var errs []error
	if s.listen == "" {
		errs = append(errs, errors.New("--listen (GATEWAY_LISTEN) must not be empty"))
	}
	if s.dataDir == "" {
		errs = append(errs, errors.New("--data (GATEWAY_DATA_DIR) must not be empty"))
	}
	var err error
	if s.bodyLimit, err = parseSize(*bodyLimit); err != nil {
		errs = append(errs, fmt.Errorf("--body-limit (GATEWAY_BODY_LIMIT): %w", err))
	}
	if s.grace, err = time.ParseDuration(*grace); err != nil || s.grace < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-grace (GATEWAY_SHUTDOWN_GRACE): %q is not a duration such as 30s", *grace))
	}
	if err := s.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level (GATEWAY_LOG_LEVEL): %q is not debug, info, warn or error", *logLevel))
	}
	if s.hosts.AllowPrivate, err = strconv.ParseBool(*allowPrivate); err != nil {
		errs = append(errs, fmt.Errorf("--allow-private-hosts (GATEWAY_ALLOW_PRIVATE_HOSTS): %q is not true or false", *allowPrivate))
	}
	if s.hosts.Allow, s.hosts.AllowHosts, err = netguard.ParseAllowList(*allowHosts); err != nil {
		errs = append(errs, fmt.Errorf("--allow-hosts (GATEWAY_ALLOW_HOSTS): %w", err))
	}
	if s.requestDeadline, err = time.ParseDuration(*requestDeadline); err != nil || s.requestDeadline <= 0 {
		errs = append(errs, fmt.Errorf("--request-deadline (GATEWAY_REQUEST_DEADLINE): %q is not a positive duration such as 10m", *requestDeadline))
	}
	if s.maxUpstreamAttempts, err = strconv.Atoi(*maxAttempts); err != nil || s.maxUpstreamAttempts < 1 || s.maxUpstreamAttempts > 10000 {
		errs = append(errs, fmt.Errorf("--max-upstream-attempts (GATEWAY_MAX_UPSTREAM_ATTEMPTS): %q is not a whole number from 1 to 10000", *maxAttempts))
	}
	if s.pluginsPerWorkspace, err = strconv.Atoi(*pluginCount); err != nil || s.pluginsPerWorkspace < 1 || s.pluginsPerWorkspace > 10000 {
		errs = append(errs, fmt.Errorf("--plugins-per-workspace (GATEWAY_PLUGINS_PER_WORKSPACE): %q is not a whole number from 1 to 10000", *pluginCount))
	}
	if s.pluginMemoryPerWorkspace, err = parseSize(*pluginMemory); err != nil {
		errs = append(errs, fmt.Errorf("--plugin-memory-per-workspace (GATEWAY_PLUGIN_MEMORY_PER_WORKSPACE): %w", err))
	}
	if n, err := parseSize(*fileLimit); err != nil {
		errs = append(errs, fmt.Errorf("--file-limit (GATEWAY_FILE_LIMIT): %w", err))
	} else {
		s.fileLimit = int64(n)
	}
	if s.batchConcurrency, err = strconv.Atoi(*batchConcurrency); err != nil || s.batchConcurrency < 1 || s.batchConcurrency > 1000 {
		errs = append(errs, fmt.Errorf("--batch-concurrency (GATEWAY_BATCH_CONCURRENCY): %q is not a whole number from 1 to 1000", *batchConcurrency))
	}
	if s.batchLease, err = time.ParseDuration(*batchLease); err != nil || s.batchLease < time.Second || s.batchLease > time.Hour {
		errs = append(errs, fmt.Errorf("--batch-lease (GATEWAY_BATCH_LEASE): %q is not a duration from 1s to 1h", *batchLease))
	}
	if s.logRetention, err = parseRetention(*logRetention); err != nil {
		errs = append(errs, fmt.Errorf("--log-retention (GATEWAY_LOG_RETENTION): %w", err))
	}
	s.logBodies = *logBodies
	s.redisURL, s.postgresURL = strings.TrimSpace(*redisURL), strings.TrimSpace(*postgresURL)
	if s.redisURL != "" && !hasScheme(s.redisURL, "redis://", "rediss://", "unix://") {
		errs = append(errs, errors.New("--redis (GATEWAY_REDIS_URL): not a redis://, rediss:// or unix:// URL"))
	}
	if s.postgresURL != "" && !hasScheme(s.postgresURL, "postgres://", "postgresql://") {
		errs = append(errs, errors.New("--postgres (GATEWAY_POSTGRES_URL): not a postgres:// or postgresql:// URL"))
	}
	if logBodiesEnvErr != nil {
		errs = append(errs, fmt.Errorf("--log-bodies (GATEWAY_LOG_BODIES): %q is not true or false", logBodiesEnv))
	}
	switch *checkErrors {
	case "pass":
	case "fail":
		s.checkErrorsFail = true
	default:
		errs = append(errs, fmt.Errorf("--check-errors (GATEWAY_CHECK_ERRORS): %q is not pass or fail", *checkErrors))
	}
	switch *logFormat {
	case "text":
	case "json":
		s.logJSON = true
	default:
		errs = append(errs, fmt.Errorf("--log-format (GATEWAY_LOG_FORMAT): %q is not text or json", *logFormat))
	}
	return s, errors.Join(errs...)
}

// hasScheme reports whether u starts with one of the schemes. The URL itself is never echoed in an error: it may
// hold a password.
func hasScheme(u string, schemes ...string) bool {
	for _, sc := range schemes {
		if len(u) > len(sc) && strings.EqualFold(u[:len(sc)], sc) {
			return true
		}
	}
	return false
}

// parseRetention reads a positive duration: Go's (72h, 90m) or a whole number of days (7d).
func parseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 && n <= 100*365 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%q is not a positive duration such as 7d or 72h", s)
}

// parseSize reads a byte count: a whole number, optionally with a unit (B, KiB, MiB, GiB, KB, MB, GB).
func parseSize(s string) (int, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000_000}, {"GB", 1000_000_000}, {"B", 1}}
	mult := 1
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > (1<<31-1)/mult {
		return 0, fmt.Errorf("%q is not a size such as 32MiB or 1048576 (at most 2GiB)", s)
	}
	return n * mult, nil
}
