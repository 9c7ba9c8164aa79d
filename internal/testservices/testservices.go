package testservices

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The environment variables .ci/services exports.
const (
	RedisEnv    = "GATEWAY_TEST_REDIS_URL"    // redis://127.0.0.1:6390/0
	PostgresEnv = "GATEWAY_TEST_POSTGRES_URL" // postgres://gateway@127.0.0.1:5440/gateway_test?sslmode=disable
	RequireEnv  = "GATEWAY_REQUIRE_SERVICES"  // "1" in CI: a missing URL fails the test instead of skipping it
)

// setupTimeout bounds each round trip this package makes to PostgreSQL, so that a server that stopped answering
// fails the test rather than hanging it until go test's timeout.
const setupTimeout = 10 * time.Second

// RedisURL returns GATEWAY_TEST_REDIS_URL. When it is empty the test skips, or fails when
// GATEWAY_REQUIRE_SERVICES=1; a URL that is not redis:// or rediss:// fails it. The server is shared: namespace
// keys with RedisPrefix.
func RedisURL(t testing.TB) string {
	t.Helper()
	return serviceURL(t, RedisEnv, "Redis", "redis", "rediss")
}

// PostgresURL returns GATEWAY_TEST_POSTGRES_URL, with RedisURL's rules, for postgres:// or postgresql:// URLs.
// The database is shared: prefer PostgresSchemaURL, which isolates the test.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return serviceURL(t, PostgresEnv, "PostgreSQL", "postgres", "postgresql")
}

// PostgresSchemaURL creates a schema of its own for the test, t_<16 hex digits>, and returns PostgresURL with that
// schema as the search_path of every connection made from it (the libpq "options" parameter, which pgx sends at
// start-up), so unqualified tables land in it. The schema is dropped, with everything in it, when the test ends;
// close pools opened on the URL in a t.Cleanup registered after this call, so that they close first.
func PostgresSchemaURL(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	schema := "t_" + randomHex()
	ident := pgx.Identifier{schema}.Sanitize()

	ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
	defer cancel()
	if err := execOnce(ctx, base, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("testservices: create schema %s on %s: %v", schema, PostgresEnv, err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := execOnce(ctx, base, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			t.Errorf("testservices: drop schema %s: %v (a connection still open on it holds its locks?)", schema, err)
		}
	})
	u, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("testservices: %s: %v", PostgresEnv, err)
	}
	return u
}

// RedisPrefix returns a key prefix no other test uses, t_<16 hex digits>:, for a test that shares the Redis server:
// every key the test (or the gateway under test, through its key prefix option) writes must start with it.
func RedisPrefix(t testing.TB) string {
	t.Helper()
	return "t_" + randomHex() + ":"
}

func serviceURL(t testing.TB, env, name string, schemes ...string) string {
	t.Helper()
	u, skip, err := resolve(os.Getenv, env, name, schemes)
	if err != nil {
		t.Fatalf("testservices: %v", err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	return u
}

// resolve reads env through getenv and returns its URL, or else why the test skips, or else why it must fail.
func resolve(getenv func(string) string, env, name string, schemes []string) (u, skip string, err error) {
	raw := getenv(env)
	if raw == "" {
		reason := fmt.Sprintf("%s not available: set %s (eval \"$(.ci/services env)\")", name, env)
		required, err := requireServices(getenv)
		if err != nil {
			return "", "", err
		}
		if required {
			return "", "", fmt.Errorf("%s; %s=%s forbids skipping", reason, RequireEnv, getenv(RequireEnv))
		}
		return "", reason, nil
	}
	if err := validateURL(raw, schemes); err != nil {
		return "", "", fmt.Errorf("%s: %w", env, err)
	}
	return raw, "", nil
}

// requireServices reads RequireEnv as a boolean; a value it cannot read is an error rather than false, so that a
// typo in CI cannot turn failures back into skips.
func requireServices(getenv func(string) string) (bool, error) {
	v := getenv(RequireEnv)
	if v == "" {
		return false, nil
	}
	required, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not a boolean (want 1 or 0)", RequireEnv, v)
	}
	return required, nil
}

func validateURL(raw string, schemes []string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("scheme %q, want %s", u.Scheme, strings.Join(schemes, ":// or ")+"://")
	}
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	return nil
}

// withSearchPath adds -csearch_path=<schema> to the URL's options parameter, after any options already there.
func withSearchPath(raw, schema string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	options := "-csearch_path=" + schema
	if existing := q.Get("options"); existing != "" {
		options = existing + " " + options
	}
	q.Set("options", options)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func execOnce(ctx context.Context, connString, sql string) error {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func randomHex() string {
	var b [8]byte
	rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}
