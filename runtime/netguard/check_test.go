package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// resolverFunc is a Resolver made of a function.
type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// fakeResolver answers from a table of host → comma-separated addresses ("" answers no addresses); a host not
// in the table is not found. It never touches the network and is safe for concurrent use.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string]string
	calls   []string
}

func newFakeResolver(answers map[string]string) *fakeResolver {
	return &fakeResolver{answers: answers}
}

func (f *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, network+" "+host)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ans, ok := f.answers[strings.ToLower(strings.TrimSuffix(host, "."))]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for s := range strings.SplitSeq(ans, ",") {
		if s != "" {
			out = append(out, netip.MustParseAddr(s))
		}
	}
	return out, nil
}

func (f *fakeResolver) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

var testAnswers = map[string]string{
	"api.test":       "93.184.216.34,2606:2800:220:1:248:1893:25c8:1946",
	"localhost":      "127.0.0.1,::1",
	"internal.test":  "10.0.0.1",
	"mixed.test":     "93.184.216.34,10.0.0.1",
	"mapped.test":    "::ffff:10.0.0.1",
	"metadata.test":  "169.254.169.254",
	"metadata6.test": "fd00:ec2::254",
	"empty.test":     "",
}

// asGwerr returns err as a *gwerr.Error, failing the test if it is not one.
func asGwerr(t *testing.T, err error) *gwerr.Error {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T) is not a *gwerr.Error", err, err)
	}
	return ge
}

func TestCheckURL(t *testing.T) {
	zero := &Policy{}
	longURL := "http://10.0.0.5/" + strings.Repeat("a", 1000)
	tests := []struct {
		name    string
		policy  *Policy
		url     string
		code    string   // "" means allowed
		msgHas  []string // substrings of the message
		msgNot  []string // must not be in the message
		exact   string   // the whole message, when given
		resolve bool     // the resolver must have been asked
	}{
		// allowed
		{name: "public name", policy: zero, url: "https://api.test/v1", resolve: true},
		{name: "public v4 literal", policy: zero, url: "https://8.8.8.8/v1"},
		{name: "public v6 literal", policy: zero, url: "https://[2606:4700::1111]:8443/v1"},
		{name: "loopback literal (ollama)", policy: zero, url: "http://127.0.0.1:11434/v1"},
		{name: "loopback v6 literal", policy: zero, url: "http://[::1]:8080"},
		{name: "localhost", policy: zero, url: "http://localhost:11434/v1", resolve: true},
		{name: "upper-case scheme", policy: zero, url: "HTTPS://api.test/v1"},
		{name: "private with AllowPrivate", policy: &Policy{AllowPrivate: true}, url: "http://internal.test/v1"},
		{name: "private name with Allow prefix", policy: &Policy{Allow: prefixes("10.0.0.0/24")}, url: "http://internal.test/v1"},
		{name: "private literal with Allow prefix", policy: &Policy{Allow: prefixes("10.0.0.5/32")}, url: "http://10.0.0.5/v1"},
		{name: "allow-host", policy: &Policy{AllowHosts: []string{"internal.test"}}, url: "http://internal.test/v1", resolve: true},
		{name: "allow-host case and dot", policy: &Policy{AllowHosts: []string{"internal.test"}}, url: "http://Internal.TEST./v1"},
		{name: "allow-host mixed answer", policy: &Policy{AllowHosts: []string{"mixed.test"}}, url: "http://mixed.test/"},

		// refused: private
		{name: "private literal", policy: zero, url: "http://10.0.0.5/v1", code: CodeHostNotAllowed,
			exact: `custom host "http://10.0.0.5/v1" resolves to 10.0.0.5, a private address; the operator can allow it with --allow-private-hosts or --allow-hosts`},
		{name: "private name", policy: zero, url: "http://internal.test/v1", code: CodeHostNotAllowed,
			msgHas: []string{`"http://internal.test/v1" resolves to 10.0.0.1, a private address`, "--allow-private-hosts"}},
		{name: "mixed answers", policy: zero, url: "http://mixed.test/", code: CodeHostNotAllowed,
			msgHas: []string{"10.0.0.1 (one of its 2 addresses, which must all be allowed), a private address"}},
		{name: "mapped answer", policy: zero, url: "http://mapped.test/", code: CodeHostNotAllowed,
			msgHas: []string{"::ffff:10.0.0.1", "private"}},
		{name: "mapped literal", policy: zero, url: "http://[::ffff:192.168.0.1]/", code: CodeHostNotAllowed, msgHas: []string{"private"}},
		{name: "CGNAT", policy: zero, url: "http://100.64.1.1/", code: CodeHostNotAllowed, msgHas: []string{"private"}},
		{name: "ULA", policy: zero, url: "http://[fd12::1]/", code: CodeHostNotAllowed, msgHas: []string{"private"}},
		{name: "Allow prefix elsewhere", policy: &Policy{Allow: prefixes("10.9.0.0/16")}, url: "http://internal.test/", code: CodeHostNotAllowed},
		{name: "other allow-host", policy: &Policy{AllowHosts: []string{"other.test"}}, url: "http://internal.test/", code: CodeHostNotAllowed},
		{name: "allow-host is exact", policy: &Policy{AllowHosts: []string{"test"}}, url: "http://internal.test/", code: CodeHostNotAllowed},
		{name: "credentials redacted", policy: zero, url: "http://user:s3cret@10.0.0.5/", code: CodeHostNotAllowed,
			msgHas: []string{`"http://***@10.0.0.5/"`}, msgNot: []string{"s3cret", "user"}},
		{name: "token user name redacted", policy: zero, url: "http://tok3n@10.0.0.5/", code: CodeHostNotAllowed,
			msgHas: []string{`"http://***@10.0.0.5/"`}, msgNot: []string{"tok3n"}},
		{name: "credentials redacted before the cut", policy: zero, url: "http://user:" + strings.Repeat("s3cret", 50) + "@10.0.0.5/", code: CodeHostNotAllowed,
			msgHas: []string{`"http://***@10.0.0.5/"`}, msgNot: []string{"s3cret"}},
		{name: "credentials of a bad URL redacted", policy: zero, url: "http://user:s3cret@[::1/", code: gwerr.CodeInvalidRequest,
			msgHas: []string{"not a valid URL"}, msgNot: []string{"s3cret", "user"}},
		{name: "credentials of a bad port redacted", policy: zero, url: "http://user:s3cret@api.test:0/", code: gwerr.CodeInvalidRequest,
			msgNot: []string{"s3cret", "user"}},
		{name: "password with a slash redacted", policy: zero, url: "http://user:s3/cret@api.test/", code: gwerr.CodeInvalidRequest,
			msgNot: []string{"s3", "cret", "user"}},
		{name: "credentials of ftp redacted", policy: zero, url: "ftp://user:s3cret@api.test/", code: gwerr.CodeInvalidRequest,
			msgNot: []string{"s3cret", "user"}},
		{name: "long URL cut", policy: zero, url: longURL, code: CodeHostNotAllowed, msgHas: []string{`aaaa"...`}, msgNot: []string{longURL}},

		// refused always: metadata, link-local, unspecified, multicast, broadcast
		{name: "metadata literal", policy: zero, url: "http://169.254.169.254/latest/meta-data/", code: CodeHostNotAllowed,
			msgHas: []string{"169.254.169.254, a cloud metadata address, which is never allowed"}},
		{name: "metadata through 6to4", policy: zero, url: "http://[2002:a9fe:a9fe::]/v1", code: CodeHostNotAllowed,
			exact: `custom host "http://[2002:a9fe:a9fe::]/v1" resolves to 2002:a9fe:a9fe:: (which carries the IPv4 address 169.254.169.254), a cloud metadata address, which is never allowed as an upstream; use the upstream's routable address or host name`},
		{name: "metadata literal AllowPrivate", policy: &Policy{AllowPrivate: true}, url: "http://169.254.169.254/", code: CodeHostNotAllowed},
		{name: "metadata mapped literal", policy: zero, url: "http://[::ffff:169.254.169.254]/", code: CodeHostNotAllowed, msgHas: []string{"cloud metadata"}},
		{name: "metadata v6 literal AllowPrivate", policy: &Policy{AllowPrivate: true}, url: "http://[fd00:ec2::254]/", code: CodeHostNotAllowed, msgHas: []string{"cloud metadata"}},
		{name: "metadata name", policy: zero, url: "http://metadata.test/", code: CodeHostNotAllowed, msgHas: []string{"cloud metadata"}},
		{name: "metadata allow-host", policy: &Policy{AllowHosts: []string{"metadata6.test"}, AllowPrivate: true}, url: "http://metadata6.test/", code: CodeHostNotAllowed, msgHas: []string{"cloud metadata"}},
		{name: "link-local", policy: zero, url: "http://169.254.10.10/", code: CodeHostNotAllowed, msgHas: []string{"a link-local address, which is never allowed"}},
		{name: "link-local v6 zone", policy: &Policy{AllowPrivate: true}, url: "http://[fe80::1%25eth0]:80/", code: CodeHostNotAllowed, msgHas: []string{"link-local"}},
		{name: "unspecified", policy: zero, url: "http://0.0.0.0:8080/", code: CodeHostNotAllowed, msgHas: []string{"0.0.0.0, an unspecified address, which cannot be an upstream"}},
		{name: "unspecified v6", policy: zero, url: "http://[::]:8080/", code: CodeHostNotAllowed, msgHas: []string{"unspecified"}},
		{name: "multicast", policy: zero, url: "http://224.0.0.1/", code: CodeHostNotAllowed, msgHas: []string{"a multicast address"}},
		{name: "broadcast", policy: zero, url: "http://255.255.255.255/", code: CodeHostNotAllowed, msgHas: []string{"a broadcast address"}},

		// malformed
		{name: "ftp", policy: zero, url: "ftp://api.test/", code: gwerr.CodeInvalidRequest, msgHas: []string{"http or https"}},
		{name: "no scheme", policy: zero, url: "api.test/v1", code: gwerr.CodeInvalidRequest, msgHas: []string{"http or https"}},
		{name: "not a URL", policy: zero, url: "not a url", code: gwerr.CodeInvalidRequest},
		{name: "parse error", policy: zero, url: "http://[::1/", code: gwerr.CodeInvalidRequest, msgHas: []string{"not a valid URL"}},
		{name: "control character", policy: zero, url: "http://api.test/\x00", code: gwerr.CodeInvalidRequest},
		{name: "no host", policy: zero, url: "http:///v1", code: gwerr.CodeInvalidRequest, msgHas: []string{"has no host"}},
		{name: "port only", policy: zero, url: "http://:8080/v1", code: gwerr.CodeInvalidRequest, msgHas: []string{"has no host"}},
		{name: "opaque", policy: zero, url: "http:api.test", code: gwerr.CodeInvalidRequest},
		{name: "port zero", policy: zero, url: "http://api.test:0/", code: gwerr.CodeInvalidRequest, msgHas: []string{`port "0"`}},
		{name: "port too big", policy: zero, url: "http://api.test:65536/", code: gwerr.CodeInvalidRequest, msgHas: []string{"1 to 65535"}},
		{name: "decimal IPv4", policy: zero, url: "http://2130706433/", code: gwerr.CodeInvalidRequest, msgHas: []string{`"2130706433"`, "not a valid IP address"}},
		{name: "short IPv4", policy: zero, url: "http://127.1/", code: gwerr.CodeInvalidRequest},
		{name: "hex IPv4", policy: zero, url: "http://0x7f.0.0.1/", code: gwerr.CodeInvalidRequest},
		{name: "octal IPv4", policy: zero, url: "http://010.0.0.1/", code: gwerr.CodeInvalidRequest},

		// unresolvable
		{name: "no such host", policy: zero, url: "http://nxdomain.test/v1", code: CodeHostUnresolvable,
			msgHas: []string{`cannot resolve host "nxdomain.test"`, "check the host name"}},
		{name: "no addresses", policy: zero, url: "http://empty.test/v1", code: CodeHostUnresolvable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newFakeResolver(testAnswers)
			err := tc.policy.CheckURLParam(t.Context(), r, tc.url, "custom_host")
			if tc.resolve && len(r.Calls()) == 0 {
				t.Error("the resolver was not asked")
			}
			if tc.code == "" {
				if err != nil {
					t.Fatalf("CheckURLParam(%q) = %v, want nil", tc.url, err)
				}
				return
			}
			ge := asGwerr(t, err)
			if ge.Status != 400 || ge.Code != tc.code || ge.Param != "custom_host" {
				t.Errorf("got %d %s param %q, want 400 %s param custom_host (%v)", ge.Status, ge.Code, ge.Param, tc.code, err)
			}
			if tc.exact != "" && ge.Message != tc.exact {
				t.Errorf("message\n got %s\nwant %s", ge.Message, tc.exact)
			}
			for _, s := range tc.msgHas {
				if !strings.Contains(ge.Message, s) {
					t.Errorf("message %q does not contain %q", ge.Message, s)
				}
			}
			for _, s := range tc.msgNot {
				if strings.Contains(ge.Message, s) {
					t.Errorf("message %q contains %q", ge.Message, s)
				}
				if strings.Contains(err.Error(), s) { // the text logs see, cause included
					t.Errorf("error text %q contains %q", err.Error(), s)
				}
			}
		})
	}
}

func TestCheckURLNoParam(t *testing.T) {
	err := (&Policy{}).CheckURL(t.Context(), newFakeResolver(testAnswers), "http://10.0.0.5/")
	if ge := asGwerr(t, err); ge.Param != "" || ge.Code != CodeHostNotAllowed {
		t.Errorf("got param %q code %s, want empty param and %s", ge.Param, ge.Code, CodeHostNotAllowed)
	}
	var nilPolicy *Policy
	if err := nilPolicy.CheckURL(t.Context(), newFakeResolver(testAnswers), "https://api.test/"); err != nil {
		t.Errorf("nil policy: %v", err)
	}
}

// TestCheckURLLiteralNoLookup checks that an IP literal is never sent to the resolver.
func TestCheckURLLiteralNoLookup(t *testing.T) {
	r := resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		t.Errorf("resolver asked for %q", host)
		return nil, errors.New("unexpected")
	})
	for _, u := range []string{"http://10.0.0.5/", "http://8.8.8.8/", "http://[::1]/", "http://[fe80::1%25lo]/"} {
		_ = (&Policy{}).CheckURL(t.Context(), r, u)
	}
}

// TestCheckURLContext checks that resolution is bounded by ctx, and that an ended ctx is reported as such
// rather than as a 400.
func TestCheckURLContext(t *testing.T) {
	blocking := resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		<-ctx.Done()
		return nil, &net.DNSError{Err: "lookup timed out", Name: host, IsTimeout: true}
	})
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			err := (&Policy{}).CheckURL(ctx, blocking, "https://slow.test/v1")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var ge *gwerr.Error
			if errors.As(err, &ge) {
				t.Errorf("an ended context gave a *gwerr.Error: %v", ge)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestCheckURLResolverError(t *testing.T) {
	r := resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		if network != "ip" {
			t.Errorf("network %q, want ip", network)
		}
		return nil, errors.New("server misbehaving")
	})
	err := (&Policy{}).CheckURLParam(t.Context(), r, "https://api.test/v1", "x-gateway-custom-host")
	ge := asGwerr(t, err)
	if ge.Code != CodeHostUnresolvable || ge.Param != "x-gateway-custom-host" || ge.Err == nil ||
		!strings.Contains(ge.Err.Error(), "server misbehaving") || strings.Contains(ge.Message, "misbehaving") {
		t.Errorf("got %#v", ge)
	}
}
