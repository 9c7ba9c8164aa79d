package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
	"github.com/llmgw/gateway/tracing"
)

// StatusHooksFailedSoft is the status of an answer some of whose checks failed without denying it.
const StatusHooksFailedSoft = 246

// hookSets caches compiled hook and guardrail sets by plan, node and workspace: a config's checks are compiled
// once, like the config itself. It also holds what every set runs under: the gateway's default for checks that
// error, and the count of those errors.
type hookSets struct {
	m sync.Map     // string → hookSetEntry
	n atomic.Int64 // entries stored since the last clear

	failChecks bool // Options.CheckErrorsFail

	errCounts   sync.Map     // check id → *atomic.Int64
	errCountIDs atomic.Int64 // keys of errCounts
}

// maxHookSets bounds the cache: configs sent inline can vary without end, so past this many entries the cache
// starts over (sets in use are compiled again on their next request).
const maxHookSets = 4096

// maxCountedChecks bounds the check ids counted apart: plugin check names are the caller's to choose, so past
// this many the rest count under otherChecks.
const (
	maxCountedChecks = 1024
	otherChecks      = "other"
)

type hookSetEntry struct {
	set *guardrails.Set
	err error
}

// ForgetCompiledHooks drops every compiled hook set, so that a saved guardrail that changed or went away is
// read again. Admin endpoints call it after they write a guardrail.
func (e *Engine) ForgetCompiledHooks() {
	e.hookSets.m.Clear()
	e.hookSets.n.Store(0)
}

// hooks returns the compiled set of a node for the request's workspace, or nil when the node has none.
func (e *Engine) hooks(st *state, n *config.Node) (*guardrails.Set, error) {
	if len(n.BeforeHooks)+len(n.AfterHooks)+len(n.InputGuardrails)+len(n.OutputGuardrails) == 0 {
		return nil, nil
	}
	workspaceID := st.req.Key.WorkspaceID
	return e.compiledSet(st.planHash+"\x00"+n.Path+"\x00"+workspaceID, func(plugins guardrails.PluginChecks) (*guardrails.Set, error) {
		prefix := strings.TrimPrefix(strings.TrimPrefix(n.Path, "config"), ".")
		return guardrails.Compile(workspaceID, prefix, n.BeforeHooks, n.AfterHooks, n.InputGuardrails,
			n.OutputGuardrails, e.savedGuardrails, plugins)
	})
}

// compiledSet is the set cached under key, compiled on a miss (with the workspace's stored plugins) and given
// the gateway's error policy. A set naming a plugin the workspace lacks is not kept: the plugin may be uploaded
// before the next request.
func (e *Engine) compiledSet(key string, compile func(guardrails.PluginChecks) (*guardrails.Set, error)) (*guardrails.Set, error) {
	if v, ok := e.hookSets.m.Load(key); ok {
		entry := v.(hookSetEntry)
		return entry.set, entry.err
	}
	set, err := compile(RequireStoredPlugins(e.store, e.pluginChecks))
	if errors.Is(err, guardrails.ErrNoPlugin) {
		return nil, err
	}
	if err == nil {
		set = set.WithErrorPolicy(guardrails.ErrorPolicy{Fail: e.hookSets.failChecks, Report: e.checkErrored})
	}
	if e.hookSets.n.Add(1) > maxHookSets {
		e.ForgetCompiledHooks()
	}
	e.hookSets.m.Store(key, hookSetEntry{set: set, err: err})
	return set, err
}

// savedGuardrails looks a saved guardrail up for guardrails.Compile.
func (e *Engine) savedGuardrails(workspaceID, id string) (json.RawMessage, error) {
	g, err := e.store.Guardrails.Get(workspaceID, id)
	if err != nil {
		return nil, err
	}
	return g.Guardrail, nil
}

// RequireStoredPlugins wraps pc so that a check id naming a plugin the workspace has not stored is refused with
// guardrails.ErrNoPlugin, which Compile makes a 400 naming the check (DESIGN.md: an unknown check id is a config
// error). Stored is what counts, not loaded: a plugin still compiling at start is accepted, and its checks
// error until it is ready. A nil pc stays nil (the gateway runs no plugin checks); a nil store checks nothing.
func RequireStoredPlugins(store *storage.Store, pc guardrails.PluginChecks) guardrails.PluginChecks {
	if pc == nil || store == nil {
		return pc
	}
	return func(workspaceID, pluginID, check string, params json.RawMessage) (guardrails.Check, error) {
		if _, err := store.Plugins.Get(workspaceID, pluginID); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return nil, guardrails.ErrNoPlugin
			}
			return nil, gwerr.Internal(err)
		}
		return pc(workspaceID, pluginID, check, params)
	}
}

// checkErrored is the guardrails.ErrorPolicy.Report of every set: one warning per check that errored, so that a
// check failing open is never silent, and a count per check id. It runs only for checks that errored.
func (e *Engine) checkErrored(req hostapi.RequestView, ce guardrails.CheckError) {
	var traceID, workspaceID string
	switch v := req.(type) {
	case requestView:
		traceID, workspaceID = v.st.req.TraceID, v.st.req.Key.WorkspaceID
	case *ToolCallView:
		traceID, workspaceID = v.TraceID, v.WorkspaceID
	}
	e.countCheckError(ce.CheckID)
	countedAs := "pass"
	if ce.Failed {
		countedAs = "fail"
	}
	attrs := []any{"trace_id", traceID, "workspace", workspaceID, "check", ce.CheckID, "hook", ce.HookID,
		"stage", string(ce.Stage), "counted_as", countedAs, "error", logLine(ce.Err)}
	if ce.Async {
		attrs = append(attrs, "async", true)
	}
	// A set compiled before its plugin was deleted would let every request through on a check error: drop the
	// compiled sets, so that the next request compiles again and gets the 400 of an unknown plugin.
	if ce.Plugin != "" && e.store != nil && workspaceID != "" {
		if _, err := e.store.Plugins.Get(workspaceID, ce.Plugin); errors.Is(err, storage.ErrNotFound) {
			e.ForgetCompiledHooks()
			attrs = append(attrs, "plugin_deleted", true)
		}
	}
	e.log.Warn("check errored", attrs...)
}

// countCheckError adds one to the check's error count.
func (e *Engine) countCheckError(checkID string) {
	h := &e.hookSets
	v, ok := h.errCounts.Load(checkID)
	if !ok {
		// Reserve a place before storing, so that ids arriving at once cannot overshoot the bound.
		reserved := false
		for !reserved {
			n := h.errCountIDs.Load()
			if n >= maxCountedChecks {
				checkID = otherChecks
				break
			}
			reserved = h.errCountIDs.CompareAndSwap(n, n+1)
		}
		var loaded bool
		v, loaded = h.errCounts.LoadOrStore(checkID, new(atomic.Int64))
		if loaded && reserved {
			h.errCountIDs.Add(-1)
		}
	}
	v.(*atomic.Int64).Add(1)
}

// CheckErrors returns how many times each check id has errored since the engine started (the checks past the
// first 1024 ids under "other"), for metrics. Safe for concurrent use.
func (e *Engine) CheckErrors() map[string]int64 {
	out := map[string]int64{}
	e.hookSets.errCounts.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// logLine keeps a check's error fit for a log line: its first line, at most 256 bytes. The text is the check's
// own (a plugin's may say anything); the gateway adds no request content to it.
func logLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	const max = 256
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// afterHooks runs after-request hooks and output guardrails on a 2xx answer and marks it: 446 on a deny, 246
// when some check failed without denying, and hook_results beside the completion's fields.
func (e *Engine) afterHooks(ctx context.Context, st *state, set *guardrails.Set, out *outcome, results HookResults, soft bool) {
	// The answer's hook results: the before side here, the after side below once it runs on a whole answer.
	out.hooks = results
	if unjudged(st.req, out) { // audio, or a transcript as text (media_step.go)
		if soft {
			out.status = StatusHooksFailedSoft
		}
		return
	}
	if out.stream != nil {
		// The status is sent before the answer is known: only the before side can make it 246.
		if soft {
			out.status = StatusHooksFailedSoft
		}
		e.streamWithOutputHooks(ctx, st, set, out, results)
		return
	}
	var after guardrails.Outcome
	if set.Has(guardrails.StageAfter) {
		var body *guardrails.Body
		if set.Mutates(guardrails.StageAfter) {
			body = answerBody(st, out.body)
		}
		after = e.runStage(ctx, st, set, guardrails.StageAfter, answerText(out.body), body)
		if after.Body != nil {
			out.body = after.Body // what the client gets; the cache kept the provider's own answer
		}
	}
	results.After = after.Results
	out.hooks = results
	e.runAsync(ctx, st.req.TraceID, after.Async)
	if after.Deny {
		out.status, out.header, out.body = gwerr.StatusHooksFailed, jsonContentType, hooksDenied(results)
		return
	}
	if soft || after.Failed {
		out.status = StatusHooksFailedSoft
	}
	out.body = withHookResults(out.body, results, after.Transformed)
}

// runHooks runs the after side of a set on a streamed answer's text (hookstream.go): there is no whole body,
// so a mutator's checks error, never skipped in silence.
func (e *Engine) runHooks(ctx context.Context, st *state, set *guardrails.Set, stage guardrails.Stage, text string) guardrails.Outcome {
	return e.runStage(ctx, st, set, stage, text, &guardrails.Body{Refusal: streamedMutator})
}

// streamedMutator is the error of a mutator's check on a streamed answer.
const streamedMutator = "mutators do not run on streamed answers: the answer reaches the client as it comes, with no whole body to rewrite"

// runStage runs one stage of a set on text, and its mutator hooks on body (nil when the set has none for the
// stage): in a span of its own when tracing is on, and with each check's verdict reported to the observer (the
// async items' when they finish, in runAsync).
func (e *Engine) runStage(ctx context.Context, st *state, set *guardrails.Set, stage guardrails.Stage, text string, body *guardrails.Body) guardrails.Outcome {
	var span trace.Span
	if tracing.Enabled() {
		name := "hooks before"
		if stage == guardrails.StageAfter {
			name = "hooks after"
		}
		ctx, span = tracing.Start(ctx, name, trace.SpanKindInternal, tracing.KeyHookStage.String(string(stage)))
	}
	out := set.RunBody(ctx, stage, checkInput(st, stage, text), requestView{st}, body)
	if e.observer != nil {
		for i := range out.Results {
			e.reportVerdicts(&out.Results[i])
		}
	}
	if span != nil {
		span.SetAttributes(tracing.KeyHookItems.Int(len(out.Results)), tracing.KeyHookFailed.Bool(out.Failed),
			tracing.KeyHookDenied.Bool(out.Deny))
		span.End()
	}
	return out
}

// reportVerdicts gives the observer one verdict per check of a hook result: "error" when the check errored
// (whatever it counted as), "pass", "deny" when it failed and its item denies, else "fail".
func (e *Engine) reportVerdicts(res *guardrails.HookResult) {
	for i := range res.Checks {
		c := &res.Checks[i]
		verdict := "pass"
		switch {
		case c.Error != nil:
			verdict = "error"
		case c.Verdict:
		case res.Deny:
			verdict = "deny"
		default:
			verdict = "fail"
		}
		e.observer.GuardrailVerdict(c.ID, verdict)
	}
}

// HookResults is the hook_results member of answers (DESIGN.md).
type HookResults struct {
	Before []guardrails.HookResult `json:"before_request_hooks"`
	After  []guardrails.HookResult `json:"after_request_hooks"`
}

// MarshalJSON writes an empty side as [] rather than null: clients index both lists.
func (r HookResults) MarshalJSON() ([]byte, error) {
	type plain HookResults
	if r.Before == nil {
		r.Before = []guardrails.HookResult{}
	}
	if r.After == nil {
		r.After = []guardrails.HookResult{}
	}
	return json.Marshal(plain(r))
}

// requestView answers field lookups of checks and plugins from the request, parsed once per request.
type requestView struct {
	st *state
}

func (v requestView) Field(path string) ([]byte, bool) {
	env := v.st.conditionEnv()
	root, rest, _ := strings.Cut(path, ".")
	var cur any
	switch root {
	case "params":
		cur = env.Params
	case "metadata":
		s, ok := env.Metadata[rest]
		if !ok {
			return nil, false
		}
		b, _ := json.Marshal(s)
		return b, true
	case "url":
		if rest != "pathname" {
			return nil, false
		}
		b, _ := json.Marshal(env.URLPath)
		return b, true
	default:
		return nil, false
	}
	return fieldAt(cur, rest)
}

// fieldAt is the JSON text of the value at a dotted path ("a.b.0") under cur, a decoded JSON value.
func fieldAt(cur any, rest string) ([]byte, bool) {
	for rest != "" {
		var seg string
		seg, rest, _ = strings.Cut(rest, ".")
		switch c := cur.(type) {
		case map[string]any:
			var ok bool
			if cur, ok = c[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	b, err := json.Marshal(cur)
	return b, err == nil
}

// checkInput builds what checks see of the request: the text of its messages (or prompt, or input).
func checkInput(st *state, stage guardrails.Stage, text string) *hostapi.Input {
	in := &hostapi.Input{Text: text, Stage: string(stage), Endpoint: endpointName(st.req.Endpoint)}
	in.Model = st.req.Body.Model()
	for k, v := range st.req.Metadata {
		in.Metadata = append(in.Metadata, hostapi.KV{Key: k, Value: v})
	}
	return in
}

func endpointName(ep providers.Endpoint) string {
	switch ep {
	case providers.ChatCompletions:
		return "chat"
	case providers.Completions:
		return "completions"
	case providers.Embeddings:
		return "embeddings"
	case providers.Responses:
		return "responses"
	case providers.Messages, providers.MessagesCountTokens:
		return "messages"
	case providers.ImagesGenerations:
		return "images.generations"
	case providers.ImagesEdits:
		return "images.edits"
	case providers.AudioSpeech:
		return "audio.speech"
	case providers.AudioTranscriptions:
		return "audio.transcriptions"
	case providers.AudioTranslations:
		return "audio.translations"
	case providers.Moderations:
		return "moderations"
	case providers.Rerank:
		return "rerank"
	}
	return ""
}

// requestText is the text input checks look at: the messages' text (chat; Anthropic's Messages: its system
// prompt first), the prompt (completions, images; an image edit's prompt field), the input (embeddings,
// moderations, audio/speech; responses: a string, or the text parts of its items) or the query (rerank). Audio
// uploads have none: checks see "".
func requestText(params map[string]any) string {
	var b strings.Builder
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	if msgs, ok := params["messages"].([]any); ok {
		add(contentText(params["system"])) // Anthropic's: a string or text blocks; chat requests have none

		for _, m := range msgs {
			msg, _ := m.(map[string]any)
			add(contentText(msg["content"]))
		}
		return b.String()
	}
	for _, key := range []string{"prompt", "input", "query"} {
		switch v := params[key].(type) {
		case string:
			add(v)
		case []any:
			for _, item := range v {
				switch it := item.(type) {
				case string:
					add(it)
				case map[string]any: // a responses input item: a message's content, a tool's output
					add(contentText(it["content"]))
					if out, ok := it["output"].(string); ok {
						add(out)
					}
				}
			}
		}
	}
	return b.String()
}

func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			part, _ := p.(map[string]any)
			if t, ok := part["text"].(string); ok {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// maxMutatedBody bounds a mutator's replacement body, besides twice the body it was given: the gateway's
// default request body limit (routes.DefaultBodyLimit, which runtime cannot import).
const maxMutatedBody = 32 << 20

// mutable reports whether mutators may rewrite the request's bodies: those in OpenAI's JSON shape as the route
// received them (a prompt's completion is one after rendering). The others, Anthropic's messages, responses,
// uploads, have another shape or none, and a mutator's check errors there.
func mutable(st *state) bool {
	switch st.req.Endpoint {
	case providers.ChatCompletions, providers.Completions, providers.Embeddings:
		return st.req.ContentType == ""
	}
	return false
}

func notMutable(st *state) *guardrails.Body {
	return &guardrails.Body{Refusal: "mutators rewrite chat completions, completions and embeddings, not " +
		endpointName(st.req.Endpoint) + " requests"}
}

// requestBody is what mutators of before_request_hooks rewrite: the body as it is about to be keyed and sent.
// A replacement must pass what the route checked of the caller's body (schema.ReadBody), decode as the
// endpoint's request where the gateway has a decoder for it (the one translating adapters use), and keep the
// stream flag, since the route has chosen how to answer.
func requestBody(st *state, body []byte) *guardrails.Body {
	if !mutable(st) {
		return notMutable(st)
	}
	ep, stream := st.req.Endpoint, st.req.Stream
	return &guardrails.Body{
		JSON: body,
		Validate: func(b []byte) error {
			if len(b) > maxMutatedBody {
				return fmt.Errorf("%d bytes is over the request body limit of %d", len(b), maxMutatedBody)
			}
			nb, err := schema.ReadBody(b)
			if err != nil {
				return fieldError(err)
			}
			if nb.Stream() != stream {
				return fmt.Errorf("stream: a mutator may not change stream (the request asked for %v)", stream)
			}
			switch ep {
			case providers.ChatCompletions:
				_, err = schema.DecodeChat(b)
			case providers.Embeddings:
				_, err = schema.DecodeEmbeddings(b)
			}
			return fieldError(err)
		},
		Text: func(b []byte) string {
			var params map[string]any
			_ = json.Unmarshal(b, &params) // validated: an object
			return requestText(params)
		},
		ReplaceText: replaceRequestText,
	}
}

// answerBody is what mutators of after_request_hooks rewrite: the whole answer, in OpenAI's shape. Text
// transforms of after hooks apply to the answer the mutators left (withHookResults).
func answerBody(st *state, body []byte) *guardrails.Body {
	if !mutable(st) {
		return notMutable(st)
	}
	return &guardrails.Body{
		JSON: body,
		Validate: func(b []byte) error {
			if len(b) > maxMutatedBody {
				return fmt.Errorf("%d bytes is over the body limit of %d", len(b), maxMutatedBody)
			}
			return nil // a JSON object (the plugin host checks it), which is all an answer is held to
		},
		Text: answerText,
	}
}

// fieldError is a *gwerr.Error's message led by the field it names (its Param), which is all of it a check
// error keeps: "messages must be an array, not string", "stream: must be a boolean".
func fieldError(err error) error {
	var ge *gwerr.Error
	switch {
	case !errors.As(err, &ge):
		return err
	case ge.Param == "" || strings.HasPrefix(ge.Message, ge.Param):
		return errors.New(ge.Message)
	}
	return fmt.Errorf("%s: %s", ge.Param, ge.Message)
}

// replaceRequestText writes a transformer's text back into the body: into the last user message of a chat
// request (or the last user item of a responses input), or the prompt / query / input of the others.
func replaceRequestText(body []byte, text string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	quoted, _ := json.Marshal(text)
	if raw, ok := m["messages"]; ok {
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			if string(msgs[i]["role"]) == `"user"` {
				msgs[i]["content"] = quoted
				break
			}
		}
		m["messages"], _ = json.Marshal(msgs)
	} else if _, ok := m["prompt"]; ok {
		m["prompt"] = quoted
	} else if _, ok := m["query"]; ok { // rerank
		m["query"] = quoted
	} else if raw, ok := m["input"]; ok {
		var items []map[string]json.RawMessage
		if json.Unmarshal(raw, &items) == nil && len(items) > 0 { // responses input items: as chat messages
			for i := len(items) - 1; i >= 0; i-- {
				if string(items[i]["role"]) == `"user"` {
					items[i]["content"] = quoted
					break
				}
			}
			m["input"], _ = json.Marshal(items)
		} else {
			m["input"] = quoted
		}
	}
	return json.Marshal(m)
}

// answerText is the text of an answer that output checks look at: the first choice's, a response object's
// output messages' text, or an Anthropic message's text blocks.
func answerText(body []byte) string {
	var a struct {
		Choices []struct {
			Message struct {
				Content any `json:"content"`
			} `json:"message"`
			Text string `json:"text"`
		} `json:"choices"`
		Output []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		} `json:"output"`
		Content any `json:"content"` // an Anthropic message's blocks
	}
	if json.Unmarshal(body, &a) != nil {
		return ""
	}
	if a.Content != nil {
		return contentText(a.Content)
	}
	if len(a.Choices) == 0 {
		var parts []string
		for _, item := range a.Output {
			if item.Type == "message" {
				parts = append(parts, contentText(item.Content))
			}
		}
		return strings.Join(parts, "\n")
	}
	if t := contentText(a.Choices[0].Message.Content); t != "" {
		return t
	}
	return a.Choices[0].Text
}

// withHookResults adds hook_results (and, for a transformer, the new text) to an answer's JSON body.
func withHookResults(body []byte, results HookResults, transformed *string) []byte {
	if transformed == nil {
		// The body is a JSON object (checked when it arrived): splice the member in before its closing brace
		// rather than decode and re-encode the whole answer.
		end := bytes.LastIndexByte(body, '}')
		if end > 0 {
			head := bytes.TrimRight(body[:end], " \t\r\n")
			hr, err := json.Marshal(results)
			if err == nil && len(head) > 0 {
				out := make([]byte, 0, len(body)+len(hr)+18)
				out = append(out, head...)
				if head[len(head)-1] != '{' {
					out = append(out, ',')
				}
				out = append(out, `"hook_results":`...)
				out = append(out, hr...)
				return append(out, body[end:]...)
			}
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if transformed != nil {
		var choices []map[string]json.RawMessage
		if json.Unmarshal(m["choices"], &choices) == nil && len(choices) > 0 {
			var msg map[string]json.RawMessage
			if json.Unmarshal(choices[0]["message"], &msg) == nil {
				msg["content"], _ = json.Marshal(*transformed)
				choices[0]["message"], _ = json.Marshal(msg)
			} else if _, ok := choices[0]["text"]; ok {
				choices[0]["text"], _ = json.Marshal(*transformed)
			}
			m["choices"], _ = json.Marshal(choices)
		}
	}
	m["hook_results"], _ = json.Marshal(results)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// hooksDenied is the 446 answer of a request a hook or guardrail denied.
func hooksDenied(results HookResults) []byte {
	denied := &gwerr.Error{Status: gwerr.StatusHooksFailed, Code: gwerr.CodeHooksFailed, Message: "the request was denied by a guardrail or hook"}
	body, _ := json.Marshal(struct {
		gwerr.Body
		HookResults HookResults `json:"hook_results"`
	}{denied.Body(), results})
	return body
}

// asyncHookTimeout bounds one async hook; maxAsyncHooks bounds those running at once.
const (
	asyncHookTimeout = 30 * time.Second
	maxAsyncHooks    = 256
)

// runAsync starts async hooks, which never block or change the answer; the bound keeps a flood from piling up
// goroutines (beyond it, async hooks are dropped with a warning).
func (e *Engine) runAsync(parent context.Context, traceID string, fns []func(context.Context) guardrails.HookResult) {
	for _, fn := range fns {
		select {
		case e.asyncSlots <- struct{}{}:
			go func() {
				defer func() { <-e.asyncSlots }()
				ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), asyncHookTimeout)
				defer cancel()
				res := fn(ctx)
				if e.observer != nil {
					e.reportVerdicts(&res)
				}
				e.log.Info("async hook finished", "trace_id", traceID, "hook", res.ID, "verdict", res.Verdict, "type", res.Type,
					"execution_ms", res.ExecutionTime, "checks", len(res.Checks))
			}()
		default:
			e.log.Warn("async hook queue full: an async hook was dropped")
		}
	}
}
