package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/prompt"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// POST /v1/prompts/{promptId}/render and /completions: any key of the workspace. Render runs on the control
// plane (no routing, guardrails, rate limits or upstream call); completions render, then send the body
// through the engine like a chat completion, to the template's target. Templates come compiled from
// control.Plane.PromptTemplate, which caches them beside the prompt writes that make them stale.

// promptCall is a prompt request's body: the variables, and the chat hyperparameters at the root.
type promptCall struct {
	vars      map[string]any
	overrides map[string]json.RawMessage // everything at the root but variables
	stream    bool
}

// parsePromptCall reads a render or completions body.
func parsePromptCall(c *fiber.Ctx) (*promptCall, error) {
	if err := requireJSON(c); err != nil {
		return nil, err
	}
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, gwerr.BadRequest("variables", "request body is empty: send {\"variables\": {...}} and any hyperparameters at the root")
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(body, &root); err != nil {
		return nil, schema.DecodeError(body, "", err)
	}
	if root == nil {
		return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body must be a JSON object"}
	}
	if _, nested := root["hyperparameters"]; nested {
		return nil, gwerr.BadRequest("hyperparameters", "hyperparameters go at the root of the body, beside variables (e.g. {\"variables\": {...}, \"temperature\": 0.5}), not under a \"hyperparameters\" key")
	}
	if _, ok := root["messages"]; ok {
		return nil, gwerr.BadRequest("messages", "messages come from the prompt template; send variables to fill it")
	}
	raw, ok := root["variables"]
	if !ok {
		return nil, gwerr.BadRequest("variables", "variables is required: an object of the values the template substitutes")
	}
	call := &promptCall{}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers render as they were written
	if err := d.Decode(&call.vars); err != nil || call.vars == nil || bytes.TrimSpace(raw)[0] != '{' {
		return nil, gwerr.BadRequest("variables", "variables must be a JSON object")
	}
	delete(root, "variables")
	if s, ok := root["stream"]; ok {
		if err := json.Unmarshal(s, &call.stream); err != nil {
			return nil, gwerr.BadRequest("stream", "stream must be true or false")
		}
	}
	call.overrides = root
	return call, nil
}

// render fills the template, turning a rendering error into a 400 that names the message.
func render(t *prompt.Template, call *promptCall) ([]byte, error) {
	body, err := t.Render(call.vars, call.overrides)
	if err != nil {
		var pe *prompt.Error
		if errors.As(err, &pe) {
			return nil, gwerr.BadRequest(pe.Field, "the template could not be rendered: %v", pe)
		}
		return nil, gwerr.Internal(err)
	}
	return body, nil
}

// renderPrompt answers POST /v1/prompts/:id/render with {"success": true, "data": <chat completion body>}.
func (s *Server) renderPrompt(c *fiber.Ctx) error {
	call, err := parsePromptCall(c)
	if err != nil {
		return err
	}
	t, _, err := s.plane.PromptTemplate(callerKey(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	body, err := render(t, call)
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(body)+32)
	out = append(out, `{"success":true,"data":`...)
	out = append(out, body...)
	out = append(out, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(out)
}

// promptCompletion answers POST /v1/prompts/:id/completions: the rendered body goes through the whole
// inference pipeline (routing, retries, guardrails, cache, rate limits). A 2xx answer is wrapped as
// {"status": "success", "headers": {...}, "body": <chat.completion>}; errors keep their shape; a stream is
// the chat completion stream.
func (s *Server) promptCompletion(c *fiber.Ctx) error {
	call, err := parsePromptCall(c)
	if err != nil {
		return err
	}
	key := callerKey(c)
	t, ref, err := s.plane.PromptTemplate(key.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	body, err := render(t, call)
	if err != nil {
		return err
	}
	req, err := newEngineRequest(c, providers.ChatCompletions, schema.NewBody(body))
	if err != nil {
		return err
	}
	req.Stream = call.stream
	// The template's target, when it names one, is where the completion goes; a caller's x-gateway-config
	// still routes (its targets may name other templates with prompt_id).
	if tgt := t.Target(); tgt.Provider != "" || tgt.VirtualKey != "" {
		req.Provider, req.VirtualKey = tgt.Provider, tgt.VirtualKey
	} else if tgt.Config != "" && req.Config == "" {
		req.Config = tgt.Config
	}
	if req.Metadata["_prompt"] == "" {
		md := make(map[string]string, len(req.Metadata)+1)
		for k, v := range req.Metadata {
			md[k] = v
		}
		md["_prompt"] = ref.ID
		req.Metadata = md
	}
	ws := key.WorkspaceID
	req.RenderPrompt = func(promptID string) ([]byte, error) {
		other, _, err := s.plane.PromptTemplate(ws, promptID)
		if err != nil {
			return nil, err
		}
		return render(other, call)
	}
	return s.run(c, req, wrapPromptAnswer)
}

// wrapPromptAnswer is SPEC.md's prompt completion response: the answer's headers (the gateway's and the
// provider's, lower case) and the chat completion as body.
func wrapPromptAnswer(c *fiber.Ctx, resp *runtime.Response) []byte {
	headers := map[string]string{}
	c.Response().Header.VisitAll(func(k, v []byte) {
		name := strings.ToLower(string(k))
		if name == "content-length" || name == "date" || name == "server" {
			return
		}
		headers[name] = string(v)
	})
	h, _ := json.Marshal(headers) // map keys come out sorted
	out := make([]byte, 0, len(resp.Body)+len(h)+48)
	out = append(out, `{"status":"success","headers":`...)
	out = append(out, h...)
	out = append(out, `,"body":`...)
	out = append(out, resp.Body...)
	out = append(out, '}')
	return out
}
