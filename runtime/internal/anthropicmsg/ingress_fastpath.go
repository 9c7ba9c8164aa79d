package anthropicmsg

import (
	"bytes"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// Most chunks of a chat stream carry one piece of text of one choice:
//
//	{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,
//	 "delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}
//
// parseChunk reads exactly that shape, or the same with reasoning_content or reasoning instead of content,
// without allocating, so that StreamFromChat writes a text_delta at no garbage. It skips the members
// chatChunk does not read (object, created, system_fingerprint, logprobs, role, ...) after checking their
// syntax. Anything else — usage, an error, a finish_reason, tool calls, content_blocks, a second choice, a
// duplicate member it reads, a key that encoding/json would match to one of chatChunk's by case folding or
// through an escape — makes it return ok false, and the chunk goes through encoding/json.
// FuzzParseChunk checks that both agree.

// The JSON names encoding/json matches in chatChunk, its choices and their delta.
var (
	chunkFields  = []string{"id", "model", "choices", "usage", "error"}
	choiceFields = []string{"index", "delta", "finish_reason", "stop_reason"}
	deltaFields  = [...]string{"content", "reasoning_content", "reasoning", "refusal", "tool_calls", "content_blocks"}
)

// skippable reports whether a member named key is one encoding/json does not read into the struct whose
// names are fields: a plain key (no escape) that does not equal any of them under case folding.
func skippable(key []byte, fields []string) bool {
	if bytes.IndexByte(key, '\\') >= 0 {
		return false
	}
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f)) { // the conversion of a constant string does not allocate
			return false
		}
	}
	return true
}

// skip passes over any value, checking its syntax.
func (s *scan) skip() bool {
	end, err := jsonstr.ScanValue(s.B, jsonstr.SkipSpace(s.B, s.I), 0)
	if err != nil {
		return false
	}
	s.I = end
	return true
}

// members walks an object's members, calling member for each with the cursor after the colon; member
// reports whether it consumed a value of the shape it accepts.
func (s *scan) members(member func(key []byte) bool) bool {
	if !s.Byte('{') {
		return false
	}
	if s.Byte('}') {
		return true
	}
	for {
		key, ok := s.name()
		if !ok || !s.Byte(':') || !member(key) {
			return false
		}
		if s.Byte(',') {
			continue
		}
		return s.Byte('}')
	}
}

// fastChunk is what parseChunk found: a text (blockText), a reasoning text (blockThinking), a piece of the
// arguments of tool call number call (blockTool), or nothing (blockNone). value aliases the scratch buffer.
type fastChunk struct {
	kind  int
	value []byte
	call  int
}

// parseChunk reads a chunk of the common shape; scratch receives the unescaped text.
func parseChunk(data, scratch []byte) (c fastChunk, ok bool) {
	s := scan{Cursor: jsonstr.Cursor{B: data}}
	var seenChoices bool
	ok = s.members(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if seenChoices {
				return false
			}
			seenChoices = true
			var ok bool
			c, ok = s.choice(scratch)
			return ok
		case "usage":
			return s.Word("null")
		case "id", "model":
			if s.Word("null") {
				return true
			}
			_, ok := s.Literal()
			return ok
		}
		return skippable(key, chunkFields) && s.skip()
	})
	if !ok || !seenChoices || jsonstr.SkipSpace(s.B, s.I) != len(s.B) {
		return fastChunk{}, false
	}
	return c, true
}

// choice reads choices: an array of exactly one choice, index 0, with no finish_reason.
func (s *scan) choice(scratch []byte) (c fastChunk, ok bool) {
	if !s.Byte('[') {
		return c, false
	}
	var seenIndex, seenDelta, seenFinish, seenStop bool
	ok = s.members(func(key []byte) bool {
		switch string(key) {
		case "index":
			n, ok := s.int()
			if seenIndex || !ok || n != 0 {
				return false
			}
			seenIndex = true
			return true
		case "delta":
			if seenDelta {
				return false
			}
			seenDelta = true
			var ok bool
			c, ok = s.delta(scratch)
			return ok
		case "finish_reason":
			if seenFinish {
				return false
			}
			seenFinish = true
			return s.Word("null")
		case "stop_reason":
			if seenStop {
				return false
			}
			seenStop = true
			return s.Word("null")
		}
		return skippable(key, choiceFields) && s.skip()
	})
	if !ok || !s.Byte(']') {
		return fastChunk{}, false
	}
	return c, true
}

// delta reads a delta with at most one non-empty value: content, reasoning_content, reasoning, or the
// arguments of one tool call.
func (s *scan) delta(scratch []byte) (c fastChunk, ok bool) {
	var seen [len(deltaFields)]bool
	c.value = scratch[:0]
	ok = s.members(func(key []byte) bool {
		field := -1
		for i, f := range deltaFields {
			if string(key) == f {
				field = i
			}
		}
		if field < 0 {
			return skippable(key, deltaFields[:]) && s.skip()
		}
		if seen[field] {
			return false
		}
		seen[field] = true
		if s.Word("null") {
			return true
		}
		k, call := blockText, 0
		switch deltaFields[field] {
		case "reasoning_content", "reasoning":
			k = blockThinking
		case "refusal", "content_blocks":
			return false
		}
		var v []byte
		var ok bool
		rest := c.value[len(c.value):] // after the value found so far, which an empty string leaves alone
		if deltaFields[field] == "tool_calls" {
			k = blockTool
			call, v, ok = s.toolArgs(rest)
		} else {
			v, ok = s.str(rest)
		}
		if !ok {
			return false
		}
		if len(v) == 0 && k != blockTool {
			return true
		}
		if c.kind != blockNone {
			return false // two values: the slow path orders them
		}
		c = fastChunk{kind: k, value: v, call: call}
		return true
	})
	if !ok {
		return fastChunk{}, false
	}
	return c, true
}

// toolArgs reads tool_calls holding one piece of arguments: [{"index": n, "function": {"arguments": "..."}}],
// the shape of every chunk of a tool call after its first. An id, a type or a name (the first chunk's) sends
// the chunk to the slow path.
func (s *scan) toolArgs(dst []byte) (call int, args []byte, ok bool) {
	if !s.Byte('[') {
		return 0, nil, false
	}
	var seenIndex, seenFunction bool
	ok = s.members(func(key []byte) bool {
		switch string(key) {
		case "index":
			n, ok := s.int()
			if seenIndex || !ok {
				return false
			}
			call, seenIndex = n, true
			return true
		case "function":
			if seenFunction {
				return false
			}
			seenFunction = true
			var seenArgs bool
			return s.members(func(key []byte) bool {
				if string(key) != "arguments" || seenArgs {
					return false
				}
				seenArgs = true
				var ok bool
				args, ok = s.str(dst)
				return ok
			}) && seenArgs
		}
		return false
	})
	if !ok || !seenIndex || !seenFunction || !s.Byte(']') {
		return 0, nil, false
	}
	return call, args, true
}
