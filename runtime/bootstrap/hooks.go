package bootstrap

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// checkConfigHooks resolves the plugin check ids of c's hooks and guardrails, and of every target under it, each
// at its own place, as requests would: a plugin the workspace lacks gives the *gwerr.Error of the first such
// check, whose Param is its path in the config (targets[1].input_guardrails[0].pii.detect). Their shape was
// checked by config.Parse; saved guardrails named by ID are read when a request uses the config, as DESIGN.md
// has it for guardrails deleted later.
func checkConfigHooks(c *config.Config, workspaceID, path string, plugins guardrails.PluginChecks) error {
	if err := guardrails.ValidateIn(workspaceID, path, c.BeforeRequestHooks, c.AfterRequestHooks,
		c.InputGuardrails, c.OutputGuardrails, plugins); err != nil {
		return err
	}
	for i, t := range c.Targets {
		p := "targets[" + strconv.Itoa(i) + "]"
		if path != "" {
			p = path + "." + p
		}
		if err := checkConfigHooks(t, workspaceID, p, plugins); err != nil {
			return err
		}
	}
	return nil
}

// compileProblem turns a config or guardrail error into a problem's path and message under base, the entry's
// path in the file (guardrails' and config's Params are relative to the entry).
func compileProblem(base string, err error) (path, msg string) {
	path, msg = base, err.Error()
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		msg = strings.TrimPrefix(ge.Message, "invalid config: ")
		if ge.Param != "" {
			msg = strings.TrimPrefix(msg, ge.Param+": ")
			path += "." + ge.Param
		}
	}
	return path, msg
}

// checkPlugins refuses guardrails and configs whose checks name a plugin that neither the file (for the same
// workspace) nor the store has: such a check would pass every request on a check error. It runs once the
// workspaces are resolved (refs, by entry path); a failing store read is returned as it is.
func checkPlugins(st *storage.Store, f *File, refs map[string]*storage.Workspace, p *problems) error {
	if len(f.Guardrails)+len(f.Configs) == 0 {
		return nil
	}
	inFile := map[string]bool{}
	for _, x := range f.Plugins {
		if w := refs[x.Path]; w != nil {
			inFile[w.ID+"\x00"+x.ID] = true
		}
	}
	var readErr error
	plugins := func(workspaceID, pluginID, _ string, _ json.RawMessage) (guardrails.Check, error) {
		if inFile[workspaceID+"\x00"+pluginID] {
			return acceptAll{}, nil
		}
		_, err := st.Plugins.Get(workspaceID, pluginID)
		switch {
		case err == nil:
			return acceptAll{}, nil
		case errors.Is(err, storage.ErrNotFound):
			return nil, guardrails.ErrNoPlugin
		}
		readErr = err
		return nil, gwerr.Internal(err)
	}
	report := func(w *storage.Workspace, base string, err error) error {
		if readErr != nil {
			return readErr
		}
		path, msg := compileProblem(base, err)
		if errors.Is(err, guardrails.ErrNoPlugin) {
			msg = strings.Replace(msg, "in this workspace", "in workspace "+w.Slug, 1) + `: define it under "plugins" or upload it first`
		}
		p.Add(path, "%s", msg)
		return nil
	}
	for _, x := range f.Guardrails {
		w := refs[x.Path]
		if w == nil || x.Object == nil {
			continue
		}
		if err := guardrails.ValidateSavedIn(w.ID, x.Object, plugins); err != nil {
			if err := report(w, x.Path, err); err != nil {
				return err
			}
		}
	}
	for _, x := range f.Configs {
		w := refs[x.Path]
		if w == nil || x.Config == nil {
			continue
		}
		c, err := config.Parse(x.Config)
		if err != nil {
			continue // an empty config, let through by Parse; anything else was reported there
		}
		if err := checkConfigHooks(c, w.ID, "", plugins); err != nil {
			if err := report(w, x.Path+".config", err); err != nil {
				return err
			}
		}
	}
	return nil
}
