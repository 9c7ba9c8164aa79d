package routes

import (
	"bytes"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Portkey's header dialect (DESIGN.md "Compatibility ingress"): every request header x-portkey-<name> is read
// as its twin x-gateway-<name> when the request does not send the twin itself (the twin wins), so that
// Portkey's SDKs, which send x-portkey-api-key, -provider, -virtual-key, -config and the rest, work by changing
// only their base URL. The rename is generic: a header whose twin the gateway does not read (the SDKs'
// x-portkey-runtime, -runtime-version, -package-version, -strict-open-ai-compliance, -debug, ...) is accepted
// and ignored like any unknown header. Portkey's cloud prefixes become the gateway's names of the same clouds
// (portkeyVendors). README "Portkey's headers" has the table.

const (
	portkeyPrefix = "x-portkey-"
	gatewayPrefix = "x-gateway-"
)

// portkeyVendors are Portkey's names of the clouds whose headers carry the provider's name, and the gateway's:
// x-portkey-azure-resource-name is x-gateway-cloudx-resource-name.
var portkeyVendors = [...]struct{ portkey, gateway string }{
	{"azure-", "cloudx-"},
	{"vertex-", "cloudy-"},
	{"aws-", "cloudz-"},
	{"openai-", "llmvendor-"},
}

// portkeyHeaders renames the request's x-portkey-* headers to their x-gateway-* twins. It runs before every
// other middleware, so that the trace ID and the gateway key are read from either dialect. A request without
// any x-portkey-* header costs one scan of its raw header bytes and no allocation.
func portkeyHeaders(c *fiber.Ctx) error {
	h := &c.Request().Header
	if hasPortkeyHeader(h) {
		renamePortkeyHeaders(h)
	}
	return c.Next()
}

// hasPortkeyHeader reports whether a request header's name starts with x-portkey-, in any case.
func hasPortkeyHeader(h *fasthttp.RequestHeader) bool {
	raw := h.RawHeaders()
	if len(raw) == 0 { // a request that was not parsed from the wire (tests driving the handler directly)
		found := false
		h.VisitAll(func(key, _ []byte) { found = found || hasPrefixFold(key, portkeyPrefix) })
		return found
	}
	for len(raw) > 0 {
		if hasPrefixFold(raw, portkeyPrefix) {
			return true
		}
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			return false
		}
		raw = raw[i+1:]
	}
	return false
}

// renamePortkeyHeaders sets each x-portkey-<name> header's value as x-gateway-<name> where that is absent. A
// Portkey SDK that is given no provider key sends its Portkey key (here the gateway key) as the OpenAI client's
// Bearer token too: that Authorization is dropped, so that the gateway key never goes to a provider.
func renamePortkeyHeaders(h *fasthttp.RequestHeader) {
	type header struct{ name, value string }
	var renames []header
	h.VisitAll(func(key, value []byte) {
		if hasPrefixFold(key, portkeyPrefix) && len(key) > len(portkeyPrefix) {
			renames = append(renames, header{gatewayTwin(strings.ToLower(string(key[len(portkeyPrefix):]))), string(value)})
		}
	})
	for _, r := range renames {
		if len(h.Peek(r.name)) == 0 {
			h.Set(r.name, r.value)
		}
	}
	if key := h.Peek(HeaderAPIKey); len(key) > 0 {
		// Matched as readGatewayHeaders reads a Bearer token (either case), so that no copy it would take slips by.
		if token, ok := bearerToken(string(h.Peek(fiber.HeaderAuthorization))); ok && token == string(key) {
			h.Del(fiber.HeaderAuthorization)
		}
	}
}

// gatewayTwin is the x-gateway-* name of Portkey's header x-portkey-<name> (name in lower case).
func gatewayTwin(name string) string {
	for _, v := range portkeyVendors {
		if rest, ok := strings.CutPrefix(name, v.portkey); ok {
			return gatewayPrefix + v.gateway + rest
		}
	}
	return gatewayPrefix + name
}

// hasPrefixFold reports whether b starts with prefix (lower case ASCII), ignoring case.
func hasPrefixFold(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
