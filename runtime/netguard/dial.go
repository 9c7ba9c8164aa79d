package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// Control refuses, before it connects, a socket whose address the policy does not allow. It has the signature
// of net.Dialer.Control:
//
//	d := &net.Dialer{Control: policy.Control}
//
// address is the "ip:port" being dialled, after any name was resolved, so a name that resolved to a public
// address when it was checked and to a private one now (DNS rebinding) is refused here. The error is a
// *gwerr.Error with code CodeHostNotAllowed, found with errors.As through the *net.OpError and *url.Error that
// wrap it. An address that is not "ip:port" (a unix socket path) is refused too: use Control for IP networks.
//
// Control sees no host name, so AllowHosts cannot apply: the addresses of an allowed name must pass on their
// own (AllowPrivate or an Allow prefix). DialContext has the name and honours AllowHosts; prefer it.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &gwerr.Error{Status: http.StatusBadRequest, Code: CodeHostNotAllowed, Err: err,
			Message: fmt.Sprintf("refusing to connect to %s over %s, which is not an IP address and port", quote(address), network)}
	}
	if ok, c := p.addrAllowed(ap.Addr()); !ok {
		return refusal("refusing to connect to ", "", ap.Addr(), c, 1)
	}
	return nil
}

// DialContext returns a dial function for http.Transport.DialContext that resolves the host itself with r,
// checks every address against the policy (as CheckURL does, honouring AllowHosts), and then dials only the
// checked IP addresses with d, one after another until one connects. Since no second lookup happens, there is
// no window for DNS rebinding, and since every connection goes through it, redirects are checked too.
//
// d nil means a zero net.Dialer. r nil means d.Resolver, or net.DefaultResolver if that is nil too. Networks
// are tcp, tcp4, tcp6, udp, udp4 and udp6; ports must be numeric (http.Transport always gives a number).
//
// A refused address gives a *gwerr.Error with code CodeHostNotAllowed, and nothing is dialled. A name that
// does not resolve, or a failed connection, gives an ordinary error, as any other upstream network failure.
//
// The transport must not use a proxy (Proxy nil, not http.ProxyFromEnvironment): through a proxy the gateway
// dials the proxy, which is checked, while the proxy connects to the target, which is not.
//
//	tr := &http.Transport{DialContext: policy.DialContext(&net.Dialer{Timeout: 10 * time.Second}, nil)}
func (p *Policy) DialContext(d *net.Dialer, r Resolver) func(ctx context.Context, network, address string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	if r == nil {
		if d.Resolver != nil {
			r = d.Resolver
		} else {
			r = net.DefaultResolver
		}
	}
	return p.dialContext(d.DialContext, r)
}

// dialFunc dials an "ip:port" address; it is net.Dialer.DialContext, or a recorder in tests.
type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// dialContext is DialContext over dial, which is only ever given checked IP addresses.
func (p *Policy) dialContext(dial dialFunc, r Resolver) dialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		var family string
		switch network {
		case "tcp", "udp":
			family = "ip"
		case "tcp4", "udp4":
			family = "ip4"
		case "tcp6", "udp6":
			family = "ip6"
		default:
			return nil, fmt.Errorf("netguard: dial %s %s: network not supported", network, address)
		}
		host, portStr, err := net.SplitHostPort(address)
		if err != nil {
			return nil, fmt.Errorf("netguard: dial %s %s: %w", network, address, err)
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("netguard: dial %s %s: port %q is not a number", network, address, portStr)
		}

		var addrs []netip.Addr
		subject := "refusing to connect to "
		nameAllowed := false
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else {
			if endsInNumber(host) {
				return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: CodeHostNotAllowed,
					Message: fmt.Sprintf("refusing to connect to host %s, which is not a valid IP address", quote(host))}
			}
			if addrs, err = lookup(ctx, r, family, host); err != nil {
				return nil, err
			}
			subject = "upstream host " + quote(host) + " resolved at connect time to "
			nameAllowed = p.hostAllowed(host)
		}
		if err := p.checkAddrs(subject, "", addrs, nameAllowed); err != nil {
			return nil, err
		}

		var first error
		for _, a := range addrs {
			if u := a.Unmap(); (family == "ip4" && !u.Is4()) || (family == "ip6" && u.Is4()) {
				continue
			}
			conn, err := dial(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		if first == nil {
			first = fmt.Errorf("netguard: dial %s %s: no %s address among %v", network, address, family, addrs)
		}
		return nil, first
	}
}
