package guardrails

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/netguard"
)

// allowList holds the lower-cased hosts webhook and log may call; empty denies every call (the default).
var allowList atomic.Pointer[map[string]bool]

// SetOutboundAllowList sets the hosts the webhook and log checks may call: host names or IP addresses ("hooks.
// example.com", "127.0.0.1"), optionally with a port ("127.0.0.1:9000" allows that port only). Calls to any other
// host fail with an error (so the check passes unless failOnError). nil or empty denies all, the default. A listed
// host must also resolve to addresses the address policy allows (SetOutboundAddressPolicy). It is safe to call
// at any time; calls in flight keep the list they started with.
func SetOutboundAllowList(hosts []string) {
	m := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			m[h] = true
		}
	}
	allowList.Store(&m)
}

func hostAllowed(u *url.URL) bool {
	m := allowList.Load()
	if m == nil {
		return false
	}
	return (*m)[strings.ToLower(u.Hostname())] || (*m)[strings.ToLower(u.Host)]
}

// errNotAllowed is the error of a call to a host the allow-list does not name.
var errNotAllowed = errors.New("host is not in the outbound allow-list")

// outboundClient makes the webhook and log calls; nil means defaultOutboundClient.
var outboundClient atomic.Pointer[http.Client]

// defaultOutboundClient is the client until SetOutboundAddressPolicy is called: the default address policy.
var defaultOutboundClient = newOutboundClient(nil, nil, nil)

// SetOutboundAddressPolicy sets the address policy of the webhook and log checks' connections, which cmd makes
// the custom hosts' policy (--allow-private-hosts, --allow-hosts). The allow-list of SetOutboundAllowList names
// the hosts these checks may call; the policy decides, when each connection is made, which addresses they may
// reach: a listed name that resolves to an unspecified (0.0.0.0), link-local, cloud metadata, multicast or
// reserved address, or to a private one the policy does not allow, is refused without connecting, as for a
// custom host. Loopback is allowed, as for custom hosts, so that a check service beside the gateway works.
// nil is the default policy, which is also the one in force before the first call. It is safe to call at any
// time; calls in flight keep the client they started with.
func SetOutboundAddressPolicy(p *netguard.Policy) {
	setOutboundClient(newOutboundClient(p, nil, nil))
}

// setOutboundClient puts c in force (nil: the default) and lets the previous client's idle connections go, as
// they were made under the previous policy.
func setOutboundClient(c *http.Client) {
	if old := outboundClient.Swap(c); old != nil {
		old.CloseIdleConnections()
	}
}

func currentOutboundClient() *http.Client {
	if c := outboundClient.Load(); c != nil {
		return c
	}
	return defaultOutboundClient
}

// newOutboundClient builds the client of the webhook and log checks: every connection is dialled through the
// address policy p (nil: the default policy) with d (nil: a 10s connect timeout) and names resolved by r (nil:
// net.DefaultResolver). It never follows redirects (a redirect could leave the allow-list); the timeout comes
// from each call's context.
func newOutboundClient(p *netguard.Policy, d *net.Dialer, r netguard.Resolver) *http.Client {
	if p == nil {
		p = &netguard.Policy{}
	}
	if d == nil {
		d = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // through a proxy the policy would check the proxy's address, not the webhook's
			DialContext:           p.DialContext(d, r),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// maxOutboundBody bounds the answer read from a webhook.
const maxOutboundBody = 1 << 20

// defaultOutboundTimeout is webhook's and log's default timeout parameter, in milliseconds.
const defaultOutboundTimeout = 3000

// httpCheck is webhook (log false) or log (log true).
type httpCheck struct {
	url     *url.URL
	headers map[string]string
	timeout time.Duration
	log     bool
}

func newHTTPCheck(raw json.RawMessage, urlParam string, log bool) (Check, error) {
	p := parseParams(raw)
	s := p.str(urlParam, true, "")
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(urlParam, "must be an http or https URL")
	}
	h := p.headers("headers")
	ms := p.number("timeout", defaultOutboundTimeout)
	if ms <= 0 || ms > 60000 {
		p.fail("timeout", "must be between 1 and 60000 milliseconds")
	}
	if p.err != nil {
		return nil, p.err
	}
	return &httpCheck{url: u, headers: h, timeout: time.Duration(ms * float64(time.Millisecond)), log: log}, nil
}

// webhook {webhookURL, headers, timeout (ms, default 3000)}: POSTs the input as JSON and takes the verdict from
// the answer, a JSON object {"verdict": bool, "data": ...}. Only hosts of SetOutboundAllowList are called, and only
// at addresses the policy of SetOutboundAddressPolicy allows.
//
// The request body is {"text", "model", "metadata": {...}, "endpoint", "stage", "eventType"}, eventType being
// "beforeRequestHook" or "afterRequestHook".
func newWebhook(raw json.RawMessage) (Check, error) { return newHTTPCheck(raw, "webhookURL", false) }

// log {logURL, headers, timeout (ms, default 3000)}: POSTs the input as webhook does and always passes (an error
// is reported but counts as a pass unless failOnError).
func newLog(raw json.RawMessage) (Check, error) { return newHTTPCheck(raw, "logURL", true) }

type outboundBody struct {
	Text      string            `json:"text"`
	Model     string            `json:"model"`
	Metadata  map[string]string `json:"metadata"`
	Endpoint  string            `json:"endpoint"`
	Stage     string            `json:"stage"`
	EventType string            `json:"eventType"`
}

func (c *httpCheck) Check(ctx context.Context, in *hostapi.Input, _ hostapi.RequestView) (hostapi.Output, error) {
	if !hostAllowed(c.url) {
		return hostapi.Output{}, fmt.Errorf("%s: %w", c.url.Host, errNotAllowed)
	}
	body := outboundBody{Text: in.Text, Model: in.Model, Metadata: make(map[string]string, len(in.Metadata)),
		Endpoint: in.Endpoint, Stage: in.Stage, EventType: "beforeRequestHook"}
	if in.Stage == string(StageAfter) {
		body.EventType = "afterRequestHook"
	}
	for _, kv := range in.Metadata {
		body.Metadata[kv.Key] = kv.Value
	}
	b, err := json.Marshal(body)
	if err != nil {
		return hostapi.Output{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url.String(), bytes.NewReader(b))
	if err != nil {
		return hostapi.Output{}, netguard.RedactError(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := currentOutboundClient().Do(req)
	if err != nil {
		// The error reaches hook_results and logs; its URL's userinfo would be the webhook's credentials.
		return hostapi.Output{}, netguard.RedactError(err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxOutboundBody))
	if err != nil {
		return hostapi.Output{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return hostapi.Output{}, fmt.Errorf("%s answered %d", c.url.Host, resp.StatusCode)
	}
	if c.log {
		return hostapi.NewOutput(), nil
	}
	var ans struct {
		Verdict *bool           `json:"verdict"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rb, &ans); err != nil || ans.Verdict == nil {
		return hostapi.Output{}, fmt.Errorf("%s: answer is not a JSON object with a boolean verdict", c.url.Host)
	}
	out := hostapi.Output{Verdict: *ans.Verdict}
	if len(ans.Data) > 0 && string(ans.Data) != "null" {
		out.Data = ans.Data
	}
	return out, nil
}
