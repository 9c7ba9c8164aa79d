package sdk

import (
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// The transform handler of this test binary: it sets max_tokens from the "max" parameter, fails on a body
// without a model, errors on "error" and panics on "panic".
func init() {
	HandleTransform(func(in TransformInput) TransformResult {
		var body map[string]any
		if err := json.Unmarshal(in.Body, &body); err != nil {
			return TransformError(err)
		}
		switch body["model"] {
		case nil:
			return FailTransform("no model")
		case "error":
			return TransformError(errors.New("cannot"))
		case "panic":
			panic("boom")
		case "same":
			return Unchanged().With("seen", in.CheckID)
		}
		max, _ := in.ParamInt("max")
		body["max_tokens"] = max
		out, _ := json.Marshal(body)
		return Replace(out)
	})
}

func TestRunTransform(t *testing.T) {
	in := func(body string) *WireInput {
		return &WireInput{CheckID: "sys.cap", Stage: "before", Endpoint: "chat", Params: []KV{{Key: "max", Value: "10"}}, Body: []byte(body)}
	}
	out := RunTransform(in(`{"model":"m","max_tokens":4096}`))
	if !out.Verdict || out.Error != "" || string(out.Body) != `{"max_tokens":10,"model":"m"}` {
		t.Fatalf("replace: %+v (body %s)", out, out.Body)
	}
	out = RunTransform(in(`{"model":"same"}`))
	if !out.Verdict || out.Body != nil || string(out.Data) != `{"seen":"sys.cap"}` {
		t.Fatalf("unchanged: %+v", out)
	}
	out = RunTransform(in(`{}`))
	if out.Verdict || out.Body != nil || string(out.Data) != `{"reason":"no model"}` {
		t.Fatalf("fail: %+v", out)
	}
	out = RunTransform(in(`{"model":"error"}`))
	if out.Error != "cannot" || out.Body != nil {
		t.Fatalf("error: %+v", out)
	}
	out = RunTransform(in(`{"model":"panic"}`))
	if !strings.HasPrefix(out.Error, "panic: boom") {
		t.Fatalf("panic: %+v", out)
	}
	// gateway_transform answers only transform calls.
	var o hostapi.Output
	if err := hostapi.DecodeOutput(transform(KindCheck, hostapi.AppendInput(nil, in(`{}`))), &o); err != nil || !strings.Contains(o.Error, "kind 1") {
		t.Fatalf("a check through gateway_transform: %+v, %v", o, err)
	}
}

// TestTransformExportName checks that the //go:wasmexport of gateway_transform uses hostapi's name.
func TestTransformExportName(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "transform_wasip1.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Comments {
		for _, c := range d.List {
			if strings.HasPrefix(c.Text, "//go:wasmexport ") {
				if name := strings.TrimPrefix(c.Text, "//go:wasmexport "); name != hostapi.ExportTransform {
					t.Fatalf("exports %q, want %q", name, hostapi.ExportTransform)
				}
				return
			}
		}
	}
	t.Fatalf("no //go:wasmexport in transform_wasip1.go")
}
