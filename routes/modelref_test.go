package routes

import (
	"strings"
	"testing"
)

// TestModelReferenceRoutes: with no provider in a config or a header, a model "@slug/model" names a stored
// provider and the model to ask it for, so a client that sets only a base URL, a key and a model is routed.
func TestModelReferenceRoutes(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")

	a := f.chat(t, `{"model":"@oai/gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`)
	if a.status != 200 {
		t.Fatalf("chat: %d %s", a.status, a.body)
	}
	if _, sent := up.lastRequest(); !strings.Contains(sent, `"model":"gpt-4o-mini"`) || strings.Contains(sent, "@oai") {
		t.Fatalf("upstream body %s: the model must be sent without its @slug/", sent)
	}

	// Anthropic's SDKs: only the base URL, the gateway key (x-api-key) and the model.
	m := f.message(t, "/v1/messages", strings.Replace(messageBody, `"model":"gpt-4o-mini"`, `"model":"@oai/gpt-4o-mini"`, 1))
	if m.status != 200 || !strings.Contains(string(m.body), `"type":"message"`) {
		t.Fatalf("messages: %d %s", m.status, m.body)
	}

	// A config's override_params win over the model the caller named.
	a = f.chat(t, `{"model":"@oai/gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`, HeaderConfig, `{"retry":{"attempts":1},"override_params":{"model":"gpt-4.1"}}`)
	if _, sent := up.lastRequest(); a.status != 200 || !strings.Contains(sent, `"model":"gpt-4.1"`) {
		t.Fatalf("override: %d %s, upstream body %s", a.status, a.body, sent)
	}

	// An unknown slug is a 404 naming the model; a model without a slash is no reference.
	if a := f.chat(t, `{"model":"@nope/gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`); a.status != 404 || !strings.Contains(string(a.body), `"param":"model"`) {
		t.Fatalf("unknown slug: %d %s", a.status, a.body)
	}
	if a := f.chat(t, `{"model":"@oai","messages":[{"role":"user","content":"Hi"}]}`); a.status != 400 || !strings.Contains(string(a.body), "@slug/model") {
		t.Fatalf("no model after the slug: %d %s", a.status, a.body)
	}
}
