package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

// DefaultMaxTokens is the max_tokens sent when the request sets neither max_tokens nor max_completion_tokens:
// Anthropic requires one.
const DefaultMaxTokens = 4096

// RequestOptions adapts the request body to where it goes.
type RequestOptions struct {
	// AnthropicVersion, when set, is written into the body as "anthropic_version" (Vertex wants
	// "vertex-2023-10-16" there); the direct API sends it as a header instead, so leave it empty then.
	AnthropicVersion string
	// OmitModel drops "model" from the body (Vertex puts the model in the URL).
	OmitModel bool
	// Stream, when not nil, replaces the request's "stream": adapters pass &Call.Stream so that the body asks
	// for what the engine will read (a config's override_params may have changed the body's stream). Nil keeps
	// the request's own.
	Stream *bool
}

// Request translates an OpenAI chat completion request (providers.Call.Chat's, or schema.DecodeChat's) into an
// Anthropic Messages request body; in is only read. The returned model is the request's model. Errors are
// *gwerr.Error 400 naming the field.
//
// System and developer messages become the top-level "system" (in order, wherever they stand); tool messages
// become tool_result blocks of a user message; consecutive messages of one role are merged, as Anthropic wants
// user and assistant to alternate. max_tokens (or max_completion_tokens) defaults to DefaultMaxTokens. A model is
// required unless OmitModel is set (the caller then takes it from elsewhere when the body has none). Fields
// without an Anthropic equivalent (frequency_penalty, logit_bias, seed, response_format, ...) are ignored;
// n above 1 is refused, as Anthropic answers one choice.
func Request(in *schema.ChatRequest, opts RequestOptions) (body []byte, model string, err error) {
	if in.Model == "" && !opts.OmitModel {
		return nil, "", gwerr.BadRequest("model", "model is required")
	}
	out := messagesRequest{
		AnthropicVersion: opts.AnthropicVersion,
		Temperature:      in.Temperature,
		TopP:             in.TopP,
		TopK:             in.TopK,
		Stream:           in.Stream,
		Thinking:         nullToEmpty(in.Thinking),
	}
	if !opts.OmitModel {
		out.Model = in.Model
	}
	if opts.Stream != nil {
		out.Stream = *opts.Stream
	}
	if in.N != nil && *in.N > 1 {
		return nil, "", gwerr.BadRequest("n", "n must be 1 for Anthropic models: they answer one choice per request")
	}
	switch {
	case in.MaxCompletionTokens != nil:
		if *in.MaxCompletionTokens < 1 {
			return nil, "", gwerr.BadRequest("max_completion_tokens", "max_completion_tokens must be at least 1")
		}
		out.MaxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		if *in.MaxTokens < 1 {
			return nil, "", gwerr.BadRequest("max_tokens", "max_tokens must be at least 1")
		}
		out.MaxTokens = *in.MaxTokens
	default:
		out.MaxTokens = DefaultMaxTokens
	}
	if out.StopSequences, err = stopSequences(in.Stop); err != nil {
		return nil, "", err
	}
	if in.User != "" {
		out.Metadata = &metadataParam{UserID: in.User}
	}
	if len(in.Messages) == 0 {
		return nil, "", gwerr.BadRequest("messages", "messages must hold at least one message")
	}
	for i := range in.Messages {
		if err := addMessage(&out, in, i); err != nil {
			return nil, "", err
		}
	}
	if out.Messages == nil {
		return nil, "", gwerr.BadRequest("messages", "messages must hold at least one user or assistant message")
	}
	for i := range in.Tools {
		t, err := tool(in, i)
		if err != nil {
			return nil, "", err
		}
		out.Tools = append(out.Tools, t)
	}
	if out.ToolChoice, err = toolChoice(in.ToolChoice, in.ParallelToolCalls); err != nil {
		return nil, "", err
	}
	if len(out.Tools) == 0 && out.ToolChoice != nil {
		if t := out.ToolChoice.Type; t == "any" || t == "tool" {
			return nil, "", gwerr.BadRequest("tool_choice", "tool_choice %s needs tools", string(bytes.TrimSpace(in.ToolChoice)))
		}
		out.ToolChoice = nil // auto, none or parallel_tool_calls without tools: nothing to say
	}
	body, err = json.Marshal(&out)
	if err != nil {
		return nil, "", fmt.Errorf("anthropicmsg: encode request: %w", err)
	}
	return body, in.Model, nil
}

func nullToEmpty(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return raw
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// stopSequences reads stop: a string or an array of strings.
func stopSequences(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, gwerr.BadRequest("stop", "stop must be a string or an array of strings")
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// addMessage translates in's messages[i] and appends it to out, merging it into the previous message of its role.
func addMessage(out *messagesRequest, in *schema.ChatRequest, i int) error {
	param := schema.Index("messages", i)
	m := &in.Messages[i]
	switch m.Role {
	case "system", "developer":
		blocks, err := systemBlocks(param+".content", m.Content)
		if err != nil {
			return err
		}
		out.System = append(out.System, blocks...)
		return nil
	case "user":
		blocks, err := contentBlocks(param+".content", m.Content, false)
		if err != nil {
			return err
		}
		appendBlocks(out, "user", blocks)
		return nil
	case "assistant":
		blocks, err := contentBlocks(param+".content", m.Content, true)
		if err != nil {
			return err
		}
		for j, call := range m.ToolCalls {
			block, err := toolUse(schema.Index(param+".tool_calls", j), &call)
			if err != nil {
				return err
			}
			blocks = append(blocks, block)
		}
		appendBlocks(out, "assistant", blocks)
		return nil
	case "tool":
		if m.ToolCallID == "" {
			return gwerr.BadRequest(param+".tool_call_id", "a tool message needs tool_call_id")
		}
		result := toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
		if !isNull(m.Content) {
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				if s != "" {
					result.Content = s
				}
			} else {
				blocks, err := contentBlocks(param+".content", m.Content, false)
				if err != nil {
					return err
				}
				if len(blocks) > 0 {
					result.Content = blocks
				}
			}
		}
		appendBlocks(out, "user", []any{result})
		return nil
	case "":
		return gwerr.BadRequest(param+".role", "%s.role is required", param)
	}
	return gwerr.BadRequest(param+".role", "%s.role %q is not one of system, developer, user, assistant, tool", param, m.Role)
}

// appendBlocks adds a message's blocks, to the last message when it has the same role (a tool result goes after
// the tool results already there, before any text). A message left with no block (an empty text) is dropped:
// Anthropic refuses empty content.
func appendBlocks(out *messagesRequest, role string, blocks []any) {
	if len(blocks) == 0 {
		return
	}
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
		last := &out.Messages[n-1]
		if _, isResult := blocks[0].(toolResultBlock); isResult && len(blocks) == 1 {
			// Anthropic wants a user message's tool_result blocks before its other blocks.
			at := 0
			for at < len(last.Content) {
				if _, ok := last.Content[at].(toolResultBlock); !ok {
					break
				}
				at++
			}
			last.Content = slices.Insert(last.Content, at, blocks[0])
			return
		}
		last.Content = append(last.Content, blocks...)
		return
	}
	out.Messages = append(out.Messages, messageParam{Role: role, Content: blocks})
}

// systemBlocks reads a system message's content: a string or text parts.
func systemBlocks(param string, raw json.RawMessage) ([]textBlock, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []textBlock{{Type: "text", Text: s}}, nil
	}
	parts, err := contentParts(param, raw)
	if err != nil {
		return nil, err
	}
	var out []textBlock
	for j, p := range parts {
		pp := schema.Index(param, j)
		if p.Type != "text" {
			return nil, gwerr.BadRequest(pp+".type", "%s.type must be text in a system message, not %q", pp, p.Type)
		}
		if p.Text == nil {
			return nil, gwerr.BadRequest(pp+".text", "%s.text is required", pp)
		}
		if *p.Text != "" {
			out = append(out, textBlock{Type: "text", Text: *p.Text, CacheControl: nullToEmpty(p.CacheControl)})
		}
	}
	return out, nil
}

// contentParts reads a content that is not a string: an array of parts.
func contentParts(param string, raw json.RawMessage) ([]schema.ContentPart, error) {
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '[' {
		return nil, gwerr.BadRequest(param, "%s must be a string or an array of content parts", param)
	}
	return schema.DecodeParts(raw, param)
}

// contentBlocks reads a user, assistant or tool message's content: a string, or parts of type text and
// image_url. An assistant may also send back Anthropic thinking and redacted_thinking blocks unchanged, as
// Anthropic wants them in a tool-use conversation with extended thinking.
func contentBlocks(param string, raw json.RawMessage, assistant bool) ([]any, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []any{textBlock{Type: "text", Text: s}}, nil
	}
	parts, err := contentParts(param, raw)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(parts))
	var whole []json.RawMessage // the parts as sent, read only for thinking blocks
	for j := range parts {
		p := &parts[j]
		pp := schema.Index(param, j)
		switch p.Type {
		case "text":
			if p.Text == nil {
				return nil, gwerr.BadRequest(pp+".text", "%s.text is required", pp)
			}
			if *p.Text != "" {
				out = append(out, textBlock{Type: "text", Text: *p.Text, CacheControl: nullToEmpty(p.CacheControl)})
			}
		case "image_url":
			if assistant {
				return nil, gwerr.BadRequest(pp+".type", "%s.type image_url is not allowed in an assistant message", pp)
			}
			img, err := image(pp+".image_url", p.ImageURL)
			if err != nil {
				return nil, err
			}
			img.CacheControl = nullToEmpty(p.CacheControl)
			out = append(out, img)
		case "thinking", "redacted_thinking":
			if !assistant {
				return nil, gwerr.BadRequest(pp+".type", "%s.type %s is allowed only in an assistant message", pp, p.Type)
			}
			// Passed on whole: Anthropic checks the signature against the block it sent.
			if whole == nil {
				if whole, err = rawParts(raw); err != nil {
					return nil, err
				}
			}
			out = append(out, whole[j])
		case "refusal":
			// An assistant's refusal has no Anthropic block; its text is the closest.
			if p.Refusal != "" && assistant {
				out = append(out, textBlock{Type: "text", Text: p.Refusal})
				continue
			}
			return nil, gwerr.BadRequest(pp+".type", "%s.type refusal is allowed only in an assistant message", pp)
		case "":
			return nil, gwerr.BadRequest(pp+".type", "%s.type is required", pp)
		default:
			return nil, gwerr.BadRequest(pp+".type", "%s.type %q is not supported by Anthropic (text and image_url are)", pp, p.Type)
		}
	}
	return out, nil
}

// rawParts splits an array content that DecodeParts has read, so no error is expected.
func rawParts(raw json.RawMessage) ([]json.RawMessage, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("anthropicmsg: split content parts: %w", err)
	}
	return parts, nil
}

// image translates an image_url part: a data: URL becomes a base64 source, an http(s) URL a url source.
func image(param string, raw json.RawMessage) (imageBlock, error) {
	if isNull(raw) {
		return imageBlock{}, gwerr.BadRequest(param, "%s is required", param)
	}
	ref, err := schema.DecodeImageURL(raw, param)
	if err != nil {
		return imageBlock{}, err
	}
	u := ref.URL
	switch {
	case strings.HasPrefix(u, "data:"):
		meta, data, ok := strings.Cut(u[len("data:"):], ",")
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mediaType == "" || data == "" {
			return imageBlock{}, gwerr.BadRequest(param+".url", "%s.url must be a data:<media type>;base64,<data> URL or an https URL", param)
		}
		return imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: mediaType, Data: data}}, nil
	case strings.HasPrefix(u, "https://"), strings.HasPrefix(u, "http://"):
		return imageBlock{Type: "image", Source: imageSource{Type: "url", URL: u}}, nil
	case u == "":
		return imageBlock{}, gwerr.BadRequest(param+".url", "%s.url is required", param)
	}
	return imageBlock{}, gwerr.BadRequest(param+".url", "%s.url must be a data: URL or an https URL", param)
}

// toolUse turns an assistant's tool call into a tool_use block; its arguments must be a JSON object.
func toolUse(param string, call *schema.ToolCall) (toolUseBlock, error) {
	if call.Type != "" && call.Type != "function" {
		return toolUseBlock{}, gwerr.BadRequest(param+".type", "%s.type must be function", param)
	}
	if call.ID == "" {
		return toolUseBlock{}, gwerr.BadRequest(param+".id", "%s.id is required", param)
	}
	if call.Function.Name == "" {
		return toolUseBlock{}, gwerr.BadRequest(param+".function.name", "%s.function.name is required", param)
	}
	input := json.RawMessage(strings.TrimSpace(call.Function.Arguments))
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if input[0] != '{' || !json.Valid(input) {
		return toolUseBlock{}, gwerr.BadRequest(param+".function.arguments", "%s.function.arguments must be a JSON object", param)
	}
	return toolUseBlock{Type: "tool_use", ID: call.ID, Name: call.Function.Name, Input: input}, nil
}

// tool translates in's tools[i]: a function becomes a tool whose input_schema is the function's parameters.
func tool(in *schema.ChatRequest, i int) (toolParam, error) {
	param := schema.Index("tools", i)
	t := &in.Tools[i]
	if t.Type != "function" {
		return toolParam{}, gwerr.BadRequest(param+".type", "%s.type must be function, not %q", param, t.Type)
	}
	if t.Function == nil || t.Function.Name == "" {
		return toolParam{}, gwerr.BadRequest(param+".function.name", "%s.function.name is required", param)
	}
	inputSchema := nullToEmpty(t.Function.Parameters)
	if inputSchema == nil {
		inputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	} else if b := bytes.TrimSpace(inputSchema); len(b) == 0 || b[0] != '{' {
		return toolParam{}, gwerr.BadRequest(param+".function.parameters", "%s.function.parameters must be a JSON schema object", param)
	}
	return toolParam{Name: t.Function.Name, Description: t.Function.Description, InputSchema: inputSchema,
		CacheControl: nullToEmpty(t.CacheControl)}, nil
}

// toolChoice maps auto → auto, required → any, none → none, a named function → tool; parallel_tool_calls false
// becomes disable_parallel_tool_use.
func toolChoice(raw json.RawMessage, parallel *bool) (*toolChoiceParam, error) {
	var out *toolChoiceParam
	if !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			switch s {
			case "auto":
				out = &toolChoiceParam{Type: "auto"}
			case "required":
				out = &toolChoiceParam{Type: "any"}
			case "none":
				out = &toolChoiceParam{Type: "none"}
			default:
				return nil, gwerr.BadRequest("tool_choice", "tool_choice must be auto, none, required or a function, not %q", s)
			}
		} else {
			var named schema.NamedToolChoice
			if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
				return nil, gwerr.BadRequest("tool_choice", `tool_choice must be auto, none, required or {"type":"function","function":{"name":...}}`)
			}
			out = &toolChoiceParam{Type: "tool", Name: named.Function.Name}
		}
	}
	if parallel != nil && !*parallel {
		if out == nil {
			out = &toolChoiceParam{Type: "auto"}
		}
		if out.Type != "none" {
			out.DisableParallelToolUse = true
		}
	}
	return out, nil
}
