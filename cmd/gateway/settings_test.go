package main

import (
	"io"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/netguard"
)

func TestParseSettings(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name    string
		args    []string
		env     func(string) string
		want    settings
		wantErr []string
	}{
		{name: "defaults", env: env(),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo}},
		{name: "environment", env: env("GATEWAY_LISTEN", "0.0.0.0:9000", "GATEWAY_DATA_DIR", "/var/gw", "GATEWAY_BOOTSTRAP", "b.json",
			"GATEWAY_BODY_LIMIT", "1MiB", "GATEWAY_SHUTDOWN_GRACE", "5s", "GATEWAY_LOG_LEVEL", "debug", "GATEWAY_LOG_FORMAT", "json"),
			want: settings{listen: "0.0.0.0:9000", dataDir: "/var/gw", bootstrap: "b.json", bodyLimit: 1 << 20, grace: 5 * time.Second,
				logLevel: slog.LevelDebug, logJSON: true}},
		{name: "flags beat the environment",
			args: []string{"--listen", "127.0.0.1:1", "--data", "d", "--bootstrap", "f.json", "--body-limit", "2048", "--shutdown-grace", "1m"},
			env:  env("GATEWAY_LISTEN", "0.0.0.0:9000", "GATEWAY_DATA_DIR", "/var/gw", "GATEWAY_BOOTSTRAP", "b.json"),
			want: settings{listen: "127.0.0.1:1", dataDir: "d", bootstrap: "f.json", bodyLimit: 2048, grace: time.Minute, logLevel: slog.LevelInfo}},
		{name: "bad values name their flag and variable", env: env("GATEWAY_BODY_LIMIT", "lots", "GATEWAY_SHUTDOWN_GRACE", "soon",
			"GATEWAY_LOG_LEVEL", "loud", "GATEWAY_LOG_FORMAT", "xml"),
			wantErr: []string{"--body-limit (GATEWAY_BODY_LIMIT)", "--shutdown-grace (GATEWAY_SHUTDOWN_GRACE)", "--log-level (GATEWAY_LOG_LEVEL)", "--log-format (GATEWAY_LOG_FORMAT)"}},
		{name: "host policy", args: []string{"--allow-hosts", "10.0.0.0/8, llm.internal"}, env: env("GATEWAY_ALLOW_PRIVATE_HOSTS", "true"),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo,
				hosts: netguard.Policy{AllowPrivate: true, Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, AllowHosts: []string{"llm.internal"}}}},
		{name: "bad host policy", args: []string{"--allow-hosts", "http://x/"}, env: env("GATEWAY_ALLOW_PRIVATE_HOSTS", "maybe"),
			wantErr: []string{"--allow-hosts (GATEWAY_ALLOW_HOSTS)", "--allow-private-hosts (GATEWAY_ALLOW_PRIVATE_HOSTS)"}},
		{name: "request and plugin limits", args: []string{"--request-deadline", "90s", "--max-upstream-attempts", "7",
			"--plugins-per-workspace", "3", "--check-errors", "fail"}, env: env("GATEWAY_PLUGIN_MEMORY_PER_WORKSPACE", "256MiB"),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo,
				requestDeadline: 90 * time.Second, maxUpstreamAttempts: 7, pluginsPerWorkspace: 3, pluginMemoryPerWorkspace: 256 << 20,
				checkErrorsFail: true}},
		{name: "file and batch limits", args: []string{"--file-limit", "1GiB"}, env: env("GATEWAY_BATCH_CONCURRENCY", "3"),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo,
				fileLimit: 1 << 30, batchConcurrency: 3}},
		{name: "metrics listener from the environment", env: env("GATEWAY_METRICS_LISTEN", "127.0.0.1:9090"),
			want: settings{listen: "127.0.0.1:8787", metricsListen: "127.0.0.1:9090", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo}},
		{name: "metrics listener flag beats the environment", args: []string{"--metrics-listen", ":9191"}, env: env("GATEWAY_METRICS_LISTEN", "127.0.0.1:9090"),
			want: settings{listen: "127.0.0.1:8787", metricsListen: ":9191", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo}},
		{name: "replicas", args: []string{"--postgres", "postgres://gw:pw@db:5432/gateway", "--batch-lease", "5s"},
			env: env("GATEWAY_REDIS_URL", " redis://cache:6379/0 "),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo,
				redisURL: "redis://cache:6379/0", postgresURL: "postgres://gw:pw@db:5432/gateway", batchLease: 5 * time.Second}},
		{name: "bad replica settings never echo the URL", args: []string{"--postgres", "mysql://u:topsecret@h/db", "--batch-lease", "100ms"},
			env:     env("GATEWAY_REDIS_URL", "http://u:topsecret2@h"),
			wantErr: []string{"--postgres (GATEWAY_POSTGRES_URL)", "--redis (GATEWAY_REDIS_URL)", "--batch-lease (GATEWAY_BATCH_LEASE)"}},
		{name: "bad file and batch limits", args: []string{"--file-limit", "huge", "--batch-concurrency", "0"}, env: env(),
			wantErr: []string{"--file-limit (GATEWAY_FILE_LIMIT)", "--batch-concurrency (GATEWAY_BATCH_CONCURRENCY)"}},
		{name: "bad limits", args: []string{"--request-deadline", "0s", "--max-upstream-attempts", "0", "--plugins-per-workspace", "x",
			"--plugin-memory-per-workspace", "lots", "--check-errors", "maybe"}, env: env(),
			wantErr: []string{"--request-deadline (GATEWAY_REQUEST_DEADLINE)", "--max-upstream-attempts (GATEWAY_MAX_UPSTREAM_ATTEMPTS)",
				"--plugins-per-workspace (GATEWAY_PLUGINS_PER_WORKSPACE)", "--plugin-memory-per-workspace (GATEWAY_PLUGIN_MEMORY_PER_WORKSPACE)",
				"--check-errors (GATEWAY_CHECK_ERRORS)"}},
		{name: "log retention in days, bodies from the environment", args: []string{"--log-retention", "30d"}, env: env("GATEWAY_LOG_BODIES", "true"),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo,
				logRetention: 30 * 24 * time.Hour, logBodies: true}},
		{name: "log retention as a duration", args: []string{"--log-bodies", "--log-retention", "36h"}, env: env("GATEWAY_LOG_RETENTION", "1d"),
			want: settings{listen: "127.0.0.1:8787", dataDir: "./data", bodyLimit: 32 << 20, grace: 30 * time.Second, logLevel: slog.LevelInfo,
				logRetention: 36 * time.Hour, logBodies: true}},
		{name: "bad log settings", args: []string{"--log-retention", "0d"}, env: env("GATEWAY_LOG_BODIES", "sometimes"),
			wantErr: []string{"--log-retention (GATEWAY_LOG_RETENTION)", "--log-bodies (GATEWAY_LOG_BODIES)"}},
		{name: "negative log retention", args: []string{"--log-retention", "-5h"}, env: env(), wantErr: []string{"--log-retention"}},
		{name: "zero log retention", args: []string{"--log-retention", "0"}, env: env(), wantErr: []string{"--log-retention"}},
		{name: "log retention without a unit", args: []string{"--log-retention", "7"}, env: env(), wantErr: []string{"--log-retention"}},
		{name: "empty listen", args: []string{"--listen", ""}, env: env(), wantErr: []string{"--listen"}},
		{name: "stray argument", args: []string{"serve"}, env: env(), wantErr: []string{`"serve"`}},
		{name: "unknown flag", args: []string{"--port", "1"}, env: env(), wantErr: []string{"port"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSettings(tc.args, tc.env, io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "topsecret") {
					t.Errorf("error %q shows a password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := withLimitDefaults(tc.want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

// withLimitDefaults fills the request and plugin limits a test case leaves zero with their defaults.
func withLimitDefaults(s settings) settings {
	if s.requestDeadline == 0 {
		s.requestDeadline = 10 * time.Minute
	}
	if s.maxUpstreamAttempts == 0 {
		s.maxUpstreamAttempts = 50
	}
	if s.pluginsPerWorkspace == 0 {
		s.pluginsPerWorkspace = 32
	}
	if s.pluginMemoryPerWorkspace == 0 {
		s.pluginMemoryPerWorkspace = 1 << 30
	}
	if s.fileLimit == 0 {
		s.fileLimit = 512 << 20
	}
	if s.batchConcurrency == 0 {
		s.batchConcurrency = 8
	}
	if s.logRetention == 0 {
		s.logRetention = 7 * 24 * time.Hour
	}
	if s.batchLease == 0 {
		s.batchLease = 15 * time.Second
	}
	return s
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"32MiB", 32 << 20, true},
		{"32 MiB", 32 << 20, true},
		{"512KiB", 512 << 10, true},
		{"1GiB", 1 << 30, true},
		{"10MB", 10_000_000, true},
		{"100B", 100, true},
		{"0", 0, false},
		{"-5", 0, false},
		{"MiB", 0, false},
		{"4GiB", 0, false},
		{"1.5MiB", 0, false},
	}
	for _, tc := range tests {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
