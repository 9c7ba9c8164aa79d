package examplecases

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

// Workspace is where Run loads an example, as plugin id the example's name.
const Workspace = "examples"

// Run loads wasm, lang's build of example, into a fresh plugins.Engine and runs every case of the example that
// applies to lang through Engine.Call, each as a subtest named after the case, comparing the guest's log lines
// too. The engine's kv_get answers from the case's kv, for Workspace only: a guest that reads another
// workspace's store finds nothing.
func Run(t *testing.T, lang wasmtest.Language, example string, wasm []byte) {
	t.Helper()
	cases, err := Cases(example, lang)
	if err != nil {
		t.Fatal(err)
	}
	logs := &guestLogs{}
	kv := &kvStore{}
	// One instance, so that every case after the first runs on what the previous ones left (a compiled-pattern
	// cache, a grown buffer, a kv value read before: a case whose store changed sees the new one); a generous
	// deadline, since tests run under -race on small machines.
	e, err := plugins.New(plugins.Options{MaxInstances: 1, CallTimeout: 30 * time.Second, Logger: slog.New(&logHandler{logs: logs}), KV: kv.get})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Load(ctx, Workspace, example, wasm); err != nil {
		t.Fatalf("load the %s example (%s): %v", example, lang, err)
	}
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			logs.take()
			kv.set(c.KVStore())
			out, err := e.Call(ctx, Workspace, example, c.HostKind(), c.HostInput(), fields(c.Fields))
			if err != nil {
				t.Fatalf("call failed: %v", err)
			}
			for _, problem := range Compare(&c.Want, out) {
				t.Error(problem)
			}
			if got := logs.take(); !slices.Equal(got, c.Want.Logs) {
				t.Errorf("logs %q, want %q", got, c.Want.Logs)
			}
		})
	}
}

// RunNative runs the cases of example that apply to lang through run, a plugin's handlers called in the test's
// own process (sdk.Run for Go). A native run has no host: the cases that need request fields or a key-value
// store are left out (RunNativeKV runs the latter), and log lines are not compared.
func RunNative(t *testing.T, lang wasmtest.Language, example string, run func(hostapi.Kind, *hostapi.Input) hostapi.Output) {
	t.Helper()
	runNative(t, lang, example, func(c *Case) bool { return len(c.Fields) == 0 && c.KV == nil }, nil, run)
}

// RunNativeKV runs the cases of example with a key-value store (kv) that apply to lang through run, natively as
// RunNative does, each after setKV(its store), which makes the SDK's kv_get answer from it (sdk.SetKVForTest
// for Go); setKV(nil) at the end.
func RunNativeKV(t *testing.T, lang wasmtest.Language, example string, setKV func(map[string]string), run func(hostapi.Kind, *hostapi.Input) hostapi.Output) {
	t.Helper()
	t.Cleanup(func() { setKV(nil) })
	runNative(t, lang, example, func(c *Case) bool { return len(c.Fields) == 0 && c.KV != nil }, setKV, run)
}

func runNative(t *testing.T, lang wasmtest.Language, example string, include func(*Case) bool, setKV func(map[string]string), run func(hostapi.Kind, *hostapi.Input) hostapi.Output) {
	t.Helper()
	cases, err := Cases(example, lang)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for i := range cases {
		c := &cases[i]
		if !include(c) {
			continue
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			if setKV != nil {
				setKV(c.KVStore())
			}
			out := run(c.HostKind(), c.HostInput())
			for _, problem := range Compare(&c.Want, &out) {
				t.Error(problem)
			}
		})
	}
	if ran == 0 {
		t.Fatalf("examplecases: no case of example %q for language %q runs natively here", example, lang)
	}
}

// kvStore is what the engine's kv_get answers in Run: the current case's store, in Workspace only.
type kvStore struct {
	mu     sync.Mutex
	values map[string]string
}

func (s *kvStore) set(values map[string]string) {
	s.mu.Lock()
	s.values = values
	s.mu.Unlock()
}

func (s *kvStore) get(workspaceID, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if !ok || workspaceID != Workspace {
		return nil, false, nil
	}
	return []byte(v), true, nil
}

// fields is a case's RequestView.
type fields map[string]json.RawMessage

func (f fields) Field(path string) ([]byte, bool) {
	v, ok := f[path]
	return v, ok
}

// guestLogs collects what the engine logs for a plugin: the lines its guest writes through the log host
// function (and the engine's own lines about the plugin, which a passing case never causes).
type guestLogs struct {
	mu    sync.Mutex
	lines []LogLine
}

func (g *guestLogs) take() []LogLine {
	g.mu.Lock()
	defer g.mu.Unlock()
	lines := g.lines
	g.lines = nil
	return lines
}

// logHandler records the records of the loggers the engine makes per plugin (those With a "plugin" attribute):
// the engine's lines about loading and sweeping are not the guest's.
type logHandler struct {
	logs   *guestLogs
	plugin bool
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	if !h.plugin {
		return nil
	}
	level := strings.ToLower(r.Level.String())
	h.logs.mu.Lock()
	h.logs.lines = append(h.logs.lines, LogLine{Level: level, Msg: r.Message})
	h.logs.mu.Unlock()
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	plugin := h.plugin || slices.ContainsFunc(attrs, func(a slog.Attr) bool { return a.Key == "plugin" })
	return &logHandler{logs: h.logs, plugin: plugin}
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }
