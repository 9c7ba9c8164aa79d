package routes

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

const promptsPath = "/v1/prompts"

// A template that every check accepts, and its text as the view shows it (compacted).
const (
	promptTemplateOK = `{"provider": "@mock-openai", "model": "m", "messages": [{"role": "user", "content": "Hi {{name}}"}], "temperature": 0.2}`
	promptTemplateV2 = `{"model": "m", "messages": [{"role": "system", "content": "v2"}, {"role": "user", "content": "{{q}}"}]}`
)

// promptJSON sends a JSON body with key.
func (f *fixture) promptJSON(t *testing.T, method, path, key, body string) answer {
	t.Helper()
	return f.do(t, method, path, body, HeaderAPIKey, key, "Content-Type", "application/json")
}

// newPrompt creates a prompt with key and returns its view.
func (f *fixture) newPrompt(t *testing.T, key, body string) map[string]any {
	t.Helper()
	a := f.promptJSON(t, "POST", promptsPath, key, body)
	if a.status != 200 {
		t.Fatalf("POST %s %s: %d %s", promptsPath, body, a.status, a.body)
	}
	p := a.json(t)
	checkPromptShape(t, p, true)
	return p
}

// addVersion adds a version with key and returns the prompt's view.
func (f *fixture) addVersion(t *testing.T, key, id, body string) map[string]any {
	t.Helper()
	a := f.promptJSON(t, "POST", promptsPath+"/"+id+"/versions", key, body)
	if a.status != 200 {
		t.Fatalf("POST versions of %s %s: %d %s", id, body, a.status, a.body)
	}
	p := a.json(t)
	checkPromptShape(t, p, true)
	return p
}

// getPromptView reads a prompt with key.
func (f *fixture) getPromptView(t *testing.T, key, id string) map[string]any {
	t.Helper()
	a := f.do(t, "GET", promptsPath+"/"+id, "", HeaderAPIKey, key)
	if a.status != 200 {
		t.Fatalf("GET %s: %d %s", id, a.status, a.body)
	}
	p := a.json(t)
	checkPromptShape(t, p, true)
	return p
}

// checkPromptShape asserts the fields of a prompt summary, or of a prompt view (withVersions), and only those,
// and that the published and latest versions agree with the versions listed.
func checkPromptShape(t *testing.T, p map[string]any, withVersions bool) {
	t.Helper()
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"created_at", "id", "latest_version", "name", "object", "published_version", "updated_at", "workspace_id"}
	if withVersions {
		want = append(want, "versions")
		sort.Strings(want)
	}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("prompt keys = %v, want %v", keys, want)
	}
	if p["object"] != "prompt" {
		t.Errorf("object = %v", p["object"])
	}
	if _, ok := p["name"].(string); !ok && p["name"] != nil {
		t.Errorf("name = %v, want a string or null", p["name"])
	}
	for _, k := range []string{"created_at", "updated_at"} {
		s, _ := p[k].(string)
		if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %v, want an RFC 3339 UTC time", k, p[k])
		}
	}
	latest, ok := p["latest_version"].(float64)
	if !ok || latest < 1 {
		t.Errorf("latest_version = %v, want an integer >= 1", p["latest_version"])
	}
	if pv := p["published_version"]; pv != nil {
		if n, ok := pv.(float64); !ok || n < 1 || n > latest {
			t.Errorf("published_version = %v, want null or a version number up to %v", pv, latest)
		}
	}
	if !withVersions {
		return
	}
	versions, ok := p["versions"].([]any)
	if !ok || len(versions) == 0 {
		t.Fatalf("versions = %v, want a non-empty array", p["versions"])
	}
	var published []any
	for i, item := range versions {
		v := item.(map[string]any)
		var vk []string
		for k := range v {
			vk = append(vk, k)
		}
		sort.Strings(vk)
		if !reflect.DeepEqual(vk, []string{"published", "template", "version"}) {
			t.Errorf("versions[%d] keys = %v", i, vk)
		}
		if v["version"] != float64(i+1) {
			t.Errorf("versions[%d].version = %v, want %d", i, v["version"], i+1)
		}
		if _, ok := v["template"].(map[string]any); !ok {
			t.Errorf("versions[%d].template = %v, want an object", i, v["template"])
		}
		if v["published"] == true {
			published = append(published, v["version"])
		}
	}
	if len(published) > 1 {
		t.Errorf("versions %v are published at once", published)
	}
	if len(published) == 1 && p["published_version"] != published[0] || len(published) == 0 && p["published_version"] != nil {
		t.Errorf("published_version = %v, but the published versions are %v", p["published_version"], published)
	}
	if p["latest_version"] != float64(len(versions)) {
		t.Errorf("latest_version = %v with %d versions", p["latest_version"], len(versions))
	}
}

// publishedVersions returns the numbers of a view's published versions.
func publishedVersions(p map[string]any) []int {
	var out []int
	for _, item := range p["versions"].([]any) {
		v := item.(map[string]any)
		if v["published"] == true {
			out = append(out, int(v["version"].(float64)))
		}
	}
	return out
}

// listPromptIDs lists with key and returns the ids in order and the total.
func (f *fixture) listPromptIDs(t *testing.T, key string) (ids []string, total float64) {
	t.Helper()
	a := f.do(t, "GET", promptsPath, "", HeaderAPIKey, key)
	if a.status != 200 {
		t.Fatalf("GET %s: %d %s", promptsPath, a.status, a.body)
	}
	m := a.json(t)
	if m["object"] != "list" {
		t.Fatalf("list object = %v", m["object"])
	}
	if len(m) != 3 {
		t.Errorf("list keys = %v, want object, data, total", m)
	}
	for _, item := range m["data"].([]any) {
		p := item.(map[string]any)
		checkPromptShape(t, p, false)
		ids = append(ids, p["id"].(string))
	}
	total, _ = m["total"].(float64)
	return ids, total
}

// sameJSONText reports whether two JSON texts hold the same value.
func sameJSONText(t *testing.T, a any, b string) bool {
	t.Helper()
	var y any
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(a, y)
}

func TestPromptLifecycle(t *testing.T) {
	f := newFixture(t, Options{})

	created := f.newPrompt(t, f.admin, `{"id": "welcome", "name": "Welcome", "template": `+promptTemplateOK+`}`)
	want := map[string]any{"id": "welcome", "object": "prompt", "name": "Welcome", "workspace_id": f.ws.ID,
		"published_version": 1.0, "latest_version": 1.0}
	for k, v := range want {
		if created[k] != v {
			t.Errorf("created %s = %v, want %v", k, created[k], v)
		}
	}
	v1 := created["versions"].([]any)[0].(map[string]any)
	if v1["version"] != 1.0 || v1["published"] != true || !sameJSONText(t, v1["template"], promptTemplateOK) {
		t.Fatalf("version 1 = %v", v1)
	}
	if got := f.getPromptView(t, f.admin, "welcome"); !reflect.DeepEqual(got, created) {
		t.Fatalf("get = %v, want %v", got, created)
	}

	t.Run("list", func(t *testing.T) {
		f.newPrompt(t, f.admin, `{"id": "Zeta", "template": `+promptTemplateV2+`}`)
		f.newPrompt(t, f.admin, `{"id": "alpha.1", "template": `+promptTemplateV2+`}`)
		f.newPrompt(t, f.otherKey, `{"id": "theirs", "template": `+promptTemplateV2+`}`) // never listed here
		for _, key := range []string{f.admin, f.plain} {
			ids, total := f.listPromptIDs(t, key)
			if want := []string{"Zeta", "alpha.1", "welcome"}; !reflect.DeepEqual(ids, want) || total != 3 {
				t.Fatalf("ids = %v (total %v), want %v by id", ids, total, want)
			}
		}
		a := f.do(t, "GET", promptsPath, "", HeaderAPIKey, f.plain)
		var list struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(a.body, &list); err != nil {
			t.Fatal(err)
		}
		w := list.Data[2]
		if w["name"] != "Welcome" || w["published_version"] != 1.0 || w["latest_version"] != 1.0 || w["created_at"] != created["created_at"] {
			t.Fatalf("summary of welcome = %v", w)
		}
		if list.Data[0]["name"] != nil {
			t.Errorf("a prompt without a name shows name %v, want null", list.Data[0]["name"])
		}
		if ids, total := f.listPromptIDs(t, f.otherKey); !reflect.DeepEqual(ids, []string{"theirs"}) || total != 1 {
			t.Fatalf("the other workspace lists %v (total %v)", ids, total)
		}
	})

	t.Run("versions", func(t *testing.T) {
		p := f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateV2+`}`)
		if p["latest_version"] != 2.0 || p["published_version"] != 1.0 || !slices.Equal(publishedVersions(p), []int{1}) {
			t.Fatalf("after an unpublished version 2: %v", p)
		}
		if v := p["versions"].([]any)[1].(map[string]any); !sameJSONText(t, v["template"], promptTemplateV2) || v["published"] != false {
			t.Fatalf("version 2 = %v", v)
		}
		p = f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateOK+`, "publish": true}`)
		if p["latest_version"] != 3.0 || p["published_version"] != 3.0 || !slices.Equal(publishedVersions(p), []int{3}) {
			t.Fatalf("after a published version 3: %v", p)
		}
		p = f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateV2+`, "publish": false}`)
		if p["latest_version"] != 4.0 || p["published_version"] != 3.0 {
			t.Fatalf("after version 4 with publish false: %v", p)
		}
		p = f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateV2+`, "publish": null}`)
		if p["latest_version"] != 5.0 || p["published_version"] != 3.0 {
			t.Fatalf("after version 5 with publish null: %v", p)
		}
		if got := f.getPromptView(t, f.plain, "welcome"); !reflect.DeepEqual(got, p) {
			t.Fatalf("get = %v, want %v", got, p)
		}
		if p["created_at"] != created["created_at"] {
			t.Errorf("created_at moved: %v, was %v", p["created_at"], created["created_at"])
		}
	})

	t.Run("publish", func(t *testing.T) {
		for _, tc := range []struct {
			version string
			body    string
			headers []string
		}{
			{"2", "", nil}, // no body, no content type
			{"1", "{}", []string{"Content-Type", "application/json"}}, // an empty object
			{"1", "", []string{"Content-Type", "application/json"}},   // publishing the published one again
			{"5", " \n", []string{"Content-Type", "text/plain"}},      // blank is no body
			{"3", `{ }`, []string{"Content-Type", "application/json; charset=utf-8"}},
		} {
			a := f.do(t, "POST", promptsPath+"/welcome/versions/"+tc.version+"/publish", tc.body, append([]string{HeaderAPIKey, f.admin}, tc.headers...)...)
			if a.status != 200 {
				t.Fatalf("publish %s: %d %s", tc.version, a.status, a.body)
			}
			p := a.json(t)
			checkPromptShape(t, p, true)
			if fmt.Sprint(p["published_version"]) != tc.version {
				t.Fatalf("publish %s: published_version = %v", tc.version, p["published_version"])
			}
			if pv := publishedVersions(p); len(pv) != 1 || fmt.Sprint(pv[0]) != tc.version {
				t.Fatalf("publish %s: published versions %v", tc.version, pv)
			}
			if p["latest_version"] != 5.0 {
				t.Fatalf("publishing made a version: %v", p)
			}
		}
		// Publishing adds no version: the next one is still latest + 1.
		if p := f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateV2+`}`); p["latest_version"] != 6.0 || p["published_version"] != 3.0 {
			t.Fatalf("after publish and a new version: %v", p)
		}
	})

	t.Run("delete", func(t *testing.T) {
		a := f.do(t, "DELETE", promptsPath+"/welcome", "", HeaderAPIKey, f.admin)
		if a.status != 200 || !reflect.DeepEqual(a.json(t), map[string]any{"id": "welcome", "object": "prompt", "deleted": true}) {
			t.Fatalf("delete: %d %s", a.status, a.body)
		}
		checkError(t, f.do(t, "GET", promptsPath+"/welcome", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.do(t, "DELETE", promptsPath+"/welcome", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.promptJSON(t, "POST", promptsPath+"/welcome/versions", f.admin, `{"template": `+promptTemplateV2+`}`), 404, "not_found", nil)
		checkError(t, f.do(t, "POST", promptsPath+"/welcome/versions/1/publish", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		if ids, _ := f.listPromptIDs(t, f.plain); slices.Contains(ids, "welcome") {
			t.Fatalf("the list still shows the deleted prompt: %v", ids)
		}
		// Its id is free again, and numbering starts over with the new prompt.
		p := f.newPrompt(t, f.admin, `{"id": "welcome", "template": `+promptTemplateV2+`}`)
		if p["latest_version"] != 1.0 || p["published_version"] != 1.0 || p["name"] != nil {
			t.Fatalf("recreated: %v", p)
		}
	})
}

func TestPromptIDsAreUniqueWithinAWorkspace(t *testing.T) {
	f := newFixture(t, Options{})
	f.newPrompt(t, f.admin, `{"id": "welcome", "template": `+promptTemplateOK+`}`)
	a := f.promptJSON(t, "POST", promptsPath, f.admin, `{"id": "welcome", "name": "again", "template": `+promptTemplateV2+`}`)
	checkError(t, a, 409, "conflict", "id")
	if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, `"welcome"`) {
		t.Errorf("message %q does not name the id", msg)
	}
	// The refused create changed nothing.
	if p := f.getPromptView(t, f.admin, "welcome"); p["latest_version"] != 1.0 || p["name"] != nil {
		t.Fatalf("after a refused duplicate: %v", p)
	}
	// Another workspace has its own "welcome".
	theirs := f.newPrompt(t, f.otherKey, `{"id": "welcome", "template": `+promptTemplateV2+`}`)
	if theirs["workspace_id"] != f.other.ID {
		t.Fatalf("their prompt: %v", theirs)
	}
	f.addVersion(t, f.otherKey, "welcome", `{"template": `+promptTemplateV2+`}`)
	if p := f.getPromptView(t, f.admin, "welcome"); p["latest_version"] != 1.0 || !sameJSONText(t, p["versions"].([]any)[0].(map[string]any)["template"], promptTemplateOK) {
		t.Fatalf("the other workspace's writes reached this one: %v", p)
	}
	// Ids are case-sensitive identifiers: another spelling is another prompt.
	f.newPrompt(t, f.admin, `{"id": "Welcome", "template": `+promptTemplateOK+`}`)
}

func TestPromptOfAnotherWorkspaceIsNotFound(t *testing.T) {
	f := newFixture(t, Options{})
	f.newPrompt(t, f.admin, `{"id": "welcome", "template": `+promptTemplateOK+`}`)
	f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateV2+`}`)
	before := f.getPromptView(t, f.admin, "welcome")

	checkError(t, f.do(t, "GET", promptsPath+"/welcome", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.promptJSON(t, "POST", promptsPath+"/welcome/versions", f.otherKey, `{"template": `+promptTemplateV2+`, "publish": true}`), 404, "not_found", nil)
	checkError(t, f.do(t, "POST", promptsPath+"/welcome/versions/2/publish", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", promptsPath+"/welcome", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	if ids, _ := f.listPromptIDs(t, f.otherKey); len(ids) != 0 {
		t.Fatalf("the other workspace lists %v", ids)
	}
	if after := f.getPromptView(t, f.admin, "welcome"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the other workspace changed the prompt: %v, was %v", after, before)
	}
}

func TestPromptNotFound(t *testing.T) {
	f := newFixture(t, Options{})
	f.newPrompt(t, f.admin, `{"id": "welcome", "template": `+promptTemplateOK+`}`)
	for _, id := range []string{"nope", "welcome@latest", "welcome@1", "a%20b"} {
		checkError(t, f.do(t, "GET", promptsPath+"/"+id, "", HeaderAPIKey, f.plain), 404, "not_found", nil)
		checkError(t, f.promptJSON(t, "POST", promptsPath+"/"+id+"/versions", f.admin, `{"template": `+promptTemplateV2+`}`), 404, "not_found", nil)
		checkError(t, f.do(t, "POST", promptsPath+"/"+id+"/versions/1/publish", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.do(t, "DELETE", promptsPath+"/"+id, "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	}
	// An unknown version of a known prompt.
	for _, v := range []string{"2", "99", "2147483647"} {
		a := f.do(t, "POST", promptsPath+"/welcome/versions/"+v+"/publish", "", HeaderAPIKey, f.admin)
		checkError(t, a, 404, "not_found", nil)
		if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "version "+v) {
			t.Errorf("message %q does not name version %s", msg, v)
		}
	}
	if p := f.getPromptView(t, f.admin, "welcome"); !slices.Equal(publishedVersions(p), []int{1}) {
		t.Fatalf("after refused publishes: %v", p)
	}
}

func TestPromptValidation(t *testing.T) {
	f := newFixture(t, Options{})
	const tmpl = `"template": ` + promptTemplateOK
	tests := []struct {
		name, body string
		code       string
		param      any
		message    string // part of the error's message
	}{
		{"id missing", `{` + tmpl + `}`, "invalid_request", "id", "id is required"},
		{"id null", `{"id": null, ` + tmpl + `}`, "invalid_request", "id", "id is required"},
		{"id empty", `{"id": "", ` + tmpl + `}`, "invalid_request", "id", "id is required"},
		{"id a number", `{"id": 7, ` + tmpl + `}`, "invalid_request", "id", "id must be a string, not number"},
		{"id with a slash", `{"id": "a/b", ` + tmpl + `}`, "invalid_request", "id", "not a valid identifier"},
		{"id with an @", `{"id": "welcome@latest", ` + tmpl + `}`, "invalid_request", "id", "not a valid identifier"},
		{"id too long", `{"id": "` + strings.Repeat("a", 129) + `", ` + tmpl + `}`, "invalid_request", "id", "not a valid identifier"},
		{"name a number", `{"id": "p", "name": 1, ` + tmpl + `}`, "invalid_request", "name", "name must be a string, not number"},
		{"template missing", `{"id": "p"}`, "invalid_request", "template", "template is required"},
		{"template null", `{"id": "p", "template": null}`, "invalid_request", "template", "template is required"},
		{"template a string", `{"id": "p", "template": "Hi {{name}}"}`, "invalid_request", "template", "template: must be an object, not string"},
		{"messages missing", `{"id": "p", "template": {"model": "m"}}`, "invalid_request", "template.messages", "template.messages: is required"},
		{"messages empty", `{"id": "p", "template": {"messages": []}}`, "invalid_request", "template.messages", "template.messages: must hold at least one message"},
		{"content missing", `{"id": "p", "template": {"messages": [{"role": "user"}]}}`, "invalid_request", "template.messages[0].content", "template.messages[0].content: is required"},
		{"content a number", `{"id": "p", "template": {"messages": [{"role": "user", "content": 1}]}}`, "invalid_request", "template.messages[0].content", "string or an array of parts"},
		{"role missing", `{"id": "p", "template": {"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}}`, "invalid_request", "template.messages[1].role", "template.messages[1].role: is required"},
		{"model a number", `{"id": "p", "template": {"model": 1, "messages": [{"role": "user", "content": "a"}]}}`, "invalid_request", "template.model", "must be a string"},
		{"virtual_key a number", `{"id": "p", "template": {"virtual_key": 1, "messages": [{"role": "user", "content": "a"}]}}`, "invalid_request", "template.virtual_key", "must be a string"},
		{"config an object", `{"id": "p", "template": {"config": {}, "messages": [{"role": "user", "content": "a"}]}}`, "invalid_request", "template.config", "must be a string"},
		{"provider and virtual_key", `{"id": "p", "template": {"provider": "@x", "virtual_key": "x", "messages": [{"role": "user", "content": "a"}]}}`, "invalid_request", "template.virtual_key", "cannot be set together with provider"},
		{"virtual_key and config", `{"id": "p", "template": {"virtual_key": "x", "config": "c", "messages": [{"role": "user", "content": "a"}]}}`, "invalid_request", "template.config", "cannot be set together with virtual_key"},
		{"every problem is named", `{"id": "p", "template": {"model": 1}}`, "invalid_request", "template.messages", "; template.model: must be a string"},
		{"unknown field", `{"id": "p", ` + tmpl + `, "versions": []}`, "invalid_request", "versions", `unknown field "versions"`},
		{"workspace", `{"id": "p", ` + tmpl + `, "workspace": "other"}`, "invalid_request", "workspace", `unknown field "workspace"`},
		{"an array", `[1]`, "invalid_json", nil, "must be an object"},
		{"a string", `"p"`, "invalid_json", nil, "must be an object"},
		{"null", `null`, "invalid_json", nil, "not null"},
		{"empty", ``, "invalid_json", nil, "empty"},
		{"malformed", `{"id": `, "invalid_json", nil, "malformed JSON"},
		{"trailing data", `{"id": "p", ` + tmpl + `} {}`, "invalid_json", nil, "malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.promptJSON(t, "POST", promptsPath, f.admin, tc.body)
			checkError(t, a, 400, tc.code, tc.param)
			if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.message) {
				t.Fatalf("message %q does not say %q", msg, tc.message)
			}
		})
	}
	body := `{"id": "p", ` + tmpl + `}`
	checkError(t, f.do(t, "POST", promptsPath, body, HeaderAPIKey, f.admin), 415, "unsupported_media_type", "content-type")
	checkError(t, f.do(t, "POST", promptsPath, body, HeaderAPIKey, f.admin, "Content-Type", "text/plain"), 415, "unsupported_media_type", "content-type")
	if ids, _ := f.listPromptIDs(t, f.admin); len(ids) != 0 {
		t.Fatalf("a refused body stored a prompt: %v", ids)
	}

	t.Run("versions", func(t *testing.T) {
		f.newPrompt(t, f.admin, body)
		path := promptsPath + "/p/versions"
		for _, tc := range []struct {
			name, body string
			code       string
			param      any
		}{
			{"template missing", `{"publish": true}`, "invalid_request", "template"},
			{"messages missing", `{"template": {"model": "m"}}`, "invalid_request", "template.messages"},
			{"content missing", `{"template": {"messages": [{"role": "user"}]}}`, "invalid_request", "template.messages[0].content"},
			{"provider and config", `{"template": {"provider": "openai", "config": "c", "messages": [{"role": "user", "content": "a"}]}}`, "invalid_request", "template.config"},
			{"publish a string", `{` + tmpl + `, "publish": "yes"}`, "invalid_request", "publish"},
			{"unknown field", `{` + tmpl + `, "version": 7}`, "invalid_request", "version"},
			{"id is not a field", `{` + tmpl + `, "id": "p"}`, "invalid_request", "id"},
			{"an array", `[]`, "invalid_json", nil},
			{"null", `null`, "invalid_json", nil},
			{"empty", ``, "invalid_json", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				checkError(t, f.promptJSON(t, "POST", path, f.admin, tc.body), 400, tc.code, tc.param)
			})
		}
		checkError(t, f.do(t, "POST", path, `{`+tmpl+`}`, HeaderAPIKey, f.admin), 415, "unsupported_media_type", "content-type")
		if p := f.getPromptView(t, f.admin, "p"); p["latest_version"] != 1.0 {
			t.Fatalf("a refused version was stored: %v", p)
		}
	})

	t.Run("publish", func(t *testing.T) {
		for _, v := range []string{"0", "-1", "+1", "1.0", "one", "latest", "99999999999"} {
			checkError(t, f.do(t, "POST", promptsPath+"/p/versions/"+v+"/publish", "", HeaderAPIKey, f.admin), 400, "invalid_request", "version")
		}
		path := promptsPath + "/p/versions/1/publish"
		checkError(t, f.promptJSON(t, "POST", path, f.admin, `{"version": 2}`), 400, "invalid_request", "version")
		checkError(t, f.promptJSON(t, "POST", path, f.admin, `[]`), 400, "invalid_json", nil)
		checkError(t, f.promptJSON(t, "POST", path, f.admin, `null`), 400, "invalid_json", nil)
		checkError(t, f.do(t, "POST", path, `{}`, HeaderAPIKey, f.admin, "Content-Type", "text/plain"), 415, "unsupported_media_type", "content-type")
	})
}

func TestPromptWritesNeedAnAdminKey(t *testing.T) {
	f := newFixture(t, Options{})
	f.newPrompt(t, f.admin, `{"id": "welcome", "template": `+promptTemplateOK+`}`)
	f.addVersion(t, f.admin, "welcome", `{"template": `+promptTemplateV2+`}`)
	before := f.getPromptView(t, f.admin, "welcome")

	checkError(t, f.promptJSON(t, "POST", promptsPath, f.plain, `{"id": "mine", "template": `+promptTemplateOK+`}`), 403, "forbidden", nil)
	checkError(t, f.promptJSON(t, "POST", promptsPath+"/welcome/versions", f.plain, `{"template": `+promptTemplateV2+`, "publish": true}`), 403, "forbidden", nil)
	checkError(t, f.do(t, "POST", promptsPath+"/welcome/versions/2/publish", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)
	checkError(t, f.do(t, "DELETE", promptsPath+"/welcome", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)
	// Refused before the body, the id or the version is looked at.
	checkError(t, f.promptJSON(t, "POST", promptsPath, f.plain, `{"id": "a/b"}`), 403, "forbidden", nil)
	checkError(t, f.do(t, "POST", promptsPath+"/nope/versions", "x", HeaderAPIKey, f.plain), 403, "forbidden", nil)
	checkError(t, f.do(t, "POST", promptsPath+"/welcome/versions/zero/publish", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)
	checkError(t, f.do(t, "DELETE", promptsPath+"/nope", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)

	// Any key of the workspace reads.
	if ids, total := f.listPromptIDs(t, f.plain); !reflect.DeepEqual(ids, []string{"welcome"}) || total != 1 {
		t.Fatalf("plain list = %v (total %v)", ids, total)
	}
	if after := f.getPromptView(t, f.plain, "welcome"); !reflect.DeepEqual(after, before) {
		t.Fatalf("plain get = %v, want %v", after, before)
	}
	// And without a key, nothing.
	checkError(t, f.do(t, "GET", promptsPath, ""), 401, "missing_api_key", HeaderAPIKey)
	checkError(t, f.do(t, "GET", promptsPath+"/welcome", ""), 401, "missing_api_key", HeaderAPIKey)
	checkError(t, f.promptJSON(t, "POST", promptsPath, "", `{"id": "x", "template": `+promptTemplateOK+`}`), 401, "missing_api_key", HeaderAPIKey)
}

// Versions added at once all get their own number, and none is lost: the read-modify-write of the versions list
// is serialised.
func TestPromptConcurrentVersions(t *testing.T) {
	f := newFixture(t, Options{})
	f.newPrompt(t, f.admin, `{"id": "welcome", "template": `+promptTemplateOK+`}`)
	const n = 20
	latest := make([]int, n)
	errs := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"template": {"messages": [{"role": "user", "content": "writer %d"}]}, "publish": %t}`, i, i%3 == 0)
			// Not f.do: its t.Fatalf must not run outside the test's goroutine.
			req := httptest.NewRequest("POST", promptsPath+"/welcome/versions", strings.NewReader(body))
			req.Header.Set(HeaderAPIKey, f.admin)
			req.Header.Set("Content-Type", "application/json")
			resp, err := f.srv.Handler().Test(req, -1)
			if err != nil {
				errs <- fmt.Sprintf("writer %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				errs <- fmt.Sprintf("writer %d: %d %s", i, resp.StatusCode, b)
				return
			}
			var p struct {
				Latest int `json:"latest_version"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				errs <- err.Error()
				return
			}
			latest[i] = p.Latest
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
	// Each request made its own version: the numbers they were answered with are 2..n+1, each once.
	slices.Sort(latest)
	for i, v := range latest {
		if v != i+2 {
			t.Fatalf("the writers got latest versions %v, want 2..%d each once", latest, n+1)
		}
	}
	p := f.getPromptView(t, f.plain, "welcome")
	if p["latest_version"] != float64(n+1) {
		t.Fatalf("latest_version = %v, want %d", p["latest_version"], n+1)
	}
	if pv := publishedVersions(p); len(pv) != 1 {
		t.Fatalf("published versions %v, want exactly one", pv)
	}
	// Every writer's template is there, once.
	seen := map[string]int{}
	for _, item := range p["versions"].([]any)[1:] {
		content := item.(map[string]any)["template"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"].(string)
		seen[content]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("writer %d", i)]; c != 1 {
			t.Errorf("writer %d's template is there %d times", i, c)
		}
	}
}

// A prompt written by a bootstrap file (versions without a published one, a name) reads like one made over
// HTTP, and takes new versions after its own.
func TestPromptFromTheStore(t *testing.T) {
	f := newFixture(t, Options{})
	tmpl := json.RawMessage(`{"messages":[{"role":"user","content":"a"}]}`)
	if _, err := f.store.Prompts.Put(f.ws.ID, "boot", &storage.Prompt{ID: "boot", WorkspaceID: f.ws.ID, Name: "From the file",
		Versions: []storage.PromptVersion{{Version: 1, Template: tmpl}, {Version: 2, Template: tmpl}}}); err != nil {
		t.Fatal(err)
	}
	p := f.getPromptView(t, f.plain, "boot")
	if p["published_version"] != nil || p["latest_version"] != 2.0 || p["name"] != "From the file" {
		t.Fatalf("bootstrap prompt = %v", p)
	}
	if p := f.addVersion(t, f.admin, "boot", `{"template": `+promptTemplateV2+`}`); p["latest_version"] != 3.0 || p["published_version"] != nil {
		t.Fatalf("after a new version: %v", p)
	}
	a := f.do(t, "POST", promptsPath+"/boot/versions/2/publish", "", HeaderAPIKey, f.admin)
	if a.status != 200 || a.json(t)["published_version"] != 2.0 {
		t.Fatalf("publish 2: %d %s", a.status, a.body)
	}
}
