package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmgw/gateway/runtime/schema"
)

// now is the clock of "created"; tests replace it.
var now = time.Now

// Response translates a non-streamed Anthropic Messages answer into an OpenAI chat.completion body.
//
// Text blocks are joined into message.content (null when there is none) and tool_use blocks become
// message.tool_calls. When strict is false, message.content_blocks keeps the text, thinking (with signature)
// and redacted_thinking blocks in order; when strict is true the answer has only OpenAI's fields. Usage counts
// cache reads and cache writes in prompt_tokens, and cache reads in prompt_tokens_details.cached_tokens.
func Response(anthropicBody []byte, strict bool) ([]byte, error) {
	var m message
	if err := json.Unmarshal(anthropicBody, &m); err != nil {
		return nil, fmt.Errorf("anthropicmsg: decode message: %w", err)
	}
	if m.Type == "error" || m.Error != nil {
		e := m.Error
		if e == nil {
			e = &apiError{}
		}
		return nil, &StreamError{Type: e.Type, Message: e.Message}
	}
	if m.Type != "message" && m.Type != "" {
		return nil, fmt.Errorf("anthropicmsg: answer of type %q, want message", m.Type)
	}
	out := schema.Completion{ID: m.ID, Object: "chat.completion", Created: now().Unix(), Model: m.Model,
		Choices: []schema.Choice{{FinishReason: FinishReason(m.StopReason)}}}
	msg := &out.Choices[0].Message
	msg.Role = "assistant"
	var text strings.Builder
	hasText := false
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case "text":
			hasText = true
			text.WriteString(b.Text)
			if !strict {
				msg.ContentBlocks = append(msg.ContentBlocks, schema.ContentBlock{Type: "text", Text: b.Text})
			}
		case "thinking":
			if !strict {
				msg.ContentBlocks = append(msg.ContentBlocks, schema.ContentBlock{Type: "thinking", Thinking: &b.Thinking, Signature: b.Signature})
			}
		case "redacted_thinking":
			if !strict {
				msg.ContentBlocks = append(msg.ContentBlocks, schema.ContentBlock{Type: "redacted_thinking", Data: b.Data})
			}
		case "tool_use":
			var call schema.ToolCall
			call.ID, call.Type, call.Function.Name = b.ID, "function", b.Name
			call.Function.Arguments = compactArgs(b.Input)
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
		// Server tools (server_tool_use, web_search_tool_result, ...) have no OpenAI equivalent.
	}
	if hasText {
		s := text.String()
		msg.Content = &s
	}
	if m.Usage != nil {
		u := openAIUsage(m.Usage, nil)
		out.Usage = &u
	}
	return json.Marshal(&out)
}

// compactArgs renders a tool_use input as OpenAI's arguments string.
func compactArgs(input json.RawMessage) string {
	if isNull(input) {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, input) != nil {
		return string(input)
	}
	return buf.String()
}

// FinishReason maps an Anthropic stop_reason to OpenAI's finish_reason: end_turn, stop_sequence and pause_turn
// → stop, max_tokens and model_context_window_exceeded → length, tool_use → tool_calls, refusal →
// content_filter. An unknown or missing reason is "stop".
func FinishReason(stopReason string) string {
	switch stopReason {
	case "max_tokens", "model_context_window_exceeded":
		return schema.FinishLength
	case "tool_use":
		return schema.FinishToolCalls
	case "refusal":
		return schema.FinishContentFilter
	}
	return schema.FinishStop
}

// openAIUsage counts cache reads and cache writes in prompt_tokens, and cache reads in
// prompt_tokens_details.cached_tokens when Anthropic reported them. Those details are written to details, or
// to a new value when it is nil: a stream passes its own so that its last chunk allocates nothing.
func openAIUsage(u *usage, details *schema.PromptTokensDetails) schema.Usage {
	in, out := val(u.InputTokens), val(u.OutputTokens)
	read, write := val(u.CacheReadInputTokens), val(u.CacheCreationInputTokens)
	o := schema.Usage{PromptTokens: in + read + write, CompletionTokens: out}
	o.TotalTokens = o.PromptTokens + o.CompletionTokens
	if u.CacheReadInputTokens != nil {
		if details == nil {
			details = new(schema.PromptTokensDetails)
		}
		details.CachedTokens = read
		o.PromptTokensDetails = details
	}
	return o
}

// update takes the counts v reports: a stream reports some in message_start and the rest in message_delta.
// It keeps v's pointers, which decoding allocates afresh for every event.
func (u *usage) update(v *usage) {
	if v.InputTokens != nil {
		u.InputTokens = v.InputTokens
	}
	if v.OutputTokens != nil {
		u.OutputTokens = v.OutputTokens
	}
	if v.CacheReadInputTokens != nil {
		u.CacheReadInputTokens = v.CacheReadInputTokens
	}
	if v.CacheCreationInputTokens != nil {
		u.CacheCreationInputTokens = v.CacheCreationInputTokens
	}
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// StreamError is an error event in an Anthropic stream (or an error answer where a message was expected):
// {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}.
type StreamError struct {
	Type    string // Anthropic's error type, such as overloaded_error
	Message string
}

func (e *StreamError) Error() string {
	switch {
	case e.Type == "" && e.Message == "":
		return "anthropic: error event"
	case e.Type == "":
		return "anthropic: " + e.Message
	}
	return "anthropic: " + e.Type + ": " + e.Message
}
