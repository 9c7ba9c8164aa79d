package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// GET /v1/models (DESIGN.md "Compatibility ingress"): OpenAI's model list, of the provider a request names, or
// of the catalogue for the workspace's stored providers.

// Bounds of a provider's model list call.
const (
	maxModelList     = 8 << 20 // bytes of the provider's answer
	modelListTimeout = 30 * time.Second
)

// ListModels answers GET /v1/models for a request that names a provider (x-gateway-provider, x-gateway-virtual-key
// or a config): the target is resolved as an inference request's would be (a config's first target, as a
// fallback tries it first), and its provider's list is asked for when its adapter has one
// (providers.ModelLister), translated to OpenAI's; otherwise the catalogue's models of the provider (as a
// stored provider's overrides amend them) answer. status and body are the answer: OpenAI's list, or the
// provider's error answer (translated as an inference error is) with its status. err is a *gwerr.Error when
// no answer came: a target that cannot be resolved, a provider that could not be reached (502, 408), an answer
// over 8 MiB or not understood (502).
func (e *Engine) ListModels(ctx context.Context, req *Request) (status int, body []byte, err error) {
	plan, err := e.plan(req)
	if err != nil {
		return 0, nil, err
	}
	n := plan.Root
	for len(n.Children) > 0 {
		n = n.Children[0]
	}
	t, adapter, _, gerr := e.resolveTarget(ctx, req, n)
	if gerr != nil {
		return 0, nil, gerr
	}
	lister, ok := adapter.(providers.ModelLister)
	if !ok {
		body, err = schema.EncodeModels(catalogueModels(t.Provider, t.Fields[catalog.OverridesField], ""))
		if err != nil {
			return 0, nil, gwerr.Internal(err)
		}
		return http.StatusOK, body, nil
	}
	ctx, cancel := context.WithTimeout(ctx, modelListTimeout)
	defer cancel()
	hreq, err := lister.NewModelsRequest(ctx, t)
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return 0, nil, ge
		}
		return 0, nil, gwerr.Internal(fmt.Errorf("%s: build model list request: %w", t.Provider, netguard.RedactError(err)))
	}
	resp, err := e.client.Do(hreq)
	if err != nil {
		return 0, nil, ManagementCallError(ctx, t, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxModelList+1))
	if err != nil {
		return 0, nil, ManagementCallError(ctx, t, err)
	}
	if len(data) > maxModelList {
		return 0, nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered its model list with more than %d bytes", t.Provider, maxModelList)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if tr, ok := adapter.(providers.ErrorTranslator); ok {
			data = tr.TranslateError(t, &providers.Call{}, resp.StatusCode, data)
		}
		return resp.StatusCode, data, nil
	}
	if !json.Valid(data) {
		return 0, nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered its model list with a body that is not JSON", t.Provider)
	}
	if body, err = lister.TranslateModels(t, data); err != nil {
		return 0, nil, &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream, Err: err,
			Message: fmt.Sprintf("%s answered its model list in a shape the gateway could not translate: %v", t.Provider, err)}
	}
	return http.StatusOK, body, nil
}

// WorkspaceModels answers GET /v1/models without provider headers: for each stored provider of the workspace,
// the catalogue's models of its provider (as its own "models" overrides amend them), as "@slug/model" owned by
// the provider, ordered by slug and model.
func (e *Engine) WorkspaceModels(workspaceID string) ([]byte, error) {
	stored, err := e.store.Providers.List(workspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	slices.SortFunc(stored, func(a, b *storage.Provider) int { return cmp.Compare(a.Slug, b.Slug) })
	var out []schema.Model
	for _, p := range stored {
		out = append(out, catalogueModels(p.Provider, p.Fields[catalog.OverridesField], "@"+p.Slug+"/")...)
	}
	body, err := schema.EncodeModels(out)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return body, nil
}

// catalogueModels lists the catalogue's models of provider, with a stored provider's overrides (nil: none;
// overrides that do not parse are ignored, as pricing ignores them), each id after prefix, ordered by id.
func catalogueModels(provider string, overrides json.RawMessage, prefix string) []schema.Model {
	cat := catalog.Default()
	if len(overrides) > 0 {
		if models, err := catalog.ParseOverrides(overrides); err == nil {
			cat = cat.WithOverrides(provider, models)
		}
	}
	models := cat.Models(provider)
	out := make([]schema.Model, 0, len(models))
	for _, m := range models {
		out = append(out, schema.Model{ID: prefix + m.ID, OwnedBy: provider})
	}
	slices.SortFunc(out, func(a, b schema.Model) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
