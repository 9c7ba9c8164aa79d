package netguard

import (
	"fmt"
	"net/netip"
	"strings"
)

// Flag names that the messages of this package tell callers about. cmd should register its flags under these
// names so that the advice in an error is true.
const (
	// FlagAllowPrivateHosts sets Policy.AllowPrivate.
	FlagAllowPrivateHosts = "--allow-private-hosts"
	// FlagAllowHosts takes a comma-separated allow-list (see ParseAllowList) for Policy.Allow and AllowHosts.
	FlagAllowHosts = "--allow-hosts"
)

// Policy says which upstream addresses the gateway may connect to for a caller-chosen host.
//
// The zero value (and a nil *Policy) is the default: public and loopback addresses are allowed, private
// addresses are refused, and the always-refused classes (link-local, cloud metadata, unspecified, multicast,
// broadcast, reserved) are refused. AllowPrivate, Allow and AllowHosts only ever widen the private class; nothing
// allows an always-refused address.
//
// A Policy is immutable once built: do not change it or its slices after first use. It is then safe for
// concurrent use by any number of goroutines.
//
// Example:
//
//	prefixes, hosts, err := netguard.ParseAllowList("10.1.0.0/16, llm.internal")
//	if err != nil { ... }
//	p := &netguard.Policy{Allow: prefixes, AllowHosts: hosts}
//	err = p.CheckURLParam(ctx, net.DefaultResolver, customHost, "custom_host")
type Policy struct {
	// AllowPrivate allows every private address (--allow-private-hosts). Default false.
	AllowPrivate bool
	// Allow lists prefixes whose private addresses are allowed (--allow-hosts). A single address is a /32 or
	// /128 prefix. Default empty. Prefixes should be canonical (masked, IPv4 as IPv4), as ParseAllowList
	// returns them; an IPv4-mapped IPv6 prefix of /96 or longer also matches the IPv4 addresses it maps.
	Allow []netip.Prefix
	// AllowHosts lists host names, compared case-insensitively and without a trailing dot, whose private
	// addresses are allowed (--allow-hosts). It applies where a name is known: CheckURL and DialContext, not
	// Control. Default empty.
	AllowHosts []string
}

// class is an address class; see the package doc for the ranges.
type class uint8

const (
	classPublic class = iota
	classLoopback
	classPrivate
	classLinkLocal
	classMetadata
	classUnspecified
	classMulticast
	classBroadcast
	classReserved
	classInvalid
)

var classNames = [...]string{
	classPublic:      "public",
	classLoopback:    "loopback",
	classPrivate:     "private",
	classLinkLocal:   "link-local",
	classMetadata:    "cloud metadata",
	classUnspecified: "unspecified",
	classMulticast:   "multicast",
	classBroadcast:   "broadcast",
	classReserved:    "reserved",
	classInvalid:     "invalid",
}

func (c class) String() string { return classNames[c] }

// AddrAllowed reports whether the policy allows connecting to a, and a's class: "public", "loopback" or
// "private" (allowed by AllowPrivate or Allow) when it is allowed; "private", "link-local", "cloud metadata",
// "unspecified", "multicast", "broadcast", "reserved" or "invalid" (the zero Addr) when it is not. An
// IPv4-mapped IPv6 address is unwrapped first, an IPv6 address that embeds an IPv4 address (6to4, Teredo,
// NAT64, SIIT) has that address's class (see the package doc), and a zone is ignored. AllowHosts plays no part
// here: there is no name. It does not allocate.
func (p *Policy) AddrAllowed(a netip.Addr) (bool, string) {
	ok, c := p.addrAllowed(a)
	return ok, c.String()
}

func (p *Policy) addrAllowed(a netip.Addr) (bool, class) {
	c, eff := classify(a)
	switch c {
	case classPublic, classLoopback:
		return true, c
	case classPrivate:
		return p.privateAllowed(eff), c
	default:
		return false, c
	}
}

// privateAllowed reports whether the private address a is allowed by AllowPrivate or Allow.
func (p *Policy) privateAllowed(a netip.Addr) bool {
	if p == nil {
		return false
	}
	if p.AllowPrivate {
		return true
	}
	for _, pf := range p.Allow {
		if pf.Contains(a) {
			return true
		}
		// A prefix written as ::ffff:a.b.c.d/n (n >= 96) names IPv4 addresses too.
		if a.Is4() && pf.Addr().Is4In6() && pf.Bits() >= 96 && pf.Contains(netip.AddrFrom16(a.As16())) {
			return true
		}
	}
	return false
}

// hostAllowed reports whether name is in AllowHosts.
func (p *Policy) hostAllowed(name string) bool {
	if p == nil || len(p.AllowHosts) == 0 {
		return false
	}
	name = strings.TrimSuffix(name, ".")
	for _, h := range p.AllowHosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), name) {
			return true
		}
	}
	return false
}

// classify returns a's class and the address the Allow prefixes are matched against: a unwrapped, or the IPv4
// address that a 6to4, Teredo, NAT64 or SIIT address embeds. Those forms are classed by the IPv4 address inside
// because a relay or translator turns them into it: without this, http://[2002:a9fe:a9fe::]/ would reach the
// metadata service through a 6to4 relay while looking like a public IPv6 address.
func classify(a netip.Addr) (class, netip.Addr) {
	if !a.IsValid() {
		return classInvalid, a
	}
	a = a.Unmap() // ::ffff:0:0/96, IPv4-mapped: the socket talks IPv4 to the address inside
	if a.Is4() {
		return classify4(a.As4()), a
	}
	if a.Zone() != "" {
		a = a.WithZone("")
	}
	b := a.As16()
	switch {
	case b[0] == 0xff:
		return classMulticast, a
	case b[0] == 0xfe && b[1]&0xc0 == 0x80: // fe80::/10
		return classLinkLocal, a
	case b[0] == 0xfe && b[1]&0xc0 == 0xc0: // fec0::/10, deprecated site-local
		return classPrivate, a
	case b == metadataV6:
		return classMetadata, a
	case b[0]&0xfe == 0xfc: // fc00::/7
		return classPrivate, a
	case isZero(b[:12]): // ::/96: ::, ::1 and the deprecated IPv4-compatible addresses
		switch {
		case isZero(b[12:15]) && b[15] == 0:
			return classUnspecified, a
		case isZero(b[12:15]) && b[15] == 1:
			return classLoopback, a
		}
		// IPv4-compatible (RFC 4291 deprecated them): nothing legitimate uses one, so every one is refused,
		// whatever the IPv4 address inside; a refused one inside is named, for a clearer message.
		v4 := [4]byte(b[12:16])
		if c := classify4(v4); refusedRank(c) > refusedRank(classPrivate) && c != classUnspecified {
			return c, netip.AddrFrom4(v4)
		}
		return classReserved, a
	case isZero(b[:8]) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0: // ::ffff:0:0:0/96, SIIT
		v4 := [4]byte(b[12:16])
		return embedded4(v4), netip.AddrFrom4(v4)
	case b[0] == 0x20 && b[1] == 0x02: // 2002::/16, 6to4: the IPv4 address in bits 16-48
		v4 := [4]byte(b[2:6])
		return embedded4(v4), netip.AddrFrom4(v4)
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // 2001::/32, Teredo
		// The client's address (bits 96-128, inverted) is where a relay sends the packets; the server's (bits
		// 32-64) is checked too, so that neither can smuggle a refused address.
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		server := [4]byte(b[4:8])
		c, v4 := embedded4(client), client
		if cs := embedded4(server); refusedRank(cs) > refusedRank(c) {
			c, v4 = cs, server
		}
		return c, netip.AddrFrom4(v4)
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b: // 64:ff9b::/32
		if isZero(b[4:12]) { // 64:ff9b::/96, well-known NAT64 (RFC 6052): class of the embedded IPv4
			v4 := [4]byte(b[12:16])
			return embedded4(v4), netip.AddrFrom4(v4)
		}
		if b[4] == 0 && b[5] == 1 { // 64:ff9b:1::/48, local-use NAT64 (RFC 8215), IPv4 in the last 32 bits
			// A translator of the operator's own network: private, or worse if the IPv4 address inside is. Short
			// addresses such as 64:ff9b:1::1 are common there and hold no IPv4 address: 0.0.0.0/8 does not count.
			if c := embedded4([4]byte(b[12:16])); refusedRank(c) > refusedRank(classPrivate) && c != classUnspecified {
				return c, netip.AddrFrom4([4]byte(b[12:16]))
			}
			return classPrivate, a
		}
	}
	return classPublic, a
}

// embedded4 classes an IPv4 address found inside an IPv6 address that a relay or translator delivers. Its
// loopback is the relay's, not ours, and no relay should carry it: reserved.
func embedded4(v4 [4]byte) class {
	c := classify4(v4)
	if c == classLoopback {
		return classReserved
	}
	return c
}

// refusedRank orders classes by how refused they are: allowed (public, loopback), private (allowed by policy),
// always refused.
func refusedRank(c class) int {
	switch c {
	case classPublic, classLoopback:
		return 0
	case classPrivate:
		return 1
	}
	return 2
}

// metadataV6 is fd00:ec2::254, the AWS instance metadata service over IPv6.
var metadataV6 = netip.MustParseAddr("fd00:ec2::254").As16()

func classify4(b [4]byte) class {
	switch {
	case b[0] == 0: // 0.0.0.0/8, "this network"
		return classUnspecified
	case b[0] == 127:
		return classLoopback
	case b[0] == 10:
		return classPrivate
	case b[0] == 172 && b[1]&0xf0 == 16:
		return classPrivate
	case b[0] == 192 && b[1] == 168:
		return classPrivate
	case b[0] == 100 && b[1]&0xc0 == 64: // 100.64.0.0/10, CGNAT
		if b == [4]byte{100, 100, 100, 200} { // Alibaba Cloud metadata
			return classMetadata
		}
		return classPrivate
	case b[0] == 169 && b[1] == 254:
		if b == [4]byte{169, 254, 169, 254} || b == [4]byte{169, 254, 170, 2} { // metadata, ECS task metadata
			return classMetadata
		}
		return classLinkLocal
	case b[0] >= 224 && b[0] < 240:
		return classMulticast
	case b == [4]byte{255, 255, 255, 255}:
		return classBroadcast
	case b[0] >= 240:
		return classReserved
	}
	return classPublic
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// ParseAllowList parses the comma-separated value of --allow-hosts: CIDR prefixes ("10.1.0.0/16", "fd12::/48"),
// single IP addresses ("10.0.0.5", a /32 or /128) and exact host names ("llm.internal"). Spaces around items
// and empty items are ignored, so "" gives nothing. Prefixes are masked and IPv4-mapped IPv6 ones turned into
// IPv4; host names are lower-cased without a trailing dot. Wildcards, ports, URLs and zones are errors, and the
// error names the bad item.
func ParseAllowList(s string) (prefixes []netip.Prefix, hosts []string, err error) {
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("netguard: allow-list item %d %q %s", i+1, item, why)
		}
		if strings.Contains(item, "/") {
			pf, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, nil, bad("is not a valid CIDR prefix (such as 10.1.0.0/16 or fd12::/48)")
			}
			if pf.Addr().Is4In6() && pf.Bits() >= 96 {
				pf = netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-96)
			}
			prefixes = append(prefixes, pf.Masked())
			continue
		}
		if a, err := netip.ParseAddr(item); err == nil {
			if a.Zone() != "" {
				return nil, nil, bad("has a zone; give the address without %zone")
			}
			a = a.Unmap()
			prefixes = append(prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if strings.Contains(item, "*") {
			return nil, nil, bad("has a wildcard; list each host name exactly, or give a CIDR prefix")
		}
		name := strings.ToLower(strings.TrimSuffix(item, "."))
		if endsInNumber(name) || strings.Contains(name, ":") {
			return nil, nil, bad("is not a valid IP address (write IPv4 as four decimal numbers, such as 10.0.0.5, without a port)")
		}
		if !validHostName(name) {
			return nil, nil, bad("is not a CIDR prefix, an IP address or a host name")
		}
		hosts = append(hosts, name)
	}
	return prefixes, hosts, nil
}

// validHostName reports whether name is a plausible DNS host name: dot-separated labels of 1 to 63 letters,
// digits, hyphens and underscores, at most 253 bytes.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// endsInNumber reports whether a host that is not an IP literal would still be read as an IPv4 address by
// some parsers (the WHATWG URL "ends in a number" rule: a last label of digits, or 0x and hex digits), as in
// "127.1", "2130706433", "0x7f.1" or "010.0.0.1". Such hosts are refused rather than handed to a resolver
// that might read them as octal, hex or shortened addresses.
func endsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			c := last[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}
