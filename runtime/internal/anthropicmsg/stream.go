package anthropicmsg

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/llmgw/gateway/internal/sse"
	"github.com/llmgw/gateway/runtime/schema"
)

// MaxEventSize bounds one server-sent event of an Anthropic stream; a longer one breaks the stream.
const MaxEventSize = 16 << 20

// ErrEventTooLarge is returned by a stream whose event exceeds MaxEventSize.
var ErrEventTooLarge = errors.New("anthropicmsg: stream event too large")

// Stream translates an Anthropic SSE stream (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error) into OpenAI chunk events ending with data: [DONE]; it closes body when closed.
//
// Each Anthropic event that carries something is translated as soon as it is read: message_start gives the
// chunk with role "assistant", text deltas give content, a tool_use block gives a tool call (id, name) and its
// input_json_delta events give argument deltas with the tool call's index, message_delta gives the chunk with
// finish_reason and usage, message_stop gives data: [DONE]. When strict is false, thinking arrives as
// delta.content_blocks [{"index": <block index>, "delta": {"thinking"|"signature": ...}}] (redacted thinking as
// {"type": "redacted_thinking", "data": ...}); when strict is true it is dropped. An error event is returned as a
// *StreamError, and a stream that ends before message_stop as an error wrapping io.ErrUnexpectedEOF.
//
// The reader belongs to one goroutine; Close may be called from another one to abort it.
func Stream(body io.ReadCloser, strict bool) io.ReadCloser {
	return &stream{body: body, br: bufio.NewReaderSize(body, streamBuffer), strict: strict}
}

// streamBuffer holds a few typical events: what an open stream keeps while it waits for the provider (a longer
// line is gathered in stream.line).
const streamBuffer = 4 << 10

// event is any Anthropic stream event; the fields present depend on its type.
type event struct {
	Type         string       `json:"type"`
	Message      *message     `json:"message"`
	Index        int          `json:"index"`
	ContentBlock contentBlock `json:"content_block"`
	Delta        eventDelta   `json:"delta"`
	Usage        *usage       `json:"usage"`
	Error        apiError     `json:"error"`
}

type eventDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

type stream struct {
	body      io.ReadCloser
	br        *bufio.Reader
	strict    bool
	closeOnce sync.Once

	out []byte // translated events not yet read
	off int
	err error // the error after out is drained: io.EOF after [DONE], or why the stream broke

	line    []byte // a line longer than br's buffer
	data    []byte // the data lines of the event being read
	hasData bool
	ev      event
	scratch []byte // the unescaped value of a delta read by parseDelta

	w        schema.ChunkWriter
	finished bool // the chunk with finish_reason is out
	tools    []toolSlot
	tokens   usage // the counts reported so far, the latest of each
	hasUsage bool
}

// toolSlot maps an Anthropic content block index to the OpenAI tool call index.
type toolSlot struct{ block, call int }

// Read hands over what every event already buffered makes, and waits only when it has nothing (package sse).
func (s *stream) Read(p []byte) (int, error) {
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
		s.err = s.step()
	}
	if n == 0 && s.err != nil && len(p) > 0 {
		return 0, s.err
	}
	return n, nil
}

func (s *stream) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.body.Close() })
	return err
}

// step reads one line of the provider's stream and translates the event it ends, if any.
func (s *stream) step() error {
	line, err := s.readLine()
	if err != nil {
		if errors.Is(err, io.EOF) {
			if len(line) > 0 { // a last line without a newline, then a blank line
				if err := s.field(line); err != nil {
					return err
				}
			}
			if s.hasData {
				if err := s.dispatch(); err != nil {
					return err // errDone when the last event was message_stop
				}
			}
			return fmt.Errorf("anthropicmsg: stream ended before message_stop: %w", io.ErrUnexpectedEOF)
		}
		if errors.Is(err, ErrEventTooLarge) {
			return err
		}
		return fmt.Errorf("anthropicmsg: read stream: %w", err)
	}
	if len(line) == 0 {
		if !s.hasData {
			return nil
		}
		return s.dispatch()
	}
	return s.field(line)
}

// errDone ends the stream after [DONE]; Read reports it as io.EOF.
var errDone = io.EOF

// readLine returns the next line without its line ending. The slice is valid until the next call.
func (s *stream) readLine() ([]byte, error) { return readSSELine(s.br, &s.line, len(s.data)) }

// readSSELine returns br's next line without its line ending; a line longer than br's buffer is gathered in
// *long. pending is the length of the event's data so far, which counts towards MaxEventSize. The slice is
// valid until the next call. Both directions' stream readers use it.
func readSSELine(br *bufio.Reader, long *[]byte, pending int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		*long = append((*long)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			if len(*long)+len(line)+pending > MaxEventSize {
				return nil, ErrEventTooLarge
			}
			*long = append(*long, line...)
		}
		line = *long
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, err
}

// field handles one non-blank line: data lines gather, comments and other fields are skipped.
func (s *stream) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if !found || string(name) != "data" {
		return nil // event: (the type is in the data too), id:, retry:
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

// dispatch translates the event whose data has been gathered.
func (s *stream) dispatch() error {
	data := s.data
	s.data, s.hasData = s.data[:0], false
	if string(data) == "[DONE]" {
		return nil
	}
	if d, ok := parseDelta(data, s.scratch); ok {
		s.scratch = d.value[:0]
		s.start("", "")
		emitDelta(s, d.index, d.typ, d.value)
		return nil
	}
	s.ev = event{}
	if err := json.Unmarshal(data, &s.ev); err != nil {
		return fmt.Errorf("anthropicmsg: decode stream event: %w", err)
	}
	ev := &s.ev
	switch ev.Type {
	case "message_start":
		if s.w.Started() {
			return nil
		}
		var id, model string
		if m := ev.Message; m != nil {
			id, model = m.ID, m.Model
			s.addUsage(m.Usage)
		}
		s.start(id, model)
		s.out = s.w.Role(s.out)
	case "content_block_start":
		s.start("", "")
		b := &ev.ContentBlock
		switch b.Type {
		case "text":
			if b.Text != "" {
				s.out = schema.Content(&s.w, s.out, b.Text)
			}
		case "tool_use":
			call := len(s.tools)
			s.tools = append(s.tools, toolSlot{block: ev.Index, call: call})
			s.out = s.w.ToolCallStart(s.out, call, b.ID, b.Name)
		case "thinking":
			if !s.strict && b.Thinking != "" {
				s.out = schema.BlockPiece(&s.w, s.out, ev.Index, "thinking", b.Thinking)
			}
		case "redacted_thinking":
			if !s.strict {
				s.out = s.w.RedactedThinking(s.out, ev.Index, b.Data)
			}
		}
	case "content_block_delta":
		s.start("", "")
		d := &ev.Delta
		switch d.Type {
		case "text_delta":
			emitDelta(s, ev.Index, d.Type, d.Text)
		case "input_json_delta":
			emitDelta(s, ev.Index, d.Type, d.PartialJSON)
		case "thinking_delta":
			emitDelta(s, ev.Index, d.Type, d.Thinking)
		case "signature_delta":
			emitDelta(s, ev.Index, d.Type, d.Signature)
		}
	case "message_delta":
		s.start("", "")
		s.addUsage(ev.Usage)
		if !s.finished {
			s.finish(FinishReason(ev.Delta.StopReason))
		}
	case "message_stop":
		s.start("", "")
		if !s.finished {
			s.finish(schema.FinishStop)
		}
		s.out = append(s.out, schema.DoneEvent...)
		return errDone
	case "error":
		return &StreamError{Type: ev.Error.Type, Message: ev.Error.Message}
	}
	// ping, content_block_stop and event types added later carry nothing to translate.
	return nil
}

// start fixes what every chunk repeats, once: from message_start or, when a stream lacks one, empty.
func (s *stream) start(id, model string) {
	if !s.w.Started() {
		s.w.Start(id, now().Unix(), model)
	}
}

// emitDelta translates a content_block_delta: text, tool-call arguments, or (when not strict) thinking and its
// signature. Empty values make no chunk.
func emitDelta[S ~string | ~[]byte](s *stream, index int, typ string, v S) {
	if len(v) == 0 {
		return
	}
	switch typ {
	case "text_delta":
		s.out = schema.Content(&s.w, s.out, v)
	case "input_json_delta":
		call := s.toolCall(index)
		if call < 0 {
			return // arguments of a tool call that never started
		}
		s.out = schema.ToolCallArgs(&s.w, s.out, call, v)
	case "thinking_delta":
		if !s.strict {
			s.out = schema.BlockPiece(&s.w, s.out, index, "thinking", v)
		}
	case "signature_delta":
		if !s.strict {
			s.out = schema.BlockPiece(&s.w, s.out, index, "signature", v)
		}
	}
}

func (s *stream) toolCall(block int) int {
	for _, t := range s.tools {
		if t.block == block {
			return t.call
		}
	}
	return -1
}

func (s *stream) addUsage(u *usage) {
	if u == nil {
		return
	}
	s.hasUsage = true
	s.tokens.update(u)
}

// finish writes the last chunk: an empty delta, the finish reason, and the usage when the stream reported any.
func (s *stream) finish(reason string) {
	s.finished = true
	if !s.hasUsage {
		s.out = s.w.Finish(s.out, reason, nil)
		return
	}
	var details schema.PromptTokensDetails
	u := openAIUsage(&s.tokens, &details)
	s.out = s.w.Finish(s.out, reason, &u)
}
