package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

// lebI64 is the signed LEB128 of n, for i64.const.
func lebI64(n int64) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 && c&0x40 == 0 || n == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// fnReturning is a gateway_transform that writes out (at most 4 bytes) at address 64 and returns it as its
// output: i32.store of the bytes, then i64.const 64<<32 | len.
func fnReturning(out string) wasmFunc {
	var word uint32
	for i := len(out) - 1; i >= 0; i-- {
		word = word<<8 | uint32(out[i])
	}
	body := append([]byte{0x41}, lebI64(64)...)                      // i32.const 64
	body = append(append(body, 0x41), lebI64(int64(int32(word)))...) // i32.const word
	body = append(body, 0x36, 0x02, 0x00)                            // i32.store align=4 offset=0
	body = append(append(body, 0x42), lebI64(64<<32|int64(len(out)))...)
	return wasmFunc{params: fnCall.params, results: fnCall.results, body: body}
}

func withTransform(fn wasmFunc) []byte {
	return editFuncs(abiModule(), func(f map[string]wasmFunc) { f[hostapi.ExportTransform] = fn }).bytes()
}

// TestTransform proves what Engine.Transform makes of a guest: gateway_transform's output is decoded as a
// call's, its body must be one JSON object, and a plugin without the export (or with one of another type) is an
// error naming the plugin and gateway_transform, found before an instance is used.
func TestTransform(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	load(t, e, "ws", "raw", withTransform(fnReturning("{}")))
	load(t, e, "ws", "unchanged", withTransform(fnCall))
	load(t, e, "ws", "none", abiModule().bytes())
	load(t, e, "ws", "mistyped", withTransform(fnAlloc))
	in := &hostapi.Input{CheckID: "x.y", Stage: "before", Endpoint: "chat", Body: []byte(`{"model":"m"}`)}

	// fnReturning writes raw bytes, not an encoded Output: a 2-byte "{}" is a truncated field header.
	if _, err := e.Transform(ctx, "ws", "raw", in, nil); !errors.Is(err, ErrTrap) {
		t.Fatalf("raw bytes as output: %v", err)
	}
	out, err := e.Transform(ctx, "ws", "unchanged", in, nil)
	if err != nil || !out.Verdict || out.Body != nil {
		t.Fatalf("an empty output: %+v, %v", out, err)
	}
	for _, id := range []string{"none", "mistyped"} {
		_, err := e.Transform(ctx, "ws", id, in, nil)
		if !errors.Is(err, ErrNoTransform) || !strings.Contains(err.Error(), `"`+id+`"`) || !strings.Contains(err.Error(), "gateway_transform") {
			t.Fatalf("%s: %v", id, err)
		}
		if exports, loaded := e.Transforms("ws", id); exports || !loaded {
			t.Fatalf("Transforms(%s) = %v, %v", id, exports, loaded)
		}
		// Call with KindTransform says the same, and the instance stays usable for checks.
		if _, err := e.Call(ctx, "ws", id, hostapi.KindTransform, in, nil); !errors.Is(err, ErrNoTransform) {
			t.Fatalf("Call(%s, KindTransform): %v", id, err)
		}
		if out := call(t, e, "ws", id, hostapi.KindCheck, &hostapi.Input{Text: "x"}, nil); !out.Verdict {
			t.Fatalf("a check after a refused transform: %+v", out)
		}
	}
	if exports, loaded := e.Transforms("ws", "unchanged"); !exports || !loaded {
		t.Fatalf("Transforms(unchanged) = %v, %v", exports, loaded)
	}
	if exports, loaded := e.Transforms("ws", "missing"); exports || loaded {
		t.Fatalf("Transforms(missing) = %v, %v", exports, loaded)
	}
}

// TestTransformBodyMustBeAnObject loads a guest whose gateway_transform returns an encoded Output with a body
// of the wrong kind, and one with an object.
func TestTransformBodyMustBeAnObject(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	// An Output of a body field whose value is 0 bytes (tag 6, length 0): present and empty, which is not a
	// JSON object. One i32 store writes the header's first 4 bytes; the fifth is the memory's zero.
	load(t, e, "ws", "empty-body", withTransform(fnReturningN("\x06\x00\x00\x00", 5)))
	in := &hostapi.Input{Body: []byte(`{"a":1}`)}
	if _, err := e.Transform(ctx, "ws", "empty-body", in, nil); !errors.Is(err, ErrTrap) || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("an empty body: %v", err)
	}
	c, err := e.CheckFor("ws", "empty-body", "rewrite", json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CanTransform(); err != nil {
		t.Fatalf("CanTransform: %v", err)
	}
	if _, err := c.TransformBody(ctx, in, nil); err == nil || !strings.Contains(err.Error(), "plugin transform empty-body.rewrite") {
		t.Fatalf("TransformBody: %v", err)
	}
	none, _ := e.CheckFor("ws", "not-loaded", "x", nil)
	if err := none.CanTransform(); err != nil {
		t.Fatalf("a plugin not loaded yet: %v", err)
	}
}

// fnReturningN is fnReturning with an output length of n (the bytes past out are the memory's zeros).
func fnReturningN(out string, n int64) wasmFunc {
	f := fnReturning(out)
	cut := len(f.body) - len(lebI64(64<<32|int64(len(out))))
	f.body = append(f.body[:cut], lebI64(64<<32|n)...)
	return f
}
