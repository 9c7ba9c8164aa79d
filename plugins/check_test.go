package plugins

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

func TestWasmCheckAndCondition(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	if err := e.Load(ctx, "ws-a", "p", guest(t, "basic")); err != nil {
		t.Fatal(err)
	}
	c, err := e.CheckFor("ws-a", "p", "detect", json.RawMessage(`{"b": 2, "a": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.checkID != "p.detect" || len(c.params) != 2 || c.params[0].Key != "a" || c.params[0].Value != `"x"` {
		t.Fatalf("bound check %+v", c)
	}
	// The basic guest knows no "p.detect": it reports a check error, which reaches the caller as Output.Error.
	out, err := c.Check(ctx, &hostapi.Input{Text: "hello"}, nil)
	if err != nil || !strings.Contains(out.Error, `"p.detect"`) {
		t.Fatalf("check: %+v, %v", out, err)
	}
	// Another workspace cannot reach the plugin.
	other, _ := e.CheckFor("ws-b", "p", "detect", nil)
	if _, err := other.Check(ctx, &hostapi.Input{}, nil); err == nil {
		t.Fatal("a check reached another workspace's plugin")
	}
	if _, err := e.CheckFor("ws-a", "a/b", "x", nil); err == nil {
		t.Fatal("an invalid plugin id was accepted")
	}
	if _, err := e.CheckFor("ws-a", "p", "x", json.RawMessage(`[1]`)); err == nil {
		t.Fatal("parameters that are not an object were accepted")
	}
	for text, want := range map[string]bool{"say yes please": true, "no": false} {
		got, err := e.Condition(ctx, "ws-a", "p", &hostapi.Input{Text: text}, nil)
		if err != nil || got != want {
			t.Errorf("condition on %q = %v, %v; want %v", text, got, err, want)
		}
	}
}
