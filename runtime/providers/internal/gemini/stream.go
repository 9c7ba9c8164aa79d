package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmgw/gateway/internal/sse"
	"github.com/llmgw/gateway/runtime/schema"
)

// maxEventSize bounds one server-sent event of the upstream stream (inline images make big ones).
const maxEventSize = 32 << 20

// errTruncated is the stream error when the upstream stream ends before any candidate has finished.
var errTruncated = errors.New("gemini: stream ended before the answer finished")

// Stream translates a streamGenerateContent?alt=sse body into OpenAI chat.completion.chunk events. Each upstream
// event gives at most one chunk, written as soon as the event has been read; the first chunk of each choice
// carries role "assistant"; text parts give delta.content, functionCall parts whole tool calls, and the candidate
// that finishes gives finish_reason. When the stream ends, a chunk with the last usage the stream reported (and no
// choices) and "data: [DONE]" follow. Without strict, thought parts give delta.content_blocks
// ({"index", "delta": {"thinking"}}) and text parts a text block delta beside delta.content.
//
// The reader returns an error (not io.EOF) when the upstream stream breaks, ends before a finishReason, or holds
// an error event. Closing it closes body. A reader belongs to one goroutine.
//
// The chunks' model is the first event's modelVersion, else model (the request's, as ModelOf gives it).
func Stream(body io.ReadCloser, model string, strict bool) io.ReadCloser {
	return &streamReader{src: body, in: bufio.NewReaderSize(body, streamBuffer), model: model, strict: strict}
}

// streamBuffer holds a few typical events: what an open stream keeps while it waits for the provider (a longer
// line is gathered in streamReader.long).
const streamBuffer = 4 << 10

type streamReader struct {
	src    io.ReadCloser
	in     *bufio.Reader
	strict bool

	out   []byte // translated bytes, read from off on
	off   int
	w     schema.ChunkWriter // started by the first event
	event []byte             // data of the event being read
	long  []byte             // a line longer than in's buffer, gathered
	err   error              // sticky: io.EOF after [DONE], or the error that ended the stream

	model    string // the request's until the first event names the answer's
	finished bool
	usage    *usageMetadata
	cands    []candState             // by candidate index
	chunk    schema.Chunk            // reused between events
	resp     generateContentResponse // reused between events: each decoding into a fresh one would allocate it

	fast      fastEvent     // the common event, read without encoding/json (stream_fast.go)
	fastUsage usageMetadata // the last usage a fast event reported, which usage then points to
	slow      bool          // tests: decode every event with encoding/json, to compare the fast path against
}

// candState is what the stream remembers of one candidate (choice).
type candState struct {
	started   bool
	calls     int  // tool calls sent so far
	block     int  // index of the current content block (not strict)
	blockKind byte // 't' text, 'k' thinking, 0 none yet
}

// Read hands over what every event already buffered makes, and waits only when it has nothing (package sse).
func (s *streamReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.off < len(s.out) {
			c := copy(p[n:], s.out[s.off:])
			s.off += c
			n += c
			continue
		}
		if s.err != nil || n > 0 && !sse.LineBuffered(s.in) {
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

func (s *streamReader) Close() error { return s.src.Close() }

// step reads one upstream event and writes what it gives into out, or sets err.
func (s *streamReader) step() {
	data, err := s.nextEvent()
	switch {
	case err == io.EOF:
		s.end()
		return
	case err != nil:
		s.err = fmt.Errorf("gemini: read stream: %w", err)
		return
	}
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0:
		return
	case string(data) == "[DONE]":
		s.end()
		return
	case data[0] == '[': // a JSON array of answers, as streams without alt=sse send; tolerated
		var list []generateContentResponse
		if err := json.Unmarshal(data, &list); err != nil {
			s.err = fmt.Errorf("gemini: decode stream event: %w", err)
			return
		}
		for i := range list {
			if s.handle(&list[i]); s.err != nil {
				return
			}
		}
		return
	}
	if !s.slow && s.fastStep(data) {
		return
	}
	s.resp = generateContentResponse{} // Unmarshal would keep what this event leaves out
	if err := json.Unmarshal(data, &s.resp); err != nil {
		s.err = fmt.Errorf("gemini: decode stream event: %w", err)
		return
	}
	s.handle(&s.resp)
}

// end finishes the translated stream: the usage chunk and [DONE], or an error when no candidate finished.
func (s *streamReader) end() {
	if !s.finished {
		s.err = errTruncated
		return
	}
	if s.usage != nil { // a finished candidate started the writer
		s.out = s.w.UsageChunk(s.out, usageOf(s.usage))
	}
	s.out = append(s.out, schema.DoneEvent...)
	s.err = io.EOF
}

// begin fixes the stream's id, model and created time from its first event's modelVersion and responseId.
func (s *streamReader) begin(modelVersion, responseID string) {
	if s.w.Started() {
		return
	}
	if modelVersion != "" {
		s.model = modelVersion
	}
	s.chunk = schema.Chunk{ID: completionID(responseID), Object: "chat.completion.chunk", Created: now().Unix(), Model: s.model}
	s.w.Start(s.chunk.ID, s.chunk.Created, s.chunk.Model)
}

func (s *streamReader) state(index int) *candState {
	if index < 0 || index > 1024 {
		index = 0
	}
	for len(s.cands) <= index {
		s.cands = append(s.cands, candState{block: -1})
	}
	return &s.cands[index]
}

func (s *streamReader) handle(r *generateContentResponse) {
	if r.Error != nil {
		s.err = &streamError{e: *r.Error}
		return
	}
	s.begin(r.ModelVersion, r.ResponseID)
	if u := r.UsageMetadata; u != nil && (u.PromptTokenCount != 0 || u.TotalTokenCount != 0 || u.CandidatesTokenCount != 0) {
		s.usage = u
	}
	s.chunk.Choices = s.chunk.Choices[:0]
	for i := range r.Candidates {
		c := &r.Candidates[i]
		idx := candidateIndex(c, i)
		st := s.state(idx)
		ch := schema.ChunkChoice{Index: idx}
		if !st.started {
			st.started = true
			ch.Delta.Role = "assistant"
		}
		if c.Content != nil {
			s.parts(st, &ch, c.Content.Parts)
		}
		if c.FinishReason != "" {
			reason := finishReason(c.FinishReason, st.calls > 0)
			ch.FinishReason = &reason
			s.finished = true
		}
		ch.Logprobs = logprobsOf(c.LogprobsResult)
		if ch.Delta.Role == "" && ch.Delta.Content == nil && ch.Delta.ToolCalls == nil && ch.Delta.ContentBlocks == nil &&
			ch.FinishReason == nil && ch.Logprobs == nil {
			continue
		}
		s.chunk.Choices = append(s.chunk.Choices, ch)
	}
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		st := s.state(0)
		ch := schema.ChunkChoice{}
		if !st.started {
			st.started = true
			ch.Delta.Role = "assistant"
		}
		reason := schema.FinishContentFilter
		ch.FinishReason = &reason
		s.finished = true
		s.chunk.Choices = append(s.chunk.Choices, ch)
	}
	if len(s.chunk.Choices) > 0 {
		s.write()
	}
}

// parts fills a choice's delta from a candidate's parts.
func (s *streamReader) parts(st *candState, ch *schema.ChunkChoice, parts []part) {
	var text *string   // the event's text part, in place: the chunk is written before the next event is read
	var texts []string // more than one text part in one event: rare
	for k := range parts {
		p := &parts[k]
		switch {
		case p.FunctionCall != nil:
			index := st.calls
			st.calls++
			call := schema.ToolCallDelta{Index: &index, ID: callID(p.FunctionCall.ID), Type: "function",
				Function: schema.FunctionCallDelta{Name: p.FunctionCall.Name, Arguments: argsString(p.FunctionCall.Args)}}
			if !s.strict {
				call.Function.ThoughtSignature = p.ThoughtSignature
			}
			ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, call)
		case p.Thought:
			if !s.strict && (p.Text != "" || p.ThoughtSignature != "") {
				s.blockDelta(st, ch, 'k', p.Text, p.ThoughtSignature)
			}
		case p.Text != "":
			switch {
			case text == nil:
				text = &p.Text
			case texts == nil:
				texts = []string{*text, p.Text}
			default:
				texts = append(texts, p.Text)
			}
			if !s.strict {
				s.blockDelta(st, ch, 't', p.Text, "")
			}
		}
	}
	if texts != nil {
		joined := strings.Join(texts, "")
		text = &joined
	}
	ch.Delta.Content = text
}

// blockDelta adds a content block delta, opening a new block when the kind of content changes.
func (s *streamReader) blockDelta(st *candState, ch *schema.ChunkChoice, kind byte, text, signature string) {
	if st.blockKind != kind {
		st.block++
		st.blockKind = kind
	}
	blocks := ch.Delta.ContentBlocks
	if n := len(blocks); n > 0 && blocks[n-1].Index == st.block && blocks[n-1].Delta.Signature == "" {
		b := &blocks[n-1]
		if kind == 'k' {
			b.Delta.Thinking += text
		} else {
			b.Delta.Text += text
		}
		b.Delta.Signature = signature
		return
	}
	var b schema.BlockDelta
	b.Index = st.block
	if kind == 'k' {
		b.Delta.Thinking = text
	} else {
		b.Delta.Text = text
	}
	b.Delta.Signature = signature
	ch.Delta.ContentBlocks = append(blocks, b)
}

// write appends the current chunk as one event.
func (s *streamReader) write() {
	out, err := s.w.Encode(s.out, &s.chunk)
	if err != nil {
		s.err = fmt.Errorf("gemini: encode chunk: %w", err)
		return
	}
	s.out = out
}

// nextEvent returns the data of the next server-sent event (its data lines joined by '\n'), or io.EOF when the
// stream ends between events. Comments and the event, id and retry fields are skipped. Lines end with "\n" or
// "\r\n".
func (s *streamReader) nextEvent() ([]byte, error) {
	s.event = s.event[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				return s.event, nil // the last event lacked its blank line
			}
			return nil, err
		}
		if len(line) == 0 {
			if hasData {
				return s.event, nil
			}
			continue
		}
		value, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if hasData {
			s.event = append(s.event, '\n')
		}
		if len(s.event)+len(value) > maxEventSize {
			return nil, fmt.Errorf("event larger than %d bytes", maxEventSize)
		}
		s.event = append(s.event, value...)
		hasData = true
	}
}

// readLine returns the next line without its line ending. The slice is valid until the next read; a line too
// long for the buffer is gathered in long, reused from line to line.
func (s *streamReader) readLine() ([]byte, error) {
	line, err := s.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxEventSize {
				return nil, fmt.Errorf("line longer than %d bytes", maxEventSize)
			}
			line, err = s.in.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}
