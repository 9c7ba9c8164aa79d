package routes

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The admin API of stored providers and saved configs, through the whole gateway.

// adminJSON sends a JSON admin request with key.
func (f *fixture) adminJSON(t *testing.T, method, path, key, body string) answer {
	t.Helper()
	return f.do(t, method, path, body, HeaderAPIKey, key, "Content-Type", "application/json")
}

// okJSON asserts a 200 and returns the answer's object.
func okJSON(t *testing.T, a answer) map[string]any {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	return a.json(t)
}

// namedUpstream answers every chat call with a completion whose content is name, so that a test sees which
// upstream a request reached.
func namedUpstream(t *testing.T, name string) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.Replace(chatAnswer, `"Hello!"`, `"`+name+`"`, 1))
	})
}

func chatContent(t *testing.T, a answer) string {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("chat: %d %s", a.status, a.body)
	}
	return a.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

func TestProvidersAdminCRUD(t *testing.T) {
	f := newFixture(t, Options{})
	const secret = "sk-secret-upstream-key-7f3a"
	up := namedUpstream(t, "one")
	body := fmt.Sprintf(`{"slug": "main", "provider": "openai", "name": "Main", "api_key": %q, "custom_host": %q}`, secret, up.URL)
	var answers []answer
	record := func(a answer) answer { answers = append(answers, a); return a }

	// Non-admin keys are refused on every operation.
	for _, m := range [][2]string{{"GET", "/v1/providers"}, {"POST", "/v1/providers"}, {"GET", "/v1/providers/main"},
		{"PUT", "/v1/providers/main"}, {"DELETE", "/v1/providers/main"}, {"GET", "/v1/virtual-keys"}} {
		checkError(t, f.adminJSON(t, m[0], m[1], f.plain, body), 403, "forbidden", nil)
	}

	created := okJSON(t, record(f.adminJSON(t, "POST", "/v1/providers", f.admin, body)))
	if created["slug"] != "main" || created["provider"] != "openai" || created["name"] != "Main" || created["api_key"] != "…7f3a" ||
		created["object"] != "provider" || created["workspace_id"] != f.ws.ID {
		t.Errorf("created %v", created)
	}
	checkError(t, record(f.adminJSON(t, "POST", "/v1/providers", f.admin, body)), 409, "conflict", nil)

	// The next chat request uses it, with its key.
	if got := chatContent(t, f.chat(t, chatBody, HeaderVirtualKey, "main")); got != "one" {
		t.Errorf("chat reached %q", got)
	}
	if r, _ := up.lastRequest(); r.Header.Get("Authorization") != "Bearer "+secret {
		t.Errorf("upstream auth %q", r.Header.Get("Authorization"))
	}

	// Read through both paths; another workspace sees nothing.
	for _, base := range []string{"/v1/providers", "/v1/virtual-keys"} {
		got := okJSON(t, record(f.do(t, "GET", base+"/main", "", HeaderAPIKey, f.admin)))
		if got["slug"] != "main" || got["api_key"] != "…7f3a" {
			t.Errorf("%s: %v", base, got)
		}
	}
	checkError(t, f.do(t, "GET", "/v1/providers/main", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.adminJSON(t, "PUT", "/v1/providers/main", f.otherKey, body), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/providers/main", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	if l := okJSON(t, f.do(t, "GET", "/v1/providers", "", HeaderAPIKey, f.otherKey)); len(l["data"].([]any)) != 0 {
		t.Errorf("other workspace lists %v", l)
	}

	// Replace: a new upstream applies to the next request. The masked key sent back keeps the stored one.
	up2 := namedUpstream(t, "two")
	replaced := okJSON(t, record(f.adminJSON(t, "PUT", "/v1/providers/main", f.admin,
		fmt.Sprintf(`{"provider": "openai", "api_key": "…7f3a", "custom_host": %q}`, up2.URL))))
	if replaced["api_key"] != "…7f3a" || replaced["name"] != nil {
		t.Errorf("replaced %v", replaced)
	}
	if got := chatContent(t, f.chat(t, chatBody, HeaderVirtualKey, "main")); got != "two" {
		t.Errorf("after PUT chat reached %q", got)
	}
	if r, _ := up2.lastRequest(); r.Header.Get("Authorization") != "Bearer "+secret {
		t.Errorf("upstream auth after PUT %q", r.Header.Get("Authorization"))
	}
	checkError(t, f.adminJSON(t, "PUT", "/v1/providers/main", f.admin, `{"slug": "other", "provider": "openai", "api_key": "k"}`), 400, "invalid_request", "slug")
	checkError(t, f.adminJSON(t, "PUT", "/v1/providers/nope", f.admin, `{"provider": "openai", "api_key": "k"}`), 404, "not_found", nil)

	// List pages by slug.
	for _, s := range []string{"b", "c", "a"} {
		okJSON(t, record(f.adminJSON(t, "POST", "/v1/virtual-keys", f.admin, `{"slug": "`+s+`", "provider": "anthropic", "api_key": "sk-ant-0123456789"}`)))
	}
	page := okJSON(t, record(f.do(t, "GET", "/v1/providers?limit=2", "", HeaderAPIKey, f.admin)))
	if slugs := listSlugs(page, "slug"); slugs != "a,b" || page["has_more"] != true || page["object"] != "list" {
		t.Errorf("page 1: %s %v", slugs, page["has_more"])
	}
	page = okJSON(t, record(f.do(t, "GET", "/v1/providers?limit=2&after=b", "", HeaderAPIKey, f.admin)))
	if slugs := listSlugs(page, "slug"); slugs != "c,main" || page["has_more"] != false {
		t.Errorf("page 2: %s %v", slugs, page["has_more"])
	}
	for _, q := range []string{"0", "101", "x"} {
		checkError(t, f.do(t, "GET", "/v1/providers?limit="+q, "", HeaderAPIKey, f.admin), 400, "invalid_request", "limit")
	}

	// Delete: the slug is unknown to the next request.
	okJSON(t, f.do(t, "DELETE", "/v1/providers/main", "", HeaderAPIKey, f.admin))
	checkError(t, f.chat(t, chatBody, HeaderVirtualKey, "main"), 404, "not_found", HeaderVirtualKey)
	checkError(t, f.do(t, "GET", "/v1/providers/main", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/providers/main", "", HeaderAPIKey, f.admin), 404, "not_found", nil)

	for _, a := range answers {
		if strings.Contains(string(a.body), secret) || strings.Contains(string(a.body), "sk-ant-0123456789") {
			t.Fatalf("a secret in an answer: %s", a.body)
		}
	}
}

func listSlugs(page map[string]any, key string) string {
	var out []string
	for _, x := range page["data"].([]any) {
		out = append(out, fmt.Sprint(x.(map[string]any)[key]))
	}
	return strings.Join(out, ",")
}

func TestProvidersAdminSecretsMasked(t *testing.T) {
	f := newFixture(t, Options{})
	const access, secretKey = "AKIDEXAMPLESECRET1", "wJalrXUtnFEMIK7MDENGbPxRfiCYsecretkey"
	a := f.adminJSON(t, "POST", "/v1/providers", f.admin, `{"slug": "aws", "provider": "bedrock", "cloudz_access_key_id": "`+access+
		`", "cloudz_secret_access_key": "`+secretKey+`", "cloudz_region": "us-east-1", "custom_host": "http://user:hostpass@127.0.0.1:9/"}`)
	got := okJSON(t, a)
	if got["cloudz_secret_access_key"] != "…tkey" || got["cloudz_access_key_id"] != "…RET1" || got["cloudz_region"] != "us-east-1" {
		t.Errorf("view %v", got)
	}
	for _, b := range []answer{a, f.do(t, "GET", "/v1/providers/aws", "", HeaderAPIKey, f.admin), f.do(t, "GET", "/v1/providers", "", HeaderAPIKey, f.admin)} {
		for _, s := range []string{access, secretKey, "hostpass"} {
			if strings.Contains(string(b.body), s) {
				t.Errorf("%q in %s", s, b.body)
			}
		}
	}
}

func TestProvidersAdminValidation(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct{ body, param string }{
		{`{"provider": "openai", "api_key": "k"}`, "slug"},
		{`{"slug": "bad slug", "provider": "openai", "api_key": "k"}`, "slug"},
		{`{"slug": "x", "provider": "nope", "api_key": "k"}`, "provider"},
		{`{"slug": "x", "provider": "openai"}`, "api_key"},
		{`{"slug": "x", "provider": "openai", "api_key": 3}`, "api_key"},
		{`{"slug": "x", "provider": "openai", "api_key": "k", "custom_host": "ftp://h"}`, "custom_host"},
		{`{"slug": "x", "provider": "openai", "api_key": "k", "workspace": "default"}`, "workspace"},
		{`{"slug": "x", "provider": "openai", "api_key": "k", "nonsense": 1}`, "nonsense"},
	} {
		checkError(t, f.adminJSON(t, "POST", "/v1/providers", f.admin, tc.body), 400, "invalid_request", tc.param)
	}
	checkError(t, f.adminJSON(t, "POST", "/v1/providers", f.admin, `{"slug": `), 400, "invalid_json", nil)
	checkError(t, f.do(t, "POST", "/v1/providers", `{}`, HeaderAPIKey, f.admin), 415, "unsupported_media_type", "content-type")
}

func TestProviderDeleteWhileNamed(t *testing.T) {
	f := newFixture(t, Options{})
	okJSON(t, f.adminJSON(t, "POST", "/v1/providers", f.admin, `{"slug": "main", "provider": "openai", "api_key": "sk-main-0001"}`))
	okJSON(t, f.adminJSON(t, "POST", "/v1/providers", f.admin, `{"slug": "spare", "provider": "openai", "api_key": "sk-spare-0001"}`))
	okJSON(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "fb", "config": {"strategy": {"mode": "fallback"},
		"targets": [{"provider": "@spare"}, {"virtual_key": "main"}]}}`))
	f.newPrompt(t, f.admin, `{"id": "hello", "template": {"provider": "@spare", "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}}`)

	a := f.do(t, "DELETE", "/v1/providers/main", "", HeaderAPIKey, f.admin)
	checkError(t, a, 409, "conflict", nil)
	if !strings.Contains(string(a.body), `\"fb\"`) {
		t.Errorf("409 does not name the config: %s", a.body)
	}
	a = f.do(t, "DELETE", "/v1/providers/spare", "", HeaderAPIKey, f.admin)
	checkError(t, a, 409, "conflict", nil)
	if !strings.Contains(string(a.body), `\"fb\"`) || !strings.Contains(string(a.body), `prompt \"hello\" version 1`) {
		t.Errorf("409 does not name the config and the prompt: %s", a.body)
	}
	checkError(t, f.do(t, "DELETE", "/v1/providers/main?force=yes", "", HeaderAPIKey, f.admin), 400, "invalid_request", "force")
	okJSON(t, f.do(t, "DELETE", "/v1/providers/main?force=true", "", HeaderAPIKey, f.admin))
	checkError(t, f.do(t, "GET", "/v1/providers/main", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	// Once the config is gone, only the prompt holds spare.
	okJSON(t, f.do(t, "DELETE", "/v1/configs/fb", "", HeaderAPIKey, f.admin))
	checkError(t, f.do(t, "DELETE", "/v1/providers/spare", "", HeaderAPIKey, f.admin), 409, "conflict", nil)
}

func TestConfigsAdminCRUD(t *testing.T) {
	f := newFixture(t, Options{})
	one, two := namedUpstream(t, "one"), namedUpstream(t, "two")
	target := func(u *upstream) string {
		return fmt.Sprintf(`{"targets": [{"provider": "openai", "api_key": "sk-x", "custom_host": %q}], "strategy": {"mode": "fallback"}}`, u.URL)
	}
	for _, m := range [][2]string{{"GET", "/v1/configs"}, {"POST", "/v1/configs"}, {"GET", "/v1/configs/r"}, {"PUT", "/v1/configs/r"}, {"DELETE", "/v1/configs/r"}} {
		checkError(t, f.adminJSON(t, m[0], m[1], f.plain, `{"id": "r", "config": `+target(one)+`}`), 403, "forbidden", nil)
	}
	created := okJSON(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "r", "config": `+target(one)+`}`))
	if created["id"] != "r" || created["object"] != "config" || created["workspace_id"] != f.ws.ID || created["config"] == nil {
		t.Errorf("created %v", created)
	}
	checkError(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "r", "config": `+target(one)+`}`), 409, "conflict", nil)
	if got := chatContent(t, f.chat(t, chatBody, HeaderConfig, "r")); got != "one" {
		t.Errorf("chat reached %q", got)
	}
	// Replaced: the next request follows the new config.
	okJSON(t, f.adminJSON(t, "PUT", "/v1/configs/r", f.admin, `{"config": `+target(two)+`}`))
	if got := chatContent(t, f.chat(t, chatBody, HeaderConfig, "r")); got != "two" {
		t.Errorf("after PUT chat reached %q", got)
	}
	got := okJSON(t, f.do(t, "GET", "/v1/configs/r", "", HeaderAPIKey, f.admin))
	if !strings.Contains(fmt.Sprint(got["config"]), two.URL) {
		t.Errorf("GET %v", got)
	}
	// Another workspace's config is unknown.
	checkError(t, f.do(t, "GET", "/v1/configs/r", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.adminJSON(t, "PUT", "/v1/configs/r", f.otherKey, `{"config": `+target(one)+`}`), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/configs/r", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)

	// Validation as a header's, naming the path.
	checkError(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "bad", "config": {"targets": [{"provider": "openai", "api_key": "k"}], "retry": {"attempts": "x"}}}`),
		400, "invalid_config", "config.retry.attempts")
	checkError(t, f.adminJSON(t, "PUT", "/v1/configs/r", f.admin, `{"config": {"strategy": {"mode": "fallback"}, "targets": [{"provider": "openai", "api_key": "k"}, {"provider": "nope"}]}}`),
		400, "invalid_config", "config.targets[1].provider")
	checkError(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "bad id", "config": {}}`), 400, "invalid_request", "id")
	checkError(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "x", "config": []}`), 400, "invalid_request", "config")
	checkError(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "x"}`), 400, "invalid_request", "config")
	checkError(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "x", "config": {}, "extra": 1}`), 400, "invalid_request", "extra")

	// Pages by ID.
	for _, id := range []string{"a", "b"} {
		okJSON(t, f.adminJSON(t, "POST", "/v1/configs", f.admin, `{"id": "`+id+`", "config": `+target(one)+`}`))
	}
	page := okJSON(t, f.do(t, "GET", "/v1/configs?limit=2", "", HeaderAPIKey, f.admin))
	if ids := listSlugs(page, "id"); ids != "a,b" || page["has_more"] != true {
		t.Errorf("page 1: %s %v", ids, page["has_more"])
	}
	page = okJSON(t, f.do(t, "GET", "/v1/configs?after=b", "", HeaderAPIKey, f.admin))
	if ids := listSlugs(page, "id"); ids != "r" || page["has_more"] != false {
		t.Errorf("page 2: %s %v", ids, page["has_more"])
	}

	// Deleted: unknown to the next request.
	okJSON(t, f.do(t, "DELETE", "/v1/configs/r", "", HeaderAPIKey, f.admin))
	checkError(t, f.chat(t, chatBody, HeaderConfig, "r"), 404, "not_found", HeaderConfig)
	checkError(t, f.do(t, "DELETE", "/v1/configs/r", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
}
