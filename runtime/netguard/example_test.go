package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
)

// staticResolver answers from a map, so that the example needs no network.
type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r[host], nil
}

func ExamplePolicy_CheckURLParam() {
	// cmd builds the policy once from --allow-private-hosts and --allow-hosts.
	prefixes, hosts, err := netguard.ParseAllowList("10.1.0.0/16, llm.internal")
	if err != nil {
		fmt.Println(err)
		return
	}
	policy := &netguard.Policy{Allow: prefixes, AllowHosts: hosts}

	// In production the resolver is net.DefaultResolver.
	r := staticResolver{
		"llm.internal":  {netip.MustParseAddr("192.168.3.4")},
		"db.internal":   {netip.MustParseAddr("192.168.3.5")},
		"api.example":   {netip.MustParseAddr("93.184.216.34")},
		"gpu.internal":  {netip.MustParseAddr("10.1.7.7")},
		"rebind.attack": {netip.MustParseAddr("169.254.169.254")},
	}
	ctx := context.Background()
	for _, raw := range []string{
		"https://api.example/v1",
		"http://127.0.0.1:11434/v1",
		"http://llm.internal:8000/v1",
		"http://gpu.internal/v1",
		"http://db.internal/v1",
		"http://rebind.attack/latest/meta-data",
		"ftp://api.example/",
	} {
		err := policy.CheckURLParam(ctx, r, raw, "custom_host")
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			fmt.Printf("%s: %d %s\n", raw, ge.Status, ge.Code)
			continue
		}
		fmt.Printf("%s: allowed\n", raw)
	}
	// Output:
	// https://api.example/v1: allowed
	// http://127.0.0.1:11434/v1: allowed
	// http://llm.internal:8000/v1: allowed
	// http://gpu.internal/v1: allowed
	// http://db.internal/v1: 400 host_not_allowed
	// http://rebind.attack/latest/meta-data: 400 host_not_allowed
	// ftp://api.example/: 400 invalid_request
}

func ExamplePolicy_AddrAllowed() {
	var policy netguard.Policy // the default: loopback allowed, private refused
	for _, s := range []string{"8.8.8.8", "127.0.0.1", "10.0.0.5", "::ffff:169.254.169.254", "fd00:ec2::254", "ff02::1"} {
		ok, class := policy.AddrAllowed(netip.MustParseAddr(s))
		fmt.Println(s, ok, class)
	}
	// Output:
	// 8.8.8.8 true public
	// 127.0.0.1 true loopback
	// 10.0.0.5 false private
	// ::ffff:169.254.169.254 false cloud metadata
	// fd00:ec2::254 false cloud metadata
	// ff02::1 false multicast
}
