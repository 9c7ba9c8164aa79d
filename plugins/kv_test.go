package plugins

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

// kvGuest is a hand-made guest whose gateway_call looks up its input's text (the Input holds only Text, so the
// key starts 5 bytes into the input) with kv_get into a buffer of outCap bytes at 4096, and answers: pass when
// the key is absent; fail without data (a verdict written by the guest) when the value did not fit; otherwise
// the value itself, read as the Output. A test stores encoded Outputs as values to see what the host wrote.
// keyPtr, when not nil, replaces the key's pointer.
func kvGuest(outCap int32, keyPtr *int32) wasmModule {
	const outPtr, failPtr = 4096, 8192
	var body []byte
	if keyPtr != nil {
		body = append(append(body, 0x41), sleb(*keyPtr)...) // i32.const keyPtr
	} else {
		body = append(body, 0x20, 0x01, 0x41, 0x05, 0x6a) // local.get 1; i32.const 5; i32.add
	}
	body = append(body, 0x20, 0x02, 0x41, 0x05, 0x6b) // local.get 2; i32.const 5; i32.sub
	body = append(append(body, 0x41), sleb(outPtr)...)
	body = append(append(body, 0x41), sleb(outCap)...)
	body = append(body,
		0x10, 0x00, // call kv_get (import 0)
		0x21, 0x00, // local.set 0: the kind parameter is free scratch
		0x20, 0x00, 0x41, 0x00, 0x48, // r < 0
		0x04, 0x7e, // if (result i64)
		0x42, 0x00, // i64.const 0: pass
		0x05,       // else
		0x20, 0x00) // local.get 0
	body = append(append(body, 0x41), sleb(outCap)...)
	body = append(body, 0x4a, 0x04, 0x7e)              // r > outCap; if (result i64)
	for _, at := range []int32{failPtr, failPtr + 1} { // [TagVerdict][len 1 ...]; the rest of it is zeros
		body = append(append(body, 0x41), sleb(at)...)
		body = append(body, 0x41, 0x01, 0x3a, 0x00, 0x00) // i32.const 1; i32.store8
	}
	body = append(append(body, 0x42), sleb64(failPtr<<32|6)...)
	body = append(body, 0x05) // else
	body = append(append(body, 0x42), sleb64(outPtr<<32)...)
	body = append(body, 0x20, 0x00, 0xad, 0x84, 0x0b, 0x0b) // local.get 0; i64.extend_i32_u; i64.or; end; end
	m := abiModule()
	m.funcs = maps(m.funcs)
	m.funcs["gateway_call"] = wasmFunc{params: fnCall.params, results: fnCall.results, body: body}
	m.imports = append(m.imports, struct {
		module, name string
		fn           wasmFunc
	}{hostapi.ModuleName, hostapi.ImportKVGet, wasmFunc{params: []byte{0x7f, 0x7f, 0x7f, 0x7f}, results: []byte{0x7f}}})
	return m
}

func sleb64(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// kvMap is an Options.KV over a map of workspace → key → value, recording the keys asked.
type kvMap struct {
	mu    sync.Mutex
	m     map[string]map[string][]byte
	asked []string
	err   error
}

func (k *kvMap) get(workspaceID, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asked = append(k.asked, workspaceID+"/"+key)
	if k.err != nil {
		return nil, false, k.err
	}
	v, ok := k.m[workspaceID][key]
	return v, ok, nil
}

// TestKVGet proves the kv_get host function: a present key's value is written into the guest's buffer and its
// length returned; an absent key, a key of another workspace, a key longer than any stored one and
// an engine without Options.KV answer -1; a value that does not fit returns its length (the guest's "too small"
// branch); the workspace asked is the plugin's; a key outside the guest's memory traps; a store error fails the
// call rather than answering "absent".
func TestKVGet(t *testing.T) {
	fail := hostapi.AppendOutput(nil, &hostapi.Output{Verdict: false, Data: []byte(`{"reason":"from kv"}`)})
	kv := &kvMap{m: map[string]map[string][]byte{
		wsA:      {"banned": fail},
		"ws-b-1": {"other": fail},
	}}
	opts := testOptions(t)
	opts.KV = kv.get
	e := newEngine(t, opts)
	load(t, e, wsA, "fits", kvGuest(1024, nil).bytes())
	load(t, e, wsA, "small", kvGuest(int32(len(fail)-1), nil).bytes())

	for _, tc := range []struct {
		plugin, key string
		verdict     bool
		data        string
	}{
		{"fits", "banned", false, `{"reason":"from kv"}`},
		{"fits", "absent", true, ""},
		{"fits", "other", true, ""}, // another workspace's key
		{"fits", strings.Repeat("k", maxKVKeyLen+1), true, ""},
		{"small", "banned", false, ""},
	} {
		out := call(t, e, wsA, tc.plugin, hostapi.KindCheck, &hostapi.Input{Text: tc.key}, nil)
		if out.Error != "" || out.Verdict != tc.verdict || string(out.Data) != tc.data {
			t.Errorf("%s(%.20q) = %+v, want verdict %v data %s", tc.plugin, tc.key, out, tc.verdict, tc.data)
		}
	}
	kv.mu.Lock()
	asked := strings.Join(kv.asked, ",")
	kv.mu.Unlock()
	if want := wsA + "/banned," + wsA + "/absent," + wsA + "/other," + wsA + "/banned"; asked != want {
		t.Errorf("KV asked %s, want %s (an overlong key is not looked up)", asked, want)
	}

	bad := int32(-16)
	load(t, e, wsA, "outside", kvGuest(1024, &bad).bytes())
	if _, err := e.Call(context.Background(), wsA, "outside", hostapi.KindCheck, &hostapi.Input{Text: "banned"}, nil); !errors.Is(err, ErrTrap) ||
		!strings.Contains(err.Error(), "outside the module's memory") {
		t.Errorf("key outside memory: %v, want a trap naming it", err)
	}

	kv.mu.Lock()
	kv.err = errors.New("store unavailable")
	kv.mu.Unlock()
	if _, err := e.Call(context.Background(), wsA, "fits", hostapi.KindCheck, &hostapi.Input{Text: "banned"}, nil); err == nil ||
		!strings.Contains(err.Error(), "store unavailable") {
		t.Errorf("store error: %v, want the call to fail with it", err)
	}

	plain := newEngine(t, testOptions(t))
	load(t, plain, wsA, "fits", kvGuest(1024, nil).bytes())
	if out := call(t, plain, wsA, "fits", hostapi.KindCheck, &hostapi.Input{Text: "banned"}, nil); !out.Verdict {
		t.Errorf("no Options.KV: %+v, want every key absent", out)
	}
}

// BenchmarkKVGet measures one Call of a hand-made guest that makes one kv_get of a 64-byte key, Options.KV
// answering from a map as the gateway's store answers from memory: "present" (a 44-byte value, an encoded
// Output, written into the guest and decoded as its answer), "absent" (kv_get answers -1, the guest passes), and
// "baseline", the same engine's call of a guest that makes no kv_get: the differences are kv_get's cost.
func BenchmarkKVGet(b *testing.B) {
	value := hostapi.AppendOutput(nil, &hostapi.Output{Verdict: true, Data: []byte(`{"words":"alpha\nbeta\ngamma"}`)})
	key := strings.Repeat("k", 64)
	kv := map[string][]byte{key: value}
	opts := testOptions(b)
	opts.KV = func(ws, k string) ([]byte, bool, error) {
		v, ok := kv[k]
		return v, ok, nil
	}
	e := newEngine(b, opts)
	load(b, e, wsA, "kv", kvGuest(1024, nil).bytes())
	load(b, e, wsA, "baseline", abiModule().bytes())
	if out := call(b, e, wsA, "kv", hostapi.KindCheck, &hostapi.Input{Text: key}, nil); !out.Verdict || len(out.Data) == 0 {
		b.Fatalf("the value did not come back: %+v", out)
	}
	for _, bc := range []struct{ name, plugin, key string }{
		{"present", "kv", key},
		{"absent", "kv", strings.Repeat("a", 64)},
		{"baseline", "baseline", key},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := &hostapi.Input{Text: bc.key}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Call(ctx, wsA, bc.plugin, hostapi.KindCheck, in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
