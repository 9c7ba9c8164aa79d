package sdk

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// withHandlers installs check and cond for the test and restores the registered ones afterwards.
func withHandlers(t *testing.T, check func(Input) Result, cond func(Input) bool) {
	t.Helper()
	oldCheck, oldCond := checkHandler, conditionHandler
	checkHandler, conditionHandler = check, cond
	t.Cleanup(func() { checkHandler, conditionHandler = oldCheck, oldCond })
}

func TestRun(t *testing.T) {
	text := "TRANSFORMED"
	tests := []struct {
		name   string
		kind   hostapi.Kind
		check  func(Input) Result
		cond   func(Input) bool
		want   hostapi.Output
		prefix bool // want.Error is a prefix
	}{
		{"pass", hostapi.KindCheck, func(Input) Result { return Pass() }, nil, hostapi.Output{Verdict: true}, false},
		{"zero result fails", hostapi.KindCheck, func(Input) Result { return Result{} }, nil, hostapi.Output{}, false},
		{"fail", hostapi.KindCheck, func(Input) Result { return Fail("bad") }, nil,
			hostapi.Output{Data: []byte(`{"reason":"bad"}`)}, false},
		{"fail with data", hostapi.KindCheck, func(Input) Result { return Fail("bad").With("n", 2).With("words", []string{"a"}) }, nil,
			hostapi.Output{Data: []byte(`{"n":2,"reason":"bad","words":["a"]}`)}, false},
		{"transform", hostapi.KindCheck, func(Input) Result { return Transform(text) }, nil,
			hostapi.Output{Verdict: true, TransformedText: text, HasTransformedText: true}, false},
		{"transform to empty", hostapi.KindCheck, func(Input) Result { return Transform("") }, nil,
			hostapi.Output{Verdict: true, HasTransformedText: true}, false},
		{"error", hostapi.KindCheck, func(Input) Result { return Error(errors.New("boom")) }, nil,
			hostapi.Output{Error: "boom"}, false},
		{"error with empty message", hostapi.KindCheck, func(Input) Result { return Error(errors.New("")) }, nil,
			hostapi.Output{Error: "error"}, false},
		{"unencodable data", hostapi.KindCheck, func(Input) Result { return Pass().With("f", func() {}) }, nil,
			hostapi.Output{Verdict: true, Error: "sdk: encode Result.Data: f: unsupported type"}, true},
		{"panic string", hostapi.KindCheck, func(Input) Result { panic("oops") }, nil,
			hostapi.Output{Verdict: true, Error: "panic: oops"}, false},
		{"panic error", hostapi.KindCheck, func(in Input) Result { var p *Result; return *p }, nil,
			hostapi.Output{Verdict: true, Error: "panic: runtime error: invalid memory address or nil pointer dereference"}, false},
		{"panic other", hostapi.KindCheck, func(Input) Result { panic(struct{}{}) }, nil,
			hostapi.Output{Verdict: true, Error: "panic: (a value of a type that does not print)"}, false},
		{"no check", hostapi.KindCheck, nil, func(Input) bool { return true }, hostapi.Output{Verdict: true, Error: "sdk: the plugin registers no check"}, true},
		{"condition match", hostapi.KindCondition, nil, func(in Input) bool { return in.Text == "x" }, hostapi.Output{Verdict: true, Match: true}, false},
		{"condition no match", hostapi.KindCondition, nil, func(in Input) bool { return in.Text == "y" }, hostapi.Output{Verdict: true}, false},
		{"condition panic", hostapi.KindCondition, nil, func(in Input) bool { panic(errors.New("cond")) }, hostapi.Output{Verdict: true, Error: "panic: cond"}, false},
		{"no condition", hostapi.KindCondition, func(Input) Result { return Pass() }, nil, hostapi.Output{Verdict: true, Error: "sdk: the plugin registers no condition"}, true},
		{"unknown kind", 9, nil, nil, hostapi.Output{Verdict: true, Error: "sdk: unknown call kind 9"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withHandlers(t, tc.check, tc.cond)
			got := Run(tc.kind, &hostapi.Input{Text: "x"})
			if tc.prefix {
				if !strings.HasPrefix(got.Error, tc.want.Error) {
					t.Fatalf("Error = %q, want prefix %q", got.Error, tc.want.Error)
				}
				got.Error = tc.want.Error
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRunPassesInput(t *testing.T) {
	var got Input
	withHandlers(t, func(in Input) Result { got = in; return Pass() }, nil)
	in := &hostapi.Input{
		Text: "t", Model: "m", CheckID: "c", Stage: "after", Endpoint: "completions",
		Metadata: []hostapi.KV{{Key: "user", Value: "u"}, {Key: "user", Value: "second"}},
		Params: []hostapi.KV{{Key: "s", Value: `"v"`}, {Key: "f", Value: "2.5"}, {Key: "i", Value: "-7"}, {Key: "b", Value: "false"},
			{Key: "l", Value: `["x","y"]`}, {Key: "huge", Value: "1e300"}, {Key: "frac", Value: "1.5"}},
	}
	Run(hostapi.KindCheck, in)
	if got.Text != "t" || got.Model != "m" || got.CheckID != "c" || got.Stage != "after" || got.Endpoint != "completions" ||
		got.Tool != "" || got.MCPServer != "" || got.IsToolCall() {
		t.Fatalf("got %+v", got)
	}
	// Later calls must not change an Input a handler kept.
	Run(hostapi.KindCheck, &hostapi.Input{Text: "other", Metadata: []hostapi.KV{{Key: "zzzz", Value: "zzzz"}}, Params: []hostapi.KV{{Key: "s", Value: `"w"`}}})
	Run(hostapi.KindCheck, in)

	if v, ok := got.Metadata("user"); v != "u" || !ok {
		t.Errorf("Metadata(user) = %q, %v", v, ok)
	}
	if _, ok := got.Metadata("absent"); ok {
		t.Error("Metadata(absent) ok")
	}
	if k := got.MetadataKeys(); !reflect.DeepEqual(k, []string{"user", "user"}) {
		t.Errorf("MetadataKeys = %v", k)
	}
	if k := got.ParamNames(); !reflect.DeepEqual(k, []string{"s", "f", "i", "b", "l", "huge", "frac"}) {
		t.Errorf("ParamNames = %v", k)
	}
	if v, ok := got.ParamString("s"); v != "v" || !ok {
		t.Errorf("ParamString(s) = %q, %v", v, ok)
	}
	if _, ok := got.ParamString("f"); ok {
		t.Error("ParamString of a number ok")
	}
	if v, ok := got.ParamFloat("f"); v != 2.5 || !ok {
		t.Errorf("ParamFloat(f) = %v, %v", v, ok)
	}
	if _, ok := got.ParamFloat("s"); ok {
		t.Error("ParamFloat of a string ok")
	}
	if v, ok := got.ParamInt("i"); v != -7 || !ok {
		t.Errorf("ParamInt(i) = %v, %v", v, ok)
	}
	for _, name := range []string{"frac", "huge", "s", "absent"} {
		if v, ok := got.ParamInt(name); ok {
			t.Errorf("ParamInt(%s) = %v, true", name, v)
		}
	}
	if v, ok := got.ParamBool("b"); v || !ok {
		t.Errorf("ParamBool(b) = %v, %v", v, ok)
	}
	if v, ok := got.ParamStrings("l"); !reflect.DeepEqual(v, []string{"x", "y"}) || !ok {
		t.Errorf("ParamStrings(l) = %v, %v", v, ok)
	}
	if raw, ok := got.Param("l"); raw != `["x","y"]` || !ok {
		t.Errorf("Param(l) = %q, %v", raw, ok)
	}
	for _, name := range []string{"absent"} {
		if _, ok := got.Param(name); ok {
			t.Errorf("Param(%s) ok", name)
		}
		if _, ok := got.ParamBool(name); ok {
			t.Errorf("ParamBool(%s) ok", name)
		}
		if _, ok := got.ParamStrings(name); ok {
			t.Errorf("ParamStrings(%s) ok", name)
		}
		if _, ok := got.ParamFloat(name); ok {
			t.Errorf("ParamFloat(%s) ok", name)
		}
		if _, ok := got.ParamString(name); ok {
			t.Errorf("ParamString(%s) ok", name)
		}
	}
}

func TestRunPassesToolCall(t *testing.T) {
	var got Input
	withHandlers(t, func(in Input) Result { got = in; return Pass() }, nil)
	for _, stage := range []string{"before", "after"} {
		Run(hostapi.KindCheck, &hostapi.Input{Text: `{"path":"/tmp"}`, CheckID: "g.args", Stage: stage, Endpoint: "mcp", Tool: "read_file", MCPServer: "files"})
		if !got.IsToolCall() || got.Tool != "read_file" || got.MCPServer != "files" || got.Stage != stage || got.Text != `{"path":"/tmp"}` {
			t.Fatalf("%s: got %+v", stage, got)
		}
	}
	// The fields do not leak into the next call.
	Run(hostapi.KindCheck, &hostapi.Input{Text: "x", Stage: "before", Endpoint: "chat"})
	if got.IsToolCall() || got.Tool != "" || got.MCPServer != "" {
		t.Fatalf("got %+v", got)
	}
}

func TestCallMalformedInput(t *testing.T) {
	withHandlers(t, func(Input) Result { return Pass() }, nil)
	var out hostapi.Output
	if err := hostapi.DecodeOutput(call(hostapi.KindCheck, []byte{hostapi.TagText, 5, 0, 0, 0, 'x'}), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Error, "sdk: hostapi: decode input: truncated field") {
		t.Fatalf("Error = %q", out.Error)
	}
}

// TestRunWireSizes pins the encodings Run goes through: the host's AppendInput on the way in, the guest's
// AppendOutput on the way out (a pass with nothing else is a single TagVerdict field).
func TestRunWireSizes(t *testing.T) {
	withHandlers(t, func(Input) Result { return Pass() }, nil)
	if n := len(hostapi.AppendInput(nil, &WireInput{Text: "hello", CheckID: "example.check"})); n != 28 {
		t.Errorf("input encodes in %d bytes, want 28", n)
	}
	out := Run(KindCheck, &WireInput{Text: "hello"})
	if n := len(hostapi.AppendOutput(nil, &out)); n != 6 || !out.Verdict {
		t.Errorf("output encodes in %d bytes (verdict %v), want 6 (true)", n, out.Verdict)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	withHandlers(t, nil, nil)
	HandleCheck(func(Input) Result { return Pass() })
	HandleCondition(func(Input) bool { return true })
	for name, f := range map[string]func(){
		"check twice":     func() { HandleCheck(func(Input) Result { return Pass() }) },
		"condition twice": func() { HandleCondition(func(Input) bool { return true }) },
		"nil check":       func() { HandleCheck(nil) },
		"nil condition":   func() { HandleCondition(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestRunHammer runs handlers from many goroutines: Run serialises them and each caller gets its own output.
func TestRunHammer(t *testing.T) {
	withHandlers(t, func(in Input) Result { return Transform(strings.ToUpper(in.Text)) }, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				text := strings.Repeat(string(rune('a'+g)), i)
				if out := Run(hostapi.KindCheck, &hostapi.Input{Text: text}); out.TransformedText != strings.ToUpper(text) {
					t.Errorf("goroutine %d call %d: got %q", g, i, out.TransformedText)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCallAllocations(t *testing.T) {
	withHandlers(t, func(in Input) Result { return Pass() }, nil)
	enc := hostapi.AppendInput(nil, &hostapi.Input{Text: strings.Repeat("x", 1024), Params: []hostapi.KV{{Key: "a", Value: "1"}}})
	call(hostapi.KindCheck, enc)
	// The input's string copy and the handler's KV slice.
	if n := testing.AllocsPerRun(100, func() { call(hostapi.KindCheck, enc) }); n > 2 {
		t.Errorf("call allocates %v times, want at most 2", n)
	}
}

func BenchmarkCall1KB(b *testing.B) {
	old := checkHandler
	checkHandler = func(in Input) Result {
		if _, ok := in.ParamString("action"); !ok {
			return Fail("no action")
		}
		return Pass()
	}
	defer func() { checkHandler = old }()
	enc := hostapi.AppendInput(nil, &hostapi.Input{Text: strings.Repeat("x", 1024), CheckID: "c", Params: []hostapi.KV{{Key: "action", Value: `"deny"`}}})
	b.ReportAllocs()
	for b.Loop() {
		call(hostapi.KindCheck, enc)
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{LevelDebug: "debug", LevelInfo: "info", LevelWarn: "warn", LevelError: "error", 7: "level(7)"} {
		if l.String() != want {
			t.Errorf("%d: %q", l, l.String())
		}
	}
}

func TestNativeHost(t *testing.T) {
	if _, ok := RequestField("params.model"); ok {
		t.Error("RequestField answers natively")
	}
	if d := Now().Sub(Now()); d > 0 {
		t.Error("Now goes backwards")
	}
	Logf(LevelDebug, "native log %d", 1)
}
