package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// Codes of this package's errors, beside gwerr's. Both come with status 400.
const (
	// CodeHostNotAllowed: the host is, or resolves to, an address the Policy refuses.
	CodeHostNotAllowed = "host_not_allowed"
	// CodeHostUnresolvable: the host name does not resolve (no such name, no addresses, resolver failure).
	// It is distinct from CodeHostNotAllowed so that a caller can tell a typo from a refusal.
	CodeHostUnresolvable = "host_unresolvable"
)

// Resolver looks up the addresses of a host name; network is "ip", "ip4" or "ip6". *net.Resolver (and so
// net.DefaultResolver) satisfies it; tests use a fake.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// CheckURL is CheckURLParam with an empty Param.
func (p *Policy) CheckURL(ctx context.Context, r Resolver, raw string) error {
	return p.CheckURLParam(ctx, r, raw, "")
}

// CheckURLParam checks a caller-chosen upstream base URL (a custom host) before it is used, and names param
// (such as "custom_host" or "x-gateway-custom-host") as the offending input in the error it returns.
//
// The URL must parse, have the scheme http or https, a host and, if it has a port, one from 1 to 65535; if not,
// the error has code gwerr.CodeInvalidRequest. A host that is not an IP literal but ends in a number ("127.1",
// "0x7f000001", "010.0.0.1") is refused the same way, as resolvers disagree about what it means. An IP literal
// is checked with AddrAllowed. A name is resolved with r (net.DefaultResolver when r is nil) within ctx, and
// every address it resolves to must be allowed; a name in AllowHosts may resolve to private addresses, but
// never to an always-refused one. A refused address gives CodeHostNotAllowed; a name that does not resolve
// gives CodeHostUnresolvable. All three are *gwerr.Error with status 400. If ctx ends during resolution the
// error is not a *gwerr.Error but wraps ctx.Err(), so that routes answers as for any expired request.
//
// A URL that passes may still resolve elsewhere when it is used (DNS rebinding) and may redirect: give the
// HTTP client that calls it a transport whose DialContext is Policy.DialContext.
func (p *Policy) CheckURLParam(ctx context.Context, r Resolver, raw, param string) error {
	u, err := url.Parse(raw)
	// The quoted URL is built only for an error: checking a good URL on every request allocates nothing more.
	// It is redacted before it is cut, so that a cut cannot leave a password without the '@' that marks it.
	shown := func() string { return quote(RedactURL(raw)) }
	if err != nil {
		return invalid(param, RedactError(err), "custom host %s is not a valid URL; give an http or https base URL such as https://llm.example.com/v1", shown())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalid(param, nil, "custom host %s must be an http or https URL, such as https://llm.example.com/v1", shown())
	}
	host := u.Hostname()
	if host == "" {
		return invalid(param, nil, "custom host %s has no host; give an http or https base URL such as https://llm.example.com/v1", shown())
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return invalid(param, nil, "custom host %s has port %s; a port is a number from 1 to 65535", shown(), quote(port))
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if ok, c := p.addrAllowed(a); !ok {
			return refusal("custom host "+shown()+" resolves to ", param, a, c, 1)
		}
		return nil
	}
	subject := "custom host " + shown() + " resolves to "
	if endsInNumber(host) {
		return invalid(param, nil, "custom host %s has host %s, which is not a valid IP address; write IPv4 as four decimal numbers (such as 10.0.0.5) or use a host name", shown(), quote(host))
	}
	addrs, err := lookup(ctx, r, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &gwerr.Error{Status: http.StatusBadRequest, Code: CodeHostUnresolvable, Param: param, Err: err,
			Message: fmt.Sprintf("cannot resolve host %s of custom host %s; check the host name, or give an IP address", quote(host), shown())}
	}
	return p.checkAddrs(subject, param, addrs, p.hostAllowed(host))
}

// lookup resolves host with r (net.DefaultResolver when nil). It fails when there are no addresses, and wraps
// ctx.Err() rather than the resolver's error when ctx has ended.
func lookup(ctx context.Context, r Resolver, network, host string) ([]netip.Addr, error) {
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, network, host)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("netguard: resolve %q: %w", host, cerr)
		}
		return nil, fmt.Errorf("netguard: resolve %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("netguard: resolve %q: no addresses", host)
	}
	return addrs, nil
}

// checkAddrs returns a refusal for the first address the policy refuses, or nil. nameAllowed lets private
// addresses through (the name is in AllowHosts). subject is the message up to the address.
func (p *Policy) checkAddrs(subject, param string, addrs []netip.Addr, nameAllowed bool) error {
	for _, a := range addrs {
		ok, c := p.addrAllowed(a)
		if ok || (c == classPrivate && nameAllowed) {
			continue
		}
		return refusal(subject, param, a, c, len(addrs))
	}
	return nil
}

// refusal is the CodeHostNotAllowed error for address a of class c, one of n addresses, with a message that
// says why and what to do: subject + a + ", a <class> address" + advice.
func refusal(subject, param string, a netip.Addr, c class, n int) *gwerr.Error {
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString(a.String())
	if _, v4 := classify(a); v4.Is4() && !a.Unmap().Is4() {
		// 6to4, Teredo, NAT64, SIIT: the class is the IPv4 address's, which the reader cannot see.
		b.WriteString(" (which carries the IPv4 address " + v4.String() + ")")
	}
	if n > 1 {
		fmt.Fprintf(&b, " (one of its %d addresses, which must all be allowed)", n)
	}
	if c == classUnspecified || c == classInvalid {
		b.WriteString(", an ")
	} else {
		b.WriteString(", a ")
	}
	b.WriteString(c.String())
	b.WriteString(" address")
	switch c {
	case classPrivate:
		b.WriteString("; the operator can allow it with " + FlagAllowPrivateHosts + " or " + FlagAllowHosts)
	case classLinkLocal, classMetadata:
		b.WriteString(", which is never allowed as an upstream; use the upstream's routable address or host name")
	default:
		b.WriteString(", which cannot be an upstream; use the upstream server's own address or host name")
	}
	return &gwerr.Error{Status: http.StatusBadRequest, Code: CodeHostNotAllowed, Param: param, Message: b.String()}
}

func invalid(param string, err error, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: param, Err: err,
		Message: fmt.Sprintf(format, args...)}
}

// quote quotes s for a message, cut to 200 bytes so that a huge header does not make a huge answer.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
