package netguard

import (
	"context"
	"errors"
	"hash/fnv"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// fuzzResolver answers every name without the network, picking an answer from a hash of the name: not found,
// no addresses, public, private, public and private, or metadata.
var fuzzResolver = resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
	h := fnv.New32a()
	h.Write([]byte(host))
	switch h.Sum32() % 6 {
	case 0:
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	case 1:
		return nil, nil
	case 2:
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	case 3:
		return []netip.Addr{netip.MustParseAddr("::ffff:10.0.0.1")}, nil
	case 4:
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("fd12::1")}, nil
	default:
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
})

// FuzzCheckURL checks that CheckURLParam never panics, returns only 400 *gwerr.Error values with this
// package's codes and a bounded message that shows no userinfo, accepts only http(s) URLs with a host, and that
// widening the policy never refuses what the narrower one allowed. Seeds are in testdata/fuzz/FuzzCheckURL.
func FuzzCheckURL(f *testing.F) {
	policies := []*Policy{
		{},
		{AllowPrivate: true},
		{Allow: prefixes("10.0.0.0/8", "fd00::/8"), AllowHosts: []string{"mixed.test", "internal.test"}},
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var prev error
		for i, p := range policies {
			err := p.CheckURLParam(t.Context(), fuzzResolver, raw, "custom_host")
			if err == nil {
				u, perr := url.Parse(raw)
				if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
					t.Fatalf("policy %d accepted %q", i, raw)
				}
				if a, aerr := netip.ParseAddr(u.Hostname()); aerr == nil {
					if ok, class := p.AddrAllowed(a); !ok {
						t.Fatalf("policy %d accepted %q, whose address is %s", i, raw, class)
					}
				}
			} else {
				var ge *gwerr.Error
				if !errors.As(err, &ge) {
					t.Fatalf("policy %d: %q gave %v (%T), not a *gwerr.Error", i, raw, err, err)
				}
				switch ge.Code {
				case gwerr.CodeInvalidRequest, CodeHostNotAllowed, CodeHostUnresolvable:
				default:
					t.Fatalf("policy %d: %q gave code %q", i, raw, ge.Code)
				}
				if ge.Status != 400 || ge.Param != "custom_host" || ge.Message == "" || len(ge.Message) > 2048 {
					t.Fatalf("policy %d: %q gave %d param %q message of %d bytes", i, raw, ge.Status, ge.Param, len(ge.Message))
				}
				// Userinfo never shows: up to its first '@', it is in neither the message nor the text logs see.
				if start := authorityStart(raw); strings.IndexByte(raw[start:], '@') > 0 {
					secret := raw[start : start+strings.IndexByte(raw[start:], '@')+1]
					if strings.Trim(secret, "*@") != "" && strings.Count(raw, secret) == 1 &&
						(strings.Contains(ge.Message, secret) || strings.Contains(err.Error(), secret)) {
						t.Fatalf("policy %d: %q shows its userinfo %q: %v", i, raw, secret, err)
					}
				}
				if p.AllowPrivate && strings.Contains(ge.Message, "a private address") {
					t.Fatalf("policy %d allows private addresses but refused %q: %s", i, raw, ge.Message)
				}
			}
			// Policies 1 and 2 only widen policy 0.
			if i > 0 && prev == nil && err != nil {
				t.Fatalf("policy %d refused %q, which the default policy allowed: %v", i, raw, err)
			}
			if i == 0 {
				prev = err
			}
		}
	})
}
