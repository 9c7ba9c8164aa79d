package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// The Upsert operations apply a record as the bootstrap file states it: made when missing, replaced when it
// differs, left alone (nothing written, changed false) when it is equal, so that applying a file twice writes
// nothing the second time. Unlike the admin API's operations they neither refuse a taken id nor pick one. They
// check what they are given with the same rules (a caller that validated the whole input first, as the bootstrap
// file does, sees no error here but the store's), hold the same locks and drop the same caches. caller's
// WorkspaceID is the record's workspace, which must be stored.

// UpsertAPIKey makes secret an API key of the caller's workspace with name and the admin rights, checked by
// CheckAPIKey, or updates the key that has it.
func (p *Plane) UpsertAPIKey(_ context.Context, caller Caller, secret, name string, admin, organisationAdmin bool) (changed bool, err error) {
	if err := CheckAPIKey(name, admin, organisationAdmin); err != nil {
		return false, err
	}
	k, changed, err := p.store.APIKeys.Put(secret, &storage.APIKey{WorkspaceID: caller.WorkspaceID, Name: name, Admin: admin,
		OrganisationAdmin: organisationAdmin})
	if err != nil {
		return false, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("api key applied", "trace_id", caller.TraceID, "key_id", k.ID, "workspace_id", caller.WorkspaceID,
			"admin", admin, "organisation_admin", organisationAdmin, "by", caller.KeyID)
	}
	return changed, nil
}

// UpsertPolicy stores pol (its ID as given, any case; its type, unit, value, status, name, conditions and
// group_by) as a policy of the caller's workspace, checked by ratelimit.ParsePolicy as CreatePolicy's body is.
// The organisation is the workspace's.
func (p *Plane) UpsertPolicy(_ context.Context, caller Caller, pol *storage.RateLimitPolicy) (changed bool, err error) {
	return rateLimits.upsert(p, caller, pol)
}

// upsert stores pol (its ID as given, any case, required) as a policy of the caller's workspace, checked as a
// body of its kind is. The organisation is the workspace's.
func (k *policyKind[T]) upsert(p *Plane, caller Caller, pol *T) (changed bool, err error) {
	body, err := json.Marshal(k.fields(pol))
	if err != nil {
		return false, gwerr.Internal(err)
	}
	checked, err := k.parseBody(body)
	if err != nil {
		return false, err
	}
	id := k.id(checked)
	if id == "" {
		return false, gwerr.BadRequest("id", "id is required")
	}
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return false, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	changed, err = k.store(p.store).Put(ws.ID, id, k.record(id, ws, checked))
	if err != nil {
		return false, gwerr.Internal(err)
	}
	if changed {
		p.log.Info(k.noun+" applied", "trace_id", caller.TraceID, "policy_id", id, "workspace_id", ws.ID,
			"by", caller.KeyID)
	}
	return changed, nil
}

// UpsertPrompt makes versions (numbered from 1, each template checked by prompt.CheckTemplate) the versions
// 1 to n of the caller's workspace's prompt id, named name. Stored versions above n, added since (over HTTP),
// stay; when one of them is published it stays the published one.
func (p *Plane) UpsertPrompt(_ context.Context, caller Caller, id, name string, versions []storage.PromptVersion) (changed bool, err error) {
	if err := storage.CheckID("id", id); err != nil {
		return false, gwerr.BadRequest("id", "%v", err)
	}
	for _, v := range versions {
		if _, err := promptTemplate(v.Template); err != nil {
			return false, err
		}
	}
	p.promptWrites.Lock()
	defer p.promptWrites.Unlock()
	stored, err := p.store.Prompts.Get(caller.WorkspaceID, id)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, gwerr.Internal(err)
	}
	rec := &storage.Prompt{ID: id, WorkspaceID: caller.WorkspaceID, Name: name, Versions: mergePromptVersions(stored, versions)}
	changed, err = p.store.Prompts.Put(caller.WorkspaceID, id, rec)
	if err != nil {
		return false, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("prompt applied", "trace_id", caller.TraceID, "prompt_id", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	}
	return changed, nil
}

// mergePromptVersions keeps the versions a prompt gained after versions were written: they are 1 to n, stored
// versions above n stay, and when one of those is published it stays published. stored may be nil.
func mergePromptVersions(stored *storage.Prompt, versions []storage.PromptVersion) []storage.PromptVersion {
	if stored == nil {
		return versions
	}
	var extra []storage.PromptVersion
	for _, v := range stored.Versions {
		if v.Version > len(versions) {
			extra = append(extra, v)
		}
	}
	if len(extra) == 0 {
		return versions
	}
	merged := append([]storage.PromptVersion(nil), versions...)
	for _, v := range extra {
		if v.Published {
			for i := range merged {
				merged[i].Published = false
			}
		}
	}
	return append(merged, extra...)
}

// UpsertGuardrail saves obj (a guardrail object without id and workspace) as the caller's workspace's guardrail
// id. It is checked as PutGuardrail checks a body, except that a plugin check needs its plugin stored in the
// workspace, not loaded: plugins stored before a start load in the background after it. A change drops the
// engine's compiled checks.
func (p *Plane) UpsertGuardrail(_ context.Context, caller Caller, id string, obj json.RawMessage) (changed bool, err error) {
	if err := storage.CheckID("guardrail id", id); err != nil {
		return false, gwerr.BadRequest("id", "%v", err)
	}
	if err := guardrails.ValidateSavedIn(caller.WorkspaceID, obj, runtime.RequireStoredPlugins(p.store, anyPluginCheck)); err != nil {
		return false, err
	}
	changed, err = p.store.Guardrails.Put(caller.WorkspaceID, id, &storage.Guardrail{ID: id, WorkspaceID: caller.WorkspaceID, Guardrail: obj})
	if err != nil {
		return false, gwerr.Internal(err)
	}
	if changed {
		p.forgetHooks()
		p.log.Info("guardrail applied", "trace_id", caller.TraceID, "guardrail", id, "workspace_id", caller.WorkspaceID)
	}
	return changed, nil
}

// anyPluginCheck accepts every check of a plugin: UpsertGuardrail asks only that the plugin is stored.
func anyPluginCheck(string, string, string, json.RawMessage) (guardrails.Check, error) {
	return acceptCheck{}, nil
}

type acceptCheck struct{}

func (acceptCheck) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	return hostapi.NewOutput(), nil
}

// UpsertPlugin makes wasm the caller's workspace's plugin id. A module the store holds already, and that
// loaded, is left alone (the engine loads stored modules itself). Otherwise, with a wasm engine, it is
// installed as PutPlugin installs it (loaded, then stored, then served; on failure nothing is stored and the
// previous module keeps serving); without one it is stored unloaded.
func (p *Plane) UpsertPlugin(ctx context.Context, caller Caller, id string, wasm []byte) (changed bool, err error) {
	if err := storage.CheckID("plugin id", id); err != nil {
		return false, gwerr.BadRequest("id", "%v", err)
	}
	sum := sha256.Sum256(wasm)
	if meta, err := p.store.Plugins.Get(caller.WorkspaceID, id); err == nil && meta.SHA256 == hex.EncodeToString(sum[:]) && meta.LoadError == "" {
		return false, nil
	}
	save := func() error {
		_, changed, err = p.store.Plugins.Put(caller.WorkspaceID, id, wasm)
		return err
	}
	if p.plugins == nil {
		if err := save(); err != nil {
			return false, gwerr.Internal(err)
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, pluginLoadTimeout)
		defer cancel()
		var saveErr error
		err := p.plugins.Install(ctx, caller.WorkspaceID, id, wasm, func() error { saveErr = save(); return saveErr })
		if saveErr != nil {
			return false, gwerr.Internal(saveErr)
		}
		if err != nil {
			return false, asBadRequest(err, "wasm")
		}
	}
	if changed {
		p.log.Info("plugin applied", "trace_id", caller.TraceID, "plugin", id, "workspace_id", caller.WorkspaceID)
	}
	return changed, nil
}
