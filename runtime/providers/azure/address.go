package azure

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// DefaultAPIVersion is the api-version sent to an Azure OpenAI deployment when neither the config, the chosen
// deployment nor the x-gateway-cloudx-api-version header names one: the latest generally available version of
// Azure OpenAI's data-plane inference API (learn.microsoft.com/azure/ai-services/openai/reference, "Data plane -
// inference", latest GA release 2024-10-21).
const DefaultAPIVersion = "2024-10-21"

// ResponsesAPIVersion is the api-version of a responses call ({resource}/openai/responses) when the target
// chose none: DefaultAPIVersion predates the responses API.
const ResponsesAPIVersion = "2025-04-01-preview"

// DefaultInferenceAPIVersion is the api-version sent to an Azure AI model inference endpoint
// (https://{resource}.services.ai.azure.com/models) when none is given: the version the Azure AI Inference client
// libraries call (learn.microsoft.com/dotnet/api/overview/azure/ai.inference-readme: "REST API version
// 2024-05-01-preview, as documented in Azure AI Model Inference API").
const DefaultInferenceAPIVersion = "2024-05-01-preview"

// V1 is the api_version value that selects Azure OpenAI's v1 API (/openai/v1/..., no dated api-version, the
// deployment named by the body's "model"; learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle).
const V1 = "v1"

// The caller's headers this adapter reads (SPEC.md "Cloud-specific headers", Cloud X).
const (
	headerResource   = "x-gateway-cloudx-resource-name"
	headerDeployment = "x-gateway-cloudx-deployment-id"
	headerAPIVersion = "x-gateway-cloudx-api-version"
	headerModelName  = "x-gateway-cloudx-model-name"
)

// route is the kind of Azure endpoint a target addresses; it decides the URL shape and the auth header.
type route uint8

const (
	routeDeployment route = iota // Azure OpenAI: {base}/openai/deployments/{id}{path}?api-version=
	routeV1                      // Azure OpenAI v1: {base}/openai/v1{path}
	routeInference               // Azure AI model inference: {custom_host ending in /models}{path}?api-version=
	routeServerless              // Foundry serverless API: https://{name}.{region}.models.ai.azure.com{path}
	routeManaged                 // Foundry managed online endpoint: https://{endpoint}.{region}.inference.ml.azure.com{path}
)

// address is where one call goes.
type address struct {
	url   string
	route route
	// model, when not empty, replaces the body's "model": on the v1 and model-inference routes the body's model
	// names the deployment, so a deployment chosen by the config must travel there.
	model string
	// mlDeployment is the managed endpoint's deployment, sent as azureml-model-deployment.
	mlDeployment string
}

// resolve works out the call's address from the target's fields, its custom host and the caller's headers.
// Config fields win over headers; see doc.go for the whole order.
func resolve(t *providers.Target, c *providers.Call) (address, *gwerr.Error) {
	path := c.Endpoint.Path()
	if path == "" {
		return address{}, gwerr.BadRequest("", "azure-openai does not serve this endpoint")
	}
	header := t.Header
	if header == nil {
		header = noHeader
	}
	if isFoundry(t) {
		return resolveFoundry(t, path, header)
	}
	if strings.HasSuffix(t.BaseURL, "/models") {
		return resolveInference(t, c, path, header)
	}
	return resolveOpenAI(t, c, path, header)
}

func noHeader(string) string { return "" }

// isFoundry reports whether the target names an Azure AI Foundry deployment (SPEC.md's cloudx_* key sets).
func isFoundry(t *providers.Target) bool {
	return t.StringField("cloudx_deployment_type") != "" || t.StringField("cloudx_deployment_name") != "" ||
		t.StringField("cloudx_endpoint_name") != ""
}

// resolveOpenAI addresses an Azure OpenAI resource: the dated deployments API or, with api_version "v1", the v1 API.
func resolveOpenAI(t *providers.Target, c *providers.Call, path string, header func(string) string) (address, *gwerr.Error) {
	base, err := resourceBase(t, header)
	if err != nil {
		return address{}, err
	}
	dep, version, err := pickDeploymentBy(t, func() string { return callModel(c) }, header)
	if err != nil {
		return address{}, err
	}
	if version == "" {
		version = firstOf(t.StringField("api_version"), header(headerAPIVersion), DefaultAPIVersion)
	}
	if version == V1 {
		return address{url: base + "/openai/v1" + path, route: routeV1, model: dep}, nil
	}
	if c.Endpoint == providers.Responses && dep != "" {
		// The responses API is not below a deployment: the body's model names it, as on the v1 API.
		if version == DefaultAPIVersion {
			version = ResponsesAPIVersion
		}
		return address{url: base + "/openai/responses?api-version=" + url.QueryEscape(version), route: routeDeployment, model: dep}, nil
	}
	if dep == "" {
		return address{}, gwerr.BadRequest(headerDeployment, "azure-openai needs a deployment: config deployment_id "+
			"or deployments, or header %s (or api_version %q, where the body's model names the deployment)",
			headerDeployment, V1)
	}
	return address{
		url:   base + "/openai/deployments/" + url.PathEscape(dep) + path + "?api-version=" + url.QueryEscape(version),
		route: routeDeployment,
	}, nil
}

// resourceBase is the Azure OpenAI resource's base URL: custom_host, else https://{resource}.openai.azure.com.
func resourceBase(t *providers.Target, header func(string) string) (string, *gwerr.Error) {
	if t.BaseURL != "" {
		return t.BaseURL, nil
	}
	resource, param := t.StringField("resource_name"), "resource_name"
	if resource == "" {
		resource, param = header(headerResource), headerResource
	}
	if resource == "" {
		return "", gwerr.BadRequest(headerResource, "azure-openai needs an address: the resource name "+
			"(config resource_name or header %s) with a deployment, a custom_host, or an Azure AI Foundry "+
			"deployment (cloudx_deployment_type with cloudx_deployment_name or cloudx_endpoint_name, and cloudx_region)",
			headerResource)
	}
	if !isLabel(resource) {
		return "", gwerr.BadRequest(param, "%s must be an Azure resource name (letters, digits and hyphens), not %q",
			param, resource)
	}
	return "https://" + resource + ".openai.azure.com", nil
}

// resolveInference addresses an Azure AI model inference endpoint given as custom_host
// (https://{resource}.services.ai.azure.com/models): it routes on the body's model, which names the deployment.
func resolveInference(t *providers.Target, c *providers.Call, path string, header func(string) string) (address, *gwerr.Error) {
	dep, version, err := pickDeploymentBy(t, func() string { return callModel(c) }, header)
	if err != nil {
		return address{}, err
	}
	if version == "" {
		version = firstOf(t.StringField("cloudx_api_version"), t.StringField("api_version"), header(headerAPIVersion),
			DefaultInferenceAPIVersion)
	}
	return address{url: t.BaseURL + path + "?api-version=" + url.QueryEscape(version), route: routeInference, model: dep}, nil
}

// resolveFoundry addresses an Azure AI Foundry serverless API or managed online endpoint. A custom_host replaces
// the host the fields would build.
func resolveFoundry(t *providers.Target, path string, header func(string) string) (address, *gwerr.Error) {
	kind := t.StringField("cloudx_deployment_type")
	name := t.StringField("cloudx_deployment_name")
	endpoint := t.StringField("cloudx_endpoint_name")
	region := t.StringField("cloudx_region")
	if kind == "" {
		kind = "serverless"
		if endpoint != "" {
			kind = "managed"
		}
	}
	var a address
	base := t.BaseURL
	switch kind {
	case "serverless":
		a.route = routeServerless
		if base == "" {
			if err := need("cloudx_deployment_name", name, "a serverless deployment"); err != nil {
				return address{}, err
			}
			if err := need("cloudx_region", region, "a serverless deployment"); err != nil {
				return address{}, err
			}
			base = "https://" + strings.ToLower(name) + "." + strings.ToLower(region) + ".models.ai.azure.com"
		}
	case "managed":
		a.route, a.mlDeployment = routeManaged, name
		if base == "" {
			if err := need("cloudx_endpoint_name", endpoint, "a managed online endpoint"); err != nil {
				return address{}, err
			}
			if err := need("cloudx_region", region, "a managed online endpoint"); err != nil {
				return address{}, err
			}
			base = "https://" + strings.ToLower(endpoint) + "." + strings.ToLower(region) + ".inference.ml.azure.com"
		}
	default:
		return address{}, gwerr.BadRequest("cloudx_deployment_type", "cloudx_deployment_type must be \"serverless\" or \"managed\", not %q", kind)
	}
	a.url = base + path
	if v := firstOf(t.StringField("cloudx_api_version"), t.StringField("api_version"), header(headerAPIVersion)); v != "" {
		a.url += "?api-version=" + url.QueryEscape(v)
	}
	return a, nil
}

// need checks a Foundry field that becomes part of a host name.
func need(field, value, what string) *gwerr.Error {
	if value == "" {
		return gwerr.BadRequest(field, "azure-openai needs %s for %s (or a custom_host)", field, what)
	}
	if !isLabel(value) {
		return gwerr.BadRequest(field, "%s must be a host name label (letters, digits and hyphens), not %q", field, value)
	}
	return nil
}

// pickDeployment chooses the deployment and, when it comes from "deployments", that deployment's api_version:
//  1. the deployments item whose alias is the body's model (or, without one, header x-gateway-cloudx-model-name);
//  2. config deployment_id;
//  3. the deployments item marked is_default, else the first;
//  4. header x-gateway-cloudx-deployment-id.
func pickDeployment(t *providers.Target, body []byte, header func(string) string) (id, version string, err *gwerr.Error) {
	return pickDeploymentBy(t, func() string { return modelOf(body) }, header)
}

// pickDeploymentBy is pickDeployment with the call's model read by bodyModel, only when a deployments list
// needs it (a multipart upload's model is a form field, not a JSON member: callModel).
func pickDeploymentBy(t *providers.Target, bodyModel func() string, header func(string) string) (id, version string, err *gwerr.Error) {
	var list []deployment
	if raw := t.Fields["deployments"]; len(raw) > 0 && string(raw) != "null" {
		if json.Unmarshal(raw, &list) != nil {
			return "", "", gwerr.BadRequest("deployments", "deployments must be an array of {deployment_id, alias, api_version, is_default}")
		}
		list = usable(list)
	}
	if len(list) > 0 {
		model := bodyModel()
		if model == "" {
			model = header(headerModelName)
		}
		if model != "" {
			for _, d := range list {
				if d.Alias == model {
					return d.DeploymentID, d.APIVersion, nil
				}
			}
		}
	}
	if id := t.StringField("deployment_id"); id != "" {
		return id, "", nil
	}
	if len(list) > 0 {
		for _, d := range list {
			if d.IsDefault {
				return d.DeploymentID, d.APIVersion, nil
			}
		}
		return list[0].DeploymentID, list[0].APIVersion, nil
	}
	return header(headerDeployment), "", nil
}

// usable drops items without a deployment_id, in place.
func usable(list []deployment) []deployment {
	out := list[:0]
	for _, d := range list {
		if d.DeploymentID != "" {
			out = append(out, d)
		}
	}
	return out
}

// modelOf returns the body's "model", or "" when the body has none or is not a JSON object.
func modelOf(body []byte) string {
	var m bodyModel
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return m.Model
}

// withModel returns body with "model" set to model; the body is left alone when it already says so.
func withModel(body []byte, model string) ([]byte, *gwerr.Error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return nil, gwerr.BadRequest("", "the request body must be a JSON object")
	}
	if cur, ok := m["model"]; ok {
		var s string
		if json.Unmarshal(cur, &s) == nil && s == model {
			return body, nil
		}
	}
	m["model"], _ = json.Marshal(model)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, gwerr.BadRequest("", "the request body must be a JSON object")
	}
	return out, nil
}

// isLabel reports whether s is one DNS label (letters, digits and inner hyphens, at most 63 characters), so that a
// name placed before an Azure domain can never change the host the call goes to.
func isLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
