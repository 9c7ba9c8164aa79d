package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

var _ providers.ModelLister = Adapter{}

// modelsPage is the largest page Anthropic's model list serves: one page holds every model it has.
const modelsPage = "1000"

// NewModelsRequest builds GET {base}/models?limit=1000 with the authentication and version headers of
// NewRequest.
func (Adapter) NewModelsRequest(ctx context.Context, t *providers.Target) (*http.Request, error) {
	req, err := providers.NewManagementRequest(ctx, http.MethodGet, baseURL(t)+"/models?limit="+modelsPage, nil, "")
	if err != nil {
		return nil, err
	}
	if t.APIKey != "" {
		req.Header.Set("X-Api-Key", t.APIKey)
	}
	req.Header.Set("Anthropic-Version", firstOf(t.StringField("anthropic_version"), header(t, "anthropic-version"), DefaultVersion))
	return req, nil
}

// modelList is Anthropic's answer of GET /v1/models: {"data":[{"type":"model","id","display_name",
// "created_at":"2025-02-19T00:00:00Z"}],"has_more","first_id","last_id"}.
type modelList struct {
	Data []struct {
		ID        string `json:"id"`
		CreatedAt string `json:"created_at"`
	} `json:"data"`
}

// TranslateModels turns Anthropic's model list into OpenAI's: created is created_at in Unix seconds (0 when
// it is not an RFC 3339 time), owned_by the provider.
func (Adapter) TranslateModels(t *providers.Target, body []byte) ([]byte, error) {
	var in modelList
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("anthropic: decode model list: %w", err)
	}
	out := make([]schema.Model, 0, len(in.Data))
	for _, m := range in.Data {
		var created int64
		if at, err := time.Parse(time.RFC3339, m.CreatedAt); err == nil {
			created = at.Unix()
		}
		out = append(out, schema.Model{ID: m.ID, Created: created, OwnedBy: t.Provider})
	}
	return schema.EncodeModels(out)
}
