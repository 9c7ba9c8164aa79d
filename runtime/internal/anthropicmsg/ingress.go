package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

// ---- Anthropic Messages request, as a caller of POST /v1/messages sends it ----

// ingressRequest is what ToChat reads of a Messages request. Messages and tools stay raw so that a decoding
// error names the item (messages[2]); system, tool_choice and thinking have more than one shape.
type ingressRequest struct {
	Model         string            `json:"model"`
	System        json.RawMessage   `json:"system"`
	Messages      []json.RawMessage `json:"messages"`
	MaxTokens     *int64            `json:"max_tokens"`
	Temperature   *float64          `json:"temperature"`
	TopP          *float64          `json:"top_p"`
	TopK          *int64            `json:"top_k"`
	StopSequences []string          `json:"stop_sequences"`
	Stream        bool              `json:"stream"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	Metadata      *metadataParam    `json:"metadata"`
	Thinking      json.RawMessage   `json:"thinking"`
}

type ingressMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ingressBlock is a content block of a request, the members of every type in one struct (flat rather than
// embedding contentBlock, so that a decoding error names the field as the caller wrote it).
type ingressBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Source    *imageSource    `json:"source"` // an image's or a document's
	Title     string          `json:"title"`  // a document's
	ID        string          `json:"id"`     // a tool_use's
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"` // a tool_result's
	Content   json.RawMessage `json:"content"`     // a string or text and image blocks
	IsError   bool            `json:"is_error"`
}

// ingressTool is a tool of a request: a custom tool (type absent or "custom") or one of Anthropic's server
// tools (web_search_20250305, bash_20250124, ...), which only Anthropic runs.
type ingressTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type thinkingParam struct {
	Type         string `json:"type"`
	BudgetTokens *int64 `json:"budget_tokens"`
}

// ---- OpenAI chat completion request, as ToChat writes it ----

type chatRequest struct {
	Model               string         `json:"model,omitempty"`
	Messages            []chatMessage  `json:"messages"`
	MaxCompletionTokens int64          `json:"max_completion_tokens"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	Stop                []string       `json:"stop,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Tools               []chatTool     `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"` // a string or a schema.NamedToolChoice
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	User                string         `json:"user,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string            `json:"role"`
	Content    any               `json:"content"` // a string, []chatPart, or nil (null)
	ToolCalls  []schema.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

type chatPart struct {
	Type     string        `json:"type"` // text, image_url or file
	Text     string        `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
	File     *chatFile     `json:"file,omitempty"`
}

type chatImageURL struct {
	URL string `json:"url"`
}

type chatFile struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"` // function
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Thinking budgets at or above these ask for a medium or high reasoning_effort; below the first, low. They sit
// between the budgets other adapters give each effort (1024, 8192 and 24576 for Gemini's low, medium, high).
const (
	mediumEffortBudget = 4096
	highEffortBudget   = 16384
)

// ToChat translates an Anthropic Messages request body into an OpenAI chat completion request body (JSON).
// Errors are *gwerr.Error 400s whose Param names the Anthropic field ("messages[2].content[0].type").
//
//   - system (a string or text blocks) becomes the first message, role system.
//   - A user message's text, image (base64 → a data: URL, url → the URL) and document blocks (a base64 PDF → a
//     file part, a text source → text) become its content parts; one text block alone becomes a string. Its
//     tool_result blocks become role tool messages placed before it, tool_call_id from tool_use_id, their
//     text the content (a result marked is_error starts with "Error: "); the images of a tool result move to
//     the user message that follows them, as OpenAI's tool messages hold only text.
//   - An assistant message's text blocks become its content and its tool_use blocks its tool_calls, input as
//     the JSON text of arguments. Its thinking and redacted_thinking blocks are dropped: their signatures mean
//     something only to Anthropic, whose models are reached by pass-through instead of this translation.
//   - tools become function tools (input_schema → parameters); only custom tools translate, a server tool
//     (web_search_..., bash_...) is refused. tool_choice auto → "auto", any → "required", tool → the named
//     function, none → "none"; disable_parallel_tool_use → parallel_tool_calls false. Without tools,
//     tool_choice auto and none are dropped (OpenAI refuses tool_choice without tools), any and tool refused.
//   - max_tokens (required) → max_completion_tokens; stop_sequences → stop; temperature, top_p and stream as
//     they are, a stream asking for usage (stream_options.include_usage) so that its last event can count
//     tokens; metadata.user_id → user; thinking enabled → reasoning_effort low, medium or high by its
//     budget_tokens (below 4096, below 16384, above), disabled or adaptive → none. top_k has no OpenAI
//     equivalent and is dropped, as are cache_control marks and members this list does not name.
//
// model is passed on as it is (when absent, a config may supply it). Unknown content block types, and blocks
// in a role that cannot hold them, are refused with the field named.
// The body's size is bounded by the routes' body limit, its nesting by encoding/json.
func ToChat(body []byte) ([]byte, error) {
	return toChat(body, true)
}

// toChat is ToChat; count_tokens requests have no max_tokens, so requireMaxTokens is false for them.
func toChat(body []byte, requireMaxTokens bool) ([]byte, error) {
	var in ingressRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, schema.DecodeError(body, "", err)
	}
	out := chatRequest{Model: in.Model, Temperature: in.Temperature, TopP: in.TopP, Stream: in.Stream}
	switch {
	case in.MaxTokens != nil:
		if *in.MaxTokens < 1 {
			return nil, gwerr.BadRequest("max_tokens", "max_tokens must be at least 1")
		}
		out.MaxCompletionTokens = *in.MaxTokens
	case requireMaxTokens:
		return nil, gwerr.BadRequest("max_tokens", "max_tokens is required")
	}
	if in.Stream {
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for _, s := range in.StopSequences {
		if s != "" {
			out.Stop = append(out.Stop, s)
		}
	}
	if in.Metadata != nil {
		out.User = in.Metadata.UserID
	}
	var err error
	if out.ReasoningEffort, err = reasoningEffort(in.Thinking); err != nil {
		return nil, err
	}
	system, err := systemMessage(in.System)
	if err != nil {
		return nil, err
	}
	if system != nil {
		out.Messages = append(out.Messages, *system)
	}
	if len(in.Messages) == 0 {
		return nil, gwerr.BadRequest("messages", "messages must hold at least one message")
	}
	for i, raw := range in.Messages {
		if out.Messages, err = appendMessage(out.Messages, schema.Index("messages", i), raw); err != nil {
			return nil, err
		}
	}
	if n := len(out.Messages); n == 0 || out.Messages[n-1].Role == "system" {
		return nil, gwerr.BadRequest("messages", "messages must hold at least one message with content")
	}
	for i, raw := range in.Tools {
		t, err := chatToolOf(schema.Index("tools", i), raw)
		if err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, t)
	}
	if err := setToolChoice(&out, in.ToolChoice); err != nil {
		return nil, err
	}
	b, err := marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("anthropicmsg: encode chat request: %w", err)
	}
	return b, nil
}

// reasoningEffort reads thinking: {"type": "enabled", "budget_tokens": n}, {"type": "disabled"} or
// {"type": "adaptive"}.
func reasoningEffort(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var th thinkingParam
	if err := json.Unmarshal(raw, &th); err != nil {
		return "", schema.DecodeError(raw, "thinking", err)
	}
	switch th.Type {
	case "enabled":
		if th.BudgetTokens == nil {
			return "", gwerr.BadRequest("thinking.budget_tokens", "thinking.budget_tokens is required when thinking is enabled")
		}
		switch b := *th.BudgetTokens; {
		case b < 1:
			return "", gwerr.BadRequest("thinking.budget_tokens", "thinking.budget_tokens must be at least 1")
		case b < mediumEffortBudget:
			return "low", nil
		case b < highEffortBudget:
			return "medium", nil
		}
		return "high", nil
	case "disabled", "adaptive":
		return "", nil
	case "":
		return "", gwerr.BadRequest("thinking.type", "thinking.type is required")
	}
	return "", gwerr.BadRequest("thinking.type", "thinking.type %q is not one of enabled, disabled, adaptive", th.Type)
}

// systemMessage reads system: a string or text blocks. Nothing to say gives nil.
func systemMessage(raw json.RawMessage) (*chatMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return &chatMessage{Role: "system", Content: s}, nil
	}
	var parts []chatPart
	_, err := eachBlock("system", raw, func(k int, b *ingressBlock) error {
		if b.Type != "text" {
			param := schema.Index("system", k)
			return gwerr.BadRequest(param+".type", "%s.type must be text, not %q", param, b.Type)
		}
		if b.Text != "" {
			parts = append(parts, chatPart{Type: "text", Text: b.Text})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return &chatMessage{Role: "system", Content: contentOf(parts)}, nil
}

// eachBlock decodes an array of content blocks one at a time into the same ingressBlock (f must not keep it),
// calls f with each, and returns how many there were; errors name param[k]. One at a time, so that the memory
// of a translation follows what it keeps: a content array of a million empty blocks, which the body limit
// lets through, costs no more than its bytes.
func eachBlock(param string, raw json.RawMessage, f func(k int, b *ingressBlock) error) (int, error) {
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '[' {
		return 0, gwerr.BadRequest(param, "%s must be a string or an array of content blocks", param)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the '['
		return 0, schema.DecodeError(raw, param, err)
	}
	var block ingressBlock
	k := 0
	for ; dec.More(); k++ {
		block = ingressBlock{}
		if err := dec.Decode(&block); err != nil {
			return 0, schema.DecodeError(raw, schema.Index(param, k), err)
		}
		if err := f(k, &block); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil { // the ']'
		return 0, schema.DecodeError(raw, param, err)
	}
	return k, nil
}

// contentOf is a message's content: one text part as a string, otherwise the parts.
func contentOf(parts []chatPart) any {
	if len(parts) == 1 && parts[0].Type == "text" {
		return parts[0].Text
	}
	return parts
}

// appendMessage translates messages[i] (param) and appends what it becomes: an assistant message, or a user
// message preceded by the tool messages of its tool_result blocks.
func appendMessage(out []chatMessage, param string, raw json.RawMessage) ([]chatMessage, error) {
	var m ingressMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, schema.DecodeError(raw, param, err)
	}
	switch m.Role {
	case "user", "assistant":
	case "":
		return nil, gwerr.BadRequest(param+".role", "%s.role is required", param)
	default:
		return nil, gwerr.BadRequest(param+".role", "%s.role must be user or assistant, not %q (system instructions go in the top-level system)", param, m.Role)
	}
	cparam := param + ".content"
	if isNull(m.Content) {
		return nil, gwerr.BadRequest(cparam, "%s is required", cparam)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		if m.Role == "assistant" && s == "" {
			return out, nil // nothing said: OpenAI-format providers refuse an empty assistant turn as well
		}
		return append(out, chatMessage{Role: m.Role, Content: s}), nil
	}
	if m.Role == "assistant" {
		msg, err := assistantMessage(cparam, m.Content)
		if err != nil || msg == nil {
			return out, err
		}
		return append(out, *msg), nil
	}
	return appendUserMessage(out, cparam, m.Content)
}

// noBlocks refuses a content array without a block.
func noBlocks(param string) error {
	return gwerr.BadRequest(param, "%s must hold at least one content block", param)
}

// assistantMessage translates an assistant's blocks (content, an array): text → content, tool_use →
// tool_calls. An assistant turn left with nothing (only thinking) gives nil.
func assistantMessage(param string, content json.RawMessage) (*chatMessage, error) {
	var parts []chatPart
	var calls []schema.ToolCall
	n, err := eachBlock(param, content, func(k int, b *ingressBlock) error {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, chatPart{Type: "text", Text: b.Text})
			}
		case "tool_use":
			call, err := toolCallOf(schema.Index(param, k), b)
			if err != nil {
				return err
			}
			calls = append(calls, call)
		case "thinking", "redacted_thinking":
			// Dropped: see ToChat.
		default:
			return unsupportedBlock(schema.Index(param, k), b.Type, "an assistant message", "text, tool_use, thinking and redacted_thinking")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, noBlocks(param)
	}
	if len(parts) == 0 && len(calls) == 0 {
		return nil, nil
	}
	msg := &chatMessage{Role: "assistant", ToolCalls: calls}
	if len(parts) > 0 {
		msg.Content = contentOf(parts)
	}
	return msg, nil
}

func unsupportedBlock(param, typ, where, allowed string) error {
	if typ == "" {
		return gwerr.BadRequest(param+".type", "%s.type is required", param)
	}
	return gwerr.BadRequest(param+".type", "%s.type %q is not supported in %s (%s are)", param, typ, where, allowed)
}

// toolCallOf translates a tool_use block; its input must be a JSON object (absent is {}).
func toolCallOf(param string, b *ingressBlock) (schema.ToolCall, error) {
	var call schema.ToolCall
	if b.ID == "" {
		return call, gwerr.BadRequest(param+".id", "%s.id is required", param)
	}
	if b.Name == "" {
		return call, gwerr.BadRequest(param+".name", "%s.name is required", param)
	}
	input := bytes.TrimSpace(b.Input)
	if isNull(input) {
		input = []byte("{}")
	}
	if input[0] != '{' {
		return call, gwerr.BadRequest(param+".input", "%s.input must be an object", param)
	}
	call.ID, call.Type, call.Function.Name = b.ID, "function", b.Name
	call.Function.Arguments = compactArgs(input)
	return call, nil
}

// appendUserMessage appends the tool messages of a user turn's tool_result blocks (content, an array), then
// the user message of its other blocks (and of its tool results' images), if any.
func appendUserMessage(out []chatMessage, param string, content json.RawMessage) ([]chatMessage, error) {
	var parts, resultImages []chatPart
	n, err := eachBlock(param, content, func(k int, b *ingressBlock) error {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, chatPart{Type: "text", Text: b.Text})
			}
		case "image":
			p, err := imagePart(schema.Index(param, k), b.Source)
			if err != nil {
				return err
			}
			parts = append(parts, p)
		case "document":
			p, err := documentPart(schema.Index(param, k), b)
			if err != nil {
				return err
			}
			parts = append(parts, p)
		case "tool_result":
			msg, images, err := toolMessage(schema.Index(param, k), b)
			if err != nil {
				return err
			}
			out = append(out, msg)
			resultImages = append(resultImages, images...)
		default:
			return unsupportedBlock(schema.Index(param, k), b.Type, "a user message", "text, image, document and tool_result")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, noBlocks(param)
	}
	if parts = append(resultImages, parts...); len(parts) > 0 {
		out = append(out, chatMessage{Role: "user", Content: contentOf(parts)})
	}
	return out, nil
}

// imagePart translates an image block's source: base64 → a data: URL, url → the URL.
func imagePart(param string, src *imageSource) (chatPart, error) {
	sp := param + ".source"
	if src == nil {
		return chatPart{}, gwerr.BadRequest(sp, "%s is required", sp)
	}
	switch src.Type {
	case "base64":
		if src.MediaType == "" {
			return chatPart{}, gwerr.BadRequest(sp+".media_type", "%s.media_type is required", sp)
		}
		if src.Data == "" {
			return chatPart{}, gwerr.BadRequest(sp+".data", "%s.data is required", sp)
		}
		return chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: "data:" + src.MediaType + ";base64," + src.Data}}, nil
	case "url":
		if src.URL == "" {
			return chatPart{}, gwerr.BadRequest(sp+".url", "%s.url is required", sp)
		}
		return chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: src.URL}}, nil
	case "":
		return chatPart{}, gwerr.BadRequest(sp+".type", "%s.type is required", sp)
	}
	return chatPart{}, gwerr.BadRequest(sp+".type", "%s.type %q is not supported for a model that is not Anthropic's (base64 and url are)", sp, src.Type)
}

// documentPart translates a document block: a base64 PDF → a file part, a text source → a text part.
func documentPart(param string, b *ingressBlock) (chatPart, error) {
	sp := param + ".source"
	src := b.Source
	if src == nil {
		return chatPart{}, gwerr.BadRequest(sp, "%s is required", sp)
	}
	switch src.Type {
	case "base64":
		if src.MediaType == "" || src.Data == "" {
			return chatPart{}, gwerr.BadRequest(sp+".data", "%s needs media_type and data", sp)
		}
		name := b.Title
		if name == "" {
			name = "document.pdf"
		}
		return chatPart{Type: "file", File: &chatFile{FileData: "data:" + src.MediaType + ";base64," + src.Data, Filename: name}}, nil
	case "text":
		return chatPart{Type: "text", Text: src.Data}, nil
	case "":
		return chatPart{}, gwerr.BadRequest(sp+".type", "%s.type is required", sp)
	}
	return chatPart{}, gwerr.BadRequest(sp+".type", "%s.type %q is not supported for a model that is not Anthropic's (base64 and text are)", sp, src.Type)
}

// toolMessage translates a tool_result block into a tool message, and returns the images it holds apart.
func toolMessage(param string, b *ingressBlock) (chatMessage, []chatPart, error) {
	if b.ToolUseID == "" {
		return chatMessage{}, nil, gwerr.BadRequest(param+".tool_use_id", "%s.tool_use_id is required", param)
	}
	var texts, images []chatPart
	if !isNull(b.Content) {
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			if s != "" {
				texts = append(texts, chatPart{Type: "text", Text: s})
			}
		} else {
			cp := param + ".content"
			_, err := eachBlock(cp, b.Content, func(k int, ib *ingressBlock) error {
				switch ib.Type {
				case "text":
					if ib.Text != "" {
						texts = append(texts, chatPart{Type: "text", Text: ib.Text})
					}
				case "image":
					p, err := imagePart(schema.Index(cp, k), ib.Source)
					if err != nil {
						return err
					}
					images = append(images, p)
				case "document":
					p, err := documentPart(schema.Index(cp, k), ib)
					if err != nil {
						return err
					}
					if p.Type == "text" {
						texts = append(texts, p)
					} else {
						images = append(images, p)
					}
				default:
					return unsupportedBlock(schema.Index(cp, k), ib.Type, "a tool_result", "text, image and document")
				}
				return nil
			})
			if err != nil {
				return chatMessage{}, nil, err
			}
		}
	}
	if b.IsError {
		if len(texts) == 0 {
			texts = append(texts, chatPart{Type: "text", Text: "Error"})
		} else {
			texts[0].Text = "Error: " + texts[0].Text
		}
	}
	msg := chatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: ""}
	if len(texts) > 0 {
		msg.Content = contentOf(texts)
	}
	return msg, images, nil
}

// chatToolOf translates tools[i] (param): a custom tool becomes a function tool.
func chatToolOf(param string, raw json.RawMessage) (chatTool, error) {
	var t ingressTool
	if err := json.Unmarshal(raw, &t); err != nil {
		return chatTool{}, schema.DecodeError(raw, param, err)
	}
	if t.Type != "" && t.Type != "custom" {
		return chatTool{}, gwerr.BadRequest(param+".type", "%s.type %q is a server tool only Anthropic's models run; custom tools translate to other providers", param, t.Type)
	}
	if t.Name == "" {
		return chatTool{}, gwerr.BadRequest(param+".name", "%s.name is required", param)
	}
	params := bytes.TrimSpace(t.InputSchema)
	if isNull(params) {
		params = []byte(`{"type":"object","properties":{}}`)
	} else if params[0] != '{' {
		return chatTool{}, gwerr.BadRequest(param+".input_schema", "%s.input_schema must be a JSON schema object", param)
	}
	return chatTool{Type: "function", Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: params}}, nil
}

// setToolChoice translates tool_choice: {"type": "auto"|"any"|"tool"|"none", "name", "disable_parallel_tool_use"}.
func setToolChoice(out *chatRequest, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var tc toolChoiceParam
	if err := json.Unmarshal(raw, &tc); err != nil {
		return schema.DecodeError(raw, "tool_choice", err)
	}
	var choice any
	switch tc.Type {
	case "auto":
		choice = "auto"
	case "none":
		choice = "none"
	case "any":
		choice = "required"
	case "tool":
		if tc.Name == "" {
			return gwerr.BadRequest("tool_choice.name", "tool_choice.name is required when tool_choice.type is tool")
		}
		named := schema.NamedToolChoice{Type: "function"}
		named.Function.Name = tc.Name
		choice = named
	case "":
		return gwerr.BadRequest("tool_choice.type", "tool_choice.type is required")
	default:
		return gwerr.BadRequest("tool_choice.type", "tool_choice.type %q is not one of auto, any, tool, none", tc.Type)
	}
	if len(out.Tools) == 0 {
		if tc.Type == "any" || tc.Type == "tool" {
			return gwerr.BadRequest("tool_choice", "tool_choice %s needs tools", tc.Type)
		}
		return nil // OpenAI refuses tool_choice and parallel_tool_calls without tools
	}
	out.ToolChoice = choice
	if tc.DisableParallelToolUse && tc.Type != "none" {
		no := false
		out.ParallelToolCalls = &no
	}
	return nil
}
