package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// Stored providers (virtual keys) of the caller's workspace. A body is a bootstrap file's "providers" item
// without "workspace", read by ReadProvider, which the bootstrap file's entries go through too. The engine
// reads a stored provider through storage's read cache on every request that names it; the store's Put and
// Delete drop that entry, so a change applies to the next request and a deleted slug is unknown at once.
//
// Decisions:
//   - A slug is unique in its workspace; another workspace's slug is as unknown as a missing one (404).
//   - PUT replaces the whole provider. A secret field sent back as it reads ("…" and the stored value's last
//     four characters) keeps the stored value, so that a provider read with GET can be sent back changed.
//   - A provider still named by a saved config ("@slug" or virtual_key at any level of its targets) or by a
//     version of a prompt (its template's provider or virtual_key) is deleted only with force; otherwise 409
//     naming them. Lists are ordered by slug.

// ReadProvider reads a stored provider's entry from o (a bootstrap file's "providers" item, or the body of
// POST /v1/providers): slug, provider, name, api_key, custom_host, "models", and the fields of any registered
// provider, each checked as its adapter declares (the checks a config's fields get). Any provider's fields are
// accepted, as in a config; which ones stand in for api_key is the named provider's own knowledge. Problems go
// to o.P. It reads neither "workspace" nor calls o.Finish: the caller reads what else it allows, then finishes.
func ReadProvider(o *jsoncheck.Object) *storage.Provider {
	pr := &storage.Provider{Slug: o.Str("slug", true), Name: o.Str("name", false), Fields: map[string]json.RawMessage{}}
	if pr.Slug != "" && !storage.ValidID(pr.Slug) {
		o.P.Add(o.At("slug"), "%q is not a valid identifier (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", pr.Slug)
	}
	var d *providers.Descriptor
	if name := o.Str("provider", true); name != "" {
		id, ok := providers.Canonical(name)
		if !ok {
			o.P.Add(o.At("provider"), "unknown provider %q (known: %s)", name, strings.Join(providers.Identifiers(), ", "))
		}
		pr.Provider = id
		d, _ = providers.Describe(id)
	}
	// The adapters' checks read the entry as a config object at the top level; fieldProblem puts their paths
	// under the entry's.
	entry := jsonfield.ObjectOf(o.Fields, "")
	// "models": the stored provider's own catalogue facts (catalog.ParseOverrides), kept with its fields.
	if raw := o.Get(catalog.OverridesField); raw != nil {
		var ge *gwerr.Error
		switch _, err := catalog.ParseOverrides(raw); {
		case errors.As(err, &ge):
			o.P.Add(o.Path+"."+ge.Param, "%s", ge.Message)
		case err != nil:
			o.P.Add(o.At(catalog.OverridesField), "%s", err.Error())
		default:
			pr.Fields[catalog.OverridesField] = raw
		}
	}
	for _, name := range o.Unread() {
		want, f := "string", providers.Field{}
		if name != "api_key" && name != "custom_host" {
			var ok bool
			if f, ok = providers.FieldByName(name); !ok {
				continue // reported by the caller's Finish
			}
			want = f.Kind.String()
		}
		raw := o.Get(name)
		if raw == nil {
			continue
		}
		if k := jsoncheck.Kind(raw); k != want {
			article := "a"
			if want == "object" || want == "array" {
				article = "an"
			}
			o.P.Add(o.At(name), "must be %s %s, not %s", article, want, k)
			continue
		}
		if f.Name != "" {
			if err := f.Validate(entry); err != nil {
				path, msg := fieldProblem(o.Path, err)
				o.P.Add(path, "%s", msg)
				continue
			}
		}
		pr.Fields[name] = raw
	}
	if raw, ok := pr.Fields["custom_host"]; ok {
		var host string
		_ = json.Unmarshal(raw, &host)
		if u, err := url.Parse(host); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			o.P.Add(o.At("custom_host"), "%q must be an http or https URL", netguard.RedactURL(host))
		}
	}
	if _, given := o.Fields["api_key"]; !given && d != nil && !d.Keyless {
		_, found := pr.Fields["custom_host"]
		for _, f := range d.Credentials {
			_, has := pr.Fields[f]
			found = found || has
		}
		if !found {
			o.P.Add(o.At("api_key"), "is required for provider %q (or give custom_host, or the provider's cloud credentials)", pr.Provider)
		}
	}
	return pr
}

// fieldProblem places a config check's error (a *gwerr.Error whose Param is a path in the entry) under base.
func fieldProblem(base string, err error) (path, msg string) {
	var ge *gwerr.Error
	if !errors.As(err, &ge) {
		return base, err.Error()
	}
	msg = strings.TrimPrefix(ge.Message, "invalid config: ")
	if ge.Param == "" {
		return base, msg
	}
	return base + "." + ge.Param, strings.TrimPrefix(msg, ge.Param+": ")
}

// parseProviderBody checks a request body with ReadProvider: unknown fields ("workspace" among them) are
// refused; the first problem is the 400, naming its path.
func parseProviderBody(body []byte) (*storage.Provider, error) {
	var pr *storage.Provider
	err := jsoncheck.Check(body, func(o *jsoncheck.Object) {
		pr = ReadProvider(o)
		o.Finish()
	})
	var je *jsoncheck.Error
	if errors.As(err, &je) && len(je.Problems) > 0 {
		return nil, gwerr.BadRequest(je.Problems[0].Path, "invalid provider: %s", je.Error())
	}
	if err != nil {
		return nil, gwerr.BadRequest("", "invalid provider: %v", err)
	}
	return pr, nil
}

// Page is one page of a list ordered by a key (a slug or an ID): the items after the key After, at most
// Limit of them, and whether more follow.
type Page struct {
	Limit int    // 1 to 100; 0 means DefaultPageLimit
	After string // "": from the start
}

// DefaultPageLimit and MaxPageLimit bound Page.Limit.
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// PageOf returns the items of sorted (ordered by key) after pg.After, at most pg.Limit of them, and whether
// more follow.
func PageOf[T any](sorted []T, key func(T) string, pg Page) (items []T, hasMore bool) {
	limit := pg.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	start := 0
	if pg.After != "" {
		start, _ = slices.BinarySearchFunc(sorted, pg.After, func(x T, after string) int { return strings.Compare(key(x), after) })
		if start < len(sorted) && key(sorted[start]) == pg.After {
			start++
		}
	}
	end := min(start+limit, len(sorted))
	return sorted[start:end], end < len(sorted)
}

// ListProviders returns a page of the caller's workspace's providers, ordered by slug, with their secrets.
// Callers that show them mask them (MaskProviderFields).
func (p *Plane) ListProviders(_ context.Context, caller Caller, pg Page) ([]*storage.Provider, bool, error) {
	all, err := p.store.Providers.List(caller.WorkspaceID)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	slices.SortFunc(all, func(a, b *storage.Provider) int { return strings.Compare(a.Slug, b.Slug) })
	items, more := PageOf(all, func(x *storage.Provider) string { return x.Slug }, pg)
	return items, more, nil
}

// GetProvider returns the caller's workspace's provider slug, with its secrets.
func (p *Plane) GetProvider(_ context.Context, caller Caller, slug string) (*storage.Provider, error) {
	pr, err := p.store.Providers.Get(caller.WorkspaceID, slug)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("provider", slug)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return pr, nil
}

// CreateProvider makes a provider in the caller's workspace from body (a bootstrap "providers" item without
// "workspace"). A taken slug is 409.
func (p *Plane) CreateProvider(_ context.Context, caller Caller, body []byte) (*storage.Provider, error) {
	pr, err := parseProviderBody(body)
	if err != nil {
		return nil, err
	}
	pr.WorkspaceID = caller.WorkspaceID
	p.providerWrites.Lock()
	defer p.providerWrites.Unlock()
	switch _, err := p.store.Providers.Get(caller.WorkspaceID, pr.Slug); {
	case err == nil:
		return nil, gwerr.Newf(http.StatusConflict, gwerr.CodeConflict, "provider %q already exists in this workspace (replace it with PUT /v1/providers/%s)", pr.Slug, pr.Slug)
	case !errors.Is(err, storage.ErrNotFound):
		return nil, gwerr.Internal(err)
	}
	if _, err := p.store.Providers.Put(pr); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("provider created", "trace_id", caller.TraceID, "provider", pr.Slug, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return p.GetProvider(context.Background(), caller, pr.Slug)
}

// ReplaceProvider replaces the caller's workspace's provider slug with body (the same shape as CreateProvider's;
// its slug, if given, must be slug). A secret sent back masked, as it reads, keeps the stored value.
func (p *Plane) ReplaceProvider(_ context.Context, caller Caller, slug string, body []byte) (*storage.Provider, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil && fields != nil {
		if _, ok := fields["slug"]; !ok { // the path names it
			fields["slug"], _ = json.Marshal(slug)
			body, _ = json.Marshal(fields)
		}
	}
	pr, err := parseProviderBody(body)
	if err != nil {
		return nil, err
	}
	if pr.Slug != slug {
		return nil, gwerr.BadRequest("slug", "slug %q in the body is not the provider's slug %q in the path", pr.Slug, slug)
	}
	pr.WorkspaceID = caller.WorkspaceID
	p.providerWrites.Lock()
	defer p.providerWrites.Unlock()
	old, err := p.GetProvider(context.Background(), caller, slug)
	if err != nil {
		return nil, err
	}
	for name, v := range pr.Fields {
		if stored, ok := old.Fields[name]; ok && secretField(old.Provider, name) && string(maskValue(name, stored)) == string(v) {
			pr.Fields[name] = stored
		}
	}
	if _, err := p.store.Providers.Put(pr); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("provider replaced", "trace_id", caller.TraceID, "provider", slug, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return p.GetProvider(context.Background(), caller, slug)
}

// DeleteProvider deletes the caller's workspace's provider slug: it is unknown to the next request. While a
// saved config or a prompt names it, only with force (409 otherwise, naming them).
func (p *Plane) DeleteProvider(_ context.Context, caller Caller, slug string, force bool) error {
	p.providerWrites.Lock()
	defer p.providerWrites.Unlock()
	if _, err := p.GetProvider(context.Background(), caller, slug); err != nil {
		return err
	}
	if !force {
		users, err := p.providerUsers(caller.WorkspaceID, slug)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return gwerr.Newf(http.StatusConflict, gwerr.CodeConflict, "provider %q is still named by %s: change them first, or delete with ?force=true",
				slug, strings.Join(users, ", "))
		}
	}
	err := p.store.Providers.Delete(caller.WorkspaceID, slug)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("provider", slug)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.log.Info("provider deleted", "trace_id", caller.TraceID, "provider", slug, "workspace_id", caller.WorkspaceID,
		"force", force, "by", caller.KeyID)
	return nil
}

// providerUsers names the saved configs ("config <id>") and prompt versions ("prompt <id> version <n>") of the
// workspace that name slug as a provider.
func (p *Plane) providerUsers(workspaceID, slug string) ([]string, error) {
	var users []string
	configs, err := p.store.Configs.List(workspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	for _, c := range configs {
		if namesProvider(c.Config, slug) {
			users = append(users, fmt.Sprintf("config %q", c.ID))
		}
	}
	prompts, err := p.store.Prompts.List(workspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	for _, pr := range prompts {
		for _, v := range pr.Versions {
			if namesProvider(v.Template, slug) {
				users = append(users, fmt.Sprintf("prompt %q version %d", pr.ID, v.Version))
			}
		}
	}
	return users, nil
}

// namesProvider reports whether raw, a config or a prompt template, names the stored provider slug: a
// "provider": "@slug" or "virtual_key": "slug" in any object of it.
func namesProvider(raw json.RawMessage, slug string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			if x["provider"] == "@"+slug || x["virtual_key"] == slug {
				return true
			}
			for _, c := range x {
				if walk(c) {
					return true
				}
			}
		case []any:
			for _, c := range x {
				if walk(c) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// secretField reports whether the field name of a provider of the identifier id holds a secret: one the store
// seals, or one the provider's descriptor counts as a credential.
func secretField(id, name string) bool {
	if storage.SecretFields[name] {
		return true
	}
	d, ok := providers.Describe(id)
	return ok && slices.Contains(d.Credentials, name)
}

// maskValue is how a secret field reads back: a string as "…" and its last four characters (all of it hidden
// when it is shorter than 8), custom_host with its userinfo redacted, any other value as "…".
func maskValue(name string, raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		out, _ := json.Marshal("…")
		return out
	}
	if name == "custom_host" {
		s = netguard.RedactURL(s)
	} else {
		s = maskSecret(s)
	}
	out, _ := json.Marshal(s)
	return out
}

// maskSecret is how every stored secret string reads back (provider fields, MCP server headers): "…" and its
// last four characters, all of it hidden when it is shorter than 8. A value sent back as it reads keeps the
// stored one.
func maskSecret(v string) string {
	if len(v) < 8 {
		return "…"
	}
	return "…" + v[len(v)-4:]
}

// MaskProviderFields returns pr's fields as they may be shown: every secret masked (maskValue).
func MaskProviderFields(pr *storage.Provider) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(pr.Fields))
	for name, v := range pr.Fields {
		if secretField(pr.Provider, name) {
			v = maskValue(name, v)
		}
		out[name] = v
	}
	return out
}
