package anthropicmsg

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/schema"
)

// chatAnswer is what FromChat reads of a chat.completion. Besides OpenAI's members it reads the reasoning
// text other providers give (reasoning_content, as DeepSeek and vLLM write it, or reasoning), the gateway's
// own content_blocks (thinking with its signature, when answers are not strict), and vLLM's stop_reason (the
// stop string that ended the answer).
type chatAnswer struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content          json.RawMessage       `json:"content"` // a string, null, or text parts
			Refusal          string                `json:"refusal"`
			ReasoningContent string                `json:"reasoning_content"`
			Reasoning        string                `json:"reasoning"`
			ToolCalls        []schema.ToolCall     `json:"tool_calls"`
			ContentBlocks    []schema.ContentBlock `json:"content_blocks"`
		} `json:"message"`
		FinishReason string          `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
	} `json:"choices"`
	Usage *schema.Usage `json:"usage"`
}

// ---- Anthropic message, as FromChat writes it ----

type messageOut struct {
	ID           string   `json:"id"`
	Type         string   `json:"type"` // message
	Role         string   `json:"role"` // assistant
	Model        string   `json:"model"`
	Content      []any    `json:"content"` // textBlock, thinkingBlock, redactedThinkingBlock, toolUseBlock
	StopReason   string   `json:"stop_reason"`
	StopSequence *string  `json:"stop_sequence"`
	Usage        usageOut `json:"usage"`
}

type thinkingBlock struct {
	Type      string `json:"type"` // thinking
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedThinkingBlock struct {
	Type string `json:"type"` // redacted_thinking
	Data string `json:"data"`
}

// usageOut is the usage of an answer FromChat writes: cache reads only when the chat answer reported them.
type usageOut struct {
	InputTokens          int64  `json:"input_tokens"`
	CacheReadInputTokens *int64 `json:"cache_read_input_tokens,omitempty"`
	OutputTokens         int64  `json:"output_tokens"`
}

// FromChat translates an OpenAI chat.completion body (2xx) into an Anthropic message body; model is the
// model name to report (the chat answer's own when empty).
//
// The id is "msg_" and the chat id after its first "-" (chatcmpl-abc → msg_abc), or random when the chat
// answer has none. Content blocks, in order: thinking (the gateway's content_blocks, with their signature and
// redacted_thinking, or a provider's reasoning_content), text (or a refusal's text), then one tool_use block
// per tool call. A tool call whose arguments are not a JSON object gets input {}: the answer is kept, and the
// client's tool reports what it missed, as it would for a model that called it wrongly. stop_reason maps
// finish_reason: stop → end_turn (stop_sequence when the provider named the stop string that ended it; tool_use
// when the answer calls tools), length → max_tokens, tool_calls → tool_use, content_filter → refusal. Usage:
// input_tokens is prompt_tokens less the cached tokens, which are cache_read_input_tokens; output_tokens is
// completion_tokens.
func FromChat(chat []byte, model string) ([]byte, error) {
	var in chatAnswer
	if err := json.Unmarshal(chat, &in); err != nil {
		return nil, fmt.Errorf("anthropicmsg: decode chat completion: %w", err)
	}
	if model == "" {
		model = in.Model
	}
	out := messageOut{ID: messageID(in.ID), Type: "message", Role: "assistant", Model: model, Content: []any{},
		StopReason: "end_turn"}
	for i := range in.Choices {
		c := &in.Choices[i]
		if c.Index != 0 {
			continue // an Anthropic message has one answer
		}
		m := &c.Message
		thinkingSeen := false
		for _, b := range m.ContentBlocks {
			switch b.Type {
			case "thinking":
				thinkingSeen = true
				var text string
				if b.Thinking != nil {
					text = *b.Thinking
				}
				out.Content = append(out.Content, thinkingBlock{Type: "thinking", Thinking: text, Signature: b.Signature})
			case "redacted_thinking":
				thinkingSeen = true
				out.Content = append(out.Content, redactedThinkingBlock{Type: "redacted_thinking", Data: b.Data})
			}
		}
		if reasoning := cmpOr(m.ReasoningContent, m.Reasoning); !thinkingSeen && reasoning != "" {
			out.Content = append(out.Content, thinkingBlock{Type: "thinking", Thinking: reasoning})
		}
		if text := answerText(m.Content); text != "" {
			out.Content = append(out.Content, textBlock{Type: "text", Text: text})
		} else if m.Refusal != "" {
			out.Content = append(out.Content, textBlock{Type: "text", Text: m.Refusal})
		}
		for j := range m.ToolCalls {
			out.Content = append(out.Content, toolUseOf(&m.ToolCalls[j]))
		}
		out.StopReason, out.StopSequence = stopReason(c.FinishReason, c.StopReason, len(m.ToolCalls) > 0)
		break
	}
	if u := in.Usage; u != nil {
		out.Usage = anthropicUsage(u)
	}
	b, err := marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("anthropicmsg: encode message: %w", err)
	}
	return b, nil
}

// marshal is json.Marshal without its escaping of <, > and &, which neither OpenAI nor Anthropic write.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// answerText reads a chat answer's content: a string, or text parts joined (some providers answer parts).
func answerText(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

// toolUseOf turns a tool call into a tool_use block; arguments that are not a JSON object give input {}.
func toolUseOf(call *schema.ToolCall) toolUseBlock {
	input := json.RawMessage(bytes.TrimSpace([]byte(call.Function.Arguments)))
	if len(input) == 0 || input[0] != '{' || !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	id := call.ID
	if id == "" {
		id = "toolu_" + randomID()
	}
	return toolUseBlock{Type: "tool_use", ID: id, Name: call.Function.Name, Input: input}
}

// stopReason maps a finish_reason to Anthropic's stop_reason; vLLM's stop_reason, when it is the stop string
// that ended the answer, gives stop_sequence.
func stopReason(finish string, providerStop json.RawMessage, calledTools bool) (string, *string) {
	switch finish {
	case schema.FinishLength:
		return "max_tokens", nil
	case schema.FinishToolCalls, "function_call":
		return "tool_use", nil
	case schema.FinishContentFilter:
		return "refusal", nil
	}
	if calledTools {
		return "tool_use", nil // some providers end a turn of tool calls with stop
	}
	var seq string
	if finish == schema.FinishStop && json.Unmarshal(providerStop, &seq) == nil && seq != "" {
		return "stop_sequence", &seq
	}
	return "end_turn", nil
}

// anthropicUsage reads a chat usage the Anthropic way: input_tokens does not count cache reads.
func anthropicUsage(u *schema.Usage) usageOut {
	out := usageOut{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		cached := min(max(d.CachedTokens, 0), max(u.PromptTokens, 0))
		out.InputTokens -= cached
		out.CacheReadInputTokens = &cached
	}
	return out
}

// messageID is "msg_" and the chat id after its first "-", or a random suffix when there is none.
func messageID(chatID string) string {
	if _, after, ok := strings.Cut(chatID, "-"); ok && after != "" {
		return "msg_" + after
	}
	if chatID != "" {
		return "msg_" + strings.TrimPrefix(chatID, "msg_")
	}
	return "msg_" + randomID()
}

// randomID is 24 random hex digits; tests replace it.
var randomID = func() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Usage reads input and output tokens from an Anthropic message body (ok false when it has none). Input
// counts cache reads and cache writes, as the prompt tokens of the OpenAI usage Response writes. A body whose
// usage sits in "message" (a message_start event) is read as well.
func Usage(message []byte) (input, output int64, ok bool) {
	var m struct {
		Usage   *usage `json:"usage"`
		Message *struct {
			Usage *usage `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(message, &m) != nil {
		return 0, 0, false
	}
	u := m.Usage
	if u == nil && m.Message != nil {
		u = m.Message.Usage
	}
	if u == nil || u.InputTokens == nil && u.OutputTokens == nil {
		return 0, 0, false
	}
	return val(u.InputTokens) + val(u.CacheReadInputTokens) + val(u.CacheCreationInputTokens), val(u.OutputTokens), true
}

// CountTokens answers count_tokens for a Messages request body with an estimate: {"input_tokens": N}. The
// request is checked as ToChat checks it (max_tokens is not needed), then each message and tool of its chat
// translation counts as catalog.ItemTokens says: about four bytes of text a token, a flat figure an image.
func CountTokens(body []byte) ([]byte, error) {
	chat, err := toChat(body, false)
	if err != nil {
		return nil, err
	}
	var items struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(chat, &items); err != nil {
		return nil, fmt.Errorf("anthropicmsg: read chat request: %w", err)
	}
	n := 0
	for _, m := range items.Messages {
		n += catalog.ItemTokens(m)
	}
	for _, t := range items.Tools {
		n += catalog.ItemTokens(t)
	}
	return append(strconv.AppendInt([]byte(`{"input_tokens":`), int64(n), 10), '}'), nil
}
