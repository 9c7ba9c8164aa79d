package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

const (
	wsA = "11111111-1111-4111-8111-111111111111"
	wsB = "22222222-2222-4222-8222-222222222222"
)

// fields is a RequestView over a map of JSON texts.
type fields map[string]string

func (f fields) Field(path string) ([]byte, bool) {
	v, ok := f[path]
	return []byte(v), ok
}

// records is a slog.Handler that keeps what it is given.
type records struct {
	mu    sync.Mutex
	attrs []slog.Attr
	recs  *[]slog.Record
}

func newRecords() *records { return &records{recs: new([]slog.Record)} }

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	h.mu.Lock()
	*h.recs = append(*h.recs, r)
	h.mu.Unlock()
	return nil
}
func (h *records) WithAttrs(as []slog.Attr) slog.Handler {
	return &records{attrs: append(slices.Clip(h.attrs), as...), recs: h.recs}
}
func (h *records) WithGroup(string) slog.Handler { return h }

// find returns the attributes of the first record with message msg.
func (h *records) find(msg string) (map[string]string, slog.Level, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range *h.recs {
		if r.Message == msg {
			m := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
			return m, r.Level, true
		}
	}
	return nil, 0, false
}

func load(tb testing.TB, e *Engine, ws, id string, wasm []byte) {
	tb.Helper()
	if err := e.Load(context.Background(), ws, id, wasm); err != nil {
		tb.Fatalf("Load(%s, %s): %v", ws, id, err)
	}
}

func call(tb testing.TB, e *Engine, ws, id string, kind hostapi.Kind, in *hostapi.Input, req RequestView) *hostapi.Output {
	tb.Helper()
	out, err := e.Call(context.Background(), ws, id, kind, in, req)
	if err != nil {
		tb.Fatalf("Call(%s, %s): %v", ws, id, err)
	}
	return out
}

func TestCallRoundTrip(t *testing.T) {
	wasm := guest(t, "basic")
	opts := testOptions(t)
	logs := newRecords()
	opts.Logger = slog.New(logs)
	e := newEngine(t, opts)
	load(t, e, wsA, "basic", wasm)
	req := fields{"params.temperature": "0.5", "metadata.user": `"a-rather-long-user-name"`}

	tests := []struct {
		name  string
		kind  hostapi.Kind
		in    hostapi.Input
		check func(t *testing.T, out *hostapi.Output)
	}{
		{"pass", hostapi.KindCheck, hostapi.Input{CheckID: "pass"}, func(t *testing.T, out *hostapi.Output) {
			if !out.Verdict || out.Data != nil || out.Error != "" || out.HasTransformedText {
				t.Errorf("got %+v, want a bare pass", out)
			}
		}},
		{"fail", hostapi.KindCheck, hostapi.Input{CheckID: "fail"}, func(t *testing.T, out *hostapi.Output) {
			if out.Verdict {
				t.Errorf("got %+v, want a fail", out)
			}
		}},
		{"noop returns 0", hostapi.KindCheck, hostapi.Input{CheckID: "noop", Text: "x"}, func(t *testing.T, out *hostapi.Output) {
			if !out.Verdict || out.Data != nil || out.HasTransformedText || out.Error != "" || out.Match {
				t.Errorf("got %+v, want NewOutput()", out)
			}
		}},
		{"echo", hostapi.KindCheck, hostapi.Input{
			Text: "héllo wörld", Model: "gpt-x", CheckID: "echo", Stage: "before", Endpoint: "chat",
			Metadata: []hostapi.KV{{Key: "user", Value: "u1"}, {Key: "team", Value: "t"}},
			Params:   []hostapi.KV{{Key: "max", Value: "10"}, {Key: "words", Value: `["a","b"]`}},
		}, func(t *testing.T, out *hostapi.Output) {
			var got struct {
				Text, Model, Stage, Endpoint string
				Kind                         int
				Metadata, Params             map[string]string
			}
			if err := json.Unmarshal(out.Data, &got); err != nil {
				t.Fatalf("data %s: %v", out.Data, err)
			}
			if got.Text != "héllo wörld" || got.Model != "gpt-x" || got.Stage != "before" || got.Endpoint != "chat" || got.Kind != 1 ||
				got.Metadata["user"] != "u1" || got.Metadata["team"] != "t" || got.Params["max"] != "10" || got.Params["words"] != `["a","b"]` {
				t.Errorf("echo = %s", out.Data)
			}
			if s, ok := out.Transformed(); !ok || s != "dlröw olléh" {
				t.Errorf("transformed = %q, %v", s, ok)
			}
		}},
		{"error output", hostapi.KindCheck, hostapi.Input{CheckID: "error", Text: "bad"}, func(t *testing.T, out *hostapi.Output) {
			if out.Error != "plugin says no: bad" {
				t.Errorf("error = %q", out.Error)
			}
		}},
		{"condition matches", hostapi.KindCondition, hostapi.Input{Text: "oh yes"}, func(t *testing.T, out *hostapi.Output) {
			if !out.Match {
				t.Errorf("got %+v, want a match", out)
			}
		}},
		{"condition does not match", hostapi.KindCondition, hostapi.Input{Text: "no"}, func(t *testing.T, out *hostapi.Output) {
			if out.Match {
				t.Errorf("got %+v, want no match", out)
			}
		}},
		{"request field", hostapi.KindCheck, hostapi.Input{CheckID: "field", Text: "params.temperature"}, func(t *testing.T, out *hostapi.Output) {
			if string(out.Data) != `{"field":0.5}` {
				t.Errorf("data = %s", out.Data)
			}
		}},
		{"request field longer than the guest's buffer", hostapi.KindCheck, hostapi.Input{CheckID: "field", Text: "metadata.user"}, func(t *testing.T, out *hostapi.Output) {
			if string(out.Data) != `{"field":"a-rather-long-user-name"}` {
				t.Errorf("data = %s", out.Data)
			}
		}},
		{"request field absent", hostapi.KindCheck, hostapi.Input{CheckID: "field", Text: "params.nope"}, func(t *testing.T, out *hostapi.Output) {
			if string(out.Data) != `{"field":null}` {
				t.Errorf("data = %s", out.Data)
			}
		}},
		{"now", hostapi.KindCheck, hostapi.Input{CheckID: "now"}, func(t *testing.T, out *hostapi.Output) {
			var got struct{ Now int64 }
			if err := json.Unmarshal(out.Data, &got); err != nil {
				t.Fatal(err)
			}
			if d := time.Now().UnixMilli() - got.Now; d < 0 || d > 5000 {
				t.Errorf("now_unix_ms is %d ms off", d)
			}
		}},
		{"log", hostapi.KindCheck, hostapi.Input{CheckID: "log", Text: "hello from the guest", Params: []hostapi.KV{{Key: "level", Value: "2"}}}, func(t *testing.T, out *hostapi.Output) {
			attrs, level, ok := logs.find("hello from the guest")
			if !ok {
				t.Fatal("the guest's message was not logged")
			}
			if level != slog.LevelWarn || attrs["workspace"] != wsA || attrs["plugin"] != "basic" {
				t.Errorf("logged at %v with %v", level, attrs)
			}
		}},
		{"version", hostapi.KindCheck, hostapi.Input{CheckID: "version"}, func(t *testing.T, out *hostapi.Output) {
			if string(out.Data) != `{"version":"v1"}` {
				t.Errorf("data = %s", out.Data)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, call(t, e, wsA, "basic", tc.kind, &tc.in, req))
		})
	}
	st, ok := e.Stats(wsA, "basic")
	if !ok || st.Calls != uint64(len(tests)) || st.Errors != 0 || st.Duration <= 0 || st.Instances != 1 {
		t.Errorf("Stats = %+v, %v", st, ok)
	}
}

func TestValidate(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	i32s := func(n int) []byte { return []byte("\x7f\x7f\x7f\x7f\x7f")[:n] }
	withFuncs := func(m wasmModule, edit func(map[string]wasmFunc)) wasmModule {
		m.funcs = maps(m.funcs)
		edit(m.funcs)
		return m
	}
	type imp = struct {
		module, name string
		fn           wasmFunc
	}
	tests := []struct {
		name string
		wasm func() []byte
		want []string // substrings of the message; none means valid
	}{
		{"basic guest", func() []byte { return guest(t, "basic") }, nil},
		{"minimal module", func() []byte { return abiModule().bytes() }, nil},
		{"Go guest breaking the ABI", func() []byte { return guest(t, "badabi") }, []string{
			`export "gateway_alloc" is (i64) -> i32, want (i32) -> i32`,
			`missing export "gateway_call" (i32, i32, i32) -> i64`,
			`imports "env"."fetch", which the host does not offer`,
			`imports "gateway_v1"."http_get", which the host does not offer`,
			`imports "gateway_v1"."log" as (i32) -> (), but the host offers (i32, i32, i32) -> ()`,
		}},
		{"empty module", func() []byte { return wasmModule{}.bytes() }, []string{
			`missing export "gateway_abi_v1" () -> ()`,
			`missing export "gateway_alloc" (i32) -> i32`,
			`missing export "gateway_call" (i32, i32, i32) -> i64`,
			`exports no memory`,
		}},
		{"call returns i32", func() []byte {
			return withFuncs(abiModule(), func(f map[string]wasmFunc) { f["gateway_call"] = wasmFunc{params: i32s(3), results: i32s(1)} }).bytes()
		}, []string{`export "gateway_call" is (i32, i32, i32) -> i32, want (i32, i32, i32) -> i64`}},
		{"unknown wasi function", func() []byte {
			m := abiModule()
			m.imports = []imp{{"wasi_snapshot_preview1", "sock_connect", wasmFunc{params: i32s(2), results: i32s(1)}}}
			return m.bytes()
		}, []string{`imports "wasi_snapshot_preview1"."sock_connect", which the host does not offer`}},
		{"offered imports", func() []byte {
			m := abiModule()
			m.imports = []imp{
				{"gateway_v1", "request_field", wasmFunc{params: i32s(4), results: i32s(1)}},
				{"gateway_v1", "now_unix_ms", wasmFunc{results: []byte{0x7e}}},
				{"wasi_snapshot_preview1", "fd_write", wasmFunc{params: i32s(4), results: i32s(1)}},
			}
			return m.bytes()
		}, nil},
		{"not wasm", func() []byte { return []byte("definitely not wasm") }, []string{"not a valid WebAssembly module"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wasm := tc.wasm()
			for range 2 { // the second answer comes from the results kept by SHA-256
				err := e.Validate(ctx, wasm)
				if len(tc.want) == 0 {
					if err != nil {
						t.Fatalf("Validate: %v", err)
					}
					continue
				}
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest {
					t.Fatalf("Validate = %v, want a *gwerr.Error 400", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(ge.Message, w) {
						t.Errorf("message %q\nlacks %q", ge.Message, w)
					}
				}
			}
		})
	}
}

func maps(m map[string]wasmFunc) map[string]wasmFunc {
	c := make(map[string]wasmFunc, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func TestLoadRefuses(t *testing.T) {
	opts := testOptions(t)
	opts.initTimeout = 200 * time.Millisecond
	e := newEngine(t, opts)
	ctx := context.Background()
	trap, loop := abiModule(), abiModule()
	trap.initial, loop.initial = "trap", "loop"
	tests := []struct {
		name, ws, id string
		wasm         []byte
		want         string
	}{
		{"breaks the ABI", wsA, "x", wasmModule{}.bytes(), `missing export "gateway_call"`},
		{"traps in _initialize", wsA, "x", trap.bytes(), "does not initialise"},
		{"loops in _initialize", wsA, "x", loop.bytes(), "does not initialise: _initialize ran past 200ms"},
		{"bad plugin id", wsA, "no/slash", abiModule().bytes(), "plugin id"},
		{"bad workspace id", "", "x", abiModule().bytes(), "workspace id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Load(ctx, tc.ws, tc.id, tc.wasm)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(ge.Message, tc.want) {
				t.Fatalf("Load = %v, want a 400 mentioning %q", err, tc.want)
			}
		})
	}
	if ids := e.Loaded(wsA); len(ids) != 0 {
		t.Errorf("Loaded = %v after failed loads", ids)
	}
}

func TestWorkspaceIsolation(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	load(t, e, wsA, "p", guest(t, "basic"))
	version := func(ws string) string {
		out := call(t, e, ws, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil)
		return string(out.Data)
	}

	_, err := e.Call(ctx, wsB, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusNotFound {
		t.Fatalf("Call from another workspace = %v, want a 404", err)
	}
	if _, ok := e.Stats(wsB, "p"); ok {
		t.Error("Stats sees another workspace's plugin")
	}
	if ids := e.Loaded(wsB); len(ids) != 0 {
		t.Errorf("Loaded(B) = %v", ids)
	}

	load(t, e, wsB, "p", guest(t, "basic-v2"))
	if a, b := version(wsA), version(wsB); a != `{"version":"v1"}` || b != `{"version":"v2"}` {
		t.Errorf("versions A %s, B %s", a, b)
	}
	if !e.Remove(wsB, "p") || e.Remove(wsB, "p") {
		t.Error("Remove should report true, then false")
	}
	if a := version(wsA); a != `{"version":"v1"}` {
		t.Errorf("A after B's Remove: %s", a)
	}
	if _, err := e.Call(ctx, wsB, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil); !errors.As(err, &ge) || ge.Status != http.StatusNotFound {
		t.Errorf("Call after Remove = %v, want a 404", err)
	}
	if got := e.Loaded(wsA); !slices.Equal(got, []string{"p"}) {
		t.Errorf("Loaded(A) = %v", got)
	}
}

func TestLoadStored(t *testing.T) {
	st, err := storage.Open("mem", storage.Options{MasterKey: make([]byte, storage.MasterKeySize), InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, id := range []string{wsA, wsB} {
		if _, err := st.Workspaces.Put(&storage.Workspace{ID: id, Slug: []string{"a", "b"}[i], OrganisationID: "33333333-3333-4333-8333-333333333333"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct {
		ws, id string
		wasm   []byte
	}{
		{wsA, "one", guest(t, "basic")},
		{wsA, "two", guest(t, "basic-v2")},
		{wsB, "broken", []byte("not wasm")},
		{wsB, "badabi", guest(t, "badabi")},
		{wsB, "one", guest(t, "basic-v2")},
	} {
		if _, _, err := st.Plugins.Put(p.ws, p.id, p.wasm); err != nil {
			t.Fatal(err)
		}
	}

	e := newEngine(t, testOptions(t))
	if err := e.LoadStored(context.Background(), st); err != nil {
		t.Fatalf("LoadStored: %v", err)
	}
	if got := e.Loaded(wsA); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("Loaded(A) = %v", got)
	}
	if got := e.Loaded(wsB); !slices.Equal(got, []string{"one"}) {
		t.Errorf("Loaded(B) = %v (bad plugins are skipped)", got)
	}
	for _, c := range []struct{ ws, id, want string }{{wsA, "one", "v1"}, {wsA, "two", "v2"}, {wsB, "one", "v2"}} {
		out := call(t, e, c.ws, c.id, hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil)
		if string(out.Data) != `{"version":"`+c.want+`"}` {
			t.Errorf("%s/%s answers %s, want %s", c.ws, c.id, out.Data, c.want)
		}
	}
}

func TestPoolWaitIsBoundedByContext(t *testing.T) {
	opts := testOptions(t)
	opts.MaxInstances = 1
	opts.CallTimeout = 300 * time.Millisecond
	e := newEngine(t, opts)
	load(t, e, wsA, "p", guest(t, "basic"))

	busy := make(chan error)
	go func() {
		_, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "loop"}, nil)
		busy <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the loop take the only instance
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Call(ctx, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for a free instance") {
		t.Errorf("Call while the pool is full = %v, want the context's deadline while waiting", err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("waited %v", d)
	}
	if err := <-busy; !errors.Is(err, ErrTimeout) {
		t.Errorf("loop call = %v, want ErrTimeout", err)
	}
	call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
}

func TestIdleEviction(t *testing.T) {
	opts := testOptions(t)
	opts.IdleTimeout = 40 * time.Millisecond
	e := newEngine(t, opts)
	load(t, e, wsA, "p", guest(t, "basic"))
	load(t, e, wsB, "p", abiModule().bytes())
	call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
	e.Remove(wsB, "p")

	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := e.Stats(wsA, "p")
		e.mu.RLock()
		_, bAlive := e.workspaces[wsB]
		e.mu.RUnlock()
		if st.Instances == 0 && !bAlive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %d instances of A's plugin, B's runtime alive %v", st.Instances, bAlive)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The compiled module is kept: the next call just instantiates.
	out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil)
	if string(out.Data) != `{"version":"v1"}` {
		t.Errorf("after eviction: %s", out.Data)
	}
}

func TestClosed(t *testing.T) {
	e := newEngine(t, testOptions(t))
	load(t, e, wsA, "p", abiModule().bytes())
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Load(context.Background(), wsA, "q", abiModule().bytes()); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close = %v", err)
	}
	if err := e.Validate(context.Background(), abiModule().bytes()); !errors.Is(err, ErrClosed) {
		t.Errorf("Validate after Close = %v", err)
	}
	if _, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, &hostapi.Input{}, nil); err == nil {
		t.Error("Call after Close succeeded")
	}
}
