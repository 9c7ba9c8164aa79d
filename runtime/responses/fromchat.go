package responses

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/schema"
)

// Output item shapes, as OpenAI writes them.
type (
	messageItem struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []outputText `json:"content"`
	}
	outputText struct {
		Type        string            `json:"type"`
		Text        string            `json:"text"`
		Annotations []json.RawMessage `json:"annotations"`
		Logprobs    []json.RawMessage `json:"logprobs"`
	}
	functionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}
	reasoningItem struct {
		ID      string        `json:"id"`
		Type    string        `json:"type"`
		Summary []summaryText `json:"summary"`
	}
	summaryText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
)

var (
	emptyRaw     = []json.RawMessage{}
	defaultText  = json.RawMessage(`{"format":{"type":"text"}}`)
	defaultAuto  = json.RawMessage(`"auto"`)
	emptyMeta    = map[string]string{}
	defaultOne   = 1.0
	itemStatusOK = "completed"
)

// NewID returns a new response id, "resp_" and 48 random hex digits.
func NewID() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return fmt.Sprintf("resp_%x", b)
}

// itemID is the id of an output item of response id: prefix (msg, fc, rs) and the response's own suffix, so
// that items are unique as response ids are, and the same answer always gets the same ids.
func itemID(prefix, responseID string, n int) string {
	suffix := strings.TrimPrefix(responseID, "resp_")
	if n == 0 {
		return prefix + "_" + suffix
	}
	return prefix + "_" + suffix + "_" + strconv.Itoa(n)
}

// newResponse is the response object of req before any output: the request's fields echoed, with OpenAI's
// defaults where the request left them out (tool_choice auto, parallel_tool_calls true, truncation disabled,
// store true, text {"format":{"type":"text"}}, temperature and top_p 1).
func newResponse(req *schema.ResponseRequest, id string, created int64) *schema.Response {
	r := &schema.Response{
		ID: id, Object: "response", CreatedAt: created, Status: schema.ResponseInProgress,
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model, Output: emptyRaw,
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, PreviousResponseID: req.PreviousResponseID,
		Reasoning: nullIfEmpty(req.Reasoning), Store: req.Store == nil || *req.Store, Temperature: req.Temperature,
		Text: req.Text, ToolChoice: req.ToolChoice, Tools: req.Tools, TopP: req.TopP, Truncation: "disabled",
		Metadata: req.Metadata,
	}
	if absent(r.Text) {
		r.Text = defaultText
	}
	if absent(r.ToolChoice) {
		r.ToolChoice = defaultAuto
	}
	if r.Tools == nil {
		r.Tools = emptyRaw
	}
	if r.Temperature == nil {
		r.Temperature = &defaultOne
	}
	if r.TopP == nil {
		r.TopP = &defaultOne
	}
	if req.Truncation != nil {
		r.Truncation = *req.Truncation
	}
	if r.Metadata == nil {
		r.Metadata = emptyMeta
	}
	if req.User != "" {
		r.User = &req.User
	}
	return r
}

func nullIfEmpty(raw json.RawMessage) json.RawMessage {
	if jsonfield.Kind(raw) == "nothing" {
		return jsonNull
	}
	return raw
}

// finish sets r's status (and incomplete_details) from a chat finish_reason.
func finish(r *schema.Response, reason string) {
	switch reason {
	case schema.FinishLength:
		r.Status, r.IncompleteDetails = schema.ResponseIncomplete, &schema.IncompleteDetails{Reason: "max_output_tokens"}
	case schema.FinishContentFilter:
		r.Status, r.IncompleteDetails = schema.ResponseIncomplete, &schema.IncompleteDetails{Reason: "content_filter"}
	default:
		r.Status = schema.ResponseCompleted
	}
}

// responseUsage converts chat usage; nil stays nil.
func responseUsage(u *schema.Usage) *schema.ResponseUsage {
	if u == nil {
		return nil
	}
	out := &schema.ResponseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.Total()}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// FromChat turns a chat.completion answer (2xx; a provider's error body is passed through by the caller, not
// given here) into the response object's JSON; id and created come from the caller. choices[0].message
// becomes the output: a reasoning item when content_blocks carry thinking, a message item with one output_text
// part when there is text, a function_call item per tool call. finish_reason length and content_filter make the
// status incomplete with incomplete_details; anything else completed. The model is the answer's.
func FromChat(chat []byte, req *schema.ResponseRequest, id string, created int64) ([]byte, error) {
	var c schema.Completion
	if err := json.Unmarshal(chat, &c); err != nil {
		return nil, fmt.Errorf("responses: decode chat completion: %w", err)
	}
	if len(c.Choices) == 0 {
		return nil, fmt.Errorf("responses: chat completion has no choices")
	}
	r := newResponse(req, id, created)
	if c.Model != "" {
		r.Model = c.Model
	}
	msg := &c.Choices[0].Message
	output := make([]json.RawMessage, 0, 2+len(msg.ToolCalls))
	var summary []summaryText
	for _, b := range msg.ContentBlocks {
		if b.Type == "thinking" && b.Thinking != nil && *b.Thinking != "" {
			summary = append(summary, summaryText{Type: "summary_text", Text: *b.Thinking})
		}
	}
	if summary != nil {
		item, err := json.Marshal(&reasoningItem{ID: itemID("rs", id, len(output)), Type: "reasoning", Summary: summary})
		if err != nil {
			return nil, err
		}
		output = append(output, item)
	}
	text := ""
	if msg.Content != nil {
		text = *msg.Content
	}
	if text != "" {
		status := itemStatusOK
		if reason := c.Choices[0].FinishReason; reason == schema.FinishLength || reason == schema.FinishContentFilter {
			status = "incomplete" // as OpenAI marks the message a stop cut short
		}
		item, err := json.Marshal(&messageItem{ID: itemID("msg", id, len(output)), Type: "message", Status: status, Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: text, Annotations: emptyRaw, Logprobs: emptyRaw}}})
		if err != nil {
			return nil, err
		}
		output = append(output, item)
	}
	for _, call := range msg.ToolCalls {
		item, err := json.Marshal(&functionCallItem{ID: itemID("fc", id, len(output)), Type: "function_call", Status: itemStatusOK,
			Arguments: call.Function.Arguments, CallID: call.ID, Name: call.Function.Name})
		if err != nil {
			return nil, err
		}
		output = append(output, item)
	}
	r.Output = output
	r.OutputText = &text
	r.Usage = responseUsage(c.Usage)
	finish(r, c.Choices[0].FinishReason)
	return json.Marshal(r)
}

// FinalResponse extracts the response object from the data of a responses event stream's last event
// (response.completed, response.incomplete or response.failed), for storing a streamed answer. It reports false
// for any other event.
func FinalResponse(eventData []byte) (json.RawMessage, bool) {
	var ev struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
	}
	if json.Unmarshal(eventData, &ev) != nil || jsonfield.Kind(ev.Response) != "object" {
		return nil, false
	}
	switch ev.Type {
	case "response.completed", "response.incomplete", "response.failed":
		return ev.Response, true
	}
	return nil, false
}
