package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// What the gateway does around each MCP tool call (mcpgw.Interceptor), in order: the config's tool hooks are
// compiled (an invalid config fails the call as a JSON-RPC error naming x-gateway-config); the rate-limit
// policies and budgets that match tool calls admit it (a refusal is a tool error: the agent reads it and may
// wait); before_tool_call checks the arguments' JSON text (a deny is a tool error naming the hook, and the
// server is never called; a transformer's text replaces the arguments when it is still a JSON object); the call
// is forwarded once; after_tool_call checks the result's text (a deny replaces the result with a tool error; a
// transformer's text replaces the result's content). Every call that names an offered tool then is one request-log
// entry (endpoint "/mcp", tool, mcp_server), one count of gateway_tool_calls_total and one log line.

// endpointMCP is the request log's endpoint of a tool call (DESIGN.md).
const endpointMCP = "/mcp"

// maxToolNameBytes bounds the bare tool name of a call: the name is the caller's (mcpgw resolves the server,
// not the tool), and it becomes a metric label, a log field and a rate-limit group. Twice the MCP spec's 128
// characters, so that a server a little past the spec is still callable.
const maxToolNameBytes = 256

// Statuses of tool calls in the request log: the HTTP statuses the gateway gives the same outcomes elsewhere.
const (
	toolStatusCancelled = 499 // the caller went away, as nginx counts it
	toolStatusFailed    = http.StatusBadGateway
)

// toolCall is one call's outcome, for its log entry, metrics and log line.
type toolCall struct {
	start    time.Time
	status   int    // the log entry's
	label    string // gateway_tool_calls_total's status
	upstream time.Duration
	hooks    runtime.HookResults
	// arguments are the call's as its server got them (or would have), for the log.
	arguments json.RawMessage
	result    *mcp.CallToolResult
	errText   string // why the call failed or was refused, for the log line
}

func (s *Server) interceptToolCall(ctx context.Context, call *mcpgw.ToolCall, forward mcpgw.Forward) (*mcp.CallToolResult, error) {
	if len(call.Tool) > maxToolNameBytes {
		// As an unknown tool is: no server has it, and nothing should keep it.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("params.name: a tool name is at most %d bytes after its server's prefix", maxToolNameBytes)}
	}
	tc := &toolCall{start: time.Now(), status: http.StatusOK, label: metrics.ToolOK, arguments: call.Arguments}
	res, err := s.runToolCall(ctx, call, forward, tc)
	s.observeToolCall(ctx, call, tc)
	return res, err
}

func (s *Server) runToolCall(ctx context.Context, call *mcpgw.ToolCall, forward mcpgw.Forward, tc *toolCall) (*mcp.CallToolResult, error) {
	caller := call.Caller
	set, err := s.engine.ToolHooks(caller.WorkspaceID, caller.Config)
	if err != nil {
		tc.status, tc.label = http.StatusBadRequest, metrics.ToolInvalid
		var ge *gwerr.Error
		msg := err.Error()
		if errors.As(err, &ge) {
			tc.status, msg = ge.Status, ge.Message
		}
		tc.errText = msg
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: HeaderConfig + ": " + msg}
	}
	admitted, refusal := s.engine.AdmitToolCall(runtime.ToolCallAttrs{WorkspaceID: caller.WorkspaceID,
		APIKeyID: caller.APIKeyID, MCPServer: call.Server.ID, Tool: call.Tool, Metadata: caller.Metadata,
		CostPerCall: call.Server.CostPerCall})
	if refusal != nil {
		tc.status, tc.label, tc.errText = http.StatusTooManyRequests, metrics.ToolRateLimited, refusal.Message
		tc.result = toolError("tool call refused by the gateway: " + refusal.Message)
		return tc.result, nil
	}
	forwarded := false
	defer func() { admitted.Done(forwarded) }()

	view := &runtime.ToolCallView{TraceID: caller.TraceID, WorkspaceID: caller.WorkspaceID, Tool: call.Tool,
		MCPServer: call.Server.ID, Arguments: call.Arguments, Metadata: caller.Metadata}
	arguments := call.Arguments
	soft := false
	if set.Has(guardrails.StageBefore) {
		before := s.engine.RunToolHooks(ctx, set, guardrails.StageBefore, string(argumentsText(arguments)), view)
		tc.hooks.Before = before.Results
		soft = before.Failed
		if before.Deny {
			return tc.denied("before_tool_call", before.Results), nil
		}
		if t := before.Transformed; t != nil {
			if !isJSONObject(*t) {
				tc.status, tc.label = gwerr.StatusHooksFailed, metrics.ToolDenied
				tc.errText = "a before_tool_call transformer left arguments that are not a JSON object"
				tc.result = toolError("tool call refused by the gateway: a before_tool_call transformer left arguments that are not a JSON object")
				return tc.result, nil
			}
			arguments = json.RawMessage(*t)
			tc.arguments = arguments
		}
	}
	if err := ctx.Err(); err != nil {
		// The caller went away (its checks then errored, and passed): nothing to forward, nothing to pay.
		tc.status, tc.label, tc.errText = toolStatusCancelled, metrics.ToolCancelled, err.Error()
		return nil, err
	}

	upstreamStart := time.Now()
	forwarded = true
	res, err := forward(ctx, arguments)
	tc.upstream = time.Since(upstreamStart)
	if err != nil {
		tc.errText = err.Error()
		var upstream *mcpgw.UpstreamError
		switch {
		case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			tc.status, tc.label = toolStatusCancelled, metrics.ToolCancelled
		case errors.As(err, &upstream):
			tc.status, tc.label = toolStatusFailed, metrics.ToolFailed
		default: // the server's own JSON-RPC error
			tc.status, tc.label = toolStatusFailed, metrics.ToolFailed
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && set.Has(guardrails.StageAfter) {
				return s.checkServerError(ctx, set, view, rpcErr, tc)
			}
		}
		return nil, err
	}
	if res.IsError {
		tc.label = metrics.ToolError
	}
	if set.Has(guardrails.StageAfter) {
		after := s.engine.RunToolHooks(ctx, set, guardrails.StageAfter, resultText(res), view)
		tc.hooks.After = after.Results
		soft = soft || after.Failed
		if after.Deny {
			return tc.denied("after_tool_call", after.Results), nil
		}
		if t := after.Transformed; t != nil {
			// The transformed text is the whole result the agent gets: structured content would carry the
			// text the transformer removed.
			res = &mcp.CallToolResult{Meta: res.Meta, IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: *t}}}
		}
	}
	if soft {
		tc.status = runtime.StatusHooksFailedSoft
	}
	tc.result = res
	return res, nil
}

// checkServerError runs after_tool_call on a JSON-RPC error the server answered: its message and data reach
// the agent as a result's text would, so a server cannot get past a redaction by failing. The checks see the
// message, and the data's JSON on the next line; a deny answers the call as a denied result does, a
// transformer's text becomes the message (without the data).
func (s *Server) checkServerError(ctx context.Context, set *guardrails.Set, view *runtime.ToolCallView, rpcErr *jsonrpc.Error, tc *toolCall) (*mcp.CallToolResult, error) {
	text := rpcErr.Message
	if len(rpcErr.Data) > 0 {
		text += "\n" + string(rpcErr.Data)
	}
	after := s.engine.RunToolHooks(ctx, set, guardrails.StageAfter, text, view)
	tc.hooks.After = after.Results
	if after.Deny {
		return tc.denied("after_tool_call", after.Results), nil
	}
	if t := after.Transformed; t != nil {
		tc.errText = *t
		return nil, &jsonrpc.Error{Code: rpcErr.Code, Message: *t}
	}
	return nil, rpcErr
}

// denied answers a call a hook denied: a tool error naming the hook (DESIGN.md), and the checks that failed.
func (tc *toolCall) denied(list string, results []guardrails.HookResult) *mcp.CallToolResult {
	tc.status, tc.label = gwerr.StatusHooksFailed, metrics.ToolDenied
	var hook string
	var failed []string
	for i := range results {
		r := &results[i]
		if !r.Deny {
			continue
		}
		hook = r.ID
		for _, c := range r.Checks {
			if !c.Verdict {
				failed = append(failed, c.ID)
			}
		}
		break
	}
	msg := fmt.Sprintf("tool call denied by the gateway: hook %q (%s)", hook, list)
	if len(failed) > 0 {
		msg += " failed on " + strings.Join(failed, ", ")
	}
	tc.errText = msg
	tc.result = toolError(msg)
	return tc.result
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// argumentsText is what before_tool_call checks see: the arguments' JSON text, "{}" for none.
func argumentsText(arguments json.RawMessage) []byte {
	if len(arguments) == 0 || string(arguments) == "null" {
		return []byte("{}")
	}
	return arguments
}

func isJSONObject(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// resultText is what after_tool_call checks see: the result's text items and embedded text resources joined
// with "\n", then its structured content's JSON text unless a text item is that JSON already (the spec asks a
// tool to send both; a server that sends something else in each would otherwise pass its structured content
// unchecked). Images, audio, blobs and resource links are not text and are not checked: a deny check cannot
// see them, and a transformer drops them with the rest of the result.
func resultText(res *mcp.CallToolResult) string {
	var structured []byte
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			structured = raw
		}
	}
	var texts []string
	for _, c := range res.Content {
		var text string
		switch c := c.(type) {
		case *mcp.TextContent:
			text = c.Text
		case *mcp.EmbeddedResource:
			if c.Resource == nil || c.Resource.Text == "" {
				continue
			}
			text = c.Resource.Text
		default:
			continue
		}
		texts = append(texts, text)
		if structured != nil && sameJSON(text, structured) {
			structured = nil
		}
	}
	if structured != nil {
		texts = append(texts, string(structured))
	}
	if len(texts) == 1 {
		return texts[0] // the common result: no copy of up to MaxMessageBytes
	}
	return strings.Join(texts, "\n")
}

// sameJSON reports whether text is the JSON value whose encoding (encoding/json's: compact, sorted keys) is
// canonical.
func sameJSON(text string, canonical []byte) bool {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return false
	}
	if t == string(canonical) {
		return true
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return false
	}
	raw, err := json.Marshal(v)
	return err == nil && string(raw) == string(canonical)
}

// observeToolCall reports a finished tool call: a request-log entry, gateway_tool_calls_total and its
// duration, and one info line in the log.
func (s *Server) observeToolCall(ctx context.Context, call *mcpgw.ToolCall, tc *toolCall) {
	took := time.Since(tc.start)
	caller := call.Caller
	s.metrics.ToolCall(call.Server.ID, call.Tool, tc.label, took)
	if s.logs != nil {
		e := &reqlog.Entry{TraceID: caller.TraceID, CreatedAt: tc.start, WorkspaceID: caller.WorkspaceID,
			Endpoint: endpointMCP, Tool: call.Tool, MCPServer: call.Server.ID, Status: tc.status, Latency: took,
			UpstreamLatency: tc.upstream, Metadata: caller.Metadata, HookResults: loggedHookResults(&tc.hooks, true)}
		// With --log-bodies, the call as the server got it, and the result as the caller got it. Encoding them
		// copies up to MaxMessageBytes: not for a writer that would drop them.
		if s.logs.KeepsBodies() {
			e.Request, _ = json.Marshal(struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}{call.Name, argumentsText(tc.arguments)})
			if tc.result != nil {
				e.Response, _ = json.Marshal(tc.result)
			}
		}
		s.logs.Record(e)
	}
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := []slog.Attr{slog.String("trace_id", caller.TraceID), slog.String("workspace_id", caller.WorkspaceID),
		slog.String("endpoint", endpointMCP), slog.String("mcp_server", call.Server.ID), slog.String("tool", call.Tool),
		slog.Int("status", tc.status), slog.String("outcome", tc.label),
		slog.Float64("latency_ms", float64(took.Microseconds())/1000),
		slog.Float64("upstream_ms", float64(tc.upstream.Microseconds())/1000)}
	if tc.errText != "" {
		attrs = append(attrs, slog.String("reason", logText(tc.errText)))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "tool call", attrs...)
}

// logText keeps a reason fit for one log line.
func logText(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(s[cut]) { // a server's text: cut between runes
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
