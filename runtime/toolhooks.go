package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
)

// EndpointMCP is the Endpoint checks see for a tool call (hostapi.Input.Endpoint).
const EndpointMCP = "mcp"

// ToolHooks returns the compiled tool hooks (before_tool_call, after_tool_call) of the config an /mcp request
// names in x-gateway-config (inline, or a config saved in workspaceID), nil when it has none. Errors are the
// config's, as for an inference request: a *gwerr.Error 400 naming the field, or 404 for an unknown saved ID.
// Sets are compiled once per config and workspace, like request hooks.
func (e *Engine) ToolHooks(workspaceID, configText string) (*guardrails.Set, error) {
	plan, err := e.configPlan(workspaceID, configText)
	if err != nil {
		return nil, err
	}
	if len(plan.BeforeToolCall)+len(plan.AfterToolCall) == 0 {
		return nil, nil
	}
	return e.compiledSet(plan.Hash+"\x00tools\x00"+workspaceID, func(plugins guardrails.PluginChecks) (*guardrails.Set, error) {
		return guardrails.CompileTools(workspaceID, "", plan.BeforeToolCall, plan.AfterToolCall, e.savedGuardrails, plugins)
	})
}

// RunToolHooks runs one stage of a tool call's hooks on text (the arguments' JSON text before the call, the
// result's text after it), reports each check's verdict to the observer, and starts the async items, which
// never change the call. A nil set passes.
func (e *Engine) RunToolHooks(ctx context.Context, set *guardrails.Set, stage guardrails.Stage, text string, call *ToolCallView) guardrails.Outcome {
	if !set.Has(stage) {
		return guardrails.Outcome{}
	}
	in := &hostapi.Input{Text: text, Stage: string(stage), Endpoint: EndpointMCP, Tool: call.Tool, MCPServer: call.MCPServer}
	for k, v := range call.Metadata {
		in.Metadata = append(in.Metadata, hostapi.KV{Key: k, Value: v})
	}
	out := set.Run(ctx, stage, in, call)
	if e.observer != nil {
		for i := range out.Results {
			e.reportVerdicts(&out.Results[i])
		}
	}
	e.runAsync(ctx, call.TraceID, out.Async)
	return out
}

// ToolCallView is what checks and plugins read of a tool call (hostapi.RequestView): "tool", "mcp_server",
// "arguments.<path>" (decoded once, on the first lookup) and "metadata.<name>". It is safe for concurrent use.
type ToolCallView struct {
	TraceID, WorkspaceID string
	// Tool is the bare tool name; MCPServer the server's registry ID.
	Tool, MCPServer string
	Arguments       json.RawMessage
	Metadata        map[string]string

	argsOnce sync.Once
	args     any
}

// Field implements hostapi.RequestView.
func (v *ToolCallView) Field(path string) ([]byte, bool) {
	switch path {
	case "tool":
		return marshalString(v.Tool)
	case "mcp_server":
		return marshalString(v.MCPServer)
	case "arguments":
		if len(v.Arguments) == 0 {
			return nil, false
		}
		return v.Arguments, true
	}
	root, rest, _ := strings.Cut(path, ".")
	switch root {
	case "arguments":
		v.argsOnce.Do(func() {
			if json.Unmarshal(v.Arguments, &v.args) != nil {
				v.args = nil
			}
		})
		if v.args == nil {
			return nil, false
		}
		return fieldAt(v.args, rest)
	case "metadata":
		s, ok := v.Metadata[rest]
		if !ok {
			return nil, false
		}
		return marshalString(s)
	}
	return nil, false
}

func marshalString(s string) ([]byte, bool) {
	b, err := json.Marshal(s)
	return b, err == nil
}

// ToolCallAttrs is what rate-limit policies and budgets see of an MCP tool call.
type ToolCallAttrs struct {
	WorkspaceID, APIKeyID string
	MCPServer, Tool       string
	Metadata              map[string]string
	// CostPerCall is the server's cost_per_call in USD, what a cost budget counts for the call.
	CostPerCall float64
}

// ToolAdmission is an admitted tool call's hold on the budgets: Done settles it, once.
type ToolAdmission struct {
	hold *ratelimit.Hold
}

// Done settles the call: its cost counts when it was forwarded to its server, nothing when it was not.
func (a ToolAdmission) Done(forwarded bool) { a.hold.SettleTool(forwarded) }

// AdmitToolCall asks the policies that match tool calls (those naming mcp_server or tool) whether the call may
// go on: the budgets first, then the rate limits, as for model requests, so that a call the limiter refuses
// releases its reservation. A refusal is a 429 whose message names the policy and, for a rate limit, when to
// retry.
func (e *Engine) AdmitToolCall(t ToolCallAttrs) (ToolAdmission, *gwerr.Error) {
	attrs := ratelimit.Attrs{WorkspaceID: t.WorkspaceID, APIKey: t.APIKeyID, Metadata: t.Metadata, ToolCall: true,
		MCPServer: t.MCPServer, Tool: t.Tool}
	var adm ToolAdmission
	if e.budgets.Enforces(t.WorkspaceID) {
		hold, exceeded := e.budgets.ReserveTool(&attrs, t.CostPerCall)
		if exceeded != nil {
			return adm, &gwerr.Error{Status: http.StatusTooManyRequests, Code: gwerr.CodeBudgetExceeded, Message: exceeded.Error(), Err: exceeded}
		}
		adm.hold = hold
	}
	if e.limiter == nil {
		return adm, nil
	}
	if _, exceeded := e.limiter.Admit(&attrs); exceeded != nil {
		adm.Done(false)
		return ToolAdmission{}, &gwerr.Error{Status: http.StatusTooManyRequests, Code: gwerr.CodeRateLimited, Message: exceeded.Error(), Err: exceeded}
	}
	return adm, nil
}
