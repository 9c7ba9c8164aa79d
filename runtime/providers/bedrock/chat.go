package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/providers/internal/openaiwire"
)

// translateChatRequest turns an OpenAI chat completion request into a Converse request body and returns the
// model id. A request that cannot be expressed in Converse is a 400 naming the field.
func translateChatRequest(body []byte) ([]byte, []byte, error) {
	var req chatRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, nil, err
	}
	if req.Model == "" {
		return nil, nil, gwerr.BadRequest("model", "model is required: the Bedrock model id, inference profile id or ARN")
	}
	if len(req.Messages) == 0 {
		return nil, nil, gwerr.BadRequest("messages", "messages must hold at least one message")
	}
	out := converseRequest{}
	hasToolBlocks := false
	for i := range req.Messages {
		m := &req.Messages[i]
		param := "messages[" + strconv.Itoa(i) + "]"
		var role string
		var blocks []brBlock
		switch m.Role {
		case "system", "developer":
			texts, err := textParts(m.Content, param, "system")
			if err != nil {
				return nil, nil, err
			}
			for _, s := range texts {
				out.System = append(out.System, brSystemBlock{Text: s})
			}
			continue
		case "user":
			var err error
			if blocks, err = userBlocks(m.Content, param); err != nil {
				return nil, nil, err
			}
			role = "user"
		case "assistant":
			texts, err := textParts(m.Content, param, "assistant")
			if err != nil {
				return nil, nil, err
			}
			for _, s := range texts {
				if s != "" {
					blocks = append(blocks, textBlock(s))
				}
			}
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				tparam := param + ".tool_calls[" + strconv.Itoa(j) + "]"
				if tc.ID == "" {
					return nil, nil, gwerr.BadRequest(tparam+".id", "%s.id is required", tparam)
				}
				if tc.Function.Name == "" {
					return nil, nil, gwerr.BadRequest(tparam+".function.name", "%s.function.name is required", tparam)
				}
				args := strings.TrimSpace(tc.Function.Arguments)
				if args == "" {
					args = "{}"
				}
				if !json.Valid([]byte(args)) {
					return nil, nil, gwerr.BadRequest(tparam+".function.arguments", "%s.function.arguments is not valid JSON", tparam)
				}
				blocks = append(blocks, brBlock{ToolUse: &brToolUse{ToolUseID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(args)}})
				hasToolBlocks = true
			}
			if len(blocks) == 0 { // an empty assistant turn: Bedrock rejects blank text, but that is its call
				blocks = append(blocks, textBlock(""))
			}
			role = "assistant"
		case "tool":
			if m.ToolCallID == "" {
				return nil, nil, gwerr.BadRequest(param+".tool_call_id", "%s.tool_call_id is required on a tool message", param)
			}
			texts, err := textParts(m.Content, param, "tool")
			if err != nil {
				return nil, nil, err
			}
			res := &brToolResult{ToolUseID: m.ToolCallID, Content: make([]brToolResultBlock, 0, len(texts))}
			for _, s := range texts {
				res.Content = append(res.Content, brToolResultBlock{Text: s})
			}
			if len(res.Content) == 0 {
				res.Content = append(res.Content, brToolResultBlock{Text: ""})
			}
			blocks = []brBlock{{ToolResult: res}}
			hasToolBlocks = true
			role = "user" // Converse carries tool results in a user turn
		default:
			return nil, nil, gwerr.BadRequest(param+".role", "%s.role %q is not supported (system, developer, user, assistant, tool)", param, m.Role)
		}
		// Converse wants user and assistant turns to alternate: consecutive turns of one role are merged.
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
		} else {
			out.Messages = append(out.Messages, brMessage{Role: role, Content: blocks})
		}
	}
	if len(out.Messages) == 0 {
		return nil, nil, gwerr.BadRequest("messages", "messages must hold at least one user or assistant message")
	}

	var ic inferenceConfig
	ic.MaxTokens = req.MaxTokens
	if req.MaxCompletionTokens != nil {
		ic.MaxTokens = req.MaxCompletionTokens
	}
	ic.Temperature, ic.TopP = req.Temperature, req.TopP
	stops, err := stopSequences(req.Stop)
	if err != nil {
		return nil, nil, err
	}
	ic.StopSequences = stops
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		out.InferenceConfig = &ic
	}

	if out.ToolConfig, err = translateTools(req.Tools, req.ToolChoice, hasToolBlocks); err != nil {
		return nil, nil, err
	}
	if out.OutputConfig, err = translateResponseFormat(req.ResponseFormat); err != nil {
		return nil, nil, err
	}
	buf, err := marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return buf, []byte(req.Model), nil
}

func textBlock(s string) brBlock { return brBlock{Text: &s} }

// contentKind classifies a raw "content": absent or null, a JSON string, or an array of parts.
func contentKind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] == 'n' {
		return 0
	}
	return raw[0]
}

// textParts reads a content that may only hold text: a string, or an array of text (and refusal) parts.
func textParts(raw json.RawMessage, param, role string) ([]string, error) {
	switch contentKind(raw) {
	case 0:
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, gwerr.BadRequest(param+".content", "%s.content is not a valid string", param)
		}
		return []string{s}, nil
	case '[':
		var parts []chatPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, gwerr.BadRequest(param+".content", "%s.content is not a valid array of content parts", param)
		}
		out := make([]string, 0, len(parts))
		for j, p := range parts {
			switch p.Type {
			case "text":
				out = append(out, p.Text)
			case "refusal": // an earlier refusal of the assistant: not content to send back
			default:
				pp := param + ".content[" + strconv.Itoa(j) + "].type"
				return nil, gwerr.BadRequest(pp, "%s: a %s message may only hold text parts, not %q", pp, role, p.Type)
			}
		}
		return out, nil
	}
	return nil, gwerr.BadRequest(param+".content", "%s.content must be a string or an array of content parts", param)
}

// userBlocks reads a user content: text, and images given as data: URLs.
func userBlocks(raw json.RawMessage, param string) ([]brBlock, error) {
	switch contentKind(raw) {
	case 0:
		return []brBlock{textBlock("")}, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, gwerr.BadRequest(param+".content", "%s.content is not a valid string", param)
		}
		return []brBlock{textBlock(s)}, nil
	case '[':
		var parts []chatPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, gwerr.BadRequest(param+".content", "%s.content is not a valid array of content parts", param)
		}
		out := make([]brBlock, 0, len(parts))
		for j, p := range parts {
			pp := param + ".content[" + strconv.Itoa(j) + "]"
			switch p.Type {
			case "text":
				out = append(out, textBlock(p.Text))
			case "image_url":
				if p.ImageURL == nil || p.ImageURL.URL == "" {
					return nil, gwerr.BadRequest(pp+".image_url.url", "%s.image_url.url is required", pp)
				}
				img, err := imageBlock(p.ImageURL.URL, pp+".image_url.url")
				if err != nil {
					return nil, err
				}
				out = append(out, brBlock{Image: img})
			default:
				return nil, gwerr.BadRequest(pp+".type", "%s.type %q is not supported by bedrock (text, image_url)", pp, p.Type)
			}
		}
		if len(out) == 0 {
			out = append(out, textBlock(""))
		}
		return out, nil
	}
	return nil, gwerr.BadRequest(param+".content", "%s.content must be a string or an array of content parts", param)
}

// imageBlock turns a data:image/<format>;base64,<data> URL into a Converse image block. Converse takes image
// bytes (or S3 locations) only, and the gateway does not fetch caller-given URLs, so other URLs are a 400.
func imageBlock(u, param string) (*brImage, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return nil, gwerr.BadRequest(param, "%s: bedrock takes images as data: URLs (data:image/png;base64,...), not remote URLs", param)
	}
	meta, data, ok := strings.Cut(rest, ",")
	mime, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 {
		return nil, gwerr.BadRequest(param, "%s: the data: URL must be base64-encoded (data:image/png;base64,...)", param)
	}
	var format string
	switch strings.ToLower(mime) {
	case "image/png":
		format = "png"
	case "image/jpeg", "image/jpg":
		format = "jpeg"
	case "image/gif":
		format = "gif"
	case "image/webp":
		format = "webp"
	default:
		return nil, gwerr.BadRequest(param, "%s: image type %q is not supported by bedrock (png, jpeg, gif, webp)", param, mime)
	}
	if !isBase64Text(data) {
		return nil, gwerr.BadRequest(param, "%s: the image data is not valid base64", param)
	}
	img := &brImage{Format: format}
	img.Source.Bytes = data
	return img, nil
}

// isBase64Text reports whether s is standard, padded base64 text.
func isBase64Text(s string) bool {
	if len(s) == 0 || len(s)%4 != 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/':
		case c == '=' && i >= len(s)-2:
			if i == len(s)-2 && s[i+1] != '=' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// stopSequences reads "stop": a string or an array of strings.
func stopSequences(raw json.RawMessage) ([]string, error) {
	switch contentKind(raw) {
	case 0:
		return nil, nil
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []string{s}, nil
		}
	case '[':
		var list []string
		if json.Unmarshal(raw, &list) == nil {
			return list, nil
		}
	}
	return nil, gwerr.BadRequest("stop", "stop must be a string or an array of strings")
}

// translateTools builds toolConfig. tool_choice "auto" → {"auto":{}}, "required" → {"any":{}}, a named function
// → {"tool":{"name"}}. Converse cannot forbid tool use, so "none" drops the tools, unless the conversation
// already holds tool calls or results: Converse then requires toolConfig, and the tools are sent without a
// choice (the model may still call one).
func translateTools(tools []chatTool, rawChoice json.RawMessage, hasToolBlocks bool) (*toolConfig, error) {
	var choice json.RawMessage
	none := false
	switch contentKind(rawChoice) {
	case 0:
	case '"':
		var s string
		_ = json.Unmarshal(rawChoice, &s)
		switch s {
		case "auto":
			choice = json.RawMessage(`{"auto":{}}`)
		case "required":
			choice = json.RawMessage(`{"any":{}}`)
		case "none":
			none = true
		default:
			return nil, gwerr.BadRequest("tool_choice", "tool_choice %q is not one of auto, none, required", s)
		}
	case '{':
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(rawChoice, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, gwerr.BadRequest("tool_choice", `tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":...}}`)
		}
		b, _ := json.Marshal(map[string]map[string]string{"tool": {"name": named.Function.Name}})
		choice = b
	default:
		return nil, gwerr.BadRequest("tool_choice", `tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":...}}`)
	}
	if len(tools) == 0 || (none && !hasToolBlocks) {
		return nil, nil
	}
	tc := &toolConfig{Tools: make([]brTool, len(tools)), ToolChoice: choice}
	for i, t := range tools {
		param := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return nil, gwerr.BadRequest(param+".type", "%s.type %q is not supported by bedrock (function)", param, t.Type)
		}
		if t.Function.Name == "" {
			return nil, gwerr.BadRequest(param+".function.name", "%s.function.name is required", param)
		}
		spec := &tc.Tools[i].ToolSpec
		spec.Name, spec.Description = t.Function.Name, t.Function.Description
		spec.InputSchema.JSON = t.Function.Parameters
		if k := contentKind(t.Function.Parameters); k == 0 {
			spec.InputSchema.JSON = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if k != '{' {
			return nil, gwerr.BadRequest(param+".function.parameters", "%s.function.parameters must be a JSON schema object", param)
		}
	}
	return tc, nil
}

// translateResponseFormat maps response_format json_schema to outputConfig.textFormat (Converse's structured
// output, whose schema is a JSON string). "text" needs nothing; "json_object" has no Converse equivalent and is
// ignored (the model is not held to JSON).
func translateResponseFormat(rf *chatRespFormat) (*outputConfig, error) {
	if rf == nil || rf.Type != "json_schema" {
		return nil, nil
	}
	if rf.JSONSchema == nil || contentKind(rf.JSONSchema.Schema) != '{' {
		return nil, gwerr.BadRequest("response_format.json_schema.schema", "response_format.json_schema.schema must be a JSON schema object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, rf.JSONSchema.Schema); err != nil {
		return nil, gwerr.BadRequest("response_format.json_schema.schema", "response_format.json_schema.schema is not valid JSON")
	}
	oc := &outputConfig{}
	oc.TextFormat.Type = "json_schema"
	js := &oc.TextFormat.Structure.JSONSchema
	js.Schema, js.Name, js.Description = compact.String(), rf.JSONSchema.Name, rf.JSONSchema.Description
	return oc, nil
}

// marshal encodes without HTML escaping, so text reaches the model byte for byte.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("bedrock: encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// finishReason maps a Converse stopReason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return openaiwire.FinishLength
	case "tool_use":
		return openaiwire.FinishToolCalls
	case "guardrail_intervened", "content_filtered":
		return openaiwire.FinishContentFilter
	default: // end_turn, stop_sequence, and reasons OpenAI has no word for
		return openaiwire.FinishStop
	}
}

// usage maps Converse token usage. Bedrock counts cache reads and writes apart from inputTokens, while
// OpenAI's prompt_tokens includes cached tokens, so prompt_tokens adds them; cached_tokens is the cache reads.
func usage(u *brUsage) *openaiwire.Usage {
	if u == nil {
		return nil
	}
	out := &openaiwire.Usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      u.TotalTokens,
	}
	if sum := out.PromptTokens + out.CompletionTokens; out.TotalTokens < sum {
		out.TotalTokens = sum
	}
	if u.CacheReadInputTokens > 0 {
		out.PromptTokensDetails = &openaiwire.PromptTokensDetails{CachedTokens: u.CacheReadInputTokens}
	}
	return out
}

// TranslateResponse turns a Converse answer into a chat.completion, or an InvokeModel embeddings answer into an
// embeddings list.
func (a *Adapter) TranslateResponse(t *providers.Target, c *providers.Call, body []byte) ([]byte, error) {
	if c.Endpoint == providers.Embeddings {
		return translateEmbeddingsResponse(c, body)
	}
	var resp converseResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("bedrock: decode converse answer: %w", err)
	}
	if resp.Output.Message == nil {
		return nil, fmt.Errorf("bedrock: converse answer has no output.message")
	}
	msg := openaiwire.AssistantMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range resp.Output.Message.Content {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
			hasText = true
			if !c.Strict {
				msg.ContentBlocks = append(msg.ContentBlocks, openaiwire.ContentBlock{Type: "text", Text: *b.Text})
			}
		case b.ToolUse != nil:
			var tc openaiwire.ToolCall
			tc.ID, tc.Type, tc.Function.Name = b.ToolUse.ToolUseID, "function", b.ToolUse.Name
			tc.Function.Arguments = "{}"
			if contentKind(b.ToolUse.Input) != 0 {
				var compact bytes.Buffer
				if err := json.Compact(&compact, b.ToolUse.Input); err == nil {
					tc.Function.Arguments = compact.String()
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, tc)
		case b.ReasoningContent != nil && !c.Strict:
			if rt := b.ReasoningContent.ReasoningText; rt != nil {
				msg.ContentBlocks = append(msg.ContentBlocks, openaiwire.ContentBlock{Type: "thinking", Thinking: rt.Text, Signature: rt.Signature})
			} else if b.ReasoningContent.RedactedContent != "" {
				msg.ContentBlocks = append(msg.ContentBlocks, openaiwire.ContentBlock{Type: "redacted_thinking", Data: b.ReasoningContent.RedactedContent})
			}
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	out := openaiwire.Completion{
		ID:      a.newID(),
		Object:  "chat.completion",
		Created: a.now().Unix(),
		Model:   requestModel(c.Body),
		Choices: []openaiwire.Choice{{Index: 0, Message: msg, FinishReason: finishReason(resp.StopReason), Logprobs: json.RawMessage("null")}},
		Usage:   usage(resp.Usage),
	}
	return marshal(out)
}
