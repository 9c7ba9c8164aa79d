package anthropicmsg

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/internal/sse"
	"github.com/llmgw/gateway/runtime/schema"
)

// StreamFromChat translates an OpenAI chat.completion.chunk event stream ("data: {...}\n\n" ... "data: [DONE]")
// into Anthropic's event stream (event: message_start ... message_stop), event by event, never buffering the
// whole; it closes chunks when closed; a broken source or an error chunk gives an Anthropic "error" event then
// an error from Read.
//
// Each event is written as Anthropic writes it, "event: <type>\ndata: <json>\n\n". The first chunk gives
// message_start (id as FromChat makes it, model, usage with input_tokens when the chunk already counts them,
// else 0) and a ping. Then each chunk gives its events as soon as it is read: text deltas a text block
// (content_block_start, a text_delta per chunk), reasoning (the gateway's content_blocks thinking and signature
// deltas, or a provider's reasoning_content) a thinking block with thinking_delta and signature_delta, a
// redacted_thinking block whole, and each tool call (by its index) a tool_use block whose input_json_delta
// events carry the argument fragments. One block is open at a time: it is closed (content_block_stop) before
// the next opens, and indexes count from 0. Should a provider interleave the fragments of two tool calls, a
// late fragment goes to its call's block, which is closed already: Anthropic's SDKs gather input by index.
// [DONE] (or the end of a stream that gave its finish_reason) gives message_delta, with stop_reason as FromChat
// maps it, stop_sequence, and usage from the chunk that reported it (input_tokens and cache reads as FromChat
// counts them, output_tokens), then message_stop. A chunk with "error" gives an error event whose type maps
// the chunk's error type and Read returns a *StreamError; a stream that breaks or ends before its last chunk
// gives an api_error event and Read returns the cause (io.ErrUnexpectedEOF for an early end).
//
// Text and reasoning chunks of the common shape are read without allocating (ingress_fastpath.go). The reader
// belongs to one goroutine; Close may be called from another one to abort it.
func StreamFromChat(chunks io.ReadCloser, model string) io.ReadCloser {
	return &chatStream{src: chunks, br: bufio.NewReaderSize(chunks, streamBuffer), model: model}
}

// chatChunk is what the stream reads of a chunk that is not of the fast path's shape. parseChunk must know
// the JSON names of every member read here (chunkFields, choiceFields, deltaFields).
type chatChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int             `json:"index"`
		Delta        chunkDelta      `json:"delta"`
		FinishReason *string         `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
	} `json:"choices"`
	Usage *schema.Usage   `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type chunkDelta struct {
	Content          string                 `json:"content"`
	ReasoningContent string                 `json:"reasoning_content"`
	Reasoning        string                 `json:"reasoning"`
	Refusal          string                 `json:"refusal"`
	ToolCalls        []schema.ToolCallDelta `json:"tool_calls"`
	ContentBlocks    []chunkBlock           `json:"content_blocks"`
}

// chunkBlock is the gateway's content block delta (answers that are not strict): {"index", "delta":
// {"thinking"|"signature"|"text"}} or {"index", "delta": {"type": "redacted_thinking", "data"}}.
type chunkBlock struct {
	Index int `json:"index"`
	Delta struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"delta"`
}

// The kinds of content block a stream has open.
const (
	blockNone = iota
	blockText
	blockThinking
	blockTool
)

// reasoningKey is the key of a thinking block made of reasoning_content deltas, which carry no block index.
const reasoningKey = -1

type chatStream struct {
	src       io.ReadCloser
	br        *bufio.Reader
	model     string
	closeOnce sync.Once

	out []byte // translated events not yet read
	off int
	err error // the error after out is drained: io.EOF after message_stop, or why the stream broke

	line    []byte // a line longer than br's buffer
	data    []byte // the data lines of the event being read
	hasData bool
	scratch []byte // the unescaped text of a chunk read by parseChunk

	started   bool
	open      int // blockNone, blockText, blockThinking or blockTool
	openIndex int // the Anthropic index of the open block
	openKey   int // the chat's index of the open thinking block (content_blocks) or tool call
	next      int // the index of the next block
	calls     []callSlot

	finish      string // the finish_reason, once given
	finished    bool
	stopSeq     json.RawMessage // vLLM's stop_reason
	calledTools bool
	usage       schema.Usage
	hasUsage    bool
}

// callSlot maps a tool call of the chat stream to its tool_use block.
type callSlot struct {
	key   int // the tool call's index in the chunks
	id    string
	block int
}

// Read hands over what every chunk already buffered makes, and waits only when it has nothing (package sse).
func (s *chatStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.off < len(s.out) {
			c := copy(p[n:], s.out[s.off:])
			s.off += c
			n += c
			continue
		}
		if s.err != nil || n > 0 && !sse.LineBuffered(s.br) {
			break
		}
		s.out, s.off = s.out[:0], 0
		s.step()
	}
	if n == 0 && s.err != nil && len(p) > 0 {
		return 0, s.err
	}
	return n, nil
}

func (s *chatStream) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.src.Close() })
	return err
}

// step reads one line of the chat stream and translates the event it ends, if any.
func (s *chatStream) step() {
	line, err := s.readLine()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			message := "the provider's stream broke off: " + err.Error()
			if !errors.Is(err, ErrEventTooLarge) {
				err = fmt.Errorf("anthropicmsg: read chat stream: %w", err)
			}
			s.fail("api_error", message, err)
			return
		}
		if len(line) > 0 { // a last line without a newline
			if err := s.field(line); err != nil {
				s.fail("api_error", err.Error(), err)
				return
			}
		}
		if s.hasData {
			if s.dispatch(); s.err != nil {
				return
			}
		}
		if s.finished {
			s.complete() // some providers give no [DONE]
			return
		}
		s.fail("api_error", "the provider's stream ended before its last chunk",
			fmt.Errorf("anthropicmsg: chat stream ended before its last chunk: %w", io.ErrUnexpectedEOF))
		return
	}
	if len(line) == 0 {
		if s.hasData {
			s.dispatch()
		}
		return
	}
	if err := s.field(line); err != nil {
		s.fail("api_error", err.Error(), err)
	}
}

// readLine returns the next line without its line ending. The slice is valid until the next call.
func (s *chatStream) readLine() ([]byte, error) { return readSSELine(s.br, &s.line, len(s.data)) }

// field handles one non-blank line: data lines gather, comments and other fields (event:, id:) are skipped.
func (s *chatStream) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if !found || string(name) != "data" {
		return nil
	}
	value = bytes.TrimPrefix(value, []byte{' '})
	if s.hasData {
		s.data = append(s.data, '\n')
	}
	if len(s.data)+len(value) > MaxEventSize {
		return ErrEventTooLarge
	}
	s.data = append(s.data, value...)
	s.hasData = true
	return nil
}

// dispatch translates the chunk whose data has been gathered.
func (s *chatStream) dispatch() {
	data := s.data
	s.data, s.hasData = s.data[:0], false
	if string(data) == "[DONE]" {
		s.complete()
		return
	}
	if s.started {
		if c, ok := parseChunk(data, s.scratch); ok {
			if c.value != nil {
				s.scratch = c.value[:0]
			}
			switch c.kind {
			case blockNone:
				return
			case blockText:
				addText(s, c.value)
				return
			case blockThinking:
				addThinking(s, reasoningKey, c.value)
				return
			case blockTool:
				if slot := s.callSlot(c.call); slot >= 0 {
					addArgs(s, slot, c.value)
					return
				}
				// The first chunk of a call that gave no id or name: the slow path starts its block.
			}
		}
	}
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		s.fail("api_error", "the provider's stream holds a chunk that is not a chat completion chunk",
			fmt.Errorf("anthropicmsg: decode chat chunk: %w", err))
		return
	}
	if !isNull(c.Error) {
		typ, msg := chunkError(c.Error)
		s.fail(typ, msg, &StreamError{Type: typ, Message: msg})
		return
	}
	s.start(&c)
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // an Anthropic message has one answer
		}
		d := &ch.Delta
		for _, b := range d.ContentBlocks {
			switch {
			case b.Delta.Type == "redacted_thinking":
				s.redactedThinking(b.Delta.Data)
			case b.Delta.Thinking != "":
				addThinking(s, b.Index, b.Delta.Thinking)
			case b.Delta.Signature != "":
				s.signature(b.Index, b.Delta.Signature)
			}
			// Text blocks repeat delta.content, which is read below.
		}
		addThinking(s, reasoningKey, cmpOr(d.ReasoningContent, d.Reasoning))
		addText(s, d.Content)
		addText(s, d.Refusal)
		for j := range d.ToolCalls {
			s.toolCall(&d.ToolCalls[j])
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish, s.finished, s.stopSeq = *ch.FinishReason, true, ch.StopReason
			s.closeBlock()
		}
	}
	if c.Usage != nil {
		s.usage, s.hasUsage = *c.Usage, true
	}
}

// chunkError reads an error chunk's error: {"message", "type"} or a string.
func chunkError(raw json.RawMessage) (typ, message string) {
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &e) != nil {
		if json.Unmarshal(raw, &e.Message) != nil {
			e.Message = string(raw)
		}
	}
	if e.Message == "" {
		e.Message = "the provider's stream failed"
	}
	return errorTypeOfChat(e.Type), e.Message
}

// start writes message_start and a ping, once, before anything else.
func (s *chatStream) start(c *chatChunk) {
	if s.started {
		return
	}
	s.started = true
	model, id := s.model, ""
	var u usageOut
	if c != nil {
		model, id = cmpOr(model, c.Model), c.ID
		if c.Usage != nil {
			u = anthropicUsage(c.Usage)
			u.OutputTokens = 0
		}
	}
	d := appendEventHead(s.out, "message_start")
	d = jsonstr.AppendString(append(d, `,"message":{"id":`...), messageID(id))
	d = jsonstr.AppendString(append(d, `,"type":"message","role":"assistant","model":`...), model)
	d = append(d, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	d = appendUsageOut(d, &u, true)
	d = append(d, "}}\n\n"...)
	s.out = append(d, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...)
}

// appendEventHead opens an event of type typ up to its data's "type" member.
func appendEventHead(dst []byte, typ string) []byte {
	dst = append(append(append(dst, "event: "...), typ...), "\ndata: {\"type\":\""...)
	return append(append(dst, typ...), '"')
}

// appendUsageOut writes u; withInput false leaves out the input counts (a message_delta that has none).
func appendUsageOut(dst []byte, u *usageOut, withInput bool) []byte {
	dst = append(dst, '{')
	if withInput {
		dst = strconv.AppendInt(append(dst, `"input_tokens":`...), u.InputTokens, 10)
		if u.CacheReadInputTokens != nil {
			dst = strconv.AppendInt(append(dst, `,"cache_read_input_tokens":`...), *u.CacheReadInputTokens, 10)
		}
		dst = append(dst, ',')
	}
	dst = strconv.AppendInt(append(dst, `"output_tokens":`...), u.OutputTokens, 10)
	return append(dst, '}')
}

// openBlock closes the open block and opens a new one of kind, the rest of its content_block_start written by
// the caller, which then appends "}}\n\n".
func (s *chatStream) openBlock(kind, key int) []byte {
	s.closeBlock()
	s.open, s.openIndex, s.openKey = kind, s.next, key
	s.next++
	d := appendEventHead(s.out, "content_block_start")
	return append(strconv.AppendInt(append(d, `,"index":`...), int64(s.openIndex), 10), `,"content_block":`...)
}

func (s *chatStream) closeBlock() {
	if s.open == blockNone {
		return
	}
	s.open = blockNone
	d := appendEventHead(s.out, "content_block_stop")
	s.out = append(strconv.AppendInt(append(d, `,"index":`...), int64(s.openIndex), 10), "}\n\n"...)
}

// appendDelta writes a content_block_delta of block: {"type": typ, field: value}.
func appendDelta[S ~string | ~[]byte](dst []byte, block int, typ, field string, value S) []byte {
	d := appendEventHead(dst, "content_block_delta")
	d = strconv.AppendInt(append(d, `,"index":`...), int64(block), 10)
	d = append(append(append(append(d, `,"delta":{"type":"`...), typ...), `","`...), field...)
	d = jsonstr.AppendString(append(d, `":`...), value)
	return append(d, "}}\n\n"...)
}

// addText adds to the open text block, opening one when another block is open.
func addText[S ~string | ~[]byte](s *chatStream, v S) {
	if len(v) == 0 {
		return
	}
	if s.open != blockText {
		s.out = append(s.openBlock(blockText, 0), `{"type":"text","text":""}}`+"\n\n"...)
	}
	s.out = appendDelta(s.out, s.openIndex, "text_delta", "text", v)
}

// addThinking adds to the thinking block of key, opening it when another block is open.
func addThinking[S ~string | ~[]byte](s *chatStream, key int, v S) {
	if len(v) == 0 {
		return
	}
	s.openThinking(key)
	s.out = appendDelta(s.out, s.openIndex, "thinking_delta", "thinking", v)
}

func (s *chatStream) openThinking(key int) {
	if s.open != blockThinking || s.openKey != key {
		s.out = append(s.openBlock(blockThinking, key), `{"type":"thinking","thinking":""}}`+"\n\n"...)
	}
}

// signature ends the thinking block of key; a signature for a block that is not open thinking (Gemini signs
// text and tool calls too) has no Anthropic place and is dropped.
func (s *chatStream) signature(key int, v string) {
	if s.open == blockThinking && s.openKey == key {
		s.out = appendDelta(s.out, s.openIndex, "signature_delta", "signature", v)
	}
}

func (s *chatStream) redactedThinking(data string) {
	d := s.openBlock(blockThinking, reasoningKey)
	d = jsonstr.AppendString(append(d, `{"type":"redacted_thinking","data":`...), data)
	s.out = append(d, "}}\n\n"...)
	s.closeBlock()
}

// toolCall translates a tool call delta of a chunk.
func (s *chatStream) toolCall(d *schema.ToolCallDelta) {
	s.calledTools = true
	var key int
	switch {
	case d.Index != nil:
		key = *d.Index
	case d.ID != "" || len(s.calls) == 0:
		key = -2 - len(s.calls) // no index: a new call when it has an id, keyed apart from indexes
	default:
		key = s.calls[len(s.calls)-1].key
	}
	slot := s.callSlot(key)
	if slot < 0 || d.ID != "" && d.ID != s.calls[slot].id {
		// A new call; one that reuses an index with another id (as some providers number every call 0) too.
		id := d.ID
		if id == "" {
			id = "toolu_" + randomID()
		}
		dst := s.openBlock(blockTool, key)
		dst = jsonstr.AppendString(append(dst, `{"type":"tool_use","id":`...), id)
		dst = jsonstr.AppendString(append(dst, `,"name":`...), d.Function.Name)
		s.out = append(dst, `,"input":{}}}`+"\n\n"...)
		s.calls = append(s.calls, callSlot{key: key, id: id, block: s.openIndex})
		if slot >= 0 {
			s.calls[slot].key = -1 // the index now names the new call
		}
		slot = len(s.calls) - 1
	}
	addArgs(s, slot, d.Function.Arguments)
}

// callSlot is the position in s.calls of the tool call of key, or -1.
func (s *chatStream) callSlot(key int) int {
	for i := range s.calls {
		if s.calls[i].key == key {
			return i
		}
	}
	return -1
}

// addArgs writes a piece of the arguments of the tool call in s.calls[slot].
func addArgs[S ~string | ~[]byte](s *chatStream, slot int, args S) {
	if len(args) > 0 {
		s.out = appendDelta(s.out, s.calls[slot].block, "input_json_delta", "partial_json", args)
	}
}

// complete ends the message: the open block, message_delta and message_stop.
func (s *chatStream) complete() {
	s.start(nil)
	s.closeBlock()
	reason, seq := stopReason(s.finish, s.stopSeq, s.calledTools)
	d := appendEventHead(s.out, "message_delta")
	d = jsonstr.AppendString(append(d, `,"delta":{"stop_reason":`...), reason)
	if seq != nil {
		d = jsonstr.AppendString(append(d, `,"stop_sequence":`...), *seq)
	} else {
		d = append(d, `,"stop_sequence":null`...)
	}
	d = append(d, `},"usage":`...)
	var u usageOut
	if s.hasUsage {
		u = anthropicUsage(&s.usage)
	}
	d = appendUsageOut(d, &u, s.hasUsage)
	d = append(d, "}\n\n"...)
	s.out = append(d, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	s.err = io.EOF
}

// fail ends the stream with an error event; Read returns err once the events before it are read.
func (s *chatStream) fail(typ, message string, err error) {
	s.out = append(appendErrorBody(append(s.out, "event: error\ndata: "...), typ, message), "\n\n"...)
	s.err = errorEventSent{err}
}

// ErrErrorEventSent is matched (errors.Is) by the error Read returns after the stream's own "error" event went
// out, so that whoever relays the stream does not add a second one.
var ErrErrorEventSent = errors.New("the stream's error event was sent")

// errorEventSent is a stream's failure whose error event the caller has already been given.
type errorEventSent struct{ err error }

func (e errorEventSent) Error() string   { return e.err.Error() }
func (e errorEventSent) Unwrap() []error { return []error{e.err, ErrErrorEventSent} }
