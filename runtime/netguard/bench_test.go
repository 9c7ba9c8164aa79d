package netguard

import (
	"net/netip"
	"testing"
)

var (
	sinkOK    bool
	sinkClass string
)

func BenchmarkAddrAllowed(b *testing.B) {
	p := &Policy{Allow: prefixes("10.1.0.0/16", "fd12:3456::/32", "::ffff:192.168.7.0/120")}
	addrs := []netip.Addr{
		netip.MustParseAddr("93.184.216.34"),
		netip.MustParseAddr("10.1.2.3"),
		netip.MustParseAddr("192.168.7.7"),
		netip.MustParseAddr("::ffff:169.254.169.254"),
		netip.MustParseAddr("2606:4700::1111"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("fe80::1%eth0"),
		netip.MustParseAddr("64:ff9b::a00:1"),
		netip.MustParseAddr("2002:a9fe:a9fe::"),
		netip.MustParseAddr("2001:0:404:404::f5ff:fffe"),
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sinkOK, sinkClass = p.AddrAllowed(addrs[i%len(addrs)])
		i++
	}
}
