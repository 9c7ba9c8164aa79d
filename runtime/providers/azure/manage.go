package azure

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

var _ providers.Manager = Adapter{}

// NewManagementRequest builds a call of an Azure OpenAI resource's files, batches or fine-tuning API: {base}/openai{path}
// with api-version (api_version, else header x-gateway-cloudx-api-version, else DefaultAPIVersion, whose GA
// data-plane API serves all three: learn.microsoft.com/rest/api/azureopenai/files/upload), or
// {base}/openai/v1{path} without one when the version is "v1". base is found as for inference (resourceBase);
// authentication is the resource's (api-key, or Bearer for an Entra ID token). Azure AI Foundry deployments and
// model inference endpoints have no such APIs: a 400 says so.
func (Adapter) NewManagementRequest(ctx context.Context, t *providers.Target, method, path string, query url.Values, body io.Reader, contentType string) (*http.Request, error) {
	header := t.Header
	if header == nil {
		header = noHeader
	}
	if isFoundry(t) || strings.HasSuffix(t.BaseURL, "/models") {
		return nil, gwerr.BadRequest("x-gateway-virtual-key", "azure-openai serves files, batches and fine-tuning only on an "+
			"Azure OpenAI resource (resource_name or its custom_host), not on an Azure AI Foundry deployment or model inference endpoint")
	}
	base, gerr := resourceBase(t, header)
	if gerr != nil {
		return nil, gerr
	}
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	version := firstOf(t.StringField("api_version"), header(headerAPIVersion), DefaultAPIVersion)
	u := base + "/openai" + path
	if version == V1 {
		u = base + "/openai/v1" + path
		q.Del("api-version")
	} else {
		q.Set("api-version", version)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := providers.NewManagementRequest(ctx, method, u, body, contentType)
	if err != nil {
		return nil, err
	}
	setAuth(req.Header, routeDeployment, t.APIKey)
	return req, nil
}
