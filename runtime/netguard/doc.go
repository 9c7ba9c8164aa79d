// Package netguard decides which network addresses the gateway may call on a user's behalf. It guards the
// upstream base URLs that callers choose themselves (a config's custom_host, the x-gateway-custom-host header)
// against server-side request forgery: a tenant must not make the gateway fetch the cloud metadata service,
// a link-local device or, unless the operator allows it, a host on the private network.
//
// It owns the address classes and the policy over them (Policy, AddrAllowed), the operator's allow-list
// syntax (ParseAllowList, the value of --allow-hosts), the check of a URL before it is used (CheckURL,
// CheckURLParam) and the check at connect time (Policy.DialContext, Policy.Control), which is what closes the
// DNS-rebinding window between the two. It also owns the redaction of URLs for messages and logs (RedactURL,
// RedactError): a base URL may carry an upstream's password in its userinfo, and every package that shows a
// custom host or a webhook URL hides it the same way.
//
// The classes, checked after an IPv4-mapped IPv6 address is unwrapped:
//
//	always refused   link-local (169.254.0.0/16, fe80::/10); cloud metadata (169.254.169.254, 169.254.170.2,
//	                 fd00:ec2::254, 100.100.100.200); unspecified (0.0.0.0/8, ::); multicast (224.0.0.0/4,
//	                 ff00::/8); broadcast (255.255.255.255); reserved (240.0.0.0/4, IPv4-compatible ::/96)
//	private          10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 (CGNAT), fc00::/7, fec0::/10,
//	                 64:ff9b:1::/48; refused unless Policy.AllowPrivate or a Policy.Allow prefix covers it
//	loopback         127.0.0.0/8, ::1; allowed (local models such as ollama)
//	public           everything else; allowed
//
// An IPv6 address that a relay or translator turns into an IPv4 address is classed by the IPv4 address it
// embeds, and Allow prefixes are matched against that IPv4 address: IPv4-mapped (::ffff:0:0/96), SIIT
// (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, last 32 bits), 6to4 (2002::/16, bits 16-48) and Teredo (2001::/32,
// the client's address, bits 96-128 inverted, and the server's, bits 32-64: the more refused of the two). An
// embedded loopback address is the relay's, not ours: reserved. The local-use NAT64 prefix 64:ff9b:1::/48 is
// private, or refused with the class of its last 32 bits when those are an always-refused address.
// IPv4-compatible addresses (::a.b.c.d) are deprecated and all refused.
//
// Loopback is allowed so that local models work; note that it also lets a caller reach whatever else listens
// on the gateway's host.
//
// A refusal or a malformed URL is a *gwerr.Error with status 400 and code CodeHostNotAllowed or
// gwerr.CodeInvalidRequest; a name CheckURL cannot resolve gives CodeHostUnresolvable. An ended context, and
// a failed lookup or connection inside DialContext, are ordinary errors, as any other network failure.
//
// netguard imports only the standard library and runtime/gwerr. It must not import routes, cmd, the providers,
// fiber or storage: the runtime and cmd wire it in (cmd builds the Policy from flags, runtime checks custom
// hosts and gives the upstream HTTP client a Policy.DialContext).
package netguard
