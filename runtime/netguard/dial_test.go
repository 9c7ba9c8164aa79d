package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// errOffLoopback is what loopbackOnly returns: a test must never connect off loopback.
var errOffLoopback = errors.New("test refused a non-loopback connection")

// loopbackOnly is a dialer that counts connections and refuses, before connect, any address that is not
// loopback, as a backstop so that no test sends traffic off the host even if netguard is wrong.
func loopbackOnly(t *testing.T, dials *atomic.Int32) *net.Dialer {
	return &net.Dialer{Control: func(network, address string, _ syscall.RawConn) error {
		dials.Add(1)
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("dial of %s %s, which is not loopback", network, address)
			return errOffLoopback
		}
		return nil
	}}
}

// recordingDial is a dialFunc that never connects: it records the addresses it is given.
type recordingDial struct {
	mu    sync.Mutex
	addrs []string
}

func (r *recordingDial) dial(_ context.Context, network, address string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = append(r.addrs, network+" "+address)
	return nil, errOffLoopback
}

func newUpstream(t *testing.T) (*httptest.Server, netip.AddrPort) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
			return
		}
		fmt.Fprint(w, "hello from upstream")
	}))
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	if !ap.Addr().IsLoopback() {
		t.Fatalf("httptest server on %v, not loopback", ap)
	}
	return srv, ap
}

func newClient(p *Policy, d *net.Dialer, r Resolver) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: p.DialContext(d, r), Proxy: nil, DisableKeepAlives: true}}
}

func TestDialContextLoopbackAllowed(t *testing.T) {
	srv, ap := newUpstream(t)
	r := newFakeResolver(map[string]string{"upstream.test": ap.Addr().String()})
	var dials atomic.Int32
	client := newClient(&Policy{}, loopbackOnly(t, &dials), r)

	tests := []struct {
		name   string
		url    string
		lookup bool
	}{
		{"IP literal", srv.URL + "/v1", false},
		{"name resolved by the fake", fmt.Sprintf("http://upstream.test:%d/v1", ap.Port()), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.Calls())
			resp, err := client.Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "hello from upstream" {
				t.Errorf("got %d %q", resp.StatusCode, body)
			}
			if looked := len(r.Calls()) > before; looked != tc.lookup {
				t.Errorf("resolver asked: %v, want %v", looked, tc.lookup)
			}
		})
	}
	if dials.Load() != int32(len(tests)) {
		t.Errorf("%d dials, want %d", dials.Load(), len(tests))
	}
}

func TestDialContextRefused(t *testing.T) {
	tests := []struct {
		name    string
		policy  *Policy
		answers map[string]string
		network string
		address string
		code    string
		msgHas  string
	}{
		{"private name", &Policy{}, map[string]string{"internal.test": "10.255.255.1"}, "tcp", "internal.test:80",
			CodeHostNotAllowed, `upstream host "internal.test" resolved at connect time to 10.255.255.1, a private address; the operator can allow it`},
		{"private literal", &Policy{}, nil, "tcp", "10.255.255.1:443", CodeHostNotAllowed,
			"refusing to connect to 10.255.255.1, a private address"},
		{"mixed answers", &Policy{}, map[string]string{"mixed.test": "127.0.0.1,10.255.255.1"}, "tcp", "mixed.test:80",
			CodeHostNotAllowed, "one of its 2 addresses"},
		{"mapped answer", &Policy{}, map[string]string{"m.test": "::ffff:10.255.255.1"}, "tcp", "m.test:80", CodeHostNotAllowed, "private"},
		{"metadata", &Policy{AllowPrivate: true}, nil, "tcp", "169.254.169.254:80", CodeHostNotAllowed, "cloud metadata"},
		{"metadata v6 allow-host", &Policy{AllowHosts: []string{"md.test"}}, map[string]string{"md.test": "fd00:ec2::254"},
			"tcp6", "md.test:80", CodeHostNotAllowed, "cloud metadata"},
		{"unspecified", &Policy{}, nil, "tcp", "0.0.0.0:80", CodeHostNotAllowed, "unspecified"},
		{"numeric name", &Policy{}, nil, "tcp", "2130706433:80", CodeHostNotAllowed, "not a valid IP address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingDial{}
			dial := tc.policy.dialContext(rec.dial, newFakeResolver(tc.answers))
			conn, err := dial(t.Context(), tc.network, tc.address)
			if conn != nil {
				conn.Close()
				t.Fatal("got a connection")
			}
			if len(rec.addrs) != 0 {
				t.Errorf("dialled %v; a refused address must not be dialled", rec.addrs)
			}
			ge := asGwerr(t, err)
			if ge.Status != 400 || ge.Code != tc.code || !strings.Contains(ge.Message, tc.msgHas) {
				t.Errorf("got %v, want 400 %s containing %q", err, tc.code, tc.msgHas)
			}
		})
	}
}

// TestDialContextHTTPRefused goes through an http.Client: the refusal comes back inside a *url.Error and no
// connection is made.
func TestDialContextHTTPRefused(t *testing.T) {
	var dials atomic.Int32
	r := newFakeResolver(map[string]string{"internal.test": "10.255.255.1"})
	client := newClient(&Policy{}, loopbackOnly(t, &dials), r)
	_, err := client.Get("http://internal.test/v1/chat/completions")
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want a *url.Error", err)
	}
	if ge := asGwerr(t, err); ge.Code != CodeHostNotAllowed {
		t.Errorf("code %s", ge.Code)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials, want 0", n)
	}
}

// TestDialContextRebinding: the name resolves to a public address when CheckURL looks and to a private one when
// the transport dials. CheckURL passes; the dial is refused without connecting.
func TestDialContextRebinding(t *testing.T) {
	var lookups atomic.Int32
	rebinding := resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("10.255.255.1")}, nil
	})
	p := &Policy{}
	const raw = "https://rebind.test/v1"
	if err := p.CheckURL(t.Context(), rebinding, raw); err != nil {
		t.Fatalf("CheckURL: %v", err)
	}
	var dials atomic.Int32
	_, err := newClient(p, loopbackOnly(t, &dials), rebinding).Get(raw)
	ge := asGwerr(t, err)
	if ge.Code != CodeHostNotAllowed || !strings.Contains(ge.Message, "10.255.255.1, a private address") {
		t.Errorf("got %v", err)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials, want 0", n)
	}
	if n := lookups.Load(); n != 2 {
		t.Errorf("%d lookups, want 2", n)
	}
}

// TestDialContextRedirect: an allowed upstream that redirects to a private name is refused at the redirect.
func TestDialContextRedirect(t *testing.T) {
	srv, _ := newUpstream(t)
	var dials atomic.Int32
	r := newFakeResolver(map[string]string{"internal.test": "10.255.255.1"})
	_, err := newClient(&Policy{}, loopbackOnly(t, &dials), r).Get(srv.URL + "/redirect?to=" + url.QueryEscape("http://internal.test/admin"))
	if ge := asGwerr(t, err); ge.Code != CodeHostNotAllowed {
		t.Errorf("got %v", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1 (the loopback upstream only)", n)
	}
}

// TestDialContextDials checks what an allowed name is dialled as, with a recorder instead of a socket: the
// checked IP addresses, one after another, never the name.
func TestDialContextDials(t *testing.T) {
	tests := []struct {
		name    string
		policy  *Policy
		answers map[string]string
		network string
		address string
		want    []string
	}{
		{"allow-host private", &Policy{AllowHosts: []string{"LLM.internal"}}, map[string]string{"llm.internal": "10.255.255.1,10.255.255.2"},
			"tcp", "llm.internal:8000", []string{"tcp 10.255.255.1:8000", "tcp 10.255.255.2:8000"}},
		{"AllowPrivate", &Policy{AllowPrivate: true}, map[string]string{"internal.test": "10.255.255.1"},
			"tcp", "internal.test:80", []string{"tcp 10.255.255.1:80"}},
		{"Allow prefix", &Policy{Allow: prefixes("10.255.0.0/16")}, map[string]string{"internal.test": "::ffff:10.255.255.1"},
			"tcp", "internal.test:80", []string{"tcp 10.255.255.1:80"}},
		{"tcp4 skips v6 answers", &Policy{}, map[string]string{"api.test": "2001:db8::1,93.184.216.34"},
			"tcp4", "api.test:443", []string{"tcp4 93.184.216.34:443"}},
		{"tcp6 skips v4 answers", &Policy{}, map[string]string{"api.test": "93.184.216.34,2001:db8::1"},
			"tcp6", "api.test:443", []string{"tcp6 [2001:db8::1]:443"}},
		{"literal", &Policy{}, nil, "tcp", "[2001:db8::1]:443", []string{"tcp [2001:db8::1]:443"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingDial{}
			_, err := tc.policy.dialContext(rec.dial, newFakeResolver(tc.answers))(t.Context(), tc.network, tc.address)
			if !errors.Is(err, errOffLoopback) {
				t.Errorf("err = %v, want the recorder's", err)
			}
			if strings.Join(rec.addrs, "|") != strings.Join(tc.want, "|") {
				t.Errorf("dialled %v, want %v", rec.addrs, tc.want)
			}
		})
	}
}

func TestDialContextBadInput(t *testing.T) {
	tests := []struct {
		name    string
		network string
		address string
		errHas  string
	}{
		{"unix", "unix", "/tmp/sock", "network not supported"},
		{"no port", "tcp", "api.test", "missing port"},
		{"named port", "tcp", "api.test:http", `port "http" is not a number`},
		{"unresolvable", "tcp", "nxdomain.test:80", "no such host"},
		{"no addresses", "tcp", "empty.test:80", "no addresses"},
		{"no address of the family", "tcp6", "internal4.test:80", "no ip6 address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingDial{}
			r := newFakeResolver(map[string]string{"empty.test": "", "internal4.test": "93.184.216.34"})
			_, err := (&Policy{}).dialContext(rec.dial, r)(t.Context(), tc.network, tc.address)
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("err = %v, want one containing %q", err, tc.errHas)
			}
			var ge *gwerr.Error
			if errors.As(err, &ge) {
				t.Errorf("got a *gwerr.Error %v; a network failure is not a refusal", ge)
			}
			if len(rec.addrs) != 0 {
				t.Errorf("dialled %v", rec.addrs)
			}
		})
	}
}

func TestDialContextDefaults(t *testing.T) {
	_, ap := newUpstream(t)
	// A nil dialer and resolver: an IP literal needs no resolver, and the zero dialer connects.
	conn, err := (&Policy{}).DialContext(nil, nil)(t.Context(), "tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// The dialer's resolver is used when r is nil; a refused literal never reaches it.
	d := &net.Dialer{Resolver: &net.Resolver{}}
	if _, err := (&Policy{}).DialContext(d, nil)(t.Context(), "tcp", "10.255.255.1:80"); asGwerr(t, err).Code != CodeHostNotAllowed {
		t.Errorf("got %v", err)
	}
}

func TestControl(t *testing.T) {
	tests := []struct {
		name    string
		policy  *Policy
		address string
		class   string // "" means allowed
	}{
		{"loopback", &Policy{}, "127.0.0.1:11434", ""},
		{"loopback v6", &Policy{}, "[::1]:80", ""},
		{"public", &Policy{}, "93.184.216.34:443", ""},
		{"private", &Policy{}, "10.0.0.1:80", "private"},
		{"private mapped", &Policy{}, "[::ffff:10.0.0.1]:80", "private"},
		{"private AllowPrivate", &Policy{AllowPrivate: true}, "10.0.0.1:80", ""},
		{"private Allow prefix", &Policy{Allow: prefixes("10.0.0.0/8")}, "10.0.0.1:80", ""},
		{"allow-host cannot apply", &Policy{AllowHosts: []string{"internal.test"}}, "10.0.0.1:80", "private"},
		{"metadata", &Policy{AllowPrivate: true}, "169.254.169.254:80", "cloud metadata"},
		{"metadata v6", &Policy{AllowPrivate: true}, "[fd00:ec2::254]:80", "cloud metadata"},
		{"link-local zone", &Policy{}, "[fe80::1%eth0]:80", "link-local"},
		{"unspecified", &Policy{}, "0.0.0.0:80", "unspecified"},
		{"multicast", &Policy{}, "[ff02::1]:80", "multicast"},
		{"not ip:port", &Policy{}, "/tmp/sock", "not an IP address and port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Control("tcp", tc.address, nil)
			if tc.class == "" {
				if err != nil {
					t.Fatalf("Control(%s) = %v", tc.address, err)
				}
				return
			}
			// As the dialer returns it: inside a *net.OpError.
			ge := asGwerr(t, &net.OpError{Op: "dial", Net: "tcp", Err: err})
			if ge.Status != 400 || ge.Code != CodeHostNotAllowed || !strings.Contains(ge.Message, tc.class) {
				t.Errorf("got %v, want 400 %s about %s", err, CodeHostNotAllowed, tc.class)
			}
		})
	}
}

// TestControlDialer uses Control as a real net.Dialer.Control: the loopback upstream connects, and 0.0.0.0
// (which Linux would connect to the local host) is refused before connect.
func TestControlDialer(t *testing.T) {
	_, ap := newUpstream(t)
	d := &net.Dialer{Control: (&Policy{}).Control}
	conn, err := d.DialContext(t.Context(), "tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()

	_, err = d.DialContext(t.Context(), "tcp", fmt.Sprintf("0.0.0.0:%d", ap.Port()))
	if ge := asGwerr(t, err); ge.Code != CodeHostNotAllowed || !strings.Contains(ge.Message, "unspecified") {
		t.Errorf("got %v", err)
	}
}
