package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// logsCLIFixture is a gateway over an in-memory store whose request log the test writes itself: the CLI only
// reads the API, so the entries need no traffic.
type logsCLIFixture struct {
	cliFixture
	store *storage.Store
	ws    string
}

func newLogsCLIFixture(t *testing.T) *logsCLIFixture {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := &storage.Workspace{ID: storage.NewUUID(), Slug: "default", OrganisationID: storage.NewUUID()}
	if _, err := st.Workspaces.Put(ws); err != nil {
		t.Fatal(err)
	}
	f := &logsCLIFixture{store: st, ws: ws.ID}
	if f.admin, _, err = st.APIKeys.Create(ws.ID, "admin", true); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := routes.New(st, runtime.New(st, runtime.Options{Logger: log}), routes.Options{Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(time.Second) })
	f.url = "http://" + ln.Addr().String()
	return f
}

// add stores entries made a second apart from at, one per model, status 500 for models starting with "x",
// metadata team=red for models ending in "r"; it returns their IDs.
func (f *logsCLIFixture) add(t *testing.T, at time.Time, models ...string) []string {
	t.Helper()
	var es []*storage.LogEntry
	for i, m := range models {
		status := 200
		if strings.HasPrefix(m, "x") {
			status = 500
		}
		md := map[string]string{}
		if strings.HasSuffix(m, "r") {
			md["team"] = "red"
		}
		es = append(es, &storage.LogEntry{WorkspaceID: f.ws, CreatedAt: at.Add(time.Duration(i) * time.Second), TraceID: "trace-" + m,
			Endpoint: "chat/completions", Provider: "openai", Model: m, Status: status, Latency: 12 * time.Millisecond, Metadata: md,
			Usage: storage.LogUsage{InputTokens: 5, OutputTokens: 2, Known: true}})
	}
	if err := f.store.Logs.Append(es); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

func TestCLILogsListAndGet(t *testing.T) {
	f := newLogsCLIFixture(t)
	ids := f.add(t, time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC), "m-a", "x-b", "m-r")

	out := f.mustRun(t, "logs", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CREATED_AT") || !strings.HasPrefix(lines[1], "2026-02-03T04:05:08Z") ||
		!strings.Contains(lines[1], ids[2]) || !strings.Contains(lines[3], ids[0]) {
		t.Fatalf("logs list: want a header and 3 rows, newest first:\n%s", out)
	}
	tests := []struct {
		args []string
		want []string // IDs listed, newest first
	}{
		{[]string{"--status", "500"}, ids[1:2]},
		{[]string{"--metadata", "team=red"}, ids[2:3]},
		{[]string{"--model", "m-a", "--trace-id", "trace-m-a"}, ids[:1]},
		{[]string{"--from", "2026-02-03T04:05:07Z"}, []string{ids[2], ids[1]}},
		{[]string{"--to", "1770091507"}, []string{ids[1], ids[0]}}, // 2026-02-03T04:05:07Z
	}
	for _, tc := range tests {
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		out := f.mustRun(t, append([]string{"logs", "list", "--json"}, tc.args...)...)
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%v: %v %s", tc.args, err, out)
		}
		var got []string
		for _, d := range list.Data {
			got = append(got, d.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("logs list %v = %v, want %v", tc.args, got, tc.want)
		}
	}
	out = f.mustRun(t, "logs", "list", "--limit", "1")
	if !strings.Contains(out, "more: repeat with --after "+ids[2]) {
		t.Errorf("logs list --limit 1 does not say how to go on:\n%s", out)
	}
	out = f.mustRun(t, "logs", "list", "--limit", "1", "--after", ids[2])
	if !strings.Contains(out, ids[1]) || strings.Contains(out, ids[2]) {
		t.Errorf("logs list --after: \n%s", out)
	}

	out = f.mustRun(t, "logs", "get", ids[1])
	for _, want := range []string{"id " + ids[1], "model x-b", "status 500", `usage {"input_tokens":5,"output_tokens":2}`} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("logs get lacks %q:\n%s", want, out)
		}
	}

	if code, _, errOut := f.run(t, "logs", "list", "--status", "abc"); code != 1 || !strings.Contains(errOut, `"param":"status"`) {
		t.Errorf("bad status: exit %d, %s", code, errOut)
	}
	if code, _, errOut := f.run(t, "logs", "list", "--metadata", "team"); code != 1 || !strings.Contains(errOut, "KEY=VALUE") {
		t.Errorf("bad metadata: exit %d, %s", code, errOut)
	}
	if code, _, errOut := f.run(t, "logs", "get", "log_nope"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("unknown log: exit %d, %s", code, errOut)
	}
}

// TestCLILogsTail runs tail while entries arrive: each is printed once, oldest first, and tail stops cleanly
// when its context ends (as on SIGINT).
func TestCLILogsTail(t *testing.T) {
	for _, asJSON := range []bool{true, false} {
		t.Run(map[bool]string{true: "json", false: "table"}[asJSON], func(t *testing.T) {
			f := newLogsCLIFixture(t)
			start := time.Now().Add(-time.Minute)
			ids := f.add(t, start, "m-1", "m-2")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr syncBuffer
			args := []string{"logs", "tail", "--interval", "10ms"}
			if asJSON {
				args = append(args, "--json")
			}
			env := map[string]string{"GATEWAY_URL": f.url, "GATEWAY_API_KEY": f.admin}
			done := make(chan int)
			go func() {
				done <- runCLI(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
			}()
			waitFor := func(id string) {
				t.Helper()
				for range 1000 {
					if strings.Contains(stdout.String(), id) {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
				t.Fatalf("tail never printed %s:\n%s\n%s", id, stdout.String(), stderr.String())
			}
			waitFor(ids[1])
			ids = append(ids, f.add(t, start.Add(10*time.Second), "m-3")...)
			waitFor(ids[2])
			ids = append(ids, f.add(t, start.Add(20*time.Second), "m-4", "m-5")...)
			waitFor(ids[4])
			time.Sleep(50 * time.Millisecond) // a few more polls, which must print nothing again
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("tail exit %d: %s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if !asJSON {
				if !strings.HasPrefix(lines[0], "CREATED_AT") {
					t.Fatalf("no header:\n%s", stdout.String())
				}
				lines = lines[1:]
			}
			if len(lines) != len(ids) {
				t.Fatalf("%d lines, want %d, one per entry:\n%s", len(lines), len(ids), stdout.String())
			}
			for i, id := range ids {
				if !strings.Contains(lines[i], id) {
					t.Errorf("line %d = %s, want entry %s (oldest first)", i, lines[i], id)
				}
				if asJSON {
					var m map[string]any
					if err := json.Unmarshal([]byte(lines[i]), &m); err != nil || m["id"] != id {
						t.Errorf("line %d is not the entry's JSON: %s", i, lines[i])
					}
				}
			}
		})
	}
}
