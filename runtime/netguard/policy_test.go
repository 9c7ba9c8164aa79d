package netguard

import (
	"go/parser"
	"go/token"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestAddrAllowed(t *testing.T) {
	zero := &Policy{}
	private := &Policy{AllowPrivate: true}
	allow := &Policy{Allow: prefixes("10.1.0.0/16", "fd12:3456::/32", "169.254.0.0/16", "fd00::/8", "0.0.0.0/8")}
	mapped := &Policy{Allow: prefixes("::ffff:10.1.0.0/112")}
	hostsOnly := &Policy{AllowHosts: []string{"internal.test"}}

	tests := []struct {
		name   string
		policy *Policy
		addr   string // "" is the zero Addr
		ok     bool
		class  string
	}{
		// public
		{"public v4", zero, "8.8.8.8", true, "public"},
		{"public v6", zero, "2606:4700::1111", true, "public"},
		{"public v4 mapped", zero, "::ffff:8.8.8.8", true, "public"},
		{"172.32 is public", zero, "172.32.0.1", true, "public"},
		{"172.15 is public", zero, "172.15.255.255", true, "public"},
		{"100.128 is public", zero, "100.128.0.1", true, "public"},
		{"100.63 is public", zero, "100.63.255.255", true, "public"},
		{"169.253 is public", zero, "169.253.0.1", true, "public"},
		{"NAT64 of public", zero, "64:ff9b::808:808", true, "public"},
		{"nil policy public", nil, "1.1.1.1", true, "public"},

		// loopback: allowed by default
		{"loopback v4", zero, "127.0.0.1", true, "loopback"},
		{"loopback v4 range", zero, "127.255.0.1", true, "loopback"},
		{"loopback v6", zero, "::1", true, "loopback"},
		{"loopback mapped", zero, "::ffff:127.0.0.1", true, "loopback"},
		{"nil policy loopback", nil, "127.0.0.1", true, "loopback"},

		// private: refused by default
		{"10/8", zero, "10.0.0.1", false, "private"},
		{"172.16/12 low", zero, "172.16.0.1", false, "private"},
		{"172.16/12 high", zero, "172.31.255.255", false, "private"},
		{"192.168/16", zero, "192.168.1.1", false, "private"},
		{"CGNAT low", zero, "100.64.0.1", false, "private"},
		{"CGNAT high", zero, "100.127.255.255", false, "private"},
		{"fc00::/7 fc", zero, "fc00::1", false, "private"},
		{"fc00::/7 fd", zero, "fd12:3456::1", false, "private"},
		{"site-local", zero, "fec0::1", false, "private"},
		{"10/8 mapped", zero, "::ffff:10.0.0.1", false, "private"},
		{"192.168 mapped hex", zero, "::ffff:c0a8:101", false, "private"},
		{"NAT64 of private", zero, "64:ff9b::a00:1", false, "private"},
		{"local-use NAT64", zero, "64:ff9b:1::1", false, "private"},
		{"nil policy private", nil, "10.0.0.1", false, "private"},
		{"AllowHosts is not an address rule", hostsOnly, "10.0.0.1", false, "private"},

		// private: allowed by AllowPrivate or Allow
		{"AllowPrivate v4", private, "10.0.0.1", true, "private"},
		{"AllowPrivate v6", private, "fd12::1", true, "private"},
		{"AllowPrivate CGNAT", private, "100.64.0.1", true, "private"},
		{"AllowPrivate mapped", private, "::ffff:192.168.0.1", true, "private"},
		{"Allow prefix v4", allow, "10.1.2.3", true, "private"},
		{"Allow prefix v4 mapped addr", allow, "::ffff:10.1.2.3", true, "private"},
		{"Allow prefix v4 outside", allow, "10.2.0.1", false, "private"},
		{"Allow prefix v6", allow, "fd12:3456::9", true, "private"},
		{"Allow prefix v6 outside", allow, "fc00::1", false, "private"},
		{"Allow mapped prefix", mapped, "10.1.2.3", true, "private"},
		{"Allow mapped prefix outside", mapped, "10.2.2.3", false, "private"},
		{"Allow prefix NAT64", &Policy{Allow: prefixes("10.0.0.0/8")}, "64:ff9b::a00:1", true, "private"},
		{"Allow fd00::/8 but not metadata", allow, "fd00::1", true, "private"},

		// link-local: always refused
		{"link-local v4", zero, "169.254.1.1", false, "link-local"},
		{"link-local v6", zero, "fe80::1", false, "link-local"},
		{"link-local v6 zone", zero, "fe80::1%eth0", false, "link-local"},
		{"link-local v6 top of /10", zero, "febf::1", false, "link-local"},
		{"link-local mapped", zero, "::ffff:169.254.1.1", false, "link-local"},
		{"link-local AllowPrivate", private, "169.254.1.1", false, "link-local"},
		{"link-local Allow prefix", allow, "169.254.1.1", false, "link-local"},

		// cloud metadata: always refused
		{"metadata v4", zero, "169.254.169.254", false, "cloud metadata"},
		{"metadata mapped", zero, "::ffff:169.254.169.254", false, "cloud metadata"},
		{"metadata mapped hex", zero, "::ffff:a9fe:a9fe", false, "cloud metadata"},
		{"metadata v6", zero, "fd00:ec2::254", false, "cloud metadata"},
		{"metadata ECS", zero, "169.254.170.2", false, "cloud metadata"},
		{"metadata Alibaba", zero, "100.100.100.200", false, "cloud metadata"},
		{"metadata NAT64", zero, "64:ff9b::a9fe:a9fe", false, "cloud metadata"},
		{"metadata AllowPrivate", private, "169.254.169.254", false, "cloud metadata"},
		{"metadata v6 AllowPrivate", private, "fd00:ec2::254", false, "cloud metadata"},
		{"metadata v6 Allow fd00::/8", allow, "fd00:ec2::254", false, "cloud metadata"},
		{"metadata Alibaba AllowPrivate", private, "100.100.100.200", false, "cloud metadata"},

		// unspecified, multicast, broadcast, reserved: always refused
		{"unspecified v4", zero, "0.0.0.0", false, "unspecified"},
		{"this network", zero, "0.1.2.3", false, "unspecified"},
		{"unspecified v6", zero, "::", false, "unspecified"},
		{"unspecified mapped", zero, "::ffff:0.0.0.0", false, "unspecified"},
		{"unspecified AllowPrivate", private, "0.0.0.0", false, "unspecified"},
		{"unspecified Allow prefix", allow, "0.0.0.0", false, "unspecified"},
		{"multicast v4", zero, "224.0.0.1", false, "multicast"},
		{"multicast v4 top", zero, "239.255.255.250", false, "multicast"},
		{"multicast v6", zero, "ff02::1", false, "multicast"},
		{"multicast mapped", zero, "::ffff:224.0.0.251", false, "multicast"},
		{"multicast AllowPrivate", private, "ff02::1", false, "multicast"},
		{"broadcast", zero, "255.255.255.255", false, "broadcast"},
		{"broadcast AllowPrivate", private, "255.255.255.255", false, "broadcast"},
		{"reserved class E", zero, "240.0.0.1", false, "reserved"},
		{"IPv4-compatible", zero, "::a00:1", false, "reserved"},
		{"NAT64 of loopback", zero, "64:ff9b::7f00:1", false, "reserved"},
		{"zero Addr", zero, "", false, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a netip.Addr
			if tc.addr != "" {
				a = netip.MustParseAddr(tc.addr)
			}
			ok, class := tc.policy.AddrAllowed(a)
			if ok != tc.ok || class != tc.class {
				t.Errorf("AddrAllowed(%s) = %v, %q; want %v, %q", tc.addr, ok, class, tc.ok, tc.class)
			}
		})
	}
}

func TestAddrAllowedAllocs(t *testing.T) {
	p := &Policy{Allow: prefixes("10.1.0.0/16", "::ffff:10.2.0.0/112")}
	addrs := []netip.Addr{netip.MustParseAddr("10.2.0.1"), netip.MustParseAddr("fe80::1%eth0"),
		netip.MustParseAddr("::ffff:8.8.8.8"), netip.MustParseAddr("64:ff9b::a00:1"), netip.MustParseAddr("2002:a9fe:a9fe::"),
		netip.MustParseAddr("2001:0:404:404::f5ff:fffe"), netip.MustParseAddr("::ffff:0:a00:1"), netip.MustParseAddr("64:ff9b:1::a9fe:a9fe")}
	if n := testing.AllocsPerRun(100, func() {
		for _, a := range addrs {
			p.AddrAllowed(a)
		}
	}); n != 0 {
		t.Errorf("AddrAllowed allocates %v times, want 0", n)
	}
}

func TestHostAllowed(t *testing.T) {
	p := &Policy{AllowHosts: []string{"LLM.internal", "ollama.lan."}}
	tests := []struct {
		name string
		host string
		want bool
	}{
		{"exact", "llm.internal", true},
		{"case", "Llm.Internal", true},
		{"trailing dot", "llm.internal.", true},
		{"listed with dot", "ollama.lan", true},
		{"subdomain is not the host", "a.llm.internal", false},
		{"suffix is not the host", "xllm.internal", false},
		{"other", "example.com", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.hostAllowed(tc.host); got != tc.want {
				t.Errorf("hostAllowed(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
	var nilPolicy *Policy
	if nilPolicy.hostAllowed("llm.internal") {
		t.Error("nil policy allows a host")
	}
}

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		prefixes []string
		hosts    []string
		errHas   []string // empty: no error
	}{
		{"empty", "", nil, nil, nil},
		{"only commas and spaces", " , ,", nil, nil, nil},
		{"v4 prefix", "10.1.0.0/16", []string{"10.1.0.0/16"}, nil, nil},
		{"v6 prefix", "fd12:3456::/32", []string{"fd12:3456::/32"}, nil, nil},
		{"prefix masked", "10.1.2.3/16", []string{"10.1.0.0/16"}, nil, nil},
		{"mapped prefix", "::ffff:10.1.0.0/112", []string{"10.1.0.0/16"}, nil, nil},
		{"single v4", "10.0.0.5", []string{"10.0.0.5/32"}, nil, nil},
		{"single v6", "fd00::5", []string{"fd00::5/128"}, nil, nil},
		{"single mapped", "::ffff:10.0.0.5", []string{"10.0.0.5/32"}, nil, nil},
		{"host", "llm.internal", nil, []string{"llm.internal"}, nil},
		{"host lower-cased, dot dropped", "Ollama.LAN.", nil, []string{"ollama.lan"}, nil},
		{"single-label host", "ollama", nil, []string{"ollama"}, nil},
		{"mixed with spaces", " 10.0.0.0/8 , llm.internal,fd00::1 ,", []string{"10.0.0.0/8", "fd00::1/128"}, []string{"llm.internal"}, nil},
		{"bad prefix length", "10.0.0.0/33", nil, nil, []string{`item 1 "10.0.0.0/33"`, "CIDR prefix"}},
		{"bad prefix address", "10.0.0/8", nil, nil, []string{`"10.0.0/8"`, "CIDR prefix"}},
		{"bad item named by position", "10.0.0.0/8, ht tp", nil, nil, []string{`item 2 "ht tp"`}},
		{"wildcard", "*.internal", nil, nil, []string{`"*.internal"`, "wildcard"}},
		{"url", "http://llm.internal", nil, nil, []string{`"http://llm.internal"`}},
		{"port", "10.0.0.5:8080", nil, nil, []string{`"10.0.0.5:8080"`, "not a valid IP address"}},
		{"host with port", "llm.internal:80", nil, nil, []string{`"llm.internal:80"`}},
		{"zone", "fe80::1%eth0", nil, nil, []string{`"fe80::1%eth0"`, "zone"}},
		{"short IPv4", "10.1", nil, nil, []string{`"10.1"`, "not a valid IP address"}},
		{"octal IPv4", "010.0.0.1", nil, nil, []string{`"010.0.0.1"`, "not a valid IP address"}},
		{"hex IPv4", "0x0a000001", nil, nil, []string{`"0x0a000001"`, "not a valid IP address"}},
		{"empty label", "a..b", nil, nil, []string{`"a..b"`}},
		{"long label", strings.Repeat("a", 64) + ".test", nil, nil, []string{"is not a CIDR prefix"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotP, gotH, err := ParseAllowList(tc.in)
			if len(tc.errHas) > 0 {
				if err == nil {
					t.Fatalf("ParseAllowList(%q) = %v, %v, nil; want an error", tc.in, gotP, gotH)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAllowList(%q): %v", tc.in, err)
			}
			var ps []string
			for _, p := range gotP {
				ps = append(ps, p.String())
			}
			if !slices.Equal(ps, tc.prefixes) || !slices.Equal(gotH, tc.hosts) {
				t.Errorf("ParseAllowList(%q) = %v, %v; want %v, %v", tc.in, ps, gotH, tc.prefixes, tc.hosts)
			}
		})
	}
}

// TestParseAllowListAllows checks that what ParseAllowList returns, put in a Policy, allows what it names.
func TestParseAllowListAllows(t *testing.T) {
	ps, hs, err := ParseAllowList("::ffff:10.1.0.0/112, 192.168.7.7, llm.internal")
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{Allow: ps, AllowHosts: hs}
	for _, s := range []string{"10.1.200.1", "::ffff:10.1.0.9", "192.168.7.7"} {
		if ok, _ := p.AddrAllowed(netip.MustParseAddr(s)); !ok {
			t.Errorf("%s refused", s)
		}
	}
	if ok, _ := p.AddrAllowed(netip.MustParseAddr("192.168.7.8")); ok {
		t.Error("192.168.7.8 allowed")
	}
	if !p.hostAllowed("LLM.internal") {
		t.Error("llm.internal not allowed")
	}
}

func TestEndsInNumber(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"127.1", true}, {"2130706433", true}, {"0x7f.1", true}, {"0x7F000001", true}, {"1.2.3.4.5", true},
		{"example.com", false}, {"1.example", false}, {"0x7g", false}, {"example.com.", false}, {"123.", true},
		{"", false}, {".", false}, {"0x", true},
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.host), func(t *testing.T) {
			if got := endsInNumber(tc.host); got != tc.want {
				t.Errorf("endsInNumber(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

// TestImports keeps the package a near-leaf: the standard library and gwerr only (see doc.go).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != "github.com/llmgw/gateway/runtime/gwerr" {
				t.Errorf("%s imports %s; netguard may import only the standard library and runtime/gwerr", name, path)
			}
		}
	}
}
