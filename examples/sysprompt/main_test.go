package main

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

type transformCase struct {
	name     string
	endpoint string
	stage    string
	params   map[string]string // JSON values
	body     string
	want     string // the replacement as JSON; "" for unchanged
	data     string
	errSub   string
}

var cases = []transformCase{
	{name: "adds the system message and caps", params: map[string]string{"system": `"be brief"`, "max_tokens": "100"},
		body: `{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"hi"}]}`,
		want: `{"max_tokens":100,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"model":"m"}`,
		data: `{"capped":["max_tokens"],"system_added":true}`},
	{name: "a system message is kept", params: map[string]string{"system": `"be brief"`},
		body: `{"model":"m","messages":[{"role":"system","content":"mine"},{"role":"user","content":"hi"}]}`},
	{name: "a developer message counts as one", params: map[string]string{"system": `"be brief"`},
		body: `{"model":"m","messages":[{"role":"developer","content":"mine"}]}`},
	{name: "under the ceiling", params: map[string]string{"max_tokens": "100"},
		body: `{"model":"m","max_tokens":50,"messages":[]}`},
	{name: "no max_tokens gets the ceiling", params: map[string]string{"max_tokens": "100"},
		body: `{"model":"m","messages":[]}`, want: `{"max_tokens":100,"messages":[],"model":"m"}`, data: `{"capped":["max_tokens"],"system_added":false}`},
	{name: "max_completion_tokens is capped, max_tokens not added", params: map[string]string{"max_tokens": "100"},
		body: `{"model":"o1","max_completion_tokens":5000,"messages":[]}`,
		want: `{"max_completion_tokens":100,"messages":[],"model":"o1"}`, data: `{"capped":["max_completion_tokens"],"system_added":false}`},
	{name: "a completion is capped, no system added", endpoint: "completions", params: map[string]string{"system": `"x"`, "max_tokens": "10"},
		body: `{"model":"m","prompt":"p","max_tokens":20}`, want: `{"max_tokens":10,"model":"m","prompt":"p"}`,
		data: `{"capped":["max_tokens"],"system_added":false}`},
	{name: "embeddings untouched", endpoint: "embeddings", params: map[string]string{"max_tokens": "10"},
		body: `{"model":"m","input":"x"}`},
	{name: "the answer is not rewritten", stage: "after", params: map[string]string{"max_tokens": "10"},
		body: `{"choices":[],"max_tokens":99}`},
	{name: "no parameters", body: `{"model":"m","messages":[]}`},
	{name: "system of the wrong type", params: map[string]string{"system": "1"}, body: `{}`, errSub: `"system" must be a string`},
	{name: "ceiling of the wrong type", params: map[string]string{"max_tokens": "0"}, body: `{}`, errSub: `"max_tokens" must be a positive integer`},
	{name: "messages not an array", params: map[string]string{"system": `"x"`}, body: `{"messages":{}}`, errSub: "messages is not an array"},
}

func (tc transformCase) input() *hostapi.Input {
	in := &hostapi.Input{CheckID: "sysprompt.apply", Stage: "before", Endpoint: "chat", Model: "m", Body: []byte(tc.body)}
	if tc.stage != "" {
		in.Stage = tc.stage
	}
	if tc.endpoint != "" {
		in.Endpoint = tc.endpoint
	}
	for _, name := range []string{"max_tokens", "system"} { // sorted, as the gateway sends them
		if v, ok := tc.params[name]; ok {
			in.Params = append(in.Params, hostapi.KV{Key: name, Value: v})
		}
	}
	return in
}

func (tc transformCase) check(t *testing.T, verdict bool, data, body []byte, errMsg string) {
	t.Helper()
	if tc.errSub != "" {
		if !strings.Contains(errMsg, tc.errSub) || body != nil {
			t.Fatalf("error %q, body %s: want an error containing %q and no body", errMsg, body, tc.errSub)
		}
		return
	}
	if errMsg != "" || !verdict || string(data) != tc.data {
		t.Fatalf("verdict %v, data %s, error %q: want a pass with data %s", verdict, data, errMsg, tc.data)
	}
	switch {
	case tc.want == "" && body != nil:
		t.Fatalf("body %s, want it unchanged", body)
	case tc.want != "" && !sameJSON(body, tc.want):
		t.Fatalf("body %s, want %s", body, tc.want)
	}
}

func sameJSON(got []byte, want string) bool {
	var g, w any
	return json.Unmarshal(got, &g) == nil && json.Unmarshal([]byte(want), &w) == nil && reflect.DeepEqual(g, w)
}

func TestTransform(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			wire := sdk.WireInput{CheckID: in.CheckID, Stage: in.Stage, Endpoint: in.Endpoint, Model: in.Model, Body: in.Body}
			for _, p := range in.Params {
				wire.Params = append(wire.Params, sdk.KV{Key: p.Key, Value: p.Value})
			}
			out := sdk.RunTransform(&wire)
			tc.check(t, out.Verdict, out.Data, out.Body, out.Error)
		})
	}
}

// Test_main builds the plugin for wasm and runs the same cases through the gateway's plugin engine, as a
// mutator hook calls it (Engine.Transform, gateway_transform).
func Test_main(t *testing.T) {
	wasm := wasmtest.Build(t, ".")
	e, err := plugins.New(plugins.Options{CallTimeout: 30 * time.Second}) // -race on small machines
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Load(ctx, "ws", "sysprompt", wasm); err != nil {
		t.Fatal(err)
	}
	if exports, loaded := e.Transforms("ws", "sysprompt"); !exports || !loaded {
		t.Fatalf("Transforms = %v, %v: the plugin exports gateway_transform", exports, loaded)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.Transform(ctx, "ws", "sysprompt", tc.input(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, out.Verdict, out.Data, out.Body, out.Error)
		})
	}
	// A check call reaches gateway_call, which has no check registered.
	out, err := e.Call(ctx, "ws", "sysprompt", hostapi.KindCheck, &hostapi.Input{Text: "x"}, nil)
	if err != nil || !strings.Contains(out.Error, "registers no check") {
		t.Fatalf("a check call: %+v, %v", out, err)
	}
	if _, err := e.Transform(ctx, "ws", "missing", &hostapi.Input{}, nil); err == nil || errors.Is(err, plugins.ErrNoTransform) {
		t.Fatalf("an unknown plugin: %v", err)
	}
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}

// BenchmarkTransform is one mutator call through the plugin engine on a chat request of about 1 KiB: the body
// encoded into the guest, decoded and rewritten there with encoding/json, and the replacement copied out.
func BenchmarkTransform(b *testing.B) {
	wasm := wasmtest.Build(b, ".")
	e, err := plugins.New(plugins.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx := context.Background()
	if err := e.Load(ctx, "ws", "sysprompt", wasm); err != nil {
		b.Fatal(err)
	}
	body := `{"model":"gpt-4o","max_tokens":4096,"messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 80) + `"}]}`
	in := &hostapi.Input{CheckID: "sysprompt.apply", Stage: "before", Endpoint: "chat", Body: []byte(body),
		Params: []hostapi.KV{{Key: "max_tokens", Value: "100"}, {Key: "system", Value: `"be brief"`}}}
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for b.Loop() {
		out, err := e.Transform(ctx, "ws", "sysprompt", in, nil)
		if err != nil || out.Body == nil {
			b.Fatalf("%+v, %v", out, err)
		}
	}
}
