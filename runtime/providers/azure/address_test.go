package azure

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

const threeDeployments = `[
	{"deployment_id":"dep-mini","alias":"gpt-4o-mini","api_version":"2024-08-01-preview"},
	{"deployment_id":"dep-4o","alias":"gpt-4o","api_version":"2024-10-21","is_default":true},
	{"deployment_id":"dep-embed","alias":"text-embedding-3-small","api_version":"2024-06-01"}]`

func TestDeploymentSelection(t *testing.T) {
	tests := []struct {
		name        string
		fields      string
		headers     map[string]string
		body        string
		wantID, ver string
	}{
		{"alias equals the body's model", `{"deployments":` + threeDeployments + `}`, nil,
			`{"model":"gpt-4o-mini"}`, "dep-mini", "2024-08-01-preview"},
		{"alias of the third", `{"deployments":` + threeDeployments + `}`, nil,
			`{"model":"text-embedding-3-small","input":"x"}`, "dep-embed", "2024-06-01"},
		{"no alias matches: is_default", `{"deployments":` + threeDeployments + `}`, nil,
			`{"model":"o1"}`, "dep-4o", "2024-10-21"},
		{"no model: is_default", `{"deployments":` + threeDeployments + `}`, nil,
			`{"messages":[]}`, "dep-4o", "2024-10-21"},
		{"aliases are case-sensitive", `{"deployments":` + threeDeployments + `}`, nil,
			`{"model":"GPT-4O-MINI"}`, "dep-4o", "2024-10-21"},
		{"no default: the first", `{"deployments":[{"deployment_id":"a","alias":"x","api_version":"1"},{"deployment_id":"b","alias":"y","api_version":"2"}]}`, nil,
			`{"model":"z"}`, "a", "1"},
		{"model-name header when the body has none", `{"deployments":` + threeDeployments + `}`,
			map[string]string{headerModelName: "gpt-4o-mini"}, `{"messages":[]}`, "dep-mini", "2024-08-01-preview"},
		{"the body's model beats the model-name header", `{"deployments":` + threeDeployments + `}`,
			map[string]string{headerModelName: "gpt-4o-mini"}, `{"model":"text-embedding-3-small"}`, "dep-embed", "2024-06-01"},
		{"an alias match beats deployment_id", `{"deployment_id":"fixed","deployments":` + threeDeployments + `}`, nil,
			`{"model":"gpt-4o-mini"}`, "dep-mini", "2024-08-01-preview"},
		{"deployment_id beats the default", `{"deployment_id":"fixed","deployments":` + threeDeployments + `}`, nil,
			`{"model":"o1"}`, "fixed", ""},
		{"deployments beat the deployment header", `{"deployments":` + threeDeployments + `}`,
			map[string]string{headerDeployment: "from-header"}, `{"model":"o1"}`, "dep-4o", "2024-10-21"},
		{"items without deployment_id are skipped", `{"deployments":[{"alias":"gpt-4o","api_version":"1"},{"deployment_id":"b","alias":"y","api_version":"2"}]}`, nil,
			`{"model":"gpt-4o"}`, "b", "2"},
		{"null deployments: the header", `{"deployments":null}`, map[string]string{headerDeployment: "h"}, `{}`, "h", ""},
		{"a body that is not JSON: no alias", `{"deployments":` + threeDeployments + `}`, nil, `not json`, "dep-4o", "2024-10-21"},
		{"nothing", `{}`, nil, `{}`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &providers.Target{Fields: fields(tc.fields)}
			id, ver, err := pickDeployment(tg, []byte(tc.body), headerFunc(tc.headers))
			if err != nil {
				t.Fatal(err)
			}
			if id != tc.wantID || ver != tc.ver {
				t.Errorf("got %q %q, want %q %q", id, ver, tc.wantID, tc.ver)
			}
		})
	}
	t.Run("malformed deployments", func(t *testing.T) {
		_, _, err := pickDeployment(&providers.Target{Fields: fields(`{"deployments":{"a":1}}`)}, nil, noHeader)
		if err == nil || err.Param != "deployments" || err.Status != 400 {
			t.Errorf("err = %v", err)
		}
	})
}

// TestPrecedence pins that config fields win over the caller's x-gateway-cloudx-* headers, field by field, and that
// headers fill what the config leaves open.
func TestPrecedence(t *testing.T) {
	allHeaders := map[string]string{headerResource: "hdr-res", headerDeployment: "hdr-dep", headerAPIVersion: "2099-01-01"}
	tests := []struct {
		name    string
		fields  string
		headers map[string]string
		base    string
		want    string
	}{
		{"headers alone", `{}`, allHeaders, "",
			"https://hdr-res.openai.azure.com/openai/deployments/hdr-dep/chat/completions?api-version=2099-01-01"},
		{"config resource wins", `{"resource_name":"cfg-res"}`, allHeaders, "",
			"https://cfg-res.openai.azure.com/openai/deployments/hdr-dep/chat/completions?api-version=2099-01-01"},
		{"config deployment wins", `{"deployment_id":"cfg-dep"}`, allHeaders, "",
			"https://hdr-res.openai.azure.com/openai/deployments/cfg-dep/chat/completions?api-version=2099-01-01"},
		{"config api_version wins", `{"api_version":"2024-06-01"}`, allHeaders, "",
			"https://hdr-res.openai.azure.com/openai/deployments/hdr-dep/chat/completions?api-version=2024-06-01"},
		{"a deployments item's api_version wins over api_version and the header", `{"api_version":"2024-06-01","deployments":[{"deployment_id":"d","alias":"gpt-4o","api_version":"2024-02-01"}]}`,
			allHeaders, "", "https://hdr-res.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-02-01"},
		{"everything from config", `{"resource_name":"cfg-res","deployment_id":"cfg-dep","api_version":"2024-06-01"}`, allHeaders, "",
			"https://cfg-res.openai.azure.com/openai/deployments/cfg-dep/chat/completions?api-version=2024-06-01"},
		{"custom_host wins over both resources", `{"resource_name":"cfg-res"}`, allHeaders, "http://127.0.0.1:9/azure",
			"http://127.0.0.1:9/azure/openai/deployments/hdr-dep/chat/completions?api-version=2099-01-01"},
		{"default api-version", `{"resource_name":"r","deployment_id":"d"}`, nil, "",
			"https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=" + DefaultAPIVersion},
		{"Foundry api version: cloudx_api_version wins", `{"cloudx_deployment_name":"n","cloudx_region":"eastus","cloudx_api_version":"2024-05-01-preview","api_version":"x"}`,
			allHeaders, "", "https://n.eastus.models.ai.azure.com/chat/completions?api-version=2024-05-01-preview"},
		{"Foundry api version: then api_version", `{"cloudx_deployment_name":"n","cloudx_region":"eastus","api_version":"2024-05-01-preview"}`,
			allHeaders, "", "https://n.eastus.models.ai.azure.com/chat/completions?api-version=2024-05-01-preview"},
		{"Foundry api version: then the header", `{"cloudx_deployment_name":"n","cloudx_region":"eastus"}`,
			allHeaders, "", "https://n.eastus.models.ai.azure.com/chat/completions?api-version=2099-01-01"},
		{"Foundry fields win over the resource header", `{"cloudx_endpoint_name":"ep","cloudx_region":"eastus"}`,
			map[string]string{headerResource: "hdr-res", headerDeployment: "hdr-dep"}, "", "https://ep.eastus.inference.ml.azure.com/chat/completions"},
	}
	body := []byte(`{"model":"gpt-4o","messages":[]}`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &providers.Target{BaseURL: tc.base, Fields: fields(tc.fields), Header: headerFunc(tc.headers)}
			req, err := Adapter{}.NewRequest(context.Background(), tg, &providers.Call{Endpoint: providers.ChatCompletions, Body: body})
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.want {
				t.Errorf("url\n got %s\nwant %s", req.URL, tc.want)
			}
		})
	}
}

func TestFoundryURLs(t *testing.T) {
	tests := []struct {
		name     string
		fields   string
		base     string
		endpoint providers.Endpoint
		want     string
		mlDep    string
	}{
		{"serverless chat", `{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"Mistral-large-2407-abc","cloudx_region":"eastus2","cloudx_api_version":"2024-05-01-preview"}`,
			"", providers.ChatCompletions, "https://mistral-large-2407-abc.eastus2.models.ai.azure.com/chat/completions?api-version=2024-05-01-preview", ""},
		{"serverless embeddings without a version", `{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"cohere-embed-v3","cloudx_region":"SwedenCentral"}`,
			"", providers.Embeddings, "https://cohere-embed-v3.swedencentral.models.ai.azure.com/embeddings", ""},
		{"serverless completions", `{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"llama","cloudx_region":"westus"}`,
			"", providers.Completions, "https://llama.westus.models.ai.azure.com/completions", ""},
		{"serverless is the default type", `{"cloudx_deployment_name":"phi","cloudx_region":"eastus"}`,
			"", providers.ChatCompletions, "https://phi.eastus.models.ai.azure.com/chat/completions", ""},
		{"managed with a pinned deployment", `{"cloudx_deployment_type":"managed","cloudx_endpoint_name":"my-ep","cloudx_deployment_name":"blue","cloudx_region":"westeurope","cloudx_api_version":"2024-05-01-preview"}`,
			"", providers.ChatCompletions, "https://my-ep.westeurope.inference.ml.azure.com/chat/completions?api-version=2024-05-01-preview", "blue"},
		{"managed is the default with an endpoint name", `{"cloudx_endpoint_name":"my-ep","cloudx_region":"westeurope"}`,
			"", providers.Embeddings, "https://my-ep.westeurope.inference.ml.azure.com/embeddings", ""},
		{"custom_host replaces the serverless host", `{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"x","cloudx_region":"y","cloudx_api_version":"2024-05-01-preview"}`,
			"http://127.0.0.1:9911", providers.ChatCompletions, "http://127.0.0.1:9911/chat/completions?api-version=2024-05-01-preview", ""},
		{"custom_host replaces the managed host; name and region not needed", `{"cloudx_deployment_type":"managed","cloudx_deployment_name":"green"}`,
			"https://gw.example/score", providers.ChatCompletions, "https://gw.example/score/chat/completions", "green"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &providers.Target{BaseURL: tc.base, APIKey: "k", Fields: fields(tc.fields), Header: noHeader}
			req, err := Adapter{}.NewRequest(context.Background(), tg, &providers.Call{Endpoint: tc.endpoint, Body: []byte(`{"messages":[]}`)})
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.want {
				t.Errorf("url\n got %s\nwant %s", req.URL, tc.want)
			}
			if got := req.Header.Get("Azureml-Model-Deployment"); got != tc.mlDep {
				t.Errorf("azureml-model-deployment = %q, want %q", got, tc.mlDep)
			}
			if req.Header.Get("Authorization") != "Bearer k" || req.Header.Get("Api-Key") != "" {
				t.Errorf("auth headers %v", req.Header)
			}
		})
	}
}

func TestAddressErrors(t *testing.T) {
	tests := []struct {
		name    string
		fields  string
		headers map[string]string
		base    string
		param   string
		says    string
	}{
		{"nothing at all", `{}`, nil, "", headerResource, "resource_name"},
		{"a deployment but no resource", `{"deployment_id":"d"}`, nil, "", headerResource, "custom_host"},
		{"no deployment", `{"resource_name":"r"}`, nil, "", headerDeployment, "deployment_id"},
		{"no deployment from headers", `{}`, map[string]string{headerResource: "r"}, "", headerDeployment, headerDeployment},
		{"a resource name that would move the host", `{"resource_name":"evil.example/x?","deployment_id":"d"}`, nil, "", "resource_name", "resource name"},
		{"a resource header that would move the host", `{"deployment_id":"d"}`, map[string]string{headerResource: "evil.example#"}, "", headerResource, "resource name"},
		{"serverless without a name", `{"cloudx_deployment_type":"serverless","cloudx_region":"eastus"}`, nil, "", "cloudx_deployment_name", "cloudx_deployment_name"},
		{"serverless without a region", `{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"n"}`, nil, "", "cloudx_region", "cloudx_region"},
		{"managed without an endpoint", `{"cloudx_deployment_type":"managed","cloudx_deployment_name":"n","cloudx_region":"eastus"}`, nil, "", "cloudx_endpoint_name", "cloudx_endpoint_name"},
		{"managed without a region", `{"cloudx_deployment_type":"managed","cloudx_endpoint_name":"ep"}`, nil, "", "cloudx_region", "cloudx_region"},
		{"a region that would move the host", `{"cloudx_deployment_name":"n","cloudx_region":"attacker.example/"}`, nil, "", "cloudx_region", "label"},
		{"unknown deployment type", `{"cloudx_deployment_type":"provisioned","cloudx_deployment_name":"n","cloudx_region":"r"}`, nil, "", "cloudx_deployment_type", "serverless"},
		{"malformed deployments", `{"resource_name":"r","deployments":"d"}`, nil, "", "deployments", "array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &providers.Target{BaseURL: tc.base, APIKey: "k", Fields: fields(tc.fields), Header: headerFunc(tc.headers)}
			_, err := Adapter{}.NewRequest(context.Background(), tg, &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"m"}`)})
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Status != 400 || ge.Code != gwerr.CodeInvalidRequest || ge.Param != tc.param || !strings.Contains(ge.Message, tc.says) {
				t.Errorf("got %d %s param %q: %s\nwant 400 param %q mentioning %q", ge.Status, ge.Code, ge.Param, ge.Message, tc.param, tc.says)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_part"
	tests := []struct {
		name          string
		key           string
		route         route
		apiKey, authz string
	}{
		{"key to Azure OpenAI", "0123456789abcdef0123456789abcdef", routeDeployment, "0123456789abcdef0123456789abcdef", ""},
		{"token to Azure OpenAI", jwt, routeDeployment, "", "Bearer " + jwt},
		{"a Bearer prefix is not doubled", "Bearer " + jwt, routeV1, "", "Bearer " + jwt},
		{"key to the model inference endpoint", "k", routeInference, "k", ""},
		{"token to the model inference endpoint", jwt, routeInference, "", "Bearer " + jwt},
		{"key to serverless", "k", routeServerless, "", "Bearer k"},
		{"token to managed", jwt, routeManaged, "", "Bearer " + jwt},
		{"no key: no header", "", routeDeployment, "", ""},
		{"blank key: no header", "   ", routeServerless, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := make(map[string][]string)
			setAuth(h, tc.route, tc.key)
			if got := first(h["Api-Key"]); got != tc.apiKey {
				t.Errorf("api-key = %q, want %q", got, tc.apiKey)
			}
			if got := first(h["Authorization"]); got != tc.authz {
				t.Errorf("Authorization = %q, want %q", got, tc.authz)
			}
		})
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func TestIsJWT(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"eyJ0eXAiOiJKV1QifQ.eyJhIjoxfQ.c2ln", true},
		{"eyJ0eXAiOiJKV1QifQ.eyJhIjoxfQ.c2l-_n", true},
		{"0123456789abcdef0123456789abcdef", false},
		{"eyJ0eXAiOiJKV1QifQ.eyJhIjoxfQ", false},        // two parts
		{"eyJ0eXAiOiJKV1QifQ..c2ln", false},             // empty middle
		{"eyJ0eXAiOiJKV1QifQ.eyJhIjoxfQ.", false},       // empty last
		{"eyJ0eXAiOiJKV1QifQ.eyJhIjoxfQ.c2ln.x", false}, // four parts
		{"eyJ0eXAi+JKV1QifQ.eyJhIjoxfQ.c2ln", false},    // not base64url
		{"abc.def.ghi", false},                          // header is not JSON
		{"", false},
	}
	for _, tc := range tests {
		if got := isJWT(tc.in); got != tc.want {
			t.Errorf("isJWT(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestIsLabel(t *testing.T) {
	for _, ok := range []string{"contoso", "my-resource-1", "A", strings.Repeat("a", 63)} {
		if !isLabel(ok) {
			t.Errorf("isLabel(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "a.b", "a/b", "a@b", "a:1", "a b", "a%2e", strings.Repeat("a", 64)} {
		if isLabel(bad) {
			t.Errorf("isLabel(%q) = true", bad)
		}
	}
}

func TestWithModel(t *testing.T) {
	same := []byte(`{"model":"d","messages":[]}`)
	out, err := withModel(same, "d")
	if err != nil || &out[0] != &same[0] {
		t.Errorf("a body that already names the deployment was rewritten: %s %v", out, err)
	}
	out, err = withModel([]byte(`{"messages":[]}`), "d")
	if err != nil || string(out) != `{"messages":[],"model":"d"}` {
		t.Errorf("got %s %v", out, err)
	}
	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{`} {
		if _, err := withModel([]byte(bad), "d"); err == nil || err.Status != 400 {
			t.Errorf("withModel(%q) err = %v", bad, err)
		}
	}
}

func TestForwardedHeadersAreNotShared(t *testing.T) {
	fwd := map[string][]string{"X-Team": {"a"}, "Api-Key": {"caller"}}
	tg := &providers.Target{APIKey: "eyJhbGciOiJIUzI1NiJ9.eyJhIjoxfQ.c2ln", Forward: fwd,
		Fields: fields(`{"resource_name":"r","deployment_id":"d"}`)}
	req, err := Adapter{}.NewRequest(context.Background(), tg, &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, req.Body)
	if req.Header.Get("Api-Key") != "" || req.Header.Get("X-Team") != "a" {
		t.Errorf("headers %v", req.Header)
	}
	if len(fwd["Api-Key"]) != 1 || fwd["Api-Key"][0] != "caller" {
		t.Errorf("the target's Forward was changed: %v", fwd)
	}
}
