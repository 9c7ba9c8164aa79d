package testservices

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantURL  string
		wantSkip bool
		wantErr  string // a substring of the error
	}{
		{name: "unset skips", env: nil, wantSkip: true},
		{name: "unset with require=0 skips", env: map[string]string{RequireEnv: "0"}, wantSkip: true},
		{name: "unset with require=1 fails", env: map[string]string{RequireEnv: "1"}, wantErr: RequireEnv + "=1 forbids skipping"},
		{name: "unset with require=true fails", env: map[string]string{RequireEnv: "true"}, wantErr: "forbids skipping"},
		{name: "unreadable require fails", env: map[string]string{RequireEnv: "yes please"}, wantErr: RequireEnv + `: "yes please" is not a boolean`},
		{name: "set", env: map[string]string{RedisEnv: "redis://127.0.0.1:6390/0"}, wantURL: "redis://127.0.0.1:6390/0"},
		{name: "set with require", env: map[string]string{RedisEnv: "rediss://h:1/2", RequireEnv: "1"}, wantURL: "rediss://h:1/2"},
		{name: "wrong scheme", env: map[string]string{RedisEnv: "http://127.0.0.1:6390"}, wantErr: RedisEnv + `: scheme "http"`},
		{name: "no host", env: map[string]string{RedisEnv: "redis:///0"}, wantErr: RedisEnv + ": no host"},
		{name: "unparsable", env: map[string]string{RedisEnv: "redis://[::1"}, wantErr: RedisEnv + ": parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			u, skip, err := resolve(getenv, RedisEnv, "Redis", []string{"redis", "rediss"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if u != tc.wantURL {
				t.Errorf("url = %q, want %q", u, tc.wantURL)
			}
			if got := skip != ""; got != tc.wantSkip {
				t.Errorf("skip = %q, want a skip: %v", skip, tc.wantSkip)
			}
			if tc.wantSkip && !strings.Contains(skip, RedisEnv) {
				t.Errorf("skip reason %q does not name %s", skip, RedisEnv)
			}
		})
	}
}

func TestWithSearchPath(t *testing.T) {
	tests := []struct {
		name, in, wantOptions string
	}{
		{name: "no query", in: "postgres://u@h:1/db", wantOptions: "-csearch_path=t_1"},
		{name: "keeps other parameters", in: "postgres://u@h:1/db?sslmode=disable", wantOptions: "-csearch_path=t_1"},
		{name: "after existing options", in: "postgres://u@h:1/db?options=-cstatement_timeout%3D5000", wantOptions: "-cstatement_timeout=5000 -csearch_path=t_1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := withSearchPath(tc.in, "t_1")
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Query().Get("options"); got != tc.wantOptions {
				t.Errorf("options = %q, want %q", got, tc.wantOptions)
			}
			in, _ := url.Parse(tc.in)
			if in.Query().Has("sslmode") && u.Query().Get("sslmode") != in.Query().Get("sslmode") {
				t.Errorf("sslmode lost: %s", out)
			}
			if u.Host != in.Host || u.Path != in.Path || u.User.String() != in.User.String() {
				t.Errorf("%s changed more than the query of %s", out, tc.in)
			}
		})
	}
}

func TestRedisPrefixIsFreshEachCall(t *testing.T) {
	a, b := RedisPrefix(t), RedisPrefix(t)
	if a == b {
		t.Fatalf("two calls gave the same prefix %q", a)
	}
	if !strings.HasPrefix(a, "t_") || !strings.HasSuffix(a, ":") || len(a) != len("t_")+16+len(":") {
		t.Errorf("prefix %q is not t_<16 hex digits>:", a)
	}
}

// The Redis URL names a server that answers: a PING over RESP, without a client library.
func TestRedisURLAnswersPing(t *testing.T) {
	u, err := url.Parse(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	var dialer net.Dialer
	ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
	defer cancel()
	conn, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		t.Fatalf("dial %s: %v", u.Host, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(setupTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if reply != "+PONG\r\n" {
		t.Fatalf("PING answered %q", reply)
	}
}

// A schema URL puts every connection in the test's own schema (pgx sends the options parameter at start-up), and
// the schema is gone once the test has ended.
func TestPostgresSchemaURL(t *testing.T) {
	base := PostgresURL(t)
	var schema string
	t.Run("inside", func(t *testing.T) {
		u := PostgresSchemaURL(t)
		ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(schema, "t_") {
			t.Fatalf("current_schema() = %q, want the test's t_ schema (options not honoured?)", schema)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE items (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		var in string
		if err := conn.QueryRow(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'items' AND table_schema = $1", schema).Scan(&in); err != nil {
			t.Fatalf("table items not created in %s: %v", schema, err)
		}
	})
	if schema == "" {
		t.Fatal("the subtest found no schema")
	}

	ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left {
		t.Errorf("schema %s still exists after its test ended", schema)
	}
}

// Two tests' schemas do not see each other's tables.
func TestPostgresSchemaURLsAreIsolated(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), setupTimeout)
	defer cancel()
	first, second := PostgresSchemaURL(t), PostgresSchemaURL(t)
	if first == second {
		t.Fatalf("two calls gave the same URL %s", first)
	}
	a, err := pgx.Connect(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := pgx.Connect(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if _, err := a.Exec(ctx, "CREATE TABLE shared_name (v text); INSERT INTO shared_name VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, "CREATE TABLE shared_name (v text)"); err != nil {
		t.Fatalf("second schema cannot create the table the first has: %v", err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM shared_name").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("second schema sees %d rows of the first's table", n)
	}
}
