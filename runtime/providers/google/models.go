package google

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

var _ providers.ModelLister = Adapter{}

// NewModelsRequest builds GET {base}/v1beta/models?pageSize=1000 (the largest page models.list serves) with
// the API key in x-goog-api-key.
func (Adapter) NewModelsRequest(ctx context.Context, t *providers.Target) (*http.Request, error) {
	req, err := providers.NewManagementRequest(ctx, http.MethodGet, baseURL(t)+"/v1beta/models?pageSize=1000", nil, "")
	if err != nil {
		return nil, err
	}
	if t.APIKey != "" {
		req.Header.Set("x-goog-api-key", t.APIKey)
	}
	return req, nil
}

// modelList is the Gemini API's answer of models.list: {"models":[{"name":"models/gemini-2.5-pro",
// "displayName", "inputTokenLimit", ...}], "nextPageToken"}.
type modelList struct {
	Models []struct {
		Name string `json:"name"`
	} `json:"models"`
}

// TranslateModels turns models.list into OpenAI's list: the id is the name without "models/" (the name chat
// completions take), created 0 (the API gives no date), owned_by the provider.
func (Adapter) TranslateModels(t *providers.Target, body []byte) ([]byte, error) {
	var in modelList
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("google: decode model list: %w", err)
	}
	out := make([]schema.Model, 0, len(in.Models))
	for _, m := range in.Models {
		out = append(out, schema.Model{ID: strings.TrimPrefix(m.Name, "models/"), OwnedBy: t.Provider})
	}
	return schema.EncodeModels(out)
}
