package routes

import (
	"strings"
	"testing"
)

// A client that sends the gateway key twice (Anthropic's SDKs send both x-api-key and Authorization when given
// an API key and an auth token; a client may add x-gateway-api-key by default headers too) must not have the
// second copy taken for the provider's key: it would go upstream to a provider named by x-gateway-provider.
func TestMessagesGatewayKeyNeverGoesUpstream(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	route := []string{HeaderProvider, "openai", HeaderCustomHost, up.URL + "/v1", "Content-Type", "application/json"}
	tests := []struct {
		name    string
		headers []string
	}{
		{"x-api-key and bearer", []string{HeaderAnthropicAPIKey, f.plain, "Authorization", "Bearer " + f.plain}},
		{"x-api-key and lower-case bearer", []string{HeaderAnthropicAPIKey, f.plain, "Authorization", "bearer " + f.plain}},
		{"x-gateway-api-key and x-api-key", []string{HeaderAPIKey, f.plain, HeaderAnthropicAPIKey, f.plain}},
		{"x-gateway-api-key and bearer", []string{HeaderAPIKey, f.plain, "Authorization", "Bearer " + f.plain}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "POST", "/v1/messages", messageBody, append(tc.headers, route...)...)
			if a.status != 200 {
				t.Fatalf("%d %s", a.status, a.body)
			}
			r, _ := up.lastRequest()
			for name, values := range r.Header {
				if strings.Contains(strings.Join(values, " "), f.plain) {
					t.Errorf("the gateway key went upstream in %s", name)
				}
			}
		})
	}
}
