package catalog

import (
	"bytes"
	"encoding/json"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// Truncation modes (SPEC.md: the response request's "truncation"; "" means "disabled").
const (
	TruncationAuto     = "auto"
	TruncationDisabled = "disabled"
)

// BytesPerToken is the estimate's ratio: about four bytes of text a token, the rule of thumb of OpenAI's and
// Google's tokenizer notes for English text, and the one runtime/usage.go applies to streams without usage.
const BytesPerToken = 4

// ItemOverhead is the tokens an input item costs beyond its text (role and framing tokens; OpenAI's cookbook
// counts three or four a message).
const ItemOverhead = 4

// AttachmentTokens is what an attachment (an image or file given inline as a data URL or base64, or by URL or
// file ID) counts: providers bill images by their tiles, not their bytes (a 512-pixel tile is 170 tokens at
// OpenAI, an image at most about 1,600 at Anthropic), so counting a base64 image's bytes would refuse requests
// that fit. A flat figure errs on the safe side of most images.
const AttachmentTokens = 1024

// EstimateTokens is the token estimate of n bytes of text: n/4 rounded up.
func EstimateTokens(n int) int { return (n + BytesPerToken - 1) / BytesPerToken }

// ItemTokens estimates one input item: the bytes of its JSON string values that are not keys (the text a
// model reads: message text, function arguments and outputs, ...) over BytesPerToken, plus ItemOverhead,
// with AttachmentTokens for each attachment instead of its bytes. Escapes count as written, which overcounts
// a little. It does not allocate.
func ItemTokens(item json.RawMessage) int {
	tokens, textBytes := ItemOverhead, 0
	var lastKey []byte
	for i := 0; i < len(item); i++ {
		if item[i] != '"' {
			continue
		}
		start := i + 1
		j := start
		for ; j < len(item); j++ {
			if item[j] == '\\' {
				j++
				continue
			}
			if item[j] == '"' {
				break
			}
		}
		s := item[start:min(j, len(item))]
		i = j
		k := j + 1
		for k < len(item) && (item[k] == ' ' || item[k] == '\t' || item[k] == '\n' || item[k] == '\r') {
			k++
		}
		if k < len(item) && item[k] == ':' {
			lastKey = s
			continue
		}
		if attachment(lastKey, s) {
			tokens += AttachmentTokens
			continue
		}
		if !structural(lastKey) {
			textBytes += len(s)
		}
	}
	return tokens + EstimateTokens(textBytes)
}

// attachment reports whether the string value s under key is an image or a file rather than text.
func attachment(key, s []byte) bool {
	switch string(key) { // a conversion in a switch does not allocate
	case "image_url", "file_data", "file_url", "file_id", "image", "url":
		return true
	}
	return bytes.HasPrefix(s, []byte("data:"))
}

// structural reports whether a value under key is the item's structure rather than text the model reads.
func structural(key []byte) bool {
	switch string(key) {
	case "type", "role", "id", "call_id", "status", "detail", "format", "filename":
		return true
	}
	return false
}

// Truncate fits input items into a model's context window of window tokens, keeping reserveOutput tokens for
// the answer (the request's max_output_tokens, or the model's output limit). The instructions count as text;
// each item as ItemTokens says. When they fit, items is returned as is.
//
//   - window 0 (or less) means the window is unknown: nothing is dropped or refused.
//   - mode "disabled" (or ""): an input past the window is a 400 naming "input" (SPEC.md Errors).
//   - mode "auto": the oldest items are dropped until the rest fits, whole and in order, except that system
//     and developer messages are kept (they are instructions, not turns), the last item is never dropped, and
//     a function_call and its function_call_output (the same call_id) go together or not at all. If it still
//     does not fit when nothing more can go, what is left is returned: the provider will answer.
//
// A new slice is returned when items are dropped; items itself is never modified. Any other mode is a 400
// naming "truncation".
func Truncate(items []json.RawMessage, instructions string, window, reserveOutput int, mode string) ([]json.RawMessage, error) {
	if mode != "" && mode != TruncationAuto && mode != TruncationDisabled {
		return nil, gwerr.BadRequest("truncation", "must be %q or %q, not %q", TruncationAuto, TruncationDisabled, mode)
	}
	if window <= 0 {
		return items, nil
	}
	budget := window - max(reserveOutput, 0)
	total := EstimateTokens(len(instructions))
	var each []int
	if mode == TruncationAuto {
		each = make([]int, len(items))
	}
	for i, it := range items {
		t := ItemTokens(it)
		total += t
		if each != nil {
			each[i] = t
		}
	}
	if total <= budget {
		return items, nil
	}
	if mode != TruncationAuto {
		return nil, gwerr.BadRequest("input", "the input is about %d tokens and the model's context window of %d tokens keeps %d for the answer: shorten the input, lower max_output_tokens or set truncation to \"auto\"",
			total, window, max(reserveOutput, 0))
	}
	return dropOldest(items, each, total, budget), nil
}

// itemHead is what dropping reads of an item.
type itemHead struct {
	Type   string `json:"type"`
	Role   string `json:"role"`
	CallID string `json:"call_id"`
}

// dropOldest drops items from the oldest until total fits budget, by Truncate's rules. An item's head is
// decoded only when dropping reaches it (or, for the outputs of a call being dropped, the items after it).
func dropOldest(items []json.RawMessage, each []int, total, budget int) []json.RawMessage {
	n := len(items)
	heads := make([]itemHead, n)
	read := make([]bool, n)
	head := func(i int) *itemHead {
		if !read[i] {
			read[i] = true
			_ = json.Unmarshal(items[i], &heads[i]) // an item that is not an object has no type: it drops alone
		}
		return &heads[i]
	}
	dropped := make([]bool, n)
	var unit []int
	for i := 0; i < n-1 && total > budget; i++ {
		h := head(i)
		if dropped[i] || h.Role == "system" || h.Role == "developer" {
			continue
		}
		unit = append(unit[:0], i)
		if h.CallID != "" && (h.Type == "function_call" || h.Type == "function_call_output" ||
			h.Type == "custom_tool_call" || h.Type == "custom_tool_call_output") {
			for j := i + 1; j < n; j++ {
				if !dropped[j] && bytes.Contains(items[j], []byte(h.CallID)) && head(j).CallID == h.CallID {
					unit = append(unit, j)
				}
			}
		}
		if unit[len(unit)-1] == n-1 {
			break // the pair reaches the last item, which stays: so does everything between
		}
		for _, j := range unit {
			dropped[j] = true
			total -= each[j]
		}
	}
	kept := make([]json.RawMessage, 0, n)
	for i, it := range items {
		if !dropped[i] {
			kept = append(kept, it)
		}
	}
	return kept
}
