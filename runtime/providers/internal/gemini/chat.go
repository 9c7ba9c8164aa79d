package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

// now and randomID are variables so that tests can pin them.
var (
	now      = time.Now
	randomID = func() string {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
)

// ChatRequest translates an OpenAI chat completion request (decoded by providers.Call.Chat, shared and left
// unchanged) into a generateContent request body. The returned model is ModelOf(in). Errors are *gwerr.Error 400
// naming the field.
//
// System and developer messages become systemInstruction (in order, wherever they stand); user and tool messages
// become "user" contents, assistant messages "model" contents, and consecutive contents of one role are merged, as
// Gemini wants the roles to alternate. Image parts become inlineData (data: URLs) or fileData (gs://, https://
// and http:// URLs); input_audio and file parts are translated too. Assistant tool_calls become functionCall
// parts; a tool message becomes a functionResponse part named after the tool call it answers, its content sent as
// {"content": text} unless it is a JSON object. A tool call's function.thought_signature (which ChatResponse
// gives when not strict) goes back as the part's thoughtSignature; for Gemini 3 models, which refuse a replayed
// function call without one, the first call of a turn that lost it gets Google's documented skip value. Fields
// without a Gemini equivalent (logit_bias, user, store, parallel_tool_calls, ...) are ignored.
func ChatRequest(in *schema.ChatRequest) (body []byte, model string, err error) {
	model = ModelOf(in)
	if model == "" {
		return nil, "", gwerr.BadRequest("model", "model is required")
	}
	if len(in.Messages) == 0 {
		return nil, "", gwerr.BadRequest("messages", "messages must hold at least one message")
	}
	var out generateContentRequest
	names := make(map[string]string) // tool call id → function name, for tool messages
	for i := range in.Messages {
		m := &in.Messages[i]
		if err := addMessage(&out, names, i, m); err != nil {
			return nil, "", err
		}
	}
	if out.Contents == nil {
		out.Contents = []content{} // Gemini names the problem better than a missing field would
	}
	if out.GenerationConfig, err = genConfig(in, model); err != nil {
		return nil, "", err
	}
	if out.Tools, err = tools(in); err != nil {
		return nil, "", err
	}
	if out.ToolConfig, err = toolChoice(in.ToolChoice); err != nil {
		return nil, "", err
	}
	if out.Tools == nil {
		out.ToolConfig = nil // Gemini refuses a tool config without tools; with no tools, no call can be made anyway
	}
	if isGemini3(model) {
		signFunctionCalls(out.Contents)
	}
	body, err = json.Marshal(&out)
	if err != nil {
		return nil, "", fmt.Errorf("gemini: encode request: %w", err)
	}
	return body, model, nil
}

// skipSignature is the value Google documents for a functionCall replayed without its thought signature: Gemini 3
// models refuse such a call (400) unless it carries a signature, and accept this one in place of the lost one.
const skipSignature = "skip_thought_signature_validator"

// isGemini3 tells Gemini 3 models ("gemini-3-pro-preview", "gemini-3.1-flash") from the others.
func isGemini3(model string) bool {
	rest, ok := strings.CutPrefix(model, "gemini-3")
	return ok && (rest == "" || rest[0] == '-' || rest[0] == '.')
}

// signFunctionCalls gives the first functionCall of each model turn the skip signature when the caller did not
// send back the one Gemini returned (a strict client drops thought_signature). Later calls of a parallel batch
// carry no signature from Gemini either, so they are left as they are.
func signFunctionCalls(contents []content) {
	for i := range contents {
		if contents[i].Role != "model" {
			continue
		}
		for k := range contents[i].Parts {
			if p := &contents[i].Parts[k]; p.FunctionCall != nil {
				if p.ThoughtSignature == "" {
					p.ThoughtSignature = skipSignature
				}
				break
			}
		}
	}
}

// msgParam names field of messages[i] in errors; one concatenation, as it is also built for messages that
// decode well.
func msgParam(i int, field string) string {
	return "messages[" + strconv.Itoa(i) + "]." + field
}

func addMessage(out *generateContentRequest, names map[string]string, i int, m *schema.Message) error {
	switch m.Role {
	case "system", "developer":
		parts, err := textParts(i, m.Content)
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return nil
		}
		if out.SystemInstruction == nil {
			out.SystemInstruction = &content{}
		}
		out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, parts...)
	case "user":
		parts, err := userParts(i, m.Content)
		if err != nil {
			return err
		}
		appendContent(out, "user", parts)
	case "assistant":
		parts, err := textParts(i, m.Content)
		if err != nil {
			return err
		}
		for j := range m.ToolCalls {
			call := &m.ToolCalls[j]
			p, err := functionCallPart(i, j, call)
			if err != nil {
				return err
			}
			if call.ID != "" {
				names[call.ID] = call.Function.Name
			}
			parts = append(parts, p)
		}
		appendContent(out, "model", parts)
	case "tool", "function":
		name := names[m.ToolCallID]
		if name == "" {
			name = m.Name
		}
		if name == "" {
			return gwerr.BadRequest(msgParam(i, "tool_call_id"),
				"%s: no assistant tool call with id %q comes before this tool message, and it has no name; Gemini needs the function's name",
				msgParam(i, "tool_call_id"), m.ToolCallID)
		}
		text, err := plainText(i, m.Content)
		if err != nil {
			return err
		}
		appendContent(out, "user", []part{{FunctionResponse: &functionResponse{Name: name, Response: toolResponse(text)}}})
	case "":
		return gwerr.BadRequest(msgParam(i, "role"), "%s is required", msgParam(i, "role"))
	default:
		return gwerr.BadRequest(msgParam(i, "role"), "%s %q is not one of system, developer, user, assistant, tool", msgParam(i, "role"), m.Role)
	}
	return nil
}

// appendContent adds parts as a content of role, merging them into the previous content of the same role.
func appendContent(out *generateContentRequest, role string, parts []part) {
	if len(parts) == 0 {
		return // Gemini refuses contents without parts
	}
	if n := len(out.Contents); n > 0 && out.Contents[n-1].Role == role {
		out.Contents[n-1].Parts = append(out.Contents[n-1].Parts, parts...)
		return
	}
	out.Contents = append(out.Contents, content{Role: role, Parts: parts})
}

// toolResponse is a functionResponse's response: a tool's JSON object as it is, anything else as
// {"content": text}, since Gemini wants an object.
func toolResponse(text string) json.RawMessage {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(struct {
		Content string `json:"content"`
	}{text})
	return b
}

func functionCallPart(i, j int, call *schema.ToolCall) (part, error) {
	param := func(f string) string { return msgParam(i, schema.Index("tool_calls", j)+"."+f) }
	if call.Type != "" && call.Type != "function" {
		return part{}, gwerr.BadRequest(param("type"), "%s %q is not supported; only function tool calls are", param("type"), call.Type)
	}
	if call.Function.Name == "" {
		return part{}, gwerr.BadRequest(param("function.name"), "%s is required", param("function.name"))
	}
	args := json.RawMessage("{}")
	if a := strings.TrimSpace(call.Function.Arguments); a != "" {
		if !json.Valid([]byte(a)) || a[0] != '{' {
			return part{}, gwerr.BadRequest(param("function.arguments"), "%s must be a JSON object in a string", param("function.arguments"))
		}
		args = json.RawMessage(a)
	}
	return part{FunctionCall: &functionCall{Name: call.Function.Name, Args: args}, ThoughtSignature: call.Function.ThoughtSignature}, nil
}

// contentKind tells a message content apart: absent or null, a string, or an array of parts.
func contentKind(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 'n'
	}
	return raw[0]
}

// stringValue decodes raw, a JSON string (contentKind '"') of a request encoding/json has checked already,
// without the allocations of encoding/json, which translation would pay for each message.
func stringValue(raw json.RawMessage) string {
	s, _ := jsonstr.Unquote(bytes.TrimSpace(raw))
	return s
}

// textParts reads a system, developer or assistant content: a string or text (and refusal) parts.
func textParts(i int, raw json.RawMessage) ([]part, error) {
	switch contentKind(raw) {
	case 'n':
		return nil, nil
	case '"':
		s := stringValue(raw)
		if s == "" {
			return nil, nil
		}
		return []part{{Text: s}}, nil
	case '[':
		items, err := schema.DecodeParts(raw, msgParam(i, "content"))
		if err != nil {
			return nil, err
		}
		parts := make([]part, 0, len(items))
		for j := range items {
			switch items[j].Type {
			case "text":
				if t := items[j].Text; t != nil && *t != "" {
					parts = append(parts, part{Text: *t})
				}
			case "refusal":
				if items[j].Refusal != "" {
					parts = append(parts, part{Text: items[j].Refusal})
				}
			default:
				p := msgParam(i, schema.Index("content", j)+".type")
				return nil, gwerr.BadRequest(p, "%s %q is not supported in this message; only text is", p, items[j].Type)
			}
		}
		return parts, nil
	}
	return nil, gwerr.BadRequest(msgParam(i, "content"), "%s must be a string or an array of content parts", msgParam(i, "content"))
}

// plainText reads a tool message's content as one string.
func plainText(i int, raw json.RawMessage) (string, error) {
	parts, err := textParts(i, raw)
	if err != nil || len(parts) == 0 {
		return "", err
	}
	if len(parts) == 1 {
		return parts[0].Text, nil
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// userParts reads a user content: a string, or text, image_url, input_audio and file parts.
func userParts(i int, raw json.RawMessage) ([]part, error) {
	if contentKind(raw) != '[' {
		return textParts(i, raw)
	}
	items, err := schema.DecodeParts(raw, msgParam(i, "content"))
	if err != nil {
		return nil, err
	}
	parts := make([]part, 0, len(items))
	for j := range items {
		it := &items[j]
		param := func(f string) string { return msgParam(i, schema.Index("content", j)+"."+f) }
		switch it.Type {
		case "text":
			if it.Text != nil && *it.Text != "" {
				parts = append(parts, part{Text: *it.Text})
			}
		case "image_url":
			var u schema.ImageURL
			if contentKind(it.ImageURL) != 'n' {
				if u, err = schema.DecodeImageURL(it.ImageURL, param("image_url")); err != nil {
					return nil, err
				}
			}
			if u.URL == "" {
				return nil, gwerr.BadRequest(param("image_url.url"), "%s is required", param("image_url.url"))
			}
			p, err := mediaPart(param("image_url.url"), u.URL, u.MimeType, "image/jpeg")
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case "input_audio":
			if it.InputAudio == nil || it.InputAudio.Data == "" {
				return nil, gwerr.BadRequest(param("input_audio.data"), "%s is required", param("input_audio.data"))
			}
			format := it.InputAudio.Format
			if format == "" {
				format = "wav"
			}
			parts = append(parts, part{InlineData: &blob{MimeType: "audio/" + format, Data: it.InputAudio.Data}})
		case "file":
			if it.File == nil {
				return nil, gwerr.BadRequest(param("file"), "%s is required", param("file"))
			}
			var p part
			var err error
			switch {
			case it.File.FileData != "":
				p, err = mediaPart(param("file.file_data"), it.File.FileData, "", "application/pdf")
			case isRemoteURI(it.File.FileID):
				p, err = mediaPart(param("file.file_id"), it.File.FileID, mimeByName(it.File.Filename), "application/pdf")
			default:
				return nil, gwerr.BadRequest(param("file.file_id"),
					"%s: Gemini reads files from data: URLs (file_data) or gs:// and https:// URIs (file_id), not from file IDs", param("file"))
			}
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		default:
			return nil, gwerr.BadRequest(param("type"), "%s %q is not supported; use text, image_url, input_audio or file", param("type"), it.Type)
		}
	}
	return parts, nil
}

func isRemoteURI(u string) bool {
	return strings.HasPrefix(u, "gs://") || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// mediaPart turns a data: URL into inlineData and a gs://, https:// or http:// URL into fileData, whose MIME type
// is mimeType, else guessed from the URL's extension, else fallback.
func mediaPart(param, url, mimeType, fallback string) (part, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mt, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || data == "" {
			return part{}, gwerr.BadRequest(param, "%s must be a base64 data: URL (data:<mime type>;base64,<data>)", param)
		}
		if mt == "" {
			mt = fallback
		}
		return part{InlineData: &blob{MimeType: mt, Data: data}}, nil
	}
	if !isRemoteURI(url) {
		return part{}, gwerr.BadRequest(param, "%s must be a data: URL or a gs://, https:// or http:// URL", param)
	}
	if mimeType == "" {
		name := url
		if k := strings.IndexAny(name, "?#"); k >= 0 {
			name = name[:k]
		}
		mimeType = mimeByName(name)
	}
	if mimeType == "" {
		mimeType = fallback
	}
	return part{FileData: &fileData{MimeType: mimeType, FileURI: url}}, nil
}

// mimeByName guesses a MIME type Gemini accepts from a file name's extension ("" when unknown). The table is
// fixed rather than the system's, so that translation doesn't depend on the machine.
func mimeByName(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".heic":
		return "image/heic"
	case ".heif":
		return "image/heif"
	case ".pdf":
		return "application/pdf"
	case ".txt":
		return "text/plain"
	case ".mp3":
		return "audio/mp3"
	case ".wav":
		return "audio/wav"
	case ".flac":
		return "audio/flac"
	case ".ogg":
		return "audio/ogg"
	case ".aac":
		return "audio/aac"
	case ".mp4":
		return "video/mp4"
	case ".mov":
		return "video/mov"
	case ".webm":
		return "video/webm"
	case ".mpeg", ".mpg":
		return "video/mpeg"
	}
	return ""
}

// genConfig gathers generationConfig; nil when the request sets none of its fields.
func genConfig(in *schema.ChatRequest, model string) (*generationConfig, error) {
	var gc generationConfig
	set := false
	if in.MaxCompletionTokens != nil {
		gc.MaxOutputTokens, set = in.MaxCompletionTokens, true
	} else if in.MaxTokens != nil {
		gc.MaxOutputTokens, set = in.MaxTokens, true
	}
	if in.Temperature != nil {
		gc.Temperature, set = in.Temperature, true
	}
	if in.TopP != nil {
		gc.TopP, set = in.TopP, true
	}
	if in.TopK != nil {
		gc.TopK, set = in.TopK, true
	}
	if in.N != nil {
		gc.CandidateCount, set = in.N, true
	}
	if in.PresencePenalty != nil {
		gc.PresencePenalty, set = in.PresencePenalty, true
	}
	if in.FrequencyPenalty != nil {
		gc.FrequencyPenalty, set = in.FrequencyPenalty, true
	}
	if in.Seed != nil {
		gc.Seed, set = in.Seed, true
	}
	if in.Logprobs != nil && *in.Logprobs {
		gc.ResponseLogprobs, set = in.Logprobs, true
		if in.TopLogprobs != nil {
			gc.Logprobs = in.TopLogprobs
		}
	}
	stop, err := stopSequences(in.Stop)
	if err != nil {
		return nil, err
	}
	if len(stop) > 0 {
		gc.StopSequences, set = stop, true
	}
	if ok, err := responseFormat(&gc, in.ResponseFormat); err != nil {
		return nil, err
	} else if ok {
		set = true
	}
	if gc.ThinkingConfig, err = thinking(in, model); err != nil {
		return nil, err
	}
	if gc.ThinkingConfig != nil {
		set = true
	}
	if !set {
		return nil, nil
	}
	return &gc, nil
}

// stopSequences reads stop: a string or an array of strings.
func stopSequences(raw json.RawMessage) ([]string, error) {
	switch contentKind(raw) {
	case 'n':
		return nil, nil
	case '"':
		s := stringValue(raw)
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	case '[':
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, gwerr.BadRequest("stop", "stop must be a string or an array of strings")
		}
		return list, nil
	}
	return nil, gwerr.BadRequest("stop", "stop must be a string or an array of strings")
}

// responseFormat sets responseMimeType (and responseSchema) from response_format.
func responseFormat(gc *generationConfig, raw json.RawMessage) (bool, error) {
	if contentKind(raw) == 'n' {
		return false, nil
	}
	var rf schema.ResponseFormat
	if err := json.Unmarshal(raw, &rf); err != nil {
		return false, schema.DecodeError(raw, "response_format", err)
	}
	switch rf.Type {
	case "text", "":
		return false, nil
	case "json_object":
		gc.ResponseMimeType = "application/json"
		return true, nil
	case "json_schema":
		gc.ResponseMimeType = "application/json"
		if rf.JSONSchema != nil {
			converted, err := convertSchema(rf.JSONSchema.Schema, false)
			if err != nil {
				return false, gwerr.BadRequest("response_format.json_schema.schema", "response_format.json_schema.schema: %v", err)
			}
			gc.ResponseSchema = converted
		}
		return true, nil
	}
	return false, gwerr.BadRequest("response_format.type", "response_format.type %q is not one of text, json_object, json_schema", rf.Type)
}

// thinking reads thinking ({"type": "enabled", "budget_tokens": n} or {"type": "disabled"}, as Claude takes it)
// and reasoning_effort. Only thinking asks for the thoughts themselves (includeThoughts). Gemini 3 models take
// reasoning_effort as a thinking level; older ones as a budget (low 1024, medium 8192, high 24576, none 0).
func thinking(in *schema.ChatRequest, model string) (*thinkingConfig, error) {
	var tc thinkingConfig
	set := false
	if contentKind(in.Thinking) == '{' {
		var th struct {
			Type         string `json:"type"`
			BudgetTokens *int64 `json:"budget_tokens"`
		}
		if err := json.Unmarshal(in.Thinking, &th); err != nil {
			return nil, schema.DecodeError(in.Thinking, "thinking", err)
		}
		switch th.Type {
		case "enabled":
			yes := true
			tc.IncludeThoughts, tc.ThinkingBudget, set = &yes, th.BudgetTokens, true
		case "disabled":
			var zero int64
			tc.ThinkingBudget, set = &zero, true
		default:
			return nil, gwerr.BadRequest("thinking.type", "thinking.type %q is not one of enabled, disabled", th.Type)
		}
	}
	if in.ReasoningEffort != "" && tc.ThinkingBudget == nil {
		if isGemini3(model) {
			switch in.ReasoningEffort {
			case "minimal", "low", "medium", "high":
				tc.ThinkingLevel = in.ReasoningEffort
			case "none":
				tc.ThinkingLevel = "minimal"
			default:
				return nil, gwerr.BadRequest("reasoning_effort", "reasoning_effort %q is not one of none, minimal, low, medium, high", in.ReasoningEffort)
			}
		} else {
			var budget int64
			switch in.ReasoningEffort {
			case "none":
				budget = 0
			case "minimal", "low":
				budget = 1024
			case "medium":
				budget = 8192
			case "high":
				budget = 24576
			default:
				return nil, gwerr.BadRequest("reasoning_effort", "reasoning_effort %q is not one of none, minimal, low, medium, high", in.ReasoningEffort)
			}
			tc.ThinkingBudget = &budget
		}
		set = true
	}
	if !set {
		return nil, nil
	}
	return &tc, nil
}

func tools(in *schema.ChatRequest) ([]tool, error) {
	if len(in.Tools) == 0 {
		return nil, nil
	}
	decls := make([]functionDeclaration, 0, len(in.Tools))
	for j := range in.Tools {
		param := func(f string) string { return schema.Index("tools", j) + "." + f }
		t := &in.Tools[j]
		if t.Type != "" && t.Type != "function" {
			return nil, gwerr.BadRequest(param("type"), "%s %q is not supported; only function tools are", param("type"), t.Type)
		}
		if t.Function == nil || t.Function.Name == "" {
			return nil, gwerr.BadRequest(param("function.name"), "%s is required", param("function.name"))
		}
		params, err := convertSchema(t.Function.Parameters, true)
		if err != nil {
			return nil, gwerr.BadRequest(param("function.parameters"), "%s: %v", param("function.parameters"), err)
		}
		decls = append(decls, functionDeclaration{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return []tool{{FunctionDeclarations: decls}}, nil
}

// toolChoice maps tool_choice to functionCallingConfig: auto → AUTO, none → NONE, required → ANY, a named
// function → ANY restricted to it.
func toolChoice(raw json.RawMessage) (*toolConfig, error) {
	switch contentKind(raw) {
	case 'n':
		return nil, nil
	case '"':
		s := stringValue(raw)
		var mode string
		switch s {
		case "auto":
			mode = "AUTO"
		case "none":
			mode = "NONE"
		case "required":
			mode = "ANY"
		default:
			return nil, gwerr.BadRequest("tool_choice", "tool_choice %q is not one of auto, none, required", s)
		}
		return &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: mode}}, nil
	case '{':
		var tc schema.NamedToolChoice
		if err := json.Unmarshal(raw, &tc); err != nil {
			return nil, schema.DecodeError(raw, "tool_choice", err)
		}
		if tc.Type != "function" || tc.Function.Name == "" {
			return nil, gwerr.BadRequest("tool_choice.function.name", "tool_choice must be {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		return &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{tc.Function.Name}}}, nil
	}
	return nil, gwerr.BadRequest("tool_choice", "tool_choice must be a string or an object")
}

// ChatResponse translates a generateContent answer into a chat.completion. The completion's model is the answer's
// modelVersion, else model (the request's, as ModelOf gives it). With strict, only OpenAI's fields are
// written; otherwise each message also carries content_blocks (thinking and text, in order) and each tool call
// its thought_signature, which ChatRequest sends back upstream (Gemini wants it with the function call).
func ChatResponse(body []byte, model string, strict bool) ([]byte, error) {
	var r generateContentResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("gemini: decode answer: %w", err)
	}
	if r.Error != nil {
		return nil, &streamError{e: *r.Error}
	}
	if len(r.Candidates) == 0 && r.PromptFeedback == nil {
		return nil, errors.New("gemini: the answer has neither candidates nor promptFeedback")
	}
	out := schema.Completion{
		ID:      completionID(r.ResponseID),
		Object:  "chat.completion",
		Created: now().Unix(),
		Model:   r.ModelVersion,
		Choices: make([]schema.Choice, 0, max(len(r.Candidates), 1)),
		Usage:   usageOf(r.UsageMetadata),
	}
	if out.Model == "" {
		out.Model = model
	}
	for i := range r.Candidates {
		out.Choices = append(out.Choices, choiceOf(&r.Candidates[i], i, strict))
	}
	if len(r.Candidates) == 0 {
		// The prompt itself was blocked (promptFeedback.blockReason): one empty, filtered choice.
		reason := schema.FinishStop
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			reason = schema.FinishContentFilter
		}
		out.Choices = append(out.Choices, schema.Choice{Message: schema.AssistantMessage{Role: "assistant"}, FinishReason: reason})
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("gemini: encode completion: %w", err)
	}
	return b, nil
}

func completionID(responseID string) string {
	if responseID != "" {
		return "chatcmpl-" + responseID
	}
	return "chatcmpl-" + randomID()
}

func callID(id string) string {
	if id != "" {
		return id
	}
	return "call_" + randomID()
}

func candidateIndex(c *candidate, i int) int {
	if c.Index != 0 {
		return c.Index
	}
	return i // Gemini leaves a zero index out
}

func choiceOf(c *candidate, i int, strict bool) schema.Choice {
	ch := schema.Choice{Index: candidateIndex(c, i), Message: schema.AssistantMessage{Role: "assistant"}}
	var text []string
	if c.Content != nil {
		for k := range c.Content.Parts {
			p := &c.Content.Parts[k]
			switch {
			case p.FunctionCall != nil:
				call := schema.ToolCall{ID: callID(p.FunctionCall.ID), Type: "function",
					Function: schema.FunctionCall{Name: p.FunctionCall.Name, Arguments: argsString(p.FunctionCall.Args)}}
				if !strict {
					call.Function.ThoughtSignature = p.ThoughtSignature
				}
				ch.Message.ToolCalls = append(ch.Message.ToolCalls, call)
			case p.Thought:
				if !strict {
					ch.Message.ContentBlocks = addBlock(ch.Message.ContentBlocks, "thinking", &p.Text, p.ThoughtSignature)
				}
			case p.Text != "":
				text = append(text, p.Text)
				if !strict {
					ch.Message.ContentBlocks = addBlock(ch.Message.ContentBlocks, "text", &p.Text, "")
				}
			}
		}
	}
	if len(text) > 0 {
		s := strings.Join(text, "")
		ch.Message.Content = &s
	}
	ch.FinishReason = finishReason(c.FinishReason, len(ch.Message.ToolCalls) > 0)
	ch.Logprobs = logprobsOf(c.LogprobsResult)
	return ch
}

// addBlock appends a content block, merging text into the last block of the same type. text points into the
// decoded answer, which a new thinking block refers to rather than copies.
func addBlock(blocks []schema.ContentBlock, typ string, text *string, signature string) []schema.ContentBlock {
	if n := len(blocks); n > 0 && blocks[n-1].Type == typ && blocks[n-1].Signature == "" {
		b := &blocks[n-1]
		if typ == "thinking" {
			merged := *b.Thinking + *text
			b.Thinking = &merged
		} else {
			b.Text += *text
		}
		b.Signature = signature
		return blocks
	}
	b := schema.ContentBlock{Type: typ, Signature: signature}
	if typ == "thinking" {
		b.Thinking = text
	} else {
		b.Text = *text
	}
	return append(blocks, b)
}

// argsString is a functionCall's args as OpenAI's arguments string (compact JSON; "{}" when absent).
func argsString(args json.RawMessage) string {
	if contentKind(args) == 'n' {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return string(args)
	}
	return b.String()
}

// finishReason maps Gemini's finishReason: STOP → stop (tool_calls when the candidate calls functions),
// MAX_TOKENS → length, the safety and policy stops → content_filter, anything else → stop.
func finishReason(reason string, calls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return schema.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return schema.FinishContentFilter
	}
	if calls {
		return schema.FinishToolCalls
	}
	return schema.FinishStop
}

func usageOf(u *usageMetadata) *schema.Usage {
	if u == nil {
		return &schema.Usage{}
	}
	out := &schema.Usage{
		PromptTokens:     u.PromptTokenCount,
		CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
		TotalTokens:      u.TotalTokenCount,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	if u.CachedContentTokenCount > 0 {
		out.PromptTokensDetails = &schema.PromptTokensDetails{CachedTokens: u.CachedContentTokenCount}
	}
	if u.ThoughtsTokenCount > 0 {
		out.CompletionTokensDetails = &schema.CompletionTokensDetails{ReasoningTokens: u.ThoughtsTokenCount}
	}
	return out
}

func logprobsOf(lr *logprobsResult) *schema.Logprobs {
	if lr == nil || len(lr.ChosenCandidates) == 0 {
		return nil
	}
	out := &schema.Logprobs{Content: make([]schema.TokenLogprob, len(lr.ChosenCandidates))}
	for k, c := range lr.ChosenCandidates {
		tl := schema.TokenLogprob{Token: c.Token, Logprob: c.LogProbability, Bytes: tokenBytes(c.Token), TopLogprobs: []schema.TopLogprob{}}
		if k < len(lr.TopCandidates) {
			for _, t := range lr.TopCandidates[k].Candidates {
				tl.TopLogprobs = append(tl.TopLogprobs, schema.TopLogprob{Token: t.Token, Logprob: t.LogProbability, Bytes: tokenBytes(t.Token)})
			}
		}
		out.Content[k] = tl
	}
	return out
}

func tokenBytes(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

// ModelOf is the model a chat request asks for, without a "models/" prefix: what ChatRequest calls and what
// answers name when Gemini does not. It is "" for a nil request.
func ModelOf(in *schema.ChatRequest) string {
	if in == nil {
		return ""
	}
	return strings.TrimPrefix(in.Model, "models/")
}

// CheckModel refuses a model name that could not stand as one segment of a URL path ("gemini-2.5-flash",
// "claude-sonnet-4@20250514"): letters, digits, '.', '_', '-' and '@' only.
func CheckModel(model string) error {
	if model == "" {
		return gwerr.BadRequest("model", "model is required")
	}
	for i := 0; i < len(model); i++ {
		c := model[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '@') {
			return gwerr.BadRequest("model", "model %q may hold only letters, digits, '.', '_', '-' and '@'", model)
		}
	}
	if model == "." || model == ".." {
		return gwerr.BadRequest("model", "model %q is not a model name", model)
	}
	return nil
}
