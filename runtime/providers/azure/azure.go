package azure

import (
	"context"
	"net/http"

	"github.com/llmgw/gateway/runtime/providers"
)

// ID is the canonical identifier this adapter serves (SPEC.md's alias cloudx maps to it).
const ID = "azure-openai"

func init() {
	providers.Register(Descriptor)
}

// Adapter calls Azure OpenAI and Azure AI Foundry deployments. Both speak OpenAI's wire format, so answers,
// streams and error bodies pass through unchanged; the adapter owns the URL and the authentication.
type Adapter struct{}

var (
	_ providers.Adapter         = Adapter{}
	_ providers.NativeResponses = Adapter{}
)

// NativeResponses reports true: Azure OpenAI serves the responses API ({resource}/openai/responses, or
// /openai/v1/responses with api_version v1).
func (Adapter) NativeResponses() bool { return true }

// NewRequest builds the POST to the target's Azure endpoint (see doc.go for how the address is chosen). A target
// without an address is a 400 *gwerr.Error that names the field or header to set.
func (Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	a, gerr := resolve(t, c)
	if gerr != nil {
		return nil, gerr
	}
	body := c.Body
	if a.model != "" && c.ContentType == "" { // an upload goes as it is: its model field names the deployment
		if body, gerr = withModel(body, a.model); gerr != nil {
			return nil, gerr
		}
	}
	req, err := providers.PostJSON(ctx, t, c, a.url, body)
	if err != nil {
		return nil, err
	}
	switch a.route {
	case routeServerless, routeManaged, routeInference:
		// The Azure AI model inference API answers 422 to parameters a model doesn't know unless told to drop
		// them; the gateway ignores what a provider has no equivalent for, so ask for that unless the caller
		// forwarded their own choice.
		if req.Header.Get("Extra-Parameters") == "" {
			req.Header.Set("Extra-Parameters", "drop")
		}
	}
	if a.mlDeployment != "" {
		req.Header.Set("Azureml-Model-Deployment", a.mlDeployment)
	}
	setAuth(req.Header, a.route, t.APIKey)
	return req, nil
}
