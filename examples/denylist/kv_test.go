package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

// The "kv" parameter: more words from the workspace's plugin key-value store, one per line.

const kvWorkspace = "11111111-1111-4111-8111-111111111111"

type kvCase struct {
	name   string
	text   string
	words  string // the "words" parameter's JSON, "" to leave it out
	kv     string // the "kv" parameter's JSON
	pass   bool
	data   string
	errSub string
}

// kvStore is the store every case reads: "banned" holds words with spaces around them and empty lines.
var kvStore = map[string]string{"banned": "  Alpha \r\n\nproject apollo\n", "empty": ""}

var kvCases = []kvCase{
	{name: "kv word", text: "alpha team", kv: `"banned"`, data: `{"reason":"deny-listed content","words":["Alpha"]}`},
	{name: "kv phrase", text: "about Project Apollo", kv: `"banned"`, data: `{"reason":"deny-listed content","words":["project apollo"]}`},
	{name: "beside words", text: "secret alpha", words: `["secret"]`, kv: `"banned"`,
		data: `{"reason":"deny-listed content","words":["secret","Alpha"]}`},
	{name: "clean", text: "alphabet", kv: `"banned"`, pass: true},
	{name: "absent key", text: "alpha", kv: `"missing"`, pass: true},
	{name: "empty value", text: "alpha", kv: `"empty"`, pass: true},
	{name: "not a string", text: "alpha", kv: `["banned"]`, errSub: `"kv" must be a string`},
}

func (tc kvCase) input() *hostapi.Input {
	in := &hostapi.Input{Text: tc.text, CheckID: "denylist.check"}
	if tc.words != "" {
		in.Params = append(in.Params, hostapi.KV{Key: "words", Value: tc.words})
	}
	return withKV(in, tc.kv)
}

// withKV adds the "kv" parameter (its JSON) to in.
func withKV(in *hostapi.Input, kv string) *hostapi.Input {
	in.Params = append(in.Params, hostapi.KV{Key: "kv", Value: kv})
	return in
}

func (tc kvCase) check(t *testing.T, verdict bool, data, errText string) {
	t.Helper()
	if tc.errSub != "" {
		if !strings.Contains(errText, tc.errSub) {
			t.Fatalf("error = %q, want it to contain %q", errText, tc.errSub)
		}
		return
	}
	if errText != "" || verdict != tc.pass || data != tc.data {
		t.Fatalf("= {verdict %v, data %s, error %q}, want {verdict %v, data %s}", verdict, data, errText, tc.pass, tc.data)
	}
}

// TestKVNative runs the cases natively, the store answered by sdk.SetKVForTest, and proves the list is read on
// every call: a changed value changes the next verdict.
func TestKVNative(t *testing.T) {
	sdk.SetKVForTest(kvStore)
	t.Cleanup(func() { sdk.SetKVForTest(nil) })
	run := func(in *hostapi.Input) sdk.WireOutput {
		w := &sdk.WireInput{Text: in.Text, CheckID: in.CheckID}
		for _, p := range in.Params {
			w.Params = append(w.Params, sdk.KV{Key: p.Key, Value: p.Value})
		}
		return sdk.Run(sdk.KindCheck, w)
	}
	for _, tc := range kvCases {
		t.Run(tc.name, func(t *testing.T) {
			out := run(tc.input())
			tc.check(t, out.Verdict, string(out.Data), out.Error)
		})
	}
	sdk.SetKVForTest(map[string]string{"banned": "omega"})
	if out := run(kvCases[0].input()); !out.Verdict {
		t.Errorf("after the value changed, %q is still denied: %s", kvCases[0].text, out.Data)
	}
	if out := run(withKV(&hostapi.Input{Text: "the omega point"}, `"banned"`)); out.Verdict {
		t.Error("the new value's word passes")
	}
}

// TestKVInEngine builds the plugin for wasm and runs the cases in the gateway's engine (package plugins), whose
// kv_get answers from Options.KV: the workspace asked is the plugin's, and a value changed between two calls
// changes the second verdict without reloading the plugin.
func TestKVInEngine(t *testing.T) {
	wasm := wasmtest.Build(t, ".")
	var mu sync.Mutex
	store := map[string]map[string]string{kvWorkspace: kvStore, "22222222-2222-4222-8222-222222222222": {"banned": "everything"}}
	// The deadline is wasmtest's, not the gateway's 100 ms: the test runs under -race on small shared machines.
	e, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler), CallTimeout: wasmtest.CallTimeout,
		KV: func(ws, key string) ([]byte, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			v, ok := store[ws][key]
			return []byte(v), ok, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	ctx := context.Background()
	if err := e.Load(ctx, kvWorkspace, "denylist", wasm); err != nil {
		t.Fatal(err)
	}
	call := func(in *hostapi.Input) *hostapi.Output {
		t.Helper()
		out, err := e.Call(ctx, kvWorkspace, "denylist", hostapi.KindCheck, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range kvCases {
		t.Run(tc.name, func(t *testing.T) {
			out := call(tc.input())
			tc.check(t, out.Verdict, string(out.Data), out.Error)
		})
	}
	mu.Lock()
	store[kvWorkspace] = map[string]string{"banned": "omega"}
	mu.Unlock()
	if out := call(kvCases[0].input()); !out.Verdict {
		t.Errorf("after the value changed, %q is still denied: %s", kvCases[0].text, out.Data)
	}
	if out := call(withKV(&hostapi.Input{Text: "the omega point"}, `"banned"`)); out.Verdict {
		t.Error("the new value's word passes")
	}
	long := strings.Repeat("filler\n", 1000) + "zeta" // past the SDK's first 4 KiB buffer
	mu.Lock()
	store[kvWorkspace]["long"] = long
	mu.Unlock()
	if out := call(withKV(&hostapi.Input{Text: "zeta"}, `"long"`)); out.Verdict || string(out.Data) != `{"reason":"deny-listed content","words":["zeta"]}` {
		t.Errorf("a value past 4 KiB: %+v", out)
	}
}
