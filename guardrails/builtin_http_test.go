package guardrails

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
)

// fixedResolver answers every name with its address, without the network.
type fixedResolver string

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr(string(r))}, nil
}

// countingDialer counts the connections the transport tries and refuses, before connect, any that is not to
// loopback: whatever the policy says, a test never sends a packet off the host.
func countingDialer(dials *atomic.Int32) *net.Dialer {
	return &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		dials.Add(1)
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().Unmap().IsLoopback() {
			return errors.New("test refused a connection off loopback")
		}
		return nil
	}}
}

// hookServer answers every webhook with a passing verdict and counts the calls.
func hookServer(t *testing.T, calls *atomic.Int32) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		fmt.Fprint(w, `{"verdict": true}`)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// TestWebhookAddressPolicy: an allow-listed name is still dialled only at addresses the custom-host policy
// allows. A refused address errors with host_not_allowed and no connection is tried; loopback is allowed, and
// a private address only when the policy allows it.
func TestWebhookAddressPolicy(t *testing.T) {
	var calls atomic.Int32
	_, port := hookServer(t, &calls)
	SetOutboundAllowList([]string{"hooks.test"})
	defer SetOutboundAllowList(nil)
	defer setOutboundClient(nil)

	tests := []struct {
		name    string
		policy  *netguard.Policy
		addr    string // what hooks.test resolves to
		refused string // the class named by the refusal; "" when the call is made
		dials   int32
	}{
		{"unspecified", nil, "0.0.0.0", "unspecified", 0},
		{"unspecified v6", nil, "::", "unspecified", 0},
		{"metadata", nil, "169.254.169.254", "cloud metadata", 0},
		{"metadata even with private allowed", &netguard.Policy{AllowPrivate: true}, "169.254.169.254", "cloud metadata", 0},
		{"link-local", nil, "169.254.1.1", "link-local", 0},
		{"metadata through 6to4", nil, "2002:a9fe:a9fe::", "cloud metadata", 0},
		{"private", nil, "10.0.0.1", "private", 0},
		{"private allowed by prefix", &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "10.0.0.1", "", 1},
		{"private allowed by host name", &netguard.Policy{AllowHosts: []string{"hooks.test"}}, "10.0.0.1", "", 1},
		{"loopback", nil, "127.0.0.1", "", 1},
	}
	for _, tc := range tests {
		for _, id := range []string{"webhook", "log"} {
			t.Run(tc.name+" "+id, func(t *testing.T) {
				var dials atomic.Int32
				setOutboundClient(newOutboundClient(tc.policy, countingDialer(&dials), fixedResolver(tc.addr)))
				before := calls.Load()
				params := fmt.Sprintf(`{"%sURL": "http://hooks.test:%s/hook"}`, id, port)
				_, err := mustCheck(t, id, params).Check(context.Background(), &hostapi.Input{Text: "hi"}, nil)
				if n := dials.Load(); n != tc.dials {
					t.Errorf("%d connections tried, want %d", n, tc.dials)
				}
				if tc.refused == "" {
					if tc.addr == "127.0.0.1" && (err != nil || calls.Load() != before+1) {
						t.Errorf("loopback webhook: %v, %d calls", err, calls.Load()-before)
					}
					var ge *gwerr.Error
					if errors.As(err, &ge) {
						t.Errorf("refused: %v", err)
					}
					return
				}
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Code != netguard.CodeHostNotAllowed || !strings.Contains(ge.Message, tc.refused) {
					t.Fatalf("error %v, want %s naming %q", err, netguard.CodeHostNotAllowed, tc.refused)
				}
				if calls.Load() != before {
					t.Error("the webhook was called")
				}
			})
		}
	}
}

// TestWebhookUnspecifiedLiteral: 0.0.0.0 on the allow-list, which Linux connects to the host itself, is refused
// by the default client, with no policy set.
func TestWebhookUnspecifiedLiteral(t *testing.T) {
	var calls atomic.Int32
	_, port := hookServer(t, &calls)
	SetOutboundAllowList([]string{"0.0.0.0:" + port})
	defer SetOutboundAllowList(nil)
	setOutboundClient(nil)
	_, err := mustCheck(t, "webhook", `{"webhookURL": "http://0.0.0.0:`+port+`/hook"}`).Check(context.Background(), &hostapi.Input{}, nil)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Code != netguard.CodeHostNotAllowed {
		t.Errorf("error %v, want %s", err, netguard.CodeHostNotAllowed)
	}
	if calls.Load() != 0 {
		t.Error("the webhook at 0.0.0.0 was called")
	}
}

// TestSetOutboundAddressPolicy: the exported setter puts the policy in force (AllowPrivate lets a private
// address through to the dial, which the default refuses).
func TestSetOutboundAddressPolicy(t *testing.T) {
	SetOutboundAllowList([]string{"10.255.255.1:9"})
	defer SetOutboundAllowList(nil)
	defer setOutboundClient(nil)
	check := mustCheck(t, "webhook", `{"webhookURL": "http://10.255.255.1:9/hook"}`)
	SetOutboundAddressPolicy(nil)
	_, err := check.Check(context.Background(), &hostapi.Input{}, nil)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Code != netguard.CodeHostNotAllowed {
		t.Errorf("default policy: %v", err)
	}
	// With private addresses allowed, the refusal comes from the test's own dialer, not the policy.
	var dials atomic.Int32
	setOutboundClient(newOutboundClient(&netguard.Policy{AllowPrivate: true}, countingDialer(&dials), nil))
	if _, err := check.Check(context.Background(), &hostapi.Input{}, nil); err == nil || errors.As(err, &ge) || dials.Load() != 1 {
		t.Errorf("AllowPrivate: %v after %d connections tried", err, dials.Load())
	}
}

// TestWebhookErrorRedacted: a webhook URL's credentials do not show in the check's error, which reaches
// hook_results and logs.
func TestWebhookErrorRedacted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	SetOutboundAllowList([]string{"127.0.0.1"})
	defer SetOutboundAllowList(nil)
	setOutboundClient(nil)
	_, err = mustCheck(t, "webhook", `{"webhookURL": "http://hookuser:s3cret@`+addr+`/hook"}`).Check(context.Background(), &hostapi.Input{}, nil)
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "hookuser") {
		t.Errorf("error %v", err)
	}
}
