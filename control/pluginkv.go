package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/storage"
)

// The plugin key-value store of the caller's workspace: text values under short keys that the workspace's
// plugins read with the kv_get host function, so that a plugin's data (a deny list, say) changes without a new
// module. A body is {"value": "<string>"}.
//
// Decisions:
//   - A key is 1 to MaxPluginKVKey bytes of printable ASCII without spaces or '/' (storage.ValidPluginKVKey):
//     it travels in a URL path and in the store's own keys. Another workspace's key is as unknown as a missing
//     one (404).
//   - A value is any JSON string, up to MaxPluginKVValue bytes once decoded (UTF-8); plugins get those bytes.
//     Values are not secrets: they are stored in clear and shown to every admin key of the workspace.
//   - A workspace holds at most MaxPluginKVEntries keys and MaxPluginKVBytes of values together; a write past
//     either is a 409 naming the bound. The check and the write are one step (pluginKVWrites), across replicas.
//   - Plugins read from memory (storage.PluginKVStore.Lookup): a write is served to the next check, on other
//     replicas once the change feed tells them (within a second).

// Bounds of the plugin key-value store.
const (
	MaxPluginKVKey     = storage.MaxPluginKVKey
	MaxPluginKVValue   = 1 << 20
	MaxPluginKVEntries = 1000
	MaxPluginKVBytes   = 16 << 20
)

// pluginKVLock is the name of the lock that makes a write's bounds check and the write one step.
const pluginKVLock = "control.pluginkv"

// checkPluginKVKey returns a 400 naming "key" when key cannot be a key of the store.
func checkPluginKVKey(key string) error {
	switch {
	case key == "":
		return gwerr.BadRequest("key", "key is required")
	case len(key) > MaxPluginKVKey:
		return gwerr.BadRequest("key", "key is %d bytes long, more than the limit of %d", len(key), MaxPluginKVKey)
	case !storage.ValidPluginKVKey(key):
		return gwerr.BadRequest("key", "key %q must be printable ASCII without spaces or '/'", clip(key))
	}
	return nil
}

// parsePluginKVBody reads {"value": "<string>"} and checks the value's size.
func parsePluginKVBody(body []byte) (string, error) {
	var value string
	err := jsoncheck.Check(body, func(o *jsoncheck.Object) {
		raw := o.Get("value")
		switch {
		case raw == nil:
			o.P.Add(o.At("value"), "is required: the text plugins read, as a JSON string")
		case json.Unmarshal(raw, &value) != nil:
			o.P.Add(o.At("value"), "must be a string, not %s", jsoncheck.Kind(raw))
		case len(value) > MaxPluginKVValue:
			o.P.Add(o.At("value"), "is %d bytes long, more than the limit of %d (1 MiB)", len(value), MaxPluginKVValue)
		}
		o.Finish()
	})
	var je *jsoncheck.Error
	if errors.As(err, &je) && len(je.Problems) > 0 {
		return "", gwerr.BadRequest(je.Problems[0].Path, "invalid plugin key-value entry: %s", je.Error())
	}
	if err != nil {
		return "", gwerr.BadRequest("", "invalid plugin key-value entry: %v", err)
	}
	return value, nil
}

// ListPluginKV returns a page of the caller's workspace's entries, ordered by key. Their values are the
// caller's to leave out.
func (p *Plane) ListPluginKV(_ context.Context, caller Caller, pg Page) ([]*storage.PluginKVEntry, bool, error) {
	all, err := p.store.PluginKV.List(caller.WorkspaceID)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	items, more := PageOf(all, func(e *storage.PluginKVEntry) string { return e.Key }, pg)
	return items, more, nil
}

// GetPluginKV returns the caller's workspace's entry key.
func (p *Plane) GetPluginKV(_ context.Context, caller Caller, key string) (*storage.PluginKVEntry, error) {
	if err := checkPluginKVKey(key); err != nil {
		return nil, err
	}
	e, err := p.store.PluginKV.Get(caller.WorkspaceID, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("plugin key-value key", key)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return e, nil
}

// PutPluginKV creates or replaces the caller's workspace's entry key with body's value, within the
// workspace's bounds, and reports whether it created it.
func (p *Plane) PutPluginKV(ctx context.Context, caller Caller, key string, body []byte) (*storage.PluginKVEntry, bool, error) {
	if err := checkPluginKVKey(key); err != nil {
		return nil, false, err
	}
	value, err := parsePluginKVBody(body)
	if err != nil {
		return nil, false, err
	}
	lock := p.store.Mutex(pluginKVLock)
	lock.Lock()
	defer lock.Unlock()
	all, err := p.store.PluginKV.List(caller.WorkspaceID)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	entries, total, exists := 0, len(value), false
	for _, e := range all {
		if e.Key == key {
			exists = true
			continue
		}
		entries++
		total += len(e.Value)
	}
	if !exists && entries >= MaxPluginKVEntries {
		return nil, false, &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "key",
			Message: fmt.Sprintf("the workspace holds %d plugin key-value keys, the limit (%d): delete one first", entries, MaxPluginKVEntries)}
	}
	if total > MaxPluginKVBytes {
		return nil, false, &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "value",
			Message: fmt.Sprintf("with this value the workspace's plugin key-value values would take %d bytes, more than the limit of %d (16 MiB) for all of them together", total, MaxPluginKVBytes)}
	}
	created, err := p.store.PluginKV.Put(&storage.PluginKVEntry{WorkspaceID: caller.WorkspaceID, Key: key, Value: value})
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	p.log.Info("plugin key-value entry written", "trace_id", caller.TraceID, "key", key, "size", len(value), "created", created,
		"workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	e, err := p.GetPluginKV(ctx, caller, key)
	return e, created, err
}

// DeletePluginKV removes the caller's workspace's entry key.
func (p *Plane) DeletePluginKV(_ context.Context, caller Caller, key string) error {
	if err := checkPluginKVKey(key); err != nil {
		return err
	}
	lock := p.store.Mutex(pluginKVLock)
	lock.Lock()
	defer lock.Unlock()
	err := p.store.PluginKV.Delete(caller.WorkspaceID, key)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("plugin key-value key", key)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.log.Info("plugin key-value entry deleted", "trace_id", caller.TraceID, "key", key, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return nil
}
