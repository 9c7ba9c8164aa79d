package routes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// notLoadedCheck is what the wasm engine's CheckFor gives for any plugin id, loaded or not: a call to a plugin
// that is not loaded errors.
type notLoadedCheck struct{ id string }

func (c notLoadedCheck) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	return hostapi.Output{}, fmt.Errorf("plugin check %s: plugin not found", c.id)
}

// anyPluginChecks resolves every "<plugin>.<check>" id as cmd/gateway's wiring does (CheckFor binds without
// looking), so that whether the plugin exists is up to the gateway.
func anyPluginChecks(_, plugin, check string, _ json.RawMessage) (guardrails.Check, error) {
	return notLoadedCheck{id: plugin + "." + check}, nil
}

// logRecords keeps what the gateway logs.
type logRecords struct {
	mu   *sync.Mutex
	list *[]map[string]any
}

func newLogRecords() logRecords { return logRecords{mu: &sync.Mutex{}, list: &[]map[string]any{}} }

func (l logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l logRecords) WithGroup(string) slog.Handler            { return l }
func (l logRecords) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"level": r.Level.String(), "msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.list = append(*l.list, m)
	return nil
}

// find returns the records with msg, in order.
func (l logRecords) find(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, m := range *l.list {
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func checksFixture(t *testing.T, failChecks bool) (*fixture, logRecords) {
	logs := newLogRecords()
	f := newFixtureWith(t, Options{Logger: slog.New(logs), PluginChecks: anyPluginChecks}, func(*storage.Store) runtime.Options {
		return runtime.Options{PluginChecks: anyPluginChecks, CheckErrorsFail: failChecks}
	})
	return f, logs
}

// TestCheckNamingAMissingPluginIsRefused: DESIGN.md's "an unknown check id is a config error (400 at
// validation)" holds for plugin checks too, when a guardrail is saved and when a config is sent inline; a
// plugin stored but not loaded (still compiling at start) is accepted.
func TestCheckNamingAMissingPluginIsRefused(t *testing.T) {
	f, _ := checksFixture(t, false)
	up := newUpstream(t, nil)
	put := func(key, id, body string) answer {
		return f.do(t, "PUT", "/v1/guardrails/"+id, body, HeaderAPIKey, key, "Content-Type", "application/json")
	}
	a := put(f.admin, "x", `{"deny": true, "piii.detect": {}}`)
	checkError(t, a, 400, "invalid_config", "piii.detect")
	if !strings.Contains(string(a.body), `no plugin \"piii\" exists in this workspace`) {
		t.Errorf("message: %s", a.body)
	}
	checkError(t, put(f.admin, "x", `{"checks": [{"id": "piii.detect", "parameters": {}}]}`), 400, "invalid_config", "checks[0].id")
	if _, err := f.store.Guardrails.Get(f.ws.ID, "x"); err == nil {
		t.Fatal("the refused guardrail was stored")
	}

	inline := func(guardrail string) string {
		return fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"input_guardrails":[%s]}`, up.URL+"/v1", guardrail)
	}
	a = f.chat(t, chatBody, HeaderConfig, inline(`{"deny": true, "piii.detect": {}}`))
	checkError(t, a, 400, "invalid_config", "input_guardrails[0].piii.detect")
	if !strings.Contains(string(a.body), `no plugin \"piii\" exists in this workspace`) || up.calls.Load() != 0 {
		t.Errorf("inline config: upstream calls %d, body %s", up.calls.Load(), a.body)
	}

	// Stored is what counts: the plugin need not be loaded (at start, stored plugins compile in the background).
	if _, _, err := f.store.Plugins.Put(f.ws.ID, "piii", []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	if a := put(f.admin, "x", `{"deny": true, "piii.detect": {}}`); a.status != 200 {
		t.Fatalf("guardrail naming a stored plugin: %d %s", a.status, a.body)
	}
	// The refusal above was not remembered: the same inline config now runs (its check errors, and passes).
	if a := f.chat(t, chatBody, HeaderConfig, inline(`{"deny": true, "piii.detect": {}}`)); a.status != 200 ||
		!strings.Contains(string(a.body), `plugin not found`) {
		t.Fatalf("inline config once the plugin is stored: %d %s", a.status, a.body)
	}
	// Another workspace does not see it.
	a = f.do(t, "PUT", "/v1/guardrails/x", `{"deny": true, "piii.detect": {}}`, HeaderAPIKey, f.otherKey, "Content-Type", "application/json")
	checkError(t, a, 400, "invalid_config", "piii.detect")
}

// TestDeletedPluginDoesNotFailOpenSilently: a config compiled while its plugin existed keeps running after the
// plugin is deleted only as far as the next check error, which is logged; then the config is refused.
func TestDeletedPluginDoesNotFailOpenSilently(t *testing.T) {
	f, logs := checksFixture(t, false)
	up := newUpstream(t, nil)
	if _, _, err := f.store.Plugins.Put(f.ws.ID, "pii", []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"input_guardrails":[{"id":"g","deny":true,"pii.detect":{}}]}`, up.URL+"/v1")
	if a := f.chat(t, chatBody, HeaderConfig, cfg); a.status != 200 {
		t.Fatalf("before the delete: %d %s", a.status, a.body)
	}
	if err := f.store.Plugins.Delete(f.ws.ID, "pii"); err != nil {
		t.Fatal(err)
	}
	a := f.chat(t, chatBody, HeaderConfig, cfg, HeaderTraceID, "trace-deleted")
	if a.status != 200 {
		t.Fatalf("first request after the delete: %d %s", a.status, a.body)
	}
	var found bool
	for _, r := range logs.find("check errored") {
		if r["trace_id"] == "trace-deleted" {
			found = r["level"] == "WARN" && r["check"] == "pii.detect" && r["plugin_deleted"] == true
		}
	}
	if !found {
		t.Fatalf("no warning of the deleted plugin: %v", logs.find("check errored"))
	}
	checkError(t, f.chat(t, chatBody, HeaderConfig, cfg), 400, "invalid_config", "input_guardrails[0].pii.detect")
}

// logKeys are the attributes a check error's warning may carry.
var logKeys = map[string]bool{"level": true, "msg": true, "trace_id": true, "workspace": true, "check": true, "hook": true,
	"stage": true, "counted_as": true, "error": true, "async": true, "plugin_deleted": true}

// TestCheckErrorsAreLoggedAndCounted: each erroring check of a request gives one warning with the request's
// trace ID, workspace, check and hook, and no request content; the engine counts them per check id.
func TestCheckErrorsAreLoggedAndCounted(t *testing.T) {
	f, logs := checksFixture(t, false)
	up := newUpstream(t, nil)
	if _, _, err := f.store.Plugins.Put(f.ws.ID, "pii", []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,`+
		`"input_guardrails":[{"id":"g","deny":true,"pii.detect":{},"default.notNull":{}}],`+
		`"output_guardrails":[{"id":"out","pii.scan":{}}]}`, up.URL+"/v1")
	body := `{"model":"m","messages":[{"role":"user","content":"secret-words-of-the-caller"}]}`
	a := f.chat(t, body, HeaderConfig, cfg, HeaderTraceID, "trace-checks-1")
	if a.status != 200 {
		t.Fatalf("an erroring check passes by default: %d %s", a.status, a.body)
	}
	recs := logs.find("check errored")
	want := map[string]string{"pii.detect": "g", "pii.scan": "out"}
	for _, r := range recs {
		if r["trace_id"] != "trace-checks-1" {
			continue
		}
		if r["level"] != "WARN" || r["workspace"] != f.ws.ID || r["counted_as"] != "pass" ||
			!strings.Contains(fmt.Sprint(r["error"]), "plugin not found") || want[fmt.Sprint(r["check"])] != r["hook"] {
			t.Errorf("record %v", r)
		}
		for k := range r {
			if !logKeys[k] {
				t.Errorf("unexpected %s in the record %v", k, r)
			}
		}
		if strings.Contains(fmt.Sprint(r), "secret-words") {
			t.Errorf("the record carries request content: %v", r)
		}
		delete(want, fmt.Sprint(r["check"]))
	}
	if len(want) != 0 {
		t.Fatalf("no warning for %v; records %v", want, recs)
	}
	if got := f.srv.engine.CheckErrors(); got["pii.detect"] != 1 || got["pii.scan"] != 1 || got["default.notNull"] != 0 {
		t.Errorf("counts %v", got)
	}
	f.chat(t, body, HeaderConfig, cfg)
	if got := f.srv.engine.CheckErrors(); got["pii.detect"] != 2 {
		t.Errorf("counts after a second request %v", got)
	}
}

// TestGatewayDefaultForCheckErrors: with --check-errors fail an erroring check counts as failed, so a deny
// guardrail denies; a check's own failOnError still wins both ways.
func TestGatewayDefaultForCheckErrors(t *testing.T) {
	tests := []struct {
		name   string
		fail   bool
		params string
		status int
	}{
		{"pass by default", false, `{}`, 200},
		{"gateway says fail", true, `{}`, 446},
		{"failOnError false overrides the gateway", true, `{"failOnError": false}`, 200},
		{"failOnError true overrides the default", false, `{"failOnError": true}`, 446},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, logs := checksFixture(t, tc.fail)
			up := newUpstream(t, nil)
			if _, _, err := f.store.Plugins.Put(f.ws.ID, "pii", []byte("\x00asm\x01\x00\x00\x00")); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"input_guardrails":[{"id":"g","deny":true,"pii.detect":%s}]}`,
				up.URL+"/v1", tc.params)
			a := f.chat(t, chatBody, HeaderConfig, cfg)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.body)
			}
			if tc.status == 446 && up.calls.Load() != 0 {
				t.Error("the provider was called after a deny")
			}
			recs := logs.find("check errored")
			wantAs := map[int]string{200: "pass", 446: "fail"}[tc.status]
			if len(recs) != 1 || recs[0]["counted_as"] != wantAs {
				t.Errorf("records %v, want one counted as %s", recs, wantAs)
			}
		})
	}
}

// TestUnknownCheckOnAFallbackTargetIsRefused: a config is validated whole before anything is sent (DESIGN.md),
// so a bad check on a target that would run only as a fallback is a 400, not an error that moves the fallback
// on or waits for the first target to fail.
func TestUnknownCheckOnAFallbackTargetIsRefused(t *testing.T) {
	f, _ := checksFixture(t, false)
	up := newUpstream(t, nil)
	target := func(guardrails string) string {
		return fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q%s}`, up.URL+"/v1", guardrails)
	}
	tests := []struct {
		name, second, param string
	}{
		{"missing plugin", `,"input_guardrails":[{"deny": true, "piii.detect": {}}]`, "targets[1].input_guardrails[0].piii.detect"},
		{"unknown built-in check", `,"output_guardrails":[{"default.noSuchCheck": {}}]`, "targets[1].output_guardrails[0].default.noSuchCheck"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := up.calls.Load()
			config := `{"strategy":{"mode":"fallback"},"targets":[` + target("") + "," + target(tc.second) + "]}"
			a := f.chat(t, chatBody, HeaderConfig, config)
			checkError(t, a, 400, "invalid_config", tc.param)
			if n := up.calls.Load() - before; n != 0 {
				t.Errorf("the upstream was called %d times for a config that does not validate", n)
			}
		})
	}
	// The same config with a valid second target runs on its first.
	config := `{"strategy":{"mode":"fallback"},"targets":[` + target("") + "," + target(`,"input_guardrails":[{"default.wordCount": {"minWords": 1}}]`) + "]}"
	if a := f.chat(t, chatBody, HeaderConfig, config); a.status != 200 {
		t.Fatalf("valid config: %d %s", a.status, a.body)
	}
}
