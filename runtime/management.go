package runtime

import (
	"context"
	"errors"
	"net/http"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// ResolveVirtualKey resolves the workspace's stored provider slug into a target and its adapter exactly as an
// inference request sending x-gateway-virtual-key: slug would be (resolveTarget: the stored fields, the
// custom-host address policy, the provider's default base URL). The target's Client is the engine's pooled,
// host-guarded HTTP client, for the management APIs (runtime/upstream) to call with. An unknown slug is a 404
// *gwerr.Error whose Param is x-gateway-virtual-key.
func (e *Engine) ResolveVirtualKey(ctx context.Context, workspaceID, slug string) (*providers.Target, providers.Adapter, error) {
	req := &Request{Key: &storage.APIKey{WorkspaceID: workspaceID}, VirtualKey: slug}
	t, adapter, _, gerr := e.resolveTarget(ctx, req, &config.Node{})
	if gerr != nil {
		return nil, nil, gerr
	}
	return t, adapter, nil
}

// ManagementCallError names a failed management call to t made under ctx (the request could not be sent, or
// its answer not read), as an inference attempt's failure is named: 408 when ctx's deadline passed, 503 when
// it was cancelled, 400 when the host policy refused the address, else 502 upstream_error. URLs in it are
// redacted.
func ManagementCallError(ctx context.Context, t *providers.Target, err error) *gwerr.Error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return &gwerr.Error{Status: http.StatusRequestTimeout, Code: gwerr.CodeRequestTimeout, Err: err,
			Message: t.Provider + " did not answer in time"}
	}
	return transportError(ctx, ctx, t, err)
}
