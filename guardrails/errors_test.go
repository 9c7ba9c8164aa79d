package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestPluginThatDoesNotExist: a resolver's ErrNoPlugin (wrapped or not) is a 400 naming the check's path and
// the plugin, like any unknown check id, never a check that compiles and then errors on every request.
func TestPluginThatDoesNotExist(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		none := func(_, plugin, _ string, _ json.RawMessage) (Check, error) {
			if wrap {
				return nil, fmt.Errorf("plugin %s: %w", plugin, ErrNoPlugin)
			}
			return nil, ErrNoPlugin
		}
		tests := []struct {
			name                  string
			before, input, output []json.RawMessage
			param                 string
		}{
			{"guardrail key", nil, raws(`{"deny": true, "piii.detect": {}}`), nil, "input_guardrails[0].piii.detect"},
			{"guardrail checks list", nil, nil, raws(`{"checks": [{"id": "piii.detect", "parameters": {}}]}`), "output_guardrails[0].checks[0].id"},
			{"hook", raws(`{"id": "h", "checks": [{"id": "default.notNull", "parameters": {}}, {"id": "piii.detect", "parameters": {}}]}`), nil, nil,
				"before_request_hooks[0].checks[1].id"},
		}
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s wrapped=%v", tc.name, wrap), func(t *testing.T) {
				_, err := Compile("ws1", "", tc.before, nil, tc.input, tc.output, nil, none)
				var ge *gwerr.Error
				if !errors.As(err, &ge) {
					t.Fatalf("error %v, want *gwerr.Error", err)
				}
				if ge.Status != 400 || ge.Code != CodeInvalidConfig || ge.Param != tc.param {
					t.Errorf("got %d %s %q, want 400 invalid_config %q", ge.Status, ge.Code, ge.Param, tc.param)
				}
				if !strings.Contains(ge.Message, `no plugin "piii" exists in this workspace`) || !strings.Contains(ge.Message, tc.param) {
					t.Errorf("message %q", ge.Message)
				}
				if !errors.Is(err, ErrNoPlugin) {
					t.Error("the error does not wrap ErrNoPlugin")
				}
			})
		}
	}
}

// reports collects what ErrorPolicy.Report hears.
type reports struct {
	mu   sync.Mutex
	list []CheckError
	reqs []hostapi.RequestView
}

func (r *reports) report(req hostapi.RequestView, e CheckError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, e)
	r.reqs = append(r.reqs, req)
}

type namedView string

func (namedView) Field(string) ([]byte, bool) { return nil, false }

// TestErrorPolicy: what an erroring check counts as is its own failOnError when it has one, else the policy's
// Fail (the gateway's --check-errors), else pass; and each erroring check is reported once, with the request.
func TestErrorPolicy(t *testing.T) {
	checks := map[string]Check{
		"p.boom":  &fakeCheck{err: errors.New("upstream down")},
		"p.guest": &fakeCheck{outErr: "guest said no"},
		"p.ok":    &fakeCheck{verdict: true},
	}
	tests := []struct {
		name        string
		params      string
		policyFail  bool
		wantVerdict bool
	}{
		{"default passes", `{}`, false, true},
		{"gateway default fail", `{}`, true, false},
		{"failOnError false beats the gateway default", `{"failOnError": false}`, true, true},
		{"failOnError true beats the gateway default", `{"failOnError": true}`, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got reports
			s := compile(t, nil, nil, raws(`{"id": "g", "deny": true, "p.ok": {}, "p.boom": `+tc.params+`, "p.guest": `+tc.params+`}`), nil,
				nil, plugins(checks)).WithErrorPolicy(ErrorPolicy{Fail: tc.policyFail, Report: got.report})
			out := s.Run(context.Background(), StageBefore, &hostapi.Input{Text: "x"}, namedView("req-1"))
			if out.Deny == tc.wantVerdict || out.Results[0].Verdict != tc.wantVerdict {
				t.Fatalf("deny %v verdict %v, want verdict %v", out.Deny, out.Results[0].Verdict, tc.wantVerdict)
			}
			if len(got.list) != 2 {
				t.Fatalf("reported %d errors, want 2: %+v", len(got.list), got.list)
			}
			want := map[string]string{"p.boom": "upstream down", "p.guest": "guest said no"}
			for i, e := range got.list {
				if e.HookID != "g" || e.Stage != StageBefore || e.Plugin != "p" || e.Async || e.Failed == tc.wantVerdict ||
					!strings.Contains(e.Err, want[e.CheckID]) || got.reqs[i] != namedView("req-1") {
					t.Errorf("report %+v (request %v)", e, got.reqs[i])
				}
				delete(want, e.CheckID)
			}
		})
	}
	// Without a policy a Set keeps its old ways: errors pass and nobody hears of them.
	s := compile(t, nil, nil, raws(`{"deny": true, "p.boom": {}}`), nil, nil, plugins(checks))
	if out := s.Run(context.Background(), StageBefore, &hostapi.Input{}, nil); out.Deny || out.Failed {
		t.Fatalf("no policy: %+v", out)
	}
}

// TestErrorPolicyAsyncAndBuiltins: async items and built-in checks are reported too, a built-in without a
// plugin name, and a Set without errors reports nothing.
func TestErrorPolicyAsyncAndBuiltins(t *testing.T) {
	var got reports
	SetOutboundAllowList(nil) // the webhook's host is not allowed: a check error, no network
	s := compile(t, nil, raws(`{"id": "audit", "async": true, "checks": [{"id": "default.webhook", "parameters": {"webhookURL": "http://127.0.0.1:9/x"}}]}`),
		nil, raws(`{"id": "fine", "default.notNull": {}}`), nil, nil).WithErrorPolicy(ErrorPolicy{Report: got.report})
	out := s.Run(context.Background(), StageAfter, &hostapi.Input{Text: "answer"}, nil)
	if len(got.list) != 0 {
		t.Fatalf("reported before the async item ran: %+v", got.list)
	}
	for _, f := range out.Async {
		f(context.Background())
	}
	if len(got.list) != 1 {
		t.Fatalf("reports %+v", got.list)
	}
	if e := got.list[0]; e.CheckID != "default.webhook" || e.Plugin != "" || !e.Async || e.HookID != "audit" || e.Stage != StageAfter || e.Failed {
		t.Errorf("report %+v", e)
	}
}

// TestErrorPolicyCostsNothingWithoutErrors: the policy adds no allocation to a Run whose checks do not error.
func TestErrorPolicyCostsNothingWithoutErrors(t *testing.T) {
	s := compile(t, nil, nil, raws(`{"id": "g", "deny": true, "default.wordCount": {"maxWords": 10}, "default.notNull": {}}`), nil, nil, nil)
	with := s.WithErrorPolicy(ErrorPolicy{Fail: true, Report: func(hostapi.RequestView, CheckError) { t.Error("reported") }})
	in := &hostapi.Input{Text: "a few words"}
	run := func(s *Set) func() {
		return func() { s.Run(context.Background(), StageBefore, in, nil) }
	}
	plain, policed := testing.AllocsPerRun(200, run(s)), testing.AllocsPerRun(200, run(with))
	if policed > plain {
		t.Errorf("%v allocations per run with a policy, %v without", policed, plain)
	}
	if s.WithErrorPolicy(ErrorPolicy{}) == s {
		t.Error("WithErrorPolicy changed the Set it was called on")
	}
	if (*Set)(nil).WithErrorPolicy(ErrorPolicy{Fail: true}) != nil {
		t.Error("a nil Set gained items")
	}
}
