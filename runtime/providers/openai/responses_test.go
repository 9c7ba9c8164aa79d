package openai

import (
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestNativeResponsesOnlyWhereServed(t *testing.T) {
	for _, p := range Compatible {
		d, ok := providers.Describe(p.ID)
		if !ok {
			t.Fatalf("%s not registered", p.ID)
		}
		n, ok := d.Adapter().(providers.NativeResponses)
		if !ok || n.NativeResponses() != (p.ID == "openai") {
			t.Errorf("%s: native responses %v, want %v", p.ID, ok && n.NativeResponses(), p.ID == "openai")
		}
	}
}
