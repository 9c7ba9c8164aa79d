package console_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	browserlog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	jsruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/bootstrap"
	_ "github.com/llmgw/gateway/runtime/providers/openai" // the upstream's format, as cmd/gateway registers it
	"github.com/llmgw/gateway/storage"
)

// The console is driven in Debian's chromium (package chromium), headless, against a gateway served in process
// on 127.0.0.1: sign-in, the live log and a request's story, the overview, the forms of providers, configs and
// plugins, a phone-sized viewport and the keyboard. Every page is kept as a screenshot in the artifacts folder.
// The browser must make no request outside the gateway's origin and log no error.

const (
	adminKey = "gw-console-browser-admin"
	// wholeTest bounds everything the test does in the browser; stepTimeout bounds one wait, so that a missing
	// element fails with the step's name rather than with the whole test's deadline.
	wholeTest   = 60 * time.Second
	stepTimeout = 15 * time.Second
	// chatAnswer is what the upstream answers every chat completion.
	chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
	// smallWasm is the smallest module the plugin engine accepts (it exports the gateway ABI and does nothing);
	// routes' wasmSmall, so that the upload needs no wasm build.
	smallWasm = "\x00asm\x01\x00\x00\x00\x01\x10\x03`\x00\x00`\x01\x7f\x01\x7f`\x03\x7f\x7f\x7f\x01~\x03\x04\x03\x00\x01\x02\x05\x04\x01\x01\x01\x01\a:\x04\x0egateway_abi_v1\x00\x00\rgateway_alloc\x00\x01\fgateway_call\x00\x02\x06memory\x02\x00\n\x0e\x03\x02\x00\v\x04\x00A\x00\v\x04\x00B\x00\v"
)

// gateway is a gateway served in process: an admin key, the stored provider "mock" pointing at a local
// OpenAI-format upstream, request logs with bodies, and the wasm engine.
type gateway struct {
	base     string // http://127.0.0.1:port
	upstream string // the upstream's base URL, with /v1
}

func startGateway(t *testing.T) *gateway {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	}))
	t.Cleanup(up.Close)

	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.DiscardHandler)
	wasm, err := plugins.New(plugins.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wasm.Close(context.Background()) })
	boot, err := bootstrap.Parse([]byte(`{"api_keys": [{"key": "`+adminKey+`", "admin": true, "name": "console"}],
		"providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-mock", "custom_host": "`+up.URL+`/v1"}]}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Apply(st, boot); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Initialize(); err != nil {
		t.Fatal(err)
	}
	logs := reqlog.New(st.Logs, reqlog.Options{Bodies: true, FlushWindow: time.Millisecond, Logger: quiet})
	srv := routes.New(st, runtime.New(st, runtime.Options{Logger: quiet}),
		routes.Options{Logger: quiet, Plugins: wasm, Logs: logs})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Shutdown(time.Second)
		logs.Close()
	})
	return &gateway{base: "http://" + ln.Addr().String(), upstream: up.URL + "/v1"}
}

// call sends one request to the gateway with the admin key and decodes its JSON answer.
func (g *gateway) call(t *testing.T, method, path, body string, headers ...string) (int, map[string]any, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, g.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-gateway-api-key", adminKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Timeout: stepTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp.Header
}

// chromiumPath finds the browser, or skips the test when there is none and CI did not ask for it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const install = "install Debian's chromium package (apt-get install chromium)"
	if os.Getenv("GATEWAY_REQUIRE_BROWSER") != "" {
		t.Fatal("GATEWAY_REQUIRE_BROWSER is set and no chromium binary is on PATH: " + install)
	}
	t.Skip("no chromium binary on PATH: " + install + " to run the console's browser test")
	return ""
}

// artifactsDir is where the screenshots are kept: $GATEWAY_TEST_ARTIFACTS, or gateway-console-screenshots in
// the temporary folder.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GATEWAY_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "gateway-console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one tab of a headless chromium on the console, with what the tab did: its requests, the
// answers of the gateway that failed, and its console errors.
type browser struct {
	t         *testing.T
	ctx       context.Context
	origin    string
	artifacts string

	mu        sync.Mutex
	methods   map[network.RequestID]string // method and path of each request, by id
	elsewhere []string                     // requests to another origin than the gateway's
	failed    []string                     // "METHOD /path STATUS" of answers >= 400
	problems  []string                     // console errors and warnings, exceptions, log entries of level error
	statsOK   bool                         // a GET /v1/logs/stats was answered 200
}

func openBrowser(t *testing.T, ctx context.Context, origin string) *browser {
	t.Helper()
	b := &browser{t: t, origin: origin, artifacts: artifactsDir(t), methods: map[network.RequestID]string{}}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, // CI runs as root, where chromium's sandbox refuses to start
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b.ctx = tabCtx
	if err := chromedp.Do(tabCtx); err != nil { // starts the browser, bound to ctx's deadline
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// listen runs in the tab's event loop: it records and returns at once.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		u, err := url.Parse(ev.Request.URL)
		if err != nil || (u.Scheme != "data" && u.Scheme != "blob" && u.Scheme+"://"+u.Host != b.origin) {
			b.elsewhere = append(b.elsewhere, ev.Request.URL)
		}
		if err == nil {
			b.methods[ev.RequestID] = ev.Request.Method + " " + u.Path
		}
	case *network.EventResponseReceived:
		what := b.methods[ev.RequestID]
		if ev.Response.Status >= 400 {
			b.failed = append(b.failed, fmt.Sprintf("%s %d", what, ev.Response.Status))
		}
		if what == "GET /v1/logs/stats" && ev.Response.Status == 200 {
			b.statsOK = true
		}
	case *jsruntime.EventConsoleAPICalled:
		if ev.Type == jsruntime.ConsoleAPICalledTypeError || ev.Type == jsruntime.ConsoleAPICalledTypeWarning ||
			ev.Type == jsruntime.ConsoleAPICalledTypeAssert {
			args := make([]string, 0, len(ev.Args))
			for _, a := range ev.Args {
				if a.Description != "" {
					args = append(args, a.Description)
				} else {
					args = append(args, string(a.Value))
				}
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *jsruntime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *browserlog.EventEntryAdded:
		// Failed answers are logged as network errors: failed keeps them and the test says which it expects.
		// The rest (a refusal by the Content-Security-Policy, an error of the page) fails the test.
		if ev.Entry.Level == browserlog.EntryLevelError && ev.Entry.Source != browserlog.EntrySourceNetwork {
			b.problems = append(b.problems, fmt.Sprintf("log %s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

// do runs actions within stepTimeout; what names the step in the failure.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.pageState())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, what, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.pageState())
	}
	return v
}

// waitUntil waits until the JavaScript expression is truthy.
func (b *browser) waitUntil(what, js string) {
	b.t.Helper()
	b.do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(stepTimeout), chromedp.WithPollingInterval(50*time.Millisecond))(ctx, t)
		return err
	}))
}

// pageState is what a failure shows of the page: the status line, the sign-in error, what the browser logged.
func (b *browser) pageState() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`["status", "signin-error", "config-error"].map(id => {
		const e = document.getElementById(id); return e ? "#" + id + ": " + e.textContent.trim() : "no #" + id }).join("; ")
		+ "; location " + location.href`))
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("\npage: %s\nfailed answers: %v\nbrowser problems: %v", shown, b.failed, b.problems)
}

// screenshot keeps the whole page as name.png in the artifacts folder, once the page has painted.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	eval[chromedp.Void](b, "wait for a paint", `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))`)
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.artifacts, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot of %s: %s", name, path)
}

// fill sets a form field's value as typing would, with its input and change events.
func (b *browser) fill(selector, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false;
		e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true}));
		return e.value === %q })()`, selector, value, value)
	if !eval[bool](b, "fill "+selector, js) {
		b.t.Fatalf("%s is missing or refused the value %q%s", selector, value, b.pageState())
	}
}

// submit clicks the submit button of the form.
func (b *browser) submit(form string) {
	b.t.Helper()
	b.do("submit "+form, chromedp.Click(chromedp.CSS(form+` button:not([type=button]):not([type=reset]), `+form+` input[type=submit]`)))
}

// page opens a page of the console through its nav link and waits for what shows it.
func (b *browser) page(nav, shows string) {
	b.t.Helper()
	b.do("open the "+nav+" page", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[data-nav=%q]`, nav))), chromedp.WaitVisible(chromedp.CSS(shows)))
}

// tabTo presses Tab until the element with the id has the focus (it may have it already).
func (b *browser) tabTo(id string) {
	b.t.Helper()
	var seen []string
	for range 25 {
		focused := eval[string](b, "read the focus", `(() => { const e = document.activeElement;
			return !e || e === document.body ? "" : e.id || e.tagName.toLowerCase() + (e.name ? "[name=" + e.name + "]" : "") })()`)
		if focused == id {
			return
		}
		seen = append(seen, focused)
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
	}
	b.t.Fatalf("Tab never reached #%s; the focus went through %q", id, seen)
}

// TestConsoleInChromium signs in to the console and uses it as an operator would, in headless chromium.
func TestConsoleInChromium(t *testing.T) {
	chromiumPath(t) // skips before anything starts when there is no browser
	ctx, cancel := context.WithTimeout(t.Context(), wholeTest)
	defer cancel()
	g := startGateway(t)
	b := openBrowser(t, ctx, g.base)
	refusedAtSignIn := 0 // the answers to the wrong key, the first failed answers
	// Also after a failure: what the browser did that it must not.
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.elsewhere) > 0 {
			t.Errorf("the console made requests outside %s: %q", g.base, b.elsewhere)
		}
		if len(b.problems) > 0 {
			t.Errorf("the browser logged errors:\n%s", strings.Join(b.problems, "\n"))
		}
		// A wrong key's answers at sign-in and the invalid config's are the only failed answers asked for.
		for _, f := range b.failed[min(refusedAtSignIn, len(b.failed)):] {
			if f != "POST /v1/configs 400" {
				t.Errorf("the gateway answered the console %s", f)
			}
		}
	})

	// Sign-in: a wrong key is refused with the server's message, then the admin key signs in with the keyboard
	// alone (Tab reaches the key's input and the submit button).
	b.do("open /console", chromedp.Navigate(g.base+"/console"), chromedp.WaitVisible(chromedp.CSS("#signin-key")))
	b.do("sign in with a wrong key", chromedp.SendKeys(chromedp.CSS("#signin-key"), "gw-not-a-key"),
		chromedp.Click(chromedp.CSS("#signin-submit")))
	b.waitUntil("the wrong key's refusal in #signin-error",
		`(() => { const e = document.getElementById("signin-error"); return !!e && e.offsetParent !== null && e.textContent.trim() !== "" })()`)
	b.mu.Lock()
	refusedAtSignIn = len(b.failed)
	b.mu.Unlock()
	if refusedAtSignIn == 0 {
		t.Error("the wrong key was refused without asking the gateway")
	}
	b.do("reload /console", chromedp.Navigate(g.base+"/console"), chromedp.WaitVisible(chromedp.CSS("#signin-key")))
	b.tabTo("signin-key")
	b.do("type the key", chromedp.KeyEvent(adminKey))
	b.tabTo("signin-submit")
	b.do("press Enter on #signin-submit", chromedp.KeyEvent(kb.Enter))
	b.do("the live log after sign-in", chromedp.WaitVisible(chromedp.CSS("#log-table")))
	session := eval[[]string](b, "read sessionStorage", `Object.keys(sessionStorage).map(k => sessionStorage.getItem(k))`)
	local := eval[[]string](b, "read localStorage", `Object.keys(localStorage).map(k => k + "=" + localStorage.getItem(k))`)
	hasKey := func(v string) bool { return strings.Contains(v, adminKey) }
	if !slices.ContainsFunc(session, hasKey) || slices.ContainsFunc(local, hasKey) {
		t.Errorf("the key must be kept in sessionStorage only: session %q, local %q", session, local)
	}
	if loc := eval[string](b, "read the location", `location.href`); strings.Contains(loc, adminKey) {
		t.Errorf("the key is in the URL: %s", loc)
	}

	// Live log: a request made through the API appears, and its story lists the route it took.
	status, answer, header := g.call(t, "POST", "/v1/chat/completions",
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi from the console test"}]}`, "x-gateway-provider", "@mock")
	if status != 200 {
		t.Fatalf("chat through the gateway: %d %v", status, answer)
	}
	logID := ""
	for deadline := time.Now().Add(stepTimeout); logID == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, list, _ := g.call(t, "GET", "/v1/logs?trace_id="+url.QueryEscape(header.Get("x-gateway-trace-id")), "")
		if data, _ := list["data"].([]any); len(data) == 1 {
			logID, _ = data[0].(map[string]any)["id"].(string)
		}
	}
	if logID == "" {
		t.Fatal("the chat request's log entry was not stored")
	}
	_, entry, _ := g.call(t, "GET", "/v1/logs/"+logID, "")
	route, _ := entry["route"].([]any)
	if len(route) == 0 {
		t.Errorf("GET /v1/logs/%s has no route: %v", logID, entry)
	}
	row := fmt.Sprintf(`#log-table tr[data-log-id=%q]`, logID)
	b.do("the request's row in the live log", chromedp.WaitVisible(chromedp.CSS(row)))
	b.screenshot("log")
	b.do("open the request's story", chromedp.Click(chromedp.CSS(row)), chromedp.WaitVisible(chromedp.CSS("#story")))
	b.waitUntil("a step in #story-route", fmt.Sprintf(`document.querySelectorAll("#story-route li").length >= %d`, max(1, len(route))))
	if steps := eval[[]string](b, "read #story-route", `[...document.querySelectorAll("#story-route li")].map(li => li.textContent)`); len(steps) != len(route) {
		t.Errorf("#story-route lists %d steps %q, the log entry's route has %d: %v", len(steps), steps, len(route), route)
	} else {
		for i, s := range route {
			if p, _ := s.(map[string]any)["provider"].(string); !strings.Contains(steps[i], p) {
				t.Errorf("#story-route step %d %q does not name its provider %q", i, steps[i], p)
			}
		}
	}
	b.screenshot("story")

	// Overview: the charts come from the stats endpoint.
	b.page("overview", "body")
	for deadline := time.Now().Add(stepTimeout); ; time.Sleep(20 * time.Millisecond) {
		b.mu.Lock()
		ok := b.statsOK
		b.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the overview did not get GET /v1/logs/stats answered 200%s", b.pageState())
		}
	}
	b.screenshot("overview")

	// Providers: one made in the form is listed, its key never shown.
	const secret = "sk-console-secret-9876"
	b.page("providers", "#provider-form")
	b.fill(`#provider-form [name="slug"]`, "console-made")
	b.fill(`#provider-form [name="provider"]`, "openai")
	b.fill(`#provider-form [name="api_key"]`, secret)
	b.fill(`#provider-form [name="custom_host"]`, g.upstream)
	b.submit("#provider-form")
	b.do("the new provider's row", chromedp.WaitVisible(chromedp.CSS(`#providers-table tr[data-slug="console-made"]`)))
	if shown := eval[string](b, "read the providers", `document.body.innerText + [...document.querySelectorAll("input")].map(i => i.value).join(" ")`); strings.Contains(shown, secret) {
		t.Errorf("the provider's key is shown after saving it")
	}
	if status, pr, _ := g.call(t, "GET", "/v1/providers/console-made", ""); status != 200 || pr["custom_host"] != g.upstream {
		t.Errorf("the provider made in the form: %d %v", status, pr)
	}
	b.screenshot("providers")

	// Configs: an invalid one shows the server's message naming the path; a valid one is listed.
	invalid := `{"strategy": {"mode": "sideways"}, "targets": [{"provider": "@mock"}]}`
	status, refusal, _ := g.call(t, "POST", "/v1/configs", `{"id": "probe", "config": `+invalid+`}`)
	apiErr, _ := refusal["error"].(map[string]any)
	message, _ := apiErr["message"].(string)
	if status != 400 || message == "" {
		t.Fatalf("the invalid config through the API: %d %v", status, refusal)
	}
	b.page("configs", "#config-form")
	b.fill(`#config-form [name="id"]`, "sideways")
	b.fill(`#config-form [name="config"]`, invalid)
	b.submit("#config-form")
	b.waitUntil("the server's message in #config-error", fmt.Sprintf(
		`(() => { const e = document.getElementById("config-error"); return !!e && e.textContent.includes(%q) })()`, message))
	b.screenshot("configs-invalid")
	b.fill(`#config-form [name="id"]`, "console-config")
	b.fill(`#config-form [name="config"]`, `{"provider": "@console-made"}`)
	b.submit("#config-form")
	b.do("the new config's row", chromedp.WaitVisible(chromedp.CSS(`#configs-table tr[data-config-id="console-config"]`)))
	b.screenshot("configs")

	// Plugins: a module uploaded in the form is loaded and listed.
	module := filepath.Join(t.TempDir(), "small.wasm")
	if err := os.WriteFile(module, []byte(smallWasm), 0o644); err != nil {
		t.Fatal(err)
	}
	b.page("plugins", "#plugin-form")
	b.fill(`#plugin-form [name="id"]`, "small")
	b.do("choose the .wasm file", chromedp.SetUploadFiles(chromedp.CSS(`#plugin-form input[name="file"]`), []string{module}))
	b.submit("#plugin-form")
	b.do("the uploaded plugin's row", chromedp.WaitVisible(chromedp.CSS(`#plugins-table tr[data-plugin-id="small"]`)))
	if status, pl, _ := g.call(t, "GET", "/v1/plugins/small", ""); status != 200 || pl["sha256"] == nil {
		t.Errorf("the plugin uploaded in the form: %d %v", status, pl)
	}
	b.screenshot("plugins")

	// The other pages load their lists without an error, a console message or a request elsewhere (the listeners).
	for _, pg := range []struct{ nav, shows string }{
		{"guardrails", "#guardrails-table"}, {"prompts", "#prompts-table"}, {"policies", "#page-policies"},
	} {
		b.page(pg.nav, pg.shows)
		b.screenshot(pg.nav)
	}

	// A rate-limit policy added in its form, then edited: the edit form is the policy as read, sent back changed.
	b.fill(`#rate-limit-form [name="policy"]`, `{"type":"requests","unit":"rpm","value":60,"name":"console","group_by":[{"key":"api_key"}]}`)
	b.submit("#rate-limit-form")
	b.do("the added policy's row", chromedp.WaitVisible(chromedp.CSS(`#rate-limits-table tr[data-policy-id]`)))
	policyID := eval[string](b, "the policy's id", `document.querySelector('#rate-limits-table tr[data-policy-id]').dataset.policyId`)
	b.do("edit the policy", chromedp.Click(chromedp.CSS(`#rate-limits-table tr[data-policy-id] button[aria-label^="Edit"]`)))
	edited := eval[string](b, "the policy in the edit form", `(() => { const e = document.querySelector('#rate-limit-form [name="policy"]');
		const p = JSON.parse(e.value); p.value = 99; return JSON.stringify(p) })()`)
	b.fill(`#rate-limit-form [name="policy"]`, edited)
	b.submit("#rate-limit-form")
	b.do("the edited policy's row", chromedp.WaitVisible(chromedp.CSS(`#rate-limits-table tr[data-policy-id] td.nowrap`)))
	ok := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(50 * time.Millisecond) {
		status, pol, _ := g.call(t, "GET", "/v1/policies/rate-limits/"+policyID, "")
		ok = status == 200 && pol["value"] == 99.0
	}
	if !ok {
		t.Errorf("the policy edited in the form was not saved with value 99%s", b.pageState())
	}
	b.screenshot("policies-edited")

	// A phone: the log page fits the width, and the nav still reaches every page.
	b.do("a 390x844 phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	navVisible := func(nav string) bool {
		return eval[bool](b, "is the "+nav+" link visible", fmt.Sprintf(`(() => { const a = document.querySelector('a[data-nav=%q]');
			if (!a) return false; const r = a.getBoundingClientRect(), s = getComputedStyle(a);
			return r.width > 0 && r.height > 0 && s.visibility !== "hidden" })()`, nav))
	}
	// openMenu shows the nav when a phone layout folds it behind a button that controls it.
	openMenu := func() {
		b.do("open the menu", chromedp.Click(chromedp.CSS(`button[aria-controls], button[aria-expanded], [role=button][aria-expanded]`)))
	}
	if !navVisible("log") {
		openMenu()
	}
	b.page("log", "#log-table")
	// A phone's browser widens the layout to content that does not fit, so innerWidth grows past the screen's
	// 390 px as well as scrollWidth past innerWidth.
	width := eval[map[string]any](b, "measure the page", `({scroll: document.documentElement.scrollWidth, inner: innerWidth,
		viewport: !!document.querySelector('meta[name="viewport"][content*="width=device-width"]')})`)
	if width["viewport"] != true {
		t.Error("the console has no <meta name=viewport content=width=device-width>: phones lay it out 980 px wide")
	}
	if scroll, inner := width["scroll"].(float64), width["inner"].(float64); scroll > inner || inner > 390 {
		t.Errorf("the log page does not fit a 390 px phone: %v px of content, a layout %v px wide", scroll, inner)
	}
	b.screenshot("log-phone")
	if !navVisible("providers") {
		openMenu()
	}
	b.page("providers", "#provider-form")
}
