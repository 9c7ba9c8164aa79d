package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

// fakeCheck is a plugin check for tests.
type fakeCheck struct {
	verdict bool
	err     error
	outErr  string
	sleep   time.Duration
	text    *string
	running *atomic.Int32 // counts checks running at once
	maxRun  *atomic.Int32
	calls   *atomic.Int32
}

func (f *fakeCheck) Check(ctx context.Context, in *hostapi.Input, _ hostapi.RequestView) (hostapi.Output, error) {
	if f.calls != nil {
		f.calls.Add(1)
	}
	if f.running != nil {
		n := f.running.Add(1)
		defer f.running.Add(-1)
		for {
			m := f.maxRun.Load()
			if n <= m || f.maxRun.CompareAndSwap(m, n) {
				break
			}
		}
	}
	if f.sleep > 0 {
		time.Sleep(f.sleep)
	}
	out := hostapi.Output{Verdict: f.verdict, Error: f.outErr}
	if f.text != nil {
		out.SetTransformedText(*f.text + in.Text)
	}
	return out, f.err
}

func plugins(checks map[string]Check) PluginChecks {
	return func(ws, plugin, name string, params json.RawMessage) (Check, error) {
		if ws != "ws1" {
			return nil, fmt.Errorf("wrong workspace %q", ws)
		}
		c, ok := checks[plugin+"."+name]
		if !ok {
			return nil, fmt.Errorf("plugin check %s.%s not found", plugin, name)
		}
		return c, nil
	}
}

func compile(t testing.TB, before, after, input, output []json.RawMessage, saved SavedGuardrails, pc PluginChecks) *Set {
	t.Helper()
	s, err := Compile("ws1", "", before, after, input, output, saved, pc)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func TestCompileErrors(t *testing.T) {
	saved := func(ws, id string) (json.RawMessage, error) {
		if id == "bad-saved" {
			return json.RawMessage(`{"deny":true,"default.nope":{}}`), nil
		}
		return nil, errors.New("not found")
	}
	tests := []struct {
		name                         string
		path                         string
		before, after, input, output []json.RawMessage
		param                        string
	}{
		{"unknown guardrail check", "", nil, nil, raws(`{"default.wordCountt":{"maxWords":1}}`), nil, "input_guardrails[0].default.wordCountt"},
		{"unknown without dot", "", nil, nil, nil, raws(`{"deny":true,"notNull":{}}`, `{"wordCountt":{}}`), "output_guardrails[1].wordCountt"},
		{"prefixed path", "targets[1]", nil, nil, raws(`{"default.wordCountt":{}}`), nil, "targets[1].input_guardrails[0].default.wordCountt"},
		{"unknown hook check", "", raws(`{"id":"h","checks":[{"id":"default.wordCount","parameters":{}},{"id":"default.nope","parameters":{}}]}`), nil, nil, nil, "before_request_hooks[0].checks[1].id"},
		{"unknown plugin check", "", nil, raws(`{"id":"h","checks":[{"id":"pii.nope","parameters":{}}]}`), nil, nil, "after_request_hooks[0].checks[0].id"},
		{"bad guardrail param", "", nil, nil, raws(`{"default.wordCount":{"maxWords":"x"}}`), nil, "input_guardrails[0].default.wordCount.maxWords"},
		{"bad hook param", "", raws(`{"id":"h","checks":[{"id":"regexMatch","parameters":{"rule":"("}}]}`), nil, nil, nil, "before_request_hooks[0].checks[0].parameters.rule"},
		{"bad failOnError", "", nil, nil, raws(`{"notNull":{"failOnError":"yes"}}`), nil, "input_guardrails[0].notNull.failOnError"},
		{"missing saved", "", nil, nil, raws(`"no-such"`), nil, "input_guardrails[0]"},
		{"bad saved", "", nil, nil, nil, raws(`"bad-saved"`), "output_guardrails[0].default.nope"},
		{"non-object check", "", nil, nil, raws(`{"default.notNull":true}`), nil, "input_guardrails[0].default.notNull"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("ws1", tc.path, tc.before, tc.after, tc.input, tc.output, saved, plugins(nil))
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("error %v, want *gwerr.Error", err)
			}
			if ge.Status != 400 || ge.Code != "invalid_config" || ge.Param != tc.param {
				t.Errorf("got %d %s %q (%s), want 400 invalid_config %q", ge.Status, ge.Code, ge.Param, ge.Message, tc.param)
			}
			if !strings.Contains(ge.Message, tc.param) {
				t.Errorf("message %q does not name %q", ge.Message, tc.param)
			}
		})
	}
	// No saved lookup at all.
	if _, err := Compile("ws1", "", nil, nil, raws(`"x"`), nil, nil, nil); err == nil {
		t.Error("saved guardrail without lookup compiled")
	}
	// A plugin's own gwerr passes through unwrapped, with Param filled.
	pc := func(string, string, string, json.RawMessage) (Check, error) {
		return nil, &gwerr.Error{Status: 400, Code: "invalid_config", Message: "boom"}
	}
	_, err := Compile("ws1", "", nil, nil, raws(`{"pii.x":{}}`), nil, nil, pc)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Message != "boom" || ge.Param != "input_guardrails[0].pii.x" || ge.Err != nil {
		t.Errorf("plugin gwerr: %#v", err)
	}
}

func TestEmpty(t *testing.T) {
	var nilSet *Set
	if !nilSet.Empty() || !compile(t, nil, nil, nil, nil, nil, nil).Empty() {
		t.Error("empty sets not Empty")
	}
	if compile(t, nil, nil, nil, raws(`{"notNull":{}}`), nil, nil).Empty() {
		t.Error("set with an output guardrail is Empty")
	}
	out := nilSet.Run(context.Background(), StageBefore, &hostapi.Input{}, nil)
	if out.Deny || out.Failed || out.Results != nil {
		t.Errorf("nil set outcome %+v", out)
	}
}

func TestDenyAndFail(t *testing.T) {
	ctx := context.Background()
	in := &hostapi.Input{Text: "one two three four", Stage: "before"}
	tests := []struct {
		name                         string
		before, after, input, output []json.RawMessage
		stage                        Stage
		deny, failed                 bool
	}{
		{"guardrail deny", nil, nil, raws(`{"id":"g","deny":true,"wordCount":{"maxWords":2}}`), nil, StageBefore, true, true},
		{"guardrail no deny", nil, nil, raws(`{"id":"g","wordCount":{"maxWords":2}}`), nil, StageBefore, false, true},
		{"guardrail pass", nil, nil, raws(`{"id":"g","deny":true,"wordCount":{"maxWords":20}}`), nil, StageBefore, false, false},
		{"hook on_fail deny", raws(`{"id":"h","on_fail":{"deny":true},"checks":[{"id":"default.wordCount","parameters":{"maxWords":2}}]}`), nil, nil, nil, StageBefore, true, true},
		{"hook on_fail no deny", raws(`{"id":"h","on_fail":{"deny":false},"checks":[{"id":"default.wordCount","parameters":{"maxWords":2}}]}`), nil, nil, nil, StageBefore, false, true},
		{"hook on_success deny", raws(`{"id":"h","on_success":{"deny":true},"checks":[{"id":"default.notNull","parameters":{}}]}`), nil, nil, nil, StageBefore, true, false},
		{"output on_fail deny", nil, nil, nil, raws(`{"on_fail":{"deny":true},"notNull":{"not":true}}`), StageAfter, true, true},
		{"after side not run before", nil, nil, nil, raws(`{"deny":true,"notNull":{"not":true}}`), StageBefore, false, false},
		{"before side not run after", nil, nil, raws(`{"deny":true,"notNull":{"not":true}}`), nil, StageAfter, false, false},
		{"after hook fail", nil, raws(`{"id":"a","checks":[{"id":"contains","parameters":{"words":["zzz"]}}]}`), nil, nil, StageAfter, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := compile(t, tc.before, tc.after, tc.input, tc.output, nil, nil)
			out := s.Run(ctx, tc.stage, in, nil)
			if out.Deny != tc.deny || out.Failed != tc.failed {
				t.Errorf("deny %v failed %v, want %v %v (results %+v)", out.Deny, out.Failed, tc.deny, tc.failed, out.Results)
			}
		})
	}
}

func TestFailOnError(t *testing.T) {
	pc := plugins(map[string]Check{
		"p.err":    &fakeCheck{verdict: false, err: errors.New("boom")},
		"p.outerr": &fakeCheck{verdict: false, outErr: "bad input"},
	})
	for _, tc := range []struct {
		params string
		failed bool
	}{{`{}`, false}, {`{"failOnError":false}`, false}, {`{"failOnError":true}`, true}} {
		for _, id := range []string{"p.err", "p.outerr"} {
			s := compile(t, nil, nil, raws(`{"id":"g","deny":true,"`+id+`":`+tc.params+`}`), nil, nil, pc)
			out := s.Run(context.Background(), StageBefore, &hostapi.Input{}, nil)
			if out.Failed != tc.failed || out.Deny != tc.failed {
				t.Errorf("%s %s: failed %v deny %v, want %v", id, tc.params, out.Failed, out.Deny, tc.failed)
			}
			c := out.Results[0].Checks[0]
			if c.Error == nil || c.Verdict == tc.failed {
				t.Errorf("%s %s: check result %+v", id, tc.params, c)
			}
		}
	}
	// A panicking check is an error too.
	s := compile(t, nil, nil, raws(`{"p.panic":{"failOnError":true}}`), nil, nil, plugins(map[string]Check{"p.panic": panicCheck{}}))
	out := s.Run(context.Background(), StageBefore, &hostapi.Input{}, nil)
	if !out.Failed || out.Results[0].Checks[0].Error == nil {
		t.Errorf("panic: %+v", out)
	}
}

type panicCheck struct{}

func (panicCheck) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	panic("bad plugin")
}

func TestParallelChecks(t *testing.T) {
	var running, maxRun atomic.Int32
	slow := &fakeCheck{verdict: true, sleep: 50 * time.Millisecond, running: &running, maxRun: &maxRun}
	pc := plugins(map[string]Check{"p.a": slow, "p.b": slow, "p.c": slow})
	s := compile(t, raws(`{"id":"h","checks":[{"id":"p.a","parameters":{}},{"id":"p.b","parameters":{}},{"id":"wordCount","parameters":{}},{"id":"p.c","parameters":{}}]}`), nil, nil, nil, nil, pc)
	start := time.Now()
	out := s.Run(context.Background(), StageBefore, &hostapi.Input{Text: "x"}, nil)
	if d := time.Since(start); d > 140*time.Millisecond {
		t.Errorf("3 checks of 50ms took %v: not parallel", d)
	}
	if maxRun.Load() != 3 {
		t.Errorf("at most %d checks ran at once, want 3", maxRun.Load())
	}
	ids := []string{}
	for _, c := range out.Results[0].Checks {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, ","); got != "p.a,p.b,default.wordCount,p.c" {
		t.Errorf("check order %s", got)
	}
}

func TestTransformersInOrder(t *testing.T) {
	ctx := context.Background()
	in := &hostapi.Input{Text: "my number is 555-1234"}
	// Two transformers in one guardrail object (key order), then a hook-level check that sees the result, then
	// a second guardrail whose check sees the first's output.
	s := compile(t, nil, nil, raws(
		`{"id":"g1","regexReplace":{"rule":"\\d{3}-\\d{4}","replacement":"[PHONE]"},"addPrefix":{"prefix":"A: "},"regexMatch":{"rule":"^A: my number is \\[PHONE\\]$"}}`,
		`{"id":"g2","addPrefix":{"prefix":"B: "},"contains":{"words":["B: A: "]}}`,
	), nil, nil, nil)
	out := s.Run(ctx, StageBefore, in, nil)
	if out.Transformed == nil || *out.Transformed != "B: A: my number is [PHONE]" {
		t.Fatalf("transformed %v", out.Transformed)
	}
	if out.Failed {
		t.Errorf("checks after transformers did not see the text: %+v", out.Results)
	}
	if in.Text != "my number is 555-1234" {
		t.Error("Run modified the input")
	}
	if c := out.Results[0].Checks; !c[0].Transformed || !c[1].Transformed || c[2].Transformed {
		t.Errorf("transformed flags %+v", c)
	}
	// Order is the other way round when the keys are.
	s = compile(t, nil, nil, raws(`{"addPrefix":{"prefix":"x555-1234 "},"regexReplace":{"rule":"\\d{3}-\\d{4}","replacement":"#"}}`), nil, nil, nil)
	if out := s.Run(ctx, StageBefore, in, nil); *out.Transformed != "x# my number is #" {
		t.Errorf("reverse order: %q", *out.Transformed)
	}
	// A transforming plugin check (no Transformer method) still counts.
	p := "P:"
	s = compile(t, nil, raws(`{"id":"h","checks":[{"id":"p.t","parameters":{}}]}`), nil, nil, nil,
		plugins(map[string]Check{"p.t": &fakeCheck{verdict: true, text: &p}}))
	if out := s.Run(ctx, StageAfter, in, nil); out.Transformed == nil || *out.Transformed != "P:my number is 555-1234" {
		t.Errorf("plugin transform: %v", out.Transformed)
	}
	// No transformer: Transformed stays nil.
	s = compile(t, nil, nil, raws(`{"notNull":{}}`), nil, nil, nil)
	if out := s.Run(ctx, StageBefore, in, nil); out.Transformed != nil {
		t.Errorf("transformed %q without transformers", *out.Transformed)
	}
}

func TestSavedGuardrail(t *testing.T) {
	var gotWS, gotID string
	saved := func(ws, id string) (json.RawMessage, error) {
		gotWS, gotID = ws, id
		return json.RawMessage(`{"deny":true,"default.regexMatch":{"rule":"[a-z]+@[a-z]+\\.com","not":true},
			"on_fail":{"feedback":{"value":-10,"weight":1,"metadata":{"k":"v"}}}}`), nil
	}
	s := compile(t, nil, nil, raws(`"no-emails"`), nil, saved, nil)
	if gotWS != "ws1" || gotID != "no-emails" {
		t.Errorf("lookup(%q, %q)", gotWS, gotID)
	}
	out := s.Run(context.Background(), StageBefore, &hostapi.Input{Text: "write to bob@example.com"}, nil)
	if !out.Deny || out.Results[0].ID != "no-emails" {
		t.Errorf("outcome %+v", out)
	}
	if len(out.Feedback) != 1 || out.Feedback[0].HookID != "no-emails" || *out.Feedback[0].Value != -10 ||
		string(out.Feedback[0].Metadata) != `{"k":"v"}` || out.Feedback[0].Verdict {
		t.Errorf("feedback %+v", out.Feedback)
	}
	out = s.Run(context.Background(), StageBefore, &hostapi.Input{Text: "no address"}, nil)
	if out.Deny || out.Failed || len(out.Feedback) != 0 {
		t.Errorf("passing outcome %+v", out)
	}
}

func TestAsync(t *testing.T) {
	var calls atomic.Int32
	pc := plugins(map[string]Check{"p.c": &fakeCheck{verdict: false, calls: &calls}})
	s := compile(t, nil, raws(`{"id":"a","async":true,"checks":[{"id":"p.c","parameters":{}}]}`), nil,
		raws(`{"id":"g","async":true,"deny":true,"p.c":{}}`, `{"id":"sync","notNull":{}}`), nil, pc)
	in := &hostapi.Input{Text: "x", Metadata: []hostapi.KV{{Key: "a", Value: "b"}}}
	out := s.Run(context.Background(), StageAfter, in, nil)
	if calls.Load() != 0 {
		t.Fatal("async checks ran inside Run")
	}
	if out.Deny || out.Failed || len(out.Async) != 2 || len(out.Results) != 1 || out.Results[0].ID != "sync" {
		t.Fatalf("outcome %+v", out)
	}
	in.Metadata[0].Key = "reused" // the host may reuse its Input once Run returns
	for _, f := range out.Async {
		f(context.Background())
	}
	if calls.Load() != 2 {
		t.Errorf("async closures made %d calls, want 2", calls.Load())
	}
}

func TestHookResultsJSON(t *testing.T) {
	s := compile(t, raws(`{"id":"h1","type":"guardrail","on_fail":{"deny":false},"checks":[{"id":"default.wordCount","parameters":{"maxWords":1}}]}`),
		nil, raws(`{"addPrefix":{"prefix":"p "}}`), nil, nil, nil)
	out := s.Run(context.Background(), StageBefore, &hostapi.Input{Text: "two words"}, nil)
	b, err := json.Marshal(map[string]any{"before_request_hooks": out.Results, "after_request_hooks": []HookResult{}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Before []map[string]json.RawMessage `json:"before_request_hooks"`
		After  []json.RawMessage            `json:"after_request_hooks"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Before) != 2 || got.After == nil {
		t.Fatalf("hook_results %s", b)
	}
	for _, item := range got.Before {
		if keys := sortedKeys(item); keys != "async,checks,deny,execution_time,id,type,verdict" {
			t.Errorf("item keys %s", keys)
		}
		var checks []map[string]json.RawMessage
		json.Unmarshal(item["checks"], &checks)
		for _, c := range checks {
			if keys := sortedKeys(c); keys != "data,error,execution_time,id,transformed,verdict" {
				t.Errorf("check keys %s", keys)
			}
		}
	}
	want0 := `{"id":"h1","verdict":false,"deny":false,"async":false,"type":"guardrail","execution_time":0,"checks":[{"id":"default.wordCount","verdict":false,"data":{"minWords":0,"maxWords":1,"not":false,"wordCount":2},"error":null,"execution_time":0,"transformed":false}]}`
	if b0, _ := json.Marshal(out.Results[0]); string(b0) != want0 {
		t.Errorf("result 0:\n got %s\nwant %s", b0, want0)
	}
	want1 := `{"id":"input_guardrails[0]","verdict":true,"deny":false,"async":false,"type":"guardrail","execution_time":0,"checks":[{"id":"default.addPrefix","verdict":true,"data":null,"error":null,"execution_time":0,"transformed":true}]}`
	if b1, _ := json.Marshal(out.Results[1]); string(b1) != want1 {
		t.Errorf("result 1:\n got %s\nwant %s", b1, want1)
	}
}

func sortedKeys(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return strings.Join(keys, ",")
}

func TestWebhookAndLog(t *testing.T) {
	var logged atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body outboundBody
		json.Unmarshal(b, &body)
		switch r.URL.Path {
		case "/hook":
			if r.Header.Get("X-Key") != "k" {
				w.WriteHeader(401)
				return
			}
			fmt.Fprintf(w, `{"verdict": %v, "data": {"seen": %q}}`, !strings.Contains(body.Text, "bad"), body.EventType)
		case "/slow":
			time.Sleep(200 * time.Millisecond)
			fmt.Fprint(w, `{"verdict": true}`)
		case "/log":
			logged.Add(1)
			w.WriteHeader(204)
		case "/redirect":
			http.Redirect(w, r, "http://example.com/", http.StatusFound)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	defer SetOutboundAllowList(nil)
	ctx := context.Background()
	hook := `{"webhookURL":"` + srv.URL + `/hook","headers":{"X-Key":"k"}}`

	SetOutboundAllowList(nil)
	out, err := mustCheck(t, "webhook", hook).Check(ctx, &hostapi.Input{Text: "ok"}, nil)
	if !errors.Is(err, errNotAllowed) {
		t.Fatalf("default allow-list: %v %+v", err, out)
	}

	SetOutboundAllowList([]string{u.Hostname()})
	tests := []struct {
		name, id, params, text string
		verdict, wantErr       bool
	}{
		{"webhook pass", "webhook", hook, "fine", true, false},
		{"webhook fail", "webhook", hook, "bad text", false, false},
		{"webhook headers as JSON text", "webhook", `{"webhookURL":"` + srv.URL + `/hook","headers":"{\"X-Key\":\"k\"}"}`, "fine", true, false},
		{"webhook 401", "webhook", `{"webhookURL":"` + srv.URL + `/hook"}`, "fine", false, true},
		{"webhook timeout", "webhook", `{"webhookURL":"` + srv.URL + `/slow","timeout":50}`, "fine", false, true},
		{"webhook no redirect", "webhook", `{"webhookURL":"` + srv.URL + `/redirect"}`, "fine", false, true},
		{"log", "log", `{"logURL":"` + srv.URL + `/log"}`, "anything", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := mustCheck(t, tc.id, tc.params).Check(ctx, &hostapi.Input{Text: tc.text, Stage: "after"}, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err == nil && out.Verdict != tc.verdict {
				t.Errorf("verdict %v, want %v", out.Verdict, tc.verdict)
			}
			if tc.name == "webhook pass" && string(out.Data) != `{"seen": "afterRequestHook"}` {
				t.Errorf("data %s", out.Data)
			}
		})
	}
	if logged.Load() != 1 {
		t.Errorf("log calls %d", logged.Load())
	}
	// Another port of an allowed host name is allowed; a host:port entry allows only that port.
	SetOutboundAllowList([]string{"127.0.0.1:1"})
	if _, err := mustCheck(t, "webhook", hook).Check(ctx, &hostapi.Input{}, nil); !errors.Is(err, errNotAllowed) {
		t.Errorf("host:port entry: %v", err)
	}
}

// TestHammer runs one Set from many goroutines at once; run it under -race.
func TestHammer(t *testing.T) {
	var calls atomic.Int32
	pc := plugins(map[string]Check{"p.c": &fakeCheck{verdict: true, calls: &calls}})
	s := compile(t,
		raws(`{"id":"h","on_fail":{"deny":true},"checks":[{"id":"wordCount","parameters":{"maxWords":50}},{"id":"p.c","parameters":{}},{"id":"regexReplace","parameters":{"rule":"secret"}}]}`),
		raws(`{"id":"a","async":true,"checks":[{"id":"p.c","parameters":{}}]}`),
		raws(`{"id":"g","deny":true,"contains":{"words":["forbidden"],"operator":"none"},"addPrefix":{"prefix":"> "}}`),
		raws(`{"jsonKeys":{"keys":["a"]},"p.c":{}}`), nil, pc)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				text := fmt.Sprintf("request %d secret", i)
				wantDeny := i%3 == 0
				if wantDeny {
					text += " forbidden"
				}
				in := &hostapi.Input{Text: text}
				out := s.Run(context.Background(), StageBefore, in, nil)
				if out.Deny != wantDeny || out.Transformed == nil || !strings.HasPrefix(*out.Transformed, "> request") ||
					strings.Contains(*out.Transformed, "secret") {
					t.Errorf("before %d: %+v", i, out)
					return
				}
				out = s.Run(context.Background(), StageAfter, &hostapi.Input{Text: `{"a":1}`}, nil)
				if out.Failed || len(out.Async) != 1 {
					t.Errorf("after %d: %+v", i, out)
					return
				}
				out.Async[0](context.Background())
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRun is a Set of wordCount + regexMatch + contains on a 1 KB text.
func BenchmarkRun(b *testing.B) {
	s, err := Compile("ws1", "", nil, nil, raws(`{"id":"g","deny":true,"default.wordCount":{"minWords":10,"maxWords":500},
		"default.regexMatch":{"rule":"[a-z]+@[a-z]+\\.com","not":true},"default.contains":{"words":["password","secret"],"operator":"none"}}`),
		nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1024]
	in := &hostapi.Input{Text: text, Model: "m", Endpoint: "chat", Stage: "before"}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out := s.Run(ctx, StageBefore, in, nil)
		if out.Failed {
			b.Fatal("failed")
		}
	}
}
