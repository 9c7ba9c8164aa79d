package routes

import (
	"strings"
	"testing"
)

// Portkey's SDKs send their key as the Bearer token too; the gateway reads "bearer" in either case
// (readGatewayHeaders), so the copy it drops must be matched the same way, or the gateway key goes upstream.
func TestPortkeyKeyAsLowerCaseBearerStaysHome(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	for _, auth := range []string{"bearer " + f.plain, "Bearer  " + f.plain + " "} {
		a := f.do(t, "POST", "/v1/chat/completions", chatBody, "Content-Type", "application/json",
			"x-portkey-api-key", f.plain, "x-portkey-provider", "openai", "x-portkey-custom-host", up.URL+"/v1",
			"Authorization", auth)
		if r, _ := up.lastRequest(); a.status != 200 || r.Header.Get("Authorization") != "" {
			t.Errorf("%q: %d %s; the gateway key went upstream as %q", auth, a.status, a.body, r.Header.Get("Authorization"))
		}
	}
}

// TestGatewayKeyAsBearerStaysHome: on the OpenAI endpoints too, the gateway key sent again as the Bearer token
// is not taken for the provider's key.
func TestGatewayKeyAsBearerStaysHome(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	a := f.do(t, "POST", "/v1/chat/completions", chatBody, "Content-Type", "application/json",
		HeaderAPIKey, f.plain, "Authorization", "Bearer "+f.plain, HeaderProvider, "openai", HeaderCustomHost, up.URL+"/v1")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	r, _ := up.lastRequest()
	if got := r.Header.Get("Authorization"); strings.Contains(got, f.plain) {
		t.Fatalf("upstream Authorization %q: the gateway key must never go upstream", got)
	}
}
