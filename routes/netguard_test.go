package routes

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// TestEmbeddedIPv4CustomHosts: an IPv6 custom host that carries a refused IPv4 address in any standard form
// (6to4, Teredo, NAT64, SIIT, IPv4-mapped, IPv4-compatible) is refused with 400 naming the field it came in,
// before any connection, whether it comes in the header, an inline config or a stored provider.
func TestEmbeddedIPv4CustomHosts(t *testing.T) {
	// Should the check let one through, the transport still connects to nothing but loopback.
	f := newFixtureWith(t, Options{}, func(*storage.Store) runtime.Options {
		d := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
			t.Errorf("the gateway dialled %s", address)
			return errors.New("test: no connections")
		}}
		return runtime.Options{Transport: &http.Transport{DialContext: d.DialContext}}
	})
	hosts := []struct{ form, host string }{
		{"6to4 metadata", "http://[2002:a9fe:a9fe::]/v1"},
		{"6to4 private", "http://[2002:a00:1::]:8080/v1"},
		{"Teredo client metadata", "http://[2001:0:404:404:8000:f227:5601:5601]/v1"},
		{"Teredo server metadata", "http://[2001:0:a9fe:a9fe::f7f7:f7f7]/v1"},
		{"NAT64 metadata", "http://[64:ff9b::a9fe:a9fe]/v1"},
		{"local-use NAT64 metadata", "http://[64:ff9b:1::a9fe:a9fe]/v1"},
		{"SIIT link-local", "http://[::ffff:0:a9fe:101]/v1"},
		{"IPv4-mapped metadata", "http://[::ffff:a9fe:a9fe]/v1"},
		{"IPv4-compatible", "http://[::a9fe:a9fe]/v1"},
		{"6to4 loopback", "http://[2002:7f00:1::]/v1"},
	}
	for i, h := range hosts {
		t.Run(h.form, func(t *testing.T) {
			a := f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, h.host)
			checkError(t, a, 400, "host_not_allowed", HeaderCustomHost)

			cfg, _ := json.Marshal(map[string]any{"strategy": map[string]any{"mode": "fallback"},
				"targets": []any{map[string]any{"provider": "openai", "api_key": "k", "custom_host": h.host}}})
			a = f.chat(t, chatBody, HeaderConfig, string(cfg))
			checkError(t, a, 400, "host_not_allowed", "targets[0].custom_host")

			slug := "embedded-" + string(rune('a'+i))
			host, _ := json.Marshal(h.host)
			if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: slug, Provider: "openai",
				Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk"`), "custom_host": host}}); err != nil {
				t.Fatal(err)
			}
			a = f.chat(t, chatBody, HeaderVirtualKey, slug)
			checkError(t, a, 400, "host_not_allowed", HeaderVirtualKey)
			if !strings.Contains(string(a.body), "address") {
				t.Errorf("message does not say why: %s", a.body)
			}
		})
	}
}
