package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// fakeMutator is a plugin check of a mutator hook: rewrite maps the body it is given to the one it returns
// (nil: unchanged).
type fakeMutator struct {
	rewrite   func(body []byte) []byte
	verdict   bool
	outErr    string
	notReady  error
	calls     atomic.Int32
	lastInput atomic.Pointer[hostapi.Input]
}

func (m *fakeMutator) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	return hostapi.Output{}, errors.New("a mutator's Check must not be called")
}

func (m *fakeMutator) TransformBody(_ context.Context, in *hostapi.Input, _ hostapi.RequestView) (hostapi.Output, error) {
	m.calls.Add(1)
	cp := *in
	m.lastInput.Store(&cp)
	out := hostapi.Output{Verdict: m.verdict, Error: m.outErr}
	if m.rewrite != nil {
		out.Body = m.rewrite(in.Body)
	}
	return out, nil
}

func (m *fakeMutator) CanTransform() error { return m.notReady }

// setMember returns a rewrite that sets a top-level member of the body.
func setMember(key string, value any) func([]byte) []byte {
	return func(body []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			panic(err)
		}
		m[key] = value
		b, _ := json.Marshal(m)
		return b
	}
}

func wantInvalid(t *testing.T, err error, param string) {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != param {
		t.Fatalf("err = %v, want a 400 naming %s", err, param)
	}
}

func TestMutatorShape(t *testing.T) {
	mut := `{"id":"m","type":"mutator","checks":[{"id":"sys.prompt","parameters":{}}]}`
	if err := ValidateHook(json.RawMessage(mut), "before_request_hooks[0]", false); err != nil {
		t.Fatalf("a plugin's mutator before: %v", err)
	}
	if err := ValidateHook(json.RawMessage(mut), "after_request_hooks[0]", true); err != nil {
		t.Fatalf("a plugin's mutator after: %v", err)
	}
	tests := []struct {
		name, param string
		err         error
	}{
		{"built-in check", "before_request_hooks[0].checks[1].id", ValidateHook(json.RawMessage(
			`{"id":"m","type":"mutator","checks":[{"id":"sys.prompt","parameters":{}},{"id":"default.wordCount","parameters":{"maxWords":3}}]}`),
			"before_request_hooks[0]", false)},
		{"built-in check without namespace", "before_request_hooks[0].checks[0].id", ValidateHook(json.RawMessage(
			`{"id":"m","type":"mutator","checks":[{"id":"wordCount","parameters":{}}]}`), "before_request_hooks[0]", false)},
		{"async", "after_request_hooks[0].async", ValidateHook(json.RawMessage(
			`{"id":"m","type":"mutator","async":true,"checks":[{"id":"sys.prompt","parameters":{}}]}`), "after_request_hooks[0]", true)},
		{"input guardrail", "input_guardrails[0].type", ValidateGuardrail(json.RawMessage(
			`{"type":"mutator","sys.prompt":{}}`), "input_guardrails[0]", false)},
		{"output guardrail", "output_guardrails[2].type", ValidateGuardrail(json.RawMessage(
			`{"type":"mutator","checks":[{"id":"sys.prompt","parameters":{}}]}`), "output_guardrails[2]", true)},
		{"saved guardrail", "type", ValidateSaved(json.RawMessage(`{"type":"mutator","sys.prompt":{}}`))},
		{"tool hook", "before_tool_call[0].type", ValidateToolHook(json.RawMessage(mut), "before_tool_call[0]", false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantInvalid(t, tc.err, tc.param) })
	}
}

func TestMutatorCompile(t *testing.T) {
	ready := &fakeMutator{}
	pc := plugins(map[string]Check{
		"sys.prompt": ready,
		"pii.detect": &fakeCheck{verdict: true},
		"old.plugin": &fakeMutator{notReady: errors.New(`plugins: plugin "old" does not export gateway_transform`)},
	})
	hook := func(check string) []json.RawMessage {
		return raws(`{"id":"m","type":"mutator","checks":[{"id":"` + check + `","parameters":{}}]}`)
	}
	set, err := Compile("ws1", "", hook("sys.prompt"), nil, nil, nil, nil, pc)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Mutates(StageBefore) || set.Mutates(StageAfter) {
		t.Fatalf("Mutates(before) %v, Mutates(after) %v", set.Mutates(StageBefore), set.Mutates(StageAfter))
	}
	_, err = Compile("ws1", "targets[1]", nil, hook("pii.detect"), nil, nil, nil, pc)
	wantInvalid(t, err, "targets[1].after_request_hooks[0].checks[0].id")
	_, err = Compile("ws1", "", hook("old.plugin"), nil, nil, nil, nil, pc)
	wantInvalid(t, err, "before_request_hooks[0].checks[0].id")
	if !strings.Contains(err.Error(), "gateway_transform") || !strings.Contains(err.Error(), `"old"`) {
		t.Fatalf("error %q does not name the plugin and gateway_transform", err)
	}
	if ready.calls.Load() != 0 {
		t.Fatal("Compile called a mutator")
	}
	var nilSet *Set
	if nilSet.Mutates(StageBefore) {
		t.Fatal("a nil set mutates")
	}
}

func TestMutatorsRunInOrder(t *testing.T) {
	first := &fakeMutator{verdict: true, rewrite: setMember("max_tokens", 100)}
	second := &fakeMutator{verdict: true, rewrite: func(body []byte) []byte {
		if !strings.Contains(string(body), `"max_tokens":100`) {
			panic("the second mutator did not see the first one's body: " + string(body))
		}
		return setMember("temperature", 0)(body)
	}}
	same := &fakeMutator{verdict: true, rewrite: func(body []byte) []byte { return body }}
	seen := &fakeCheck{verdict: true}
	var sawText atomic.Value
	textCheck := checkFunc(func(in *hostapi.Input) hostapi.Output {
		sawText.Store(in.Text)
		return hostapi.NewOutput()
	})
	set := compile(t, raws(
		`{"id":"m","type":"mutator","checks":[{"id":"a.one","parameters":{"p":1}},{"id":"b.two","parameters":{}},{"id":"c.same","parameters":{}}]}`,
		`{"id":"g","checks":[{"id":"t.text","parameters":{}},{"id":"s.seen","parameters":{}}]}`,
	), nil, nil, nil, nil, plugins(map[string]Check{"a.one": first, "b.two": second, "c.same": same, "t.text": textCheck, "s.seen": seen}))

	in := &hostapi.Input{Text: "hello", Model: "gpt-4o", Stage: "before", Endpoint: "chat", Metadata: []KV{{Key: "user", Value: "u"}}}
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`)
	out := set.RunBody(context.Background(), StageBefore, in, nil, &Body{
		JSON: body,
		Text: func(b []byte) string { return "text of " + string(b) },
	})
	if out.Failed || out.Deny {
		t.Fatalf("outcome %+v", out)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Body, &got); err != nil || got["max_tokens"] != 100.0 || got["temperature"] != 0.0 {
		t.Fatalf("body %s (%v)", out.Body, err)
	}
	if string(body) != `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}` {
		t.Fatal("RunBody modified the caller's body")
	}
	m := out.Results[0]
	if m.Type != "mutator" || len(m.Checks) != 3 || !m.Checks[0].Transformed || !m.Checks[1].Transformed || m.Checks[2].Transformed {
		t.Fatalf("mutator result %+v", m)
	}
	if text, _ := sawText.Load().(string); !strings.HasPrefix(text, "text of ") || !strings.Contains(text, `"temperature":0`) {
		t.Fatalf("the check after the mutator saw %q, want the text of the new body", text)
	}
	if in.Text != "hello" {
		t.Fatal("RunBody modified the input")
	}
	li := first.lastInput.Load()
	if li.Text != "" || string(li.Body) != string(body) || li.Model != "gpt-4o" || li.Endpoint != "chat" || len(li.Metadata) != 1 {
		t.Fatalf("the mutator's input %+v", li)
	}
}

// checkFunc is a Check made of a function.
type checkFunc func(in *hostapi.Input) hostapi.Output

func (f checkFunc) Check(_ context.Context, in *hostapi.Input, _ hostapi.RequestView) (hostapi.Output, error) {
	return f(in), nil
}

// KV is hostapi.KV, short for the tests.
type KV = hostapi.KV

func TestMutatorSeesTransformedText(t *testing.T) {
	upper := "REDACTED "
	var seen atomic.Value
	mut := &fakeMutator{verdict: true, rewrite: func(body []byte) []byte { seen.Store(string(body)); return nil }}
	set := compile(t, raws(
		`{"id":"t","checks":[{"id":"x.redact","parameters":{}}]}`,
		`{"id":"m","type":"mutator","checks":[{"id":"sys.prompt","parameters":{}}]}`,
	), nil, nil, nil, nil, plugins(map[string]Check{"x.redact": &fakeCheck{verdict: true, text: &upper}, "sys.prompt": mut}))
	out := set.RunBody(context.Background(), StageBefore, &hostapi.Input{Text: "secret"}, nil, &Body{
		JSON:        []byte(`{"prompt":"secret"}`),
		ReplaceText: func(b []byte, text string) ([]byte, error) { return []byte(`{"prompt":"` + text + `"}`), nil },
	})
	if got, _ := seen.Load().(string); got != `{"prompt":"REDACTED secret"}` {
		t.Fatalf("the mutator saw %q", got)
	}
	if out.Transformed != nil || string(out.Body) != `{"prompt":"REDACTED secret"}` {
		t.Fatalf("transformed %v, body %s: the text goes into the body once", out.Transformed, out.Body)
	}
}

func TestMutatorRefusals(t *testing.T) {
	grow := &fakeMutator{verdict: true, rewrite: func(body []byte) []byte {
		return []byte(`{"pad":"` + strings.Repeat("x", 2*len(body)) + `"}`)
	}}
	invalid := &fakeMutator{verdict: true, rewrite: setMember("stream", "yes")}
	failing := &fakeMutator{verdict: false}
	erroring := &fakeMutator{verdict: true, outErr: "cannot parse"}
	pc := plugins(map[string]Check{"g.grow": grow, "i.invalid": invalid, "f.fail": failing, "e.err": erroring})
	validate := func(b []byte) error {
		if strings.Contains(string(b), `"stream":"yes"`) {
			return errors.New("stream: must be a boolean")
		}
		return nil
	}
	run := func(t *testing.T, hook string, b *Body) Outcome {
		t.Helper()
		return compile(t, raws(hook), nil, nil, nil, nil, pc).RunBody(context.Background(), StageBefore, &hostapi.Input{}, nil, b)
	}
	body := []byte(`{"model":"gpt-4o","messages":[]}`)

	out := run(t, `{"id":"m","type":"mutator","checks":[{"id":"g.grow","parameters":{"failOnError":true}}]}`, &Body{JSON: body})
	c := out.Results[0].Checks[0]
	if out.Body != nil || c.Error == nil || !strings.Contains(*c.Error, "twice") || c.Verdict || !out.Failed {
		t.Fatalf("a body past twice the input: body %s, check %+v", out.Body, c)
	}

	out = run(t, `{"id":"m","type":"mutator","checks":[{"id":"i.invalid","parameters":{}}]}`, &Body{JSON: body, Validate: validate})
	c = out.Results[0].Checks[0]
	if out.Body != nil || c.Error == nil || !strings.Contains(*c.Error, "stream: must be a boolean") || !c.Verdict || out.Failed {
		t.Fatalf("an invalid body (fails open without failOnError): body %s, check %+v", out.Body, c)
	}

	out = run(t, `{"id":"m","type":"mutator","on_fail":{"deny":true},"checks":[{"id":"f.fail","parameters":{}}]}`, &Body{JSON: body})
	if !out.Deny || out.Results[0].Checks[0].Error != nil {
		t.Fatalf("a failing mutator with deny: %+v", out)
	}

	out = run(t, `{"id":"m","type":"mutator","checks":[{"id":"e.err","parameters":{"failOnError":true}}]}`, &Body{JSON: body})
	if c := out.Results[0].Checks[0]; c.Error == nil || *c.Error != "cannot parse" || !out.Failed {
		t.Fatalf("a mutator's error: %+v", c)
	}

	out = run(t, `{"id":"m","type":"mutator","checks":[{"id":"g.grow","parameters":{}}]}`, &Body{Refusal: "mutators do not run on streamed answers"})
	if c := out.Results[0].Checks[0]; c.Error == nil || *c.Error != "mutators do not run on streamed answers" || grow.calls.Load() != 1 {
		t.Fatalf("no body: %+v (calls %d)", c, grow.calls.Load())
	}
	out = compile(t, raws(`{"id":"m","type":"mutator","checks":[{"id":"g.grow","parameters":{}}]}`), nil, nil, nil, nil, pc).
		Run(context.Background(), StageBefore, &hostapi.Input{}, nil)
	if c := out.Results[0].Checks[0]; c.Error == nil || !strings.Contains(*c.Error, "mutators") {
		t.Fatalf("Run without a body: %+v", c)
	}
}
