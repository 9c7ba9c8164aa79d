package responses

import (
	"encoding/json"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/schema"
)

// chatRequest is the chat completion request ToChat writes: only what a response request can say.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	User                string          `json:"user,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string            `json:"role"`
	Content    json.RawMessage   `json:"content"` // a string, an array of parts, or null
	ToolCalls  []schema.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatPart is a chat content part ToChat writes.
type chatPart struct {
	Type       string          `json:"type"`
	Text       *string         `json:"text,omitempty"`
	ImageURL   *chatImageURL   `json:"image_url,omitempty"`
	File       *chatFile       `json:"file,omitempty"`
	InputAudio json.RawMessage `json:"input_audio,omitempty"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatFile struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// inputItem is an item of a response request's input, every kind's members in one struct.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inputPart is a content part of an input message item.
type inputPart struct {
	Type       string          `json:"type"`
	Text       *string         `json:"text"`
	Refusal    *string         `json:"refusal"`
	ImageURL   string          `json:"image_url"`
	FileID     string          `json:"file_id"`
	Detail     string          `json:"detail"`
	FileData   string          `json:"file_data"`
	Filename   string          `json:"filename"`
	FileURL    string          `json:"file_url"`
	InputAudio json.RawMessage `json:"input_audio"`
}

// responseTool is a function tool of a response request (the other kinds are refused).
type responseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// textFormat is a response request's text.format.
type textFormat struct {
	Format *struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"format"`
}

var jsonNull = json.RawMessage("null")

// ToChat builds the chat completion request body for a provider without a native responses API: instructions
// become the first system message; input items become messages (message items with input_text, input_image,
// input_file and input_audio parts; function_call items an assistant message's tool_calls; function_call_output
// items tool messages; reasoning items are dropped); function tools become chat tools (other kinds are a 400
// naming tools[i].type); tool_choice, temperature, top_p, max_output_tokens (as max_completion_tokens), user,
// parallel_tool_calls, text.format (as response_format) and reasoning.effort (as reasoning_effort) carry over;
// stream follows the request, with usage asked for. The model is passed as it is. req is validated
// (DecodeResponseRequest); errors are 400s naming the field.
func ToChat(req *schema.ResponseRequest) ([]byte, error) {
	out := chatRequest{
		Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, MaxCompletionTokens: req.MaxOutputTokens,
		ParallelToolCalls: req.ParallelToolCalls, User: req.User,
	}
	if req.Stream != nil && *req.Stream {
		out.Stream, out.StreamOptions = true, &streamOptions{IncludeUsage: true}
	}
	if req.Instructions != nil && *req.Instructions != "" {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: jsonString(*req.Instructions)})
	}
	items, err := req.InputItems()
	if err != nil {
		return nil, err
	}
	for i, raw := range items {
		if out.Messages, err = addItem(out.Messages, i, raw); err != nil {
			return nil, err
		}
	}
	if len(out.Messages) == 0 {
		return nil, gwerr.BadRequest("input", "input holds no message a chat model can read")
	}
	if out.Tools, err = chatTools(req.Tools); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = chatToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	if out.ResponseFormat, err = responseFormat(req.Text); err != nil {
		return nil, err
	}
	if len(req.Reasoning) > 0 && string(req.Reasoning) != "null" {
		var r struct {
			Effort *string `json:"effort"`
		}
		if err := json.Unmarshal(req.Reasoning, &r); err != nil {
			return nil, schema.DecodeError(req.Reasoning, "reasoning", err)
		}
		if r.Effort != nil {
			out.ReasoningEffort = *r.Effort
		}
	}
	return json.Marshal(&out)
}

// addItem appends the messages of input item i.
func addItem(msgs []chatMessage, i int, raw json.RawMessage) ([]chatMessage, error) {
	param := schema.Index("input", i)
	var it inputItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return nil, schema.DecodeError(raw, param, err)
	}
	switch it.Type {
	case "message", "":
		return addMessage(msgs, param, &it)
	case "function_call":
		if it.CallID == "" {
			return nil, gwerr.BadRequest(param+".call_id", "%s.call_id is required", param)
		}
		if it.Name == "" {
			return nil, gwerr.BadRequest(param+".name", "%s.name is required", param)
		}
		call := schema.ToolCall{ID: it.CallID, Type: "function", Function: schema.FunctionCall{Name: it.Name, Arguments: it.Arguments}}
		// Calls that follow an assistant turn belong to it: one assistant message with its text and its calls.
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
			msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
			return msgs, nil
		}
		return append(msgs, chatMessage{Role: "assistant", Content: jsonNull, ToolCalls: []schema.ToolCall{call}}), nil
	case "function_call_output":
		if it.CallID == "" {
			return nil, gwerr.BadRequest(param+".call_id", "%s.call_id is required", param)
		}
		content, err := outputContent(param+".output", it.Output)
		if err != nil {
			return nil, err
		}
		return append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: content}), nil
	case "reasoning":
		return msgs, nil // a chat model gets no reasoning back
	}
	return nil, gwerr.BadRequest(param+".type", "%s.type %q is not supported: the provider is translated from chat completions and reads message, function_call, function_call_output and reasoning items", param, it.Type)
}

// addMessage appends a message item: role user, assistant, system or developer (sent as system).
func addMessage(msgs []chatMessage, param string, it *inputItem) ([]chatMessage, error) {
	role := it.Role
	switch role {
	case "user", "assistant", "system":
	case "developer":
		role = "system"
	case "":
		return nil, gwerr.BadRequest(param+".role", "%s.role is required", param)
	default:
		return nil, gwerr.BadRequest(param+".role", "%s.role must be user, assistant, system or developer, not %q", param, role)
	}
	switch jsonfield.Kind(it.Content) {
	case "string":
		return append(msgs, chatMessage{Role: role, Content: it.Content}), nil
	case "array":
	default:
		return nil, gwerr.BadRequest(param+".content", "%s.content must be a string or an array of parts", param)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(it.Content, &raws); err != nil {
		return nil, schema.DecodeError(it.Content, param+".content", err)
	}
	parts := make([]chatPart, 0, len(raws))
	for k, rp := range raws {
		pp := schema.Index(param+".content", k)
		var p inputPart
		if err := json.Unmarshal(rp, &p); err != nil {
			return nil, schema.DecodeError(rp, pp, err)
		}
		part, err := chatPartOf(pp, &p)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	if role != "user" {
		// System and assistant messages carry text only: join their parts into one string.
		var text []byte
		for k := range parts {
			if parts[k].Text == nil {
				return nil, gwerr.BadRequest(schema.Index(param+".content", k), "%s: a %s message carries text only", schema.Index(param+".content", k), it.Role)
			}
			text = append(text, *parts[k].Text...)
		}
		return append(msgs, chatMessage{Role: role, Content: jsonString(string(text))}), nil
	}
	content, err := json.Marshal(parts)
	if err != nil {
		return nil, err
	}
	return append(msgs, chatMessage{Role: role, Content: content}), nil
}

// chatPartOf translates one content part of an input message.
func chatPartOf(param string, p *inputPart) (chatPart, error) {
	switch p.Type {
	case "input_text", "output_text", "text":
		if p.Text == nil {
			return chatPart{}, gwerr.BadRequest(param+".text", "%s.text is required", param)
		}
		return chatPart{Type: "text", Text: p.Text}, nil
	case "refusal":
		if p.Refusal == nil {
			return chatPart{}, gwerr.BadRequest(param+".refusal", "%s.refusal is required", param)
		}
		return chatPart{Type: "text", Text: p.Refusal}, nil
	case "input_image":
		switch {
		case p.ImageURL != "":
			return chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: p.ImageURL, Detail: p.Detail}}, nil
		case p.FileID != "":
			return chatPart{Type: "file", File: &chatFile{FileID: p.FileID}}, nil
		}
		return chatPart{}, gwerr.BadRequest(param+".image_url", "%s needs image_url or file_id", param)
	case "input_file":
		if p.FileURL != "" && p.FileData == "" && p.FileID == "" {
			return chatPart{}, gwerr.BadRequest(param+".file_url", "%s.file_url is not supported: the provider is translated from chat completions; send file_data or file_id", param)
		}
		if p.FileData == "" && p.FileID == "" {
			return chatPart{}, gwerr.BadRequest(param+".file_data", "%s needs file_data or file_id", param)
		}
		return chatPart{Type: "file", File: &chatFile{FileData: p.FileData, FileID: p.FileID, Filename: p.Filename}}, nil
	case "input_audio":
		return chatPart{Type: "input_audio", InputAudio: p.InputAudio}, nil
	case "":
		return chatPart{}, gwerr.BadRequest(param+".type", "%s.type is required", param)
	}
	return chatPart{}, gwerr.BadRequest(param+".type", "%s.type %q is not supported: the provider is translated from chat completions", param, p.Type)
}

// outputContent is a function_call_output's output as a tool message's content: a string as it is, an array of
// input_text parts joined.
func outputContent(param string, raw json.RawMessage) (json.RawMessage, error) {
	switch jsonfield.Kind(raw) {
	case "string":
		return raw, nil
	case "array":
		var parts []inputPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, schema.DecodeError(raw, param, err)
		}
		var text []byte
		for k := range parts {
			if parts[k].Text == nil {
				return nil, gwerr.BadRequest(schema.Index(param, k), "%s: a translated provider reads text outputs only", schema.Index(param, k))
			}
			text = append(text, *parts[k].Text...)
		}
		return jsonString(string(text)), nil
	}
	return nil, gwerr.BadRequest(param, "%s must be a string or an array of parts", param)
}

// chatTools translates function tools; any other kind is refused.
func chatTools(tools []json.RawMessage) ([]chatTool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]chatTool, 0, len(tools))
	for i, raw := range tools {
		param := schema.Index("tools", i)
		var t responseTool
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, schema.DecodeError(raw, param, err)
		}
		if t.Type != "function" {
			return nil, gwerr.BadRequest(param+".type", "%s.type %q is not supported: the provider is translated from chat completions and supports function tools only", param, t.Type)
		}
		if t.Name == "" {
			return nil, gwerr.BadRequest(param+".name", "%s.name is required", param)
		}
		out = append(out, chatTool{Type: "function", Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	return out, nil
}

// chatToolChoice translates tool_choice: the strings as they are, {"type":"function","name":n} as chat's
// {"type":"function","function":{"name":n}}.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	switch jsonfield.Kind(raw) {
	case "nothing", "null":
		return nil, nil
	case "string":
		return raw, nil
	}
	var c schema.ResponseToolChoice
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, schema.DecodeError(raw, "tool_choice", err)
	}
	if c.Type != "function" || c.Name == "" {
		return nil, gwerr.BadRequest("tool_choice", "tool_choice must be none, auto, required or a function object")
	}
	var n schema.NamedToolChoice
	n.Type, n.Function.Name = "function", c.Name
	return json.Marshal(&n)
}

// responseFormat translates text.format: json_schema and json_object to response_format, text to nothing.
func responseFormat(raw json.RawMessage) (json.RawMessage, error) {
	if absent(raw) {
		return nil, nil
	}
	var t textFormat
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, schema.DecodeError(raw, "text", err)
	}
	f := t.Format
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		if f.Name == "" {
			return nil, gwerr.BadRequest("text.format.name", "text.format.name is required with type json_schema")
		}
		type jsonSchema struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Schema      json.RawMessage `json:"schema,omitempty"`
			Strict      *bool           `json:"strict,omitempty"`
		}
		return json.Marshal(struct {
			Type       string     `json:"type"`
			JSONSchema jsonSchema `json:"json_schema"`
		}{"json_schema", jsonSchema{f.Name, f.Description, f.Schema, f.Strict}})
	}
	return nil, gwerr.BadRequest("text.format.type", "text.format.type must be text, json_object or json_schema, not %q", f.Type)
}

// jsonString is s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// absent reports a member that is left out or null.
func absent(raw json.RawMessage) bool {
	k := jsonfield.Kind(raw)
	return k == "nothing" || k == "null"
}
