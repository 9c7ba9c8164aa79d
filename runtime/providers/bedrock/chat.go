package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// translateChatRequest turns an OpenAI chat completion request into a Converse request body and returns the
// model id. A request that cannot be expressed in Converse is a 400 naming the field. in is shared by every
// attempt of the request and is only read.
func translateChatRequest(in *schema.ChatRequest) ([]byte, []byte, error) {
	if in.Model == "" {
		return nil, nil, gwerr.BadRequest("model", "model is required: the Bedrock model id, inference profile id or ARN")
	}
	if len(in.Messages) == 0 {
		return nil, nil, gwerr.BadRequest("messages", "messages must hold at least one message")
	}
	out := converseRequest{Messages: make([]brMessage, 0, len(in.Messages))}
	hasToolBlocks := false
	for i := range in.Messages {
		m := &in.Messages[i]
		var err error
		at := messageAt(i)
		var role string
		var blocks []brBlock
		switch m.Role {
		case "system", "developer":
			err = eachText(m.Content, at, "system", func(s string) { out.System = append(out.System, brSystemBlock{Text: s}) })
			if err != nil {
				return nil, nil, err
			}
			continue
		case "user":
			if blocks, err = userBlocks(m.Content, at); err != nil {
				return nil, nil, err
			}
			role = "user"
		case "assistant":
			blocks = make([]brBlock, 0, 1+len(m.ToolCalls))
			err = eachText(m.Content, at, "assistant", func(s string) {
				if s != "" {
					blocks = append(blocks, textBlock(s))
				}
			})
			if err != nil {
				return nil, nil, err
			}
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				if tc.ID == "" {
					return nil, nil, at.toolCallError(j, ".id", "is required")
				}
				if tc.Function.Name == "" {
					return nil, nil, at.toolCallError(j, ".function.name", "is required")
				}
				args := strings.TrimSpace(tc.Function.Arguments)
				if args == "" {
					args = "{}"
				}
				if !json.Valid([]byte(args)) {
					return nil, nil, at.toolCallError(j, ".function.arguments", "is not valid JSON")
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
				p := at.field(".tool_call_id")
				return nil, nil, gwerr.BadRequest(p, "%s is required on a tool message", p)
			}
			res := &brToolResult{ToolUseID: m.ToolCallID}
			err = eachText(m.Content, at, "tool", func(s string) { res.Content = append(res.Content, brToolResultBlock{Text: s}) })
			if err != nil {
				return nil, nil, err
			}
			if len(res.Content) == 0 {
				res.Content = append(res.Content, brToolResultBlock{Text: ""})
			}
			blocks = []brBlock{{ToolResult: res}}
			hasToolBlocks = true
			role = "user" // Converse carries tool results in a user turn
		default:
			p := at.field(".role")
			return nil, nil, gwerr.BadRequest(p, "%s %q is not supported (system, developer, user, assistant, tool)", p, m.Role)
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
	ic.MaxTokens = in.MaxTokens
	if in.MaxCompletionTokens != nil {
		ic.MaxTokens = in.MaxCompletionTokens
	}
	ic.Temperature, ic.TopP = in.Temperature, in.TopP
	stops, err := stopSequences(in.Stop)
	if err != nil {
		return nil, nil, err
	}
	ic.StopSequences = stops
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		out.InferenceConfig = &ic
	}

	if out.ToolConfig, err = translateTools(in, hasToolBlocks); err != nil {
		return nil, nil, err
	}
	if out.OutputConfig, err = translateResponseFormat(in.ResponseFormat); err != nil {
		return nil, nil, err
	}
	buf, err := marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return buf, []byte(in.Model), nil
}

// messageAt is the index of the message being translated. Its name (messages[i]) is built only when an error
// quotes it: a request that translates builds none.
type messageAt int

// field is the name of a field of the message: ".content" gives messages[i].content.
func (at messageAt) field(suffix string) string { return schema.Index("messages", int(at)) + suffix }

// toolCallError is the 400 for a field of the message's tool_calls[j]: ".id" and "is required" name
// messages[i].tool_calls[j].id.
func (at messageAt) toolCallError(j int, suffix, problem string) error {
	p := schema.Index(at.field(".tool_calls"), j) + suffix
	return gwerr.BadRequest(p, "%s %s", p, problem)
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

// eachText reads a content that may only hold text, a string or an array of text (and refusal) parts, and hands
// each text to add in order.
func eachText(raw json.RawMessage, at messageAt, role string, add func(string)) error {
	switch contentKind(raw) {
	case 0:
		return nil
	case '"':
		s, err := contentString(raw, at)
		if err != nil {
			return err
		}
		add(s)
		return nil
	case '[':
		parts, err := schema.DecodeParts(raw, at.field(".content"))
		if err != nil {
			return err
		}
		for j := range parts {
			p := &parts[j]
			switch p.Type {
			case "text":
				add(partText(p))
			case "refusal": // an earlier refusal of the assistant: not content to send back
			default:
				pp := schema.Index(at.field(".content"), j) + ".type"
				return gwerr.BadRequest(pp, "%s: a %s message may only hold text parts, not %q", pp, role, p.Type)
			}
		}
		return nil
	}
	return contentTypeError(at)
}

// userBlocks reads a user content: text, and images given as data: URLs.
func userBlocks(raw json.RawMessage, at messageAt) ([]brBlock, error) {
	switch contentKind(raw) {
	case 0:
		return []brBlock{textBlock("")}, nil
	case '"':
		s, err := contentString(raw, at)
		if err != nil {
			return nil, err
		}
		return []brBlock{textBlock(s)}, nil
	case '[':
		param := at.field(".content")
		parts, err := schema.DecodeParts(raw, param)
		if err != nil {
			return nil, err
		}
		out := make([]brBlock, 0, len(parts))
		for j := range parts {
			p := &parts[j]
			switch p.Type {
			case "text":
				out = append(out, textBlock(partText(p)))
			case "image_url":
				img, err := imagePart(p.ImageURL, schema.Index(param, j)+".image_url")
				if err != nil {
					return nil, err
				}
				out = append(out, brBlock{Image: img})
			default:
				pp := schema.Index(param, j) + ".type"
				return nil, gwerr.BadRequest(pp, "%s %q is not supported by bedrock (text, image_url)", pp, p.Type)
			}
		}
		if len(out) == 0 {
			out = append(out, textBlock(""))
		}
		return out, nil
	}
	return nil, contentTypeError(at)
}

// contentString reads a string content without encoding/json, which would cost a decoder for every message.
func contentString(raw json.RawMessage, at messageAt) (string, error) {
	s, ok := jsonstr.Unquote(bytes.TrimSpace(raw))
	if !ok {
		p := at.field(".content")
		return "", gwerr.BadRequest(p, "%s is not a valid JSON string", p)
	}
	return s, nil
}

func contentTypeError(at messageAt) error {
	p := at.field(".content")
	return gwerr.BadRequest(p, "%s must be a string or an array of content parts", p)
}

// partText is a text part's text, empty when the part has none.
func partText(p *schema.ContentPart) string {
	if p.Text == nil {
		return ""
	}
	return *p.Text
}

// imagePart reads an image_url part (param names its image_url) as a Converse image block.
func imagePart(raw json.RawMessage, param string) (*brImage, error) {
	var u schema.ImageURL
	if contentKind(raw) != 0 {
		var err error
		if u, err = schema.DecodeImageURL(raw, param); err != nil {
			return nil, err
		}
	}
	if u.URL == "" {
		return nil, gwerr.BadRequest(param+".url", "%s.url is required", param)
	}
	return imageBlock(u.URL, param+".url")
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

// Converse values translateTools sends as they are; as variables they are not copied for every request.
var (
	toolChoiceAuto   = json.RawMessage(`{"auto":{}}`)
	toolChoiceAny    = json.RawMessage(`{"any":{}}`)
	emptyInputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
)

// translateTools builds toolConfig. tool_choice "auto" → {"auto":{}}, "required" → {"any":{}}, a named function
// → {"tool":{"name"}}. Converse cannot forbid tool use, so "none" drops the tools, unless the conversation
// already holds tool calls or results: Converse then requires toolConfig, and the tools are sent without a
// choice (the model may still call one).
func translateTools(in *schema.ChatRequest, hasToolBlocks bool) (*toolConfig, error) {
	rawChoice := in.ToolChoice
	var choice json.RawMessage
	none := false
	switch contentKind(rawChoice) {
	case 0:
	case '"':
		s, _ := jsonstr.Unquote(bytes.TrimSpace(rawChoice))
		switch s {
		case "auto":
			choice = toolChoiceAuto
		case "required":
			choice = toolChoiceAny
		case "none":
			none = true
		default:
			return nil, gwerr.BadRequest("tool_choice", "tool_choice %q is not one of auto, none, required", s)
		}
	case '{':
		var named schema.NamedToolChoice
		if err := json.Unmarshal(rawChoice, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, gwerr.BadRequest("tool_choice", `tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":...}}`)
		}
		b, _ := json.Marshal(map[string]map[string]string{"tool": {"name": named.Function.Name}})
		choice = b
	default:
		return nil, gwerr.BadRequest("tool_choice", `tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":...}}`)
	}
	if len(in.Tools) == 0 || (none && !hasToolBlocks) {
		return nil, nil
	}
	tc := &toolConfig{Tools: make([]brTool, len(in.Tools)), ToolChoice: choice}
	for i := range in.Tools {
		t := &in.Tools[i]
		if t.Type != "function" {
			p := schema.Index("tools", i) + ".type"
			return nil, gwerr.BadRequest(p, "%s %q is not supported by bedrock (function)", p, t.Type)
		}
		if t.Function == nil || t.Function.Name == "" {
			p := schema.Index("tools", i) + ".function.name"
			return nil, gwerr.BadRequest(p, "%s is required", p)
		}
		spec := &tc.Tools[i].ToolSpec
		spec.Name, spec.Description = t.Function.Name, t.Function.Description
		spec.InputSchema.JSON = t.Function.Parameters
		if k := contentKind(t.Function.Parameters); k == 0 {
			spec.InputSchema.JSON = emptyInputSchema
		} else if k != '{' {
			p := schema.Index("tools", i) + ".function.parameters"
			return nil, gwerr.BadRequest(p, "%s must be a JSON schema object", p)
		}
	}
	return tc, nil
}

// translateResponseFormat maps response_format json_schema to outputConfig.textFormat (Converse's structured
// output, whose schema is a JSON string). "text" needs nothing; "json_object" has no Converse equivalent and is
// ignored (the model is not held to JSON).
func translateResponseFormat(raw json.RawMessage) (*outputConfig, error) {
	if contentKind(raw) == 0 {
		return nil, nil
	}
	var rf schema.ResponseFormat
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, schema.DecodeError(raw, "response_format", err)
	}
	if rf.Type != "json_schema" {
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
		return schema.FinishLength
	case "tool_use":
		return schema.FinishToolCalls
	case "guardrail_intervened", "content_filtered":
		return schema.FinishContentFilter
	default: // end_turn, stop_sequence, and reasons OpenAI has no word for
		return schema.FinishStop
	}
}

// usage maps Converse token usage. Bedrock counts cache reads and writes apart from inputTokens, while
// OpenAI's prompt_tokens includes cached tokens, so prompt_tokens adds them; cached_tokens is the cache reads.
func usage(u *brUsage) *schema.Usage {
	if u == nil {
		return nil
	}
	out := &schema.Usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      u.TotalTokens,
	}
	if sum := out.PromptTokens + out.CompletionTokens; out.TotalTokens < sum {
		out.TotalTokens = sum
	}
	if u.CacheReadInputTokens > 0 {
		out.PromptTokensDetails = &schema.PromptTokensDetails{CachedTokens: u.CacheReadInputTokens}
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
	msg := schema.AssistantMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range resp.Output.Message.Content {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
			hasText = true
			if !c.Strict {
				msg.ContentBlocks = append(msg.ContentBlocks, schema.ContentBlock{Type: "text", Text: *b.Text})
			}
		case b.ToolUse != nil:
			var tc schema.ToolCall
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
				msg.ContentBlocks = append(msg.ContentBlocks, schema.ContentBlock{Type: "thinking", Thinking: &rt.Text, Signature: rt.Signature})
			} else if b.ReasoningContent.RedactedContent != "" {
				msg.ContentBlocks = append(msg.ContentBlocks, schema.ContentBlock{Type: "redacted_thinking", Data: b.ReasoningContent.RedactedContent})
			}
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	out := schema.Completion{
		ID:      a.newID(),
		Object:  "chat.completion",
		Created: a.now().Unix(),
		Model:   requestModel(c),
		Choices: []schema.Choice{{Index: 0, Message: msg, FinishReason: finishReason(resp.StopReason)}},
		Usage:   usage(resp.Usage),
	}
	return marshal(out)
}
