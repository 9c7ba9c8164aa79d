package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

// embeddedCases are IPv6 addresses that carry an IPv4 address a relay or translator delivers to, one group
// per standard form, each with refused and allowed IPv4 addresses inside: 169.254.169.254 (a9fe:a9fe),
// 169.254.1.1 (a9fe:101), 127.0.0.1 (7f00:1), 10.0.0.1 (a00:1), 0.0.0.0 and 8.8.8.8 (808:808). A Teredo
// client address is stored inverted: 169.254.169.254 is 5601:5601, 127.0.0.1 80ff:fffe, 10.0.0.1 f5ff:fffe,
// 8.8.8.8 f7f7:f7f7 and 0.0.0.0 ffff:ffff; the Teredo server in the client cases is 4.4.4.4 (404:404).
var embeddedCases = []struct {
	form, addr string
	class      string // under the default policy
	ok         bool   // allowed by the default policy
	okPrivate  bool   // allowed with AllowPrivate
}{
	{"6to4", "2002:a9fe:a9fe::", "cloud metadata", false, false},
	{"6to4", "2002:a9fe:101::1", "link-local", false, false},
	{"6to4", "2002:7f00:1::", "reserved", false, false},
	{"6to4", "2002:a00:1::", "private", false, true},
	{"6to4", "2002::1", "unspecified", false, false},
	{"6to4", "2002:808:808::1", "public", true, true},

	{"Teredo client", "2001:0:404:404:8000:f227:5601:5601", "cloud metadata", false, false},
	{"Teredo client", "2001:0:404:404::80ff:fffe", "reserved", false, false},
	{"Teredo client", "2001:0:404:404::f5ff:fffe", "private", false, true},
	{"Teredo client", "2001:0:404:404::ffff:ffff", "unspecified", false, false},
	{"Teredo client", "2001:0:404:404::f7f7:f7f7", "public", true, true},
	{"Teredo server", "2001:0:a9fe:a9fe::f7f7:f7f7", "cloud metadata", false, false},
	{"Teredo server", "2001:0:7f00:1::f7f7:f7f7", "reserved", false, false},
	{"Teredo server", "2001:0:a00:1::f7f7:f7f7", "private", false, true},
	{"Teredo both", "2001:0:a9fe:a9fe::f5ff:fffe", "cloud metadata", false, false},

	{"NAT64", "64:ff9b::a9fe:a9fe", "cloud metadata", false, false},
	{"NAT64", "64:ff9b::a9fe:101", "link-local", false, false},
	{"NAT64", "64:ff9b::7f00:1", "reserved", false, false},
	{"NAT64", "64:ff9b::a00:1", "private", false, true},
	{"NAT64", "64:ff9b::", "unspecified", false, false},
	{"NAT64", "64:ff9b::808:808", "public", true, true},

	{"local-use NAT64", "64:ff9b:1::a9fe:a9fe", "cloud metadata", false, false},
	{"local-use NAT64", "64:ff9b:1:2::a9fe:101", "link-local", false, false},
	{"local-use NAT64", "64:ff9b:1::7f00:1", "reserved", false, false},
	{"local-use NAT64", "64:ff9b:1::a00:1", "private", false, true},
	{"local-use NAT64", "64:ff9b:1::808:808", "private", false, true},
	{"local-use NAT64", "64:ff9b:1::1", "private", false, true},

	{"IPv4-mapped", "::ffff:a9fe:a9fe", "cloud metadata", false, false},
	{"IPv4-mapped", "::ffff:a9fe:101", "link-local", false, false},
	{"IPv4-mapped", "::ffff:7f00:1", "loopback", true, true}, // the socket talks IPv4 to our own loopback
	{"IPv4-mapped", "::ffff:a00:1", "private", false, true},
	{"IPv4-mapped", "::ffff:0:0", "unspecified", false, false},
	{"IPv4-mapped", "::ffff:808:808", "public", true, true},

	{"IPv4-compatible", "::a9fe:a9fe", "cloud metadata", false, false},
	{"IPv4-compatible", "::a9fe:101", "link-local", false, false},
	{"IPv4-compatible", "::7f00:1", "reserved", false, false},
	{"IPv4-compatible", "::a00:1", "reserved", false, false},
	{"IPv4-compatible", "::808:808", "reserved", false, false}, // deprecated: none is allowed

	{"SIIT", "::ffff:0:a9fe:a9fe", "cloud metadata", false, false},
	{"SIIT", "::ffff:0:a9fe:101", "link-local", false, false},
	{"SIIT", "::ffff:0:7f00:1", "reserved", false, false},
	{"SIIT", "::ffff:0:a00:1", "private", false, true},
	{"SIIT", "::ffff:0:0:0", "unspecified", false, false},
	{"SIIT", "::ffff:0:808:808", "public", true, true},

	// Neighbours of the forms are ordinary addresses.
	{"not Teredo", "2001:db8:a9fe:a9fe::", "public", true, true},
	{"not 6to4", "2003:a9fe:a9fe::", "public", true, true},
	{"not NAT64", "64:ff9c::a9fe:a9fe", "public", true, true},
}

func TestAddrAllowedEmbeddedIPv4(t *testing.T) {
	for _, tc := range embeddedCases {
		t.Run(tc.form+" "+tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			if ok, class := (&Policy{}).AddrAllowed(a); ok != tc.ok || class != tc.class {
				t.Errorf("default policy: %v, %q; want %v, %q", ok, class, tc.ok, tc.class)
			}
			if ok, _ := (&Policy{AllowPrivate: true}).AddrAllowed(a); ok != tc.okPrivate {
				t.Errorf("AllowPrivate: %v, want %v", ok, tc.okPrivate)
			}
		})
	}
}

// TestAllowPrefixEmbeddedIPv4: Allow prefixes match the IPv4 address inside, as they do for NAT64.
func TestAllowPrefixEmbeddedIPv4(t *testing.T) {
	p := &Policy{Allow: prefixes("10.0.0.0/8")}
	for _, addr := range []string{"2002:a00:1::", "2001:0:404:404::f5ff:fffe", "::ffff:0:a00:1", "64:ff9b::a00:1"} {
		if ok, class := p.AddrAllowed(netip.MustParseAddr(addr)); !ok || class != "private" {
			t.Errorf("%s: %v, %q; want allowed private", addr, ok, class)
		}
	}
	for _, addr := range []string{"2002:a9fe:a9fe::", "2002:ac10:1::"} {
		if ok, _ := p.AddrAllowed(netip.MustParseAddr(addr)); ok {
			t.Errorf("%s allowed by 10.0.0.0/8", addr)
		}
	}
}

// TestCheckURLEmbeddedIPv4 runs every case through CheckURLParam as a literal and as a name that resolves to
// it; a refusal names the field and the class.
func TestCheckURLEmbeddedIPv4(t *testing.T) {
	for _, tc := range embeddedCases {
		t.Run(tc.form+" "+tc.addr, func(t *testing.T) {
			r := newFakeResolver(map[string]string{"embedded.test": tc.addr})
			for _, raw := range []string{"http://[" + tc.addr + "]/v1", "http://embedded.test/v1"} {
				err := (&Policy{}).CheckURLParam(t.Context(), r, raw, "x-gateway-custom-host")
				if tc.ok {
					if err != nil {
						t.Errorf("%s: %v", raw, err)
					}
					continue
				}
				ge := asGwerr(t, err)
				if ge.Status != 400 || ge.Code != CodeHostNotAllowed || ge.Param != "x-gateway-custom-host" ||
					!strings.Contains(ge.Message, ", a "+tc.class+" address") && !strings.Contains(ge.Message, ", an "+tc.class+" address") {
					t.Errorf("%s: %d %s param %q: %s; want 400 %s naming the field and %q", raw, ge.Status, ge.Code, ge.Param,
						ge.Message, CodeHostNotAllowed, tc.class)
				}
			}
		})
	}
}

// TestDialContextEmbeddedIPv4: at connect time, a literal or a name resolving to a refused embedding is refused
// without dialling; an allowed one is dialled (by a recorder that never connects).
func TestDialContextEmbeddedIPv4(t *testing.T) {
	for _, tc := range embeddedCases {
		t.Run(tc.form+" "+tc.addr, func(t *testing.T) {
			for _, address := range []string{"[" + tc.addr + "]:443", "embedded.test:443"} {
				rec := &recordingDial{}
				dial := (&Policy{}).dialContext(rec.dial, newFakeResolver(map[string]string{"embedded.test": tc.addr}))
				conn, err := dial(t.Context(), "tcp", address)
				if conn != nil {
					conn.Close()
					t.Fatal("got a connection")
				}
				if tc.ok {
					if len(rec.addrs) != 1 {
						t.Errorf("%s: dialled %v, want one dial", address, rec.addrs)
					}
					continue
				}
				if len(rec.addrs) != 0 {
					t.Errorf("%s: dialled %v; a refused address must not be dialled", address, rec.addrs)
				}
				if ge := asGwerr(t, err); ge.Code != CodeHostNotAllowed || !strings.Contains(ge.Message, tc.class) {
					t.Errorf("%s: %v", address, err)
				}
			}
		})
	}
}

// FuzzEmbeddedIPv4 checks, for any IPv4 address, that no IPv6 form embedding it is allowed where the IPv4
// address itself is not (under the default and the AllowPrivate policy), and that an embedded loopback is never
// allowed except through IPv4-mapped.
func FuzzEmbeddedIPv4(f *testing.F) {
	for _, s := range []string{"169.254.169.254", "127.0.0.1", "10.0.0.1", "8.8.8.8", "0.0.0.0", "100.100.100.200", "255.255.255.255"} {
		a := netip.MustParseAddr(s).As4()
		f.Add(a[0], a[1], a[2], a[3], byte(4))
	}
	f.Fuzz(func(t *testing.T, b0, b1, b2, b3, other byte) {
		v4 := [4]byte{b0, b1, b2, b3}
		pub := [4]byte{8, 8, 8, other} // a public address for the other half of Teredo
		forms := map[string][16]byte{
			"6to4":            {0x20, 0x02, b0, b1, b2, b3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			"Teredo client":   {0x20, 0x01, 0, 0, pub[0], pub[1], pub[2], pub[3], 0, 0, 0, 0, ^b0, ^b1, ^b2, ^b3},
			"Teredo server":   {0x20, 0x01, 0, 0, b0, b1, b2, b3, 0, 0, 0, 0, ^pub[0], ^pub[1], ^pub[2], ^pub[3]},
			"NAT64":           {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, b0, b1, b2, b3},
			"local-use NAT64": {0, 0x64, 0xff, 0x9b, 0, 1, 0, 0, 0, 0, 0, 0, b0, b1, b2, b3},
			"IPv4-mapped":     {10: 0xff, 11: 0xff, 12: b0, 13: b1, 14: b2, 15: b3},
			"IPv4-compatible": {12: b0, 13: b1, 14: b2, 15: b3},
			"SIIT":            {8: 0xff, 9: 0xff, 12: b0, 13: b1, 14: b2, 15: b3},
		}
		for _, p := range []*Policy{{}, {AllowPrivate: true}} {
			v4ok, v4class := p.AddrAllowed(netip.AddrFrom4(v4))
			for form, b := range forms {
				ok, class := p.AddrAllowed(netip.AddrFrom16(b))
				if !ok {
					continue
				}
				switch {
				case form == "IPv4-compatible" && (v4 == [4]byte{} || v4 == [4]byte{0, 0, 0, 1}): // :: and ::1 themselves
				case !v4ok && form != "local-use NAT64":
					t.Errorf("%s of %v (%s) allowed (%s) by %+v", form, v4, v4class, class, *p)
				case !v4ok && v4class != "unspecified": // local-use NAT64 may hold no IPv4 address; 0/8 does not count
					t.Errorf("%s of %v (%s) allowed by %+v", form, v4, v4class, *p)
				case v4class == "loopback" && form != "IPv4-mapped" && form != "local-use NAT64":
					t.Errorf("%s of loopback %v allowed by %+v", form, v4, *p)
				case form == "IPv4-compatible":
					t.Errorf("IPv4-compatible %v allowed", v4)
				}
			}
		}
	})
}
