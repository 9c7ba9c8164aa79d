package sdkas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

const transformWorkspace = "11111111-1111-4111-8111-111111111111"

// transformEngine loads testdata/transformguest.ts as "tg" and testdata/kvguest.ts (no transform) as "kvguest".
func transformEngine(t *testing.T) *plugins.Engine {
	t.Helper()
	e, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler), CallTimeout: wasmtest.CallTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	for id, entry := range map[string]string{"tg": "testdata/transformguest.ts", "kvguest": "testdata/kvguest.ts"} {
		if err := e.Load(context.Background(), transformWorkspace, id, wasmtest.BuildAssemblyScript(t, ".", entry)); err != nil {
			t.Fatalf("load %s: %v", entry, err)
		}
	}
	return e
}

// TestTransform runs an AssemblyScript transform through plugins.Engine.Transform, as a mutator hook does: the
// body replaced (UTF-8 kept) before and after the provider call, left unchanged with the body read whole, a
// fail, an error whose body is dropped, and a replacement that is not a JSON object, which fails the call.
func TestTransform(t *testing.T) {
	e := transformEngine(t)
	ctx := context.Background()
	const request = `{"model":"gpt-4o","messages":[{"role":"user","content":"my cat, mon chat 🐱 <b>"}]}`
	const answer = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a cat"}}]}`
	echo, err := json.Marshal(map[string]string{"body": request, "text": ""}) // the SDK writes data as encoding/json does
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, check, stage, body string
		verdict                  bool
		data, wantBody, errText  string
	}{
		{name: "replace before", check: "replace", stage: "before", body: request, verdict: true,
			data: `{"endpoint":"chat","stage":"before"}`, wantBody: strings.ReplaceAll(request, "cat", "dog")},
		{name: "replace after", check: "replace", stage: "after", body: answer, verdict: true,
			data: `{"endpoint":"chat","stage":"after"}`, wantBody: strings.ReplaceAll(answer, "cat", "dog")},
		{name: "unchanged", check: "same", stage: "before", body: request, verdict: true, data: string(echo)},
		{name: "fail", check: "fail", stage: "before", body: request, data: `{"reason":"no"}`},
		{name: "error drops the body", check: "error", stage: "after", body: answer, errText: "cannot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &hostapi.Input{CheckID: "tg." + tc.check, Stage: tc.stage, Endpoint: "chat", Model: "gpt-4o", Body: []byte(tc.body)}
			out, err := e.Transform(ctx, transformWorkspace, "tg", in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != tc.verdict || string(out.Data) != tc.data || out.Error != tc.errText || out.HasTransformedText {
				t.Errorf("= {verdict %v, data %s, error %q, text %v}, want {%v, %s, %q, none}", out.Verdict, out.Data, out.Error,
					out.HasTransformedText, tc.verdict, tc.data, tc.errText)
			}
			if (out.Body == nil) != (tc.wantBody == "") || string(out.Body) != tc.wantBody {
				t.Errorf("body %q, want %q", out.Body, tc.wantBody)
			}
		})
	}
	in := &hostapi.Input{CheckID: "tg.array", Stage: "before", Endpoint: "chat", Body: []byte(request)}
	if _, err := e.Transform(ctx, transformWorkspace, "tg", in, nil); !errors.Is(err, plugins.ErrTrap) || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("a body that is not a JSON object: err = %v, want ErrTrap", err)
	}
	// A check of the same plugin gets no body, even when the host sends one: only a transform decodes it.
	out, err := e.Call(ctx, transformWorkspace, "tg", hostapi.KindCheck, &hostapi.Input{Text: "t", CheckID: "tg.check", Body: []byte(request)}, nil)
	if err != nil || out.Error != "" || string(out.Data) != `{"body":""}` {
		t.Errorf("check with a body: %+v, %v", out, err)
	}
}

// TestTransformExportedOnlyWithAHandler proves the gateway can refuse a mutator hook at config time: the
// transform guest exports gateway_transform, a guest whose entry does not re-export it (kvguest) has none, and
// a transform call to it is ErrNoTransform.
func TestTransformExportedOnlyWithAHandler(t *testing.T) {
	e := transformEngine(t)
	if exports, loaded := e.Transforms(transformWorkspace, "tg"); !exports || !loaded {
		t.Errorf("transform guest: exports %v, loaded %v", exports, loaded)
	}
	if exports, loaded := e.Transforms(transformWorkspace, "kvguest"); exports || !loaded {
		t.Errorf("kv guest: exports %v, loaded %v; want a loaded plugin without gateway_transform", exports, loaded)
	}
	in := &hostapi.Input{CheckID: "kvguest.x", Stage: "before", Body: []byte(`{}`)}
	if _, err := e.Transform(context.Background(), transformWorkspace, "kvguest", in, nil); !errors.Is(err, plugins.ErrNoTransform) {
		t.Errorf("transform of a plugin without the export: err = %v, want ErrNoTransform", err)
	}
	wasmtest.CheckModule(t, "transformguest", wasmtest.BuildAssemblyScript(t, ".", "testdata/transformguest.ts"))
}

// TestTransformDecoding hands the guest inputs the gateway never sends: the body is a singular field (a
// second one is a decoding error naming tag 12, in a check too), gateway_transform answers only kind 3, and
// gateway_call does not take kind 3.
func TestTransformDecoding(t *testing.T) {
	r := wasmtest.InstantiateRaw(t, wasmtest.BuildAssemblyScript(t, ".", "testdata/transformguest.ts"))
	field := func(tag byte, v string) []byte { return append([]byte{tag, byte(len(v)), 0, 0, 0}, v...) }
	body := field(hostapi.TagBody, "{}")
	good := bytes.Join([][]byte{field(hostapi.TagCheckID, "tg.same"), body}, nil)
	twice := bytes.Join([][]byte{body, field(hostapi.TagCheckID, "tg.same"), body}, nil)
	// call writes in into the guest's buffer (through a check call, which Send makes) and calls export on it.
	call := func(export string, kind hostapi.Kind, in []byte) hostapi.Output {
		t.Helper()
		ptr, _ := r.Send(t, uint32(len(in)), 0, in)
		return r.CallExport(t, export, kind, ptr, uint32(len(in)))
	}
	transform := func(kind hostapi.Kind, in []byte) hostapi.Output { return call(hostapi.ExportTransform, kind, in) }
	if out := transform(hostapi.KindTransform, good); out.Error != "" || string(out.Data) != `{"body":"{}","text":""}` {
		t.Errorf("a good input: %+v", out)
	}
	const dup = "sdk: hostapi: decode input: duplicate field (tag 12 at offset 19)"
	if out := transform(hostapi.KindTransform, twice); out.Error != dup {
		t.Errorf("a second body in a transform: error %q, want %q", out.Error, dup)
	}
	if _, out := r.Send(t, uint32(len(twice)), 0, twice); out.Error != dup {
		t.Errorf("a second body in a check: error %q, want %q", out.Error, dup)
	}
	if out := transform(hostapi.KindCheck, good); !strings.Contains(out.Error, "gateway_transform called with kind 1") {
		t.Errorf("gateway_transform with kind 1: %+v", out)
	}
	if out := call(hostapi.ExportCall, hostapi.KindTransform, good); !strings.Contains(out.Error, "unknown call kind 3") {
		t.Errorf("gateway_call with kind 3: %+v", out)
	}
}
