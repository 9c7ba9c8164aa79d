package responses

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/internal/sse"
	"github.com/llmgw/gateway/runtime/schema"
)

// maxEventSize bounds one server-sent event of the chat stream (a chunk holds one delta; a whole tool call's
// arguments at most).
const maxEventSize = 8 << 20

// Stream turns a chat completion SSE stream ("data: {chunk}\n\n" ... "data: [DONE]\n\n") into the responses
// event stream: "event: <type>\ndata: {...}\n\n" per event, sequence_number increasing from 0. It writes
// response.created and response.in_progress first (status in_progress, output []); then, as the chunks come,
// the events of each output item: for text response.output_item.added (a message item), .content_part.added,
// .output_text.delta per chunk, .output_text.done, .content_part.done, .output_item.done; for a tool call
// .output_item.added (a function_call item), .function_call_arguments.delta, .function_call_arguments.done,
// .output_item.done; for thinking (content_blocks) a reasoning item with .reasoning_summary_part.added,
// .reasoning_summary_text.delta, .reasoning_summary_text.done, .reasoning_summary_part.done. The last event is
// response.completed or response.incomplete (finish_reason length or content_filter) with the whole response
// object, usage from the chunks' usage; a broken chat stream (a read error, an error chunk, an end before the
// last chunk) ends with response.failed, error {code server_error, message}. Each event is written as soon as
// the chunk that makes it is read: the answer is never buffered whole. Closing the stream closes chat. It is
// read by one goroutine.
func Stream(chat io.ReadCloser, req *schema.ResponseRequest, id string, created int64) io.ReadCloser {
	return &stream{chat: chat, br: bufio.NewReaderSize(chat, 16<<10), resp: newResponse(req, id, created), calls: map[int]*streamItem{},
		itemStatus: itemStatusOK}
}

type stream struct {
	chat io.ReadCloser
	br   *bufio.Reader
	resp *schema.Response // the response object: fields echoed, then output, status and usage at the end

	out      []byte // events not yet read
	off      int
	seq      int64
	started  bool
	finished bool

	items  []*streamItem       // every output item, in output order
	cur    *streamItem         // the open message or reasoning item, if any
	calls  map[int]*streamItem // function calls by the chat's tool call index
	reason string              // the last finish_reason
	usage  *schema.Usage
	// itemStatus is the status of a message item once done: completed, or incomplete when it ends the answer
	// of a length or content_filter stop.
	itemStatus string
	data       []byte // the data of the event being read
	long       []byte // a line longer than br's buffer
	enc        bytes.Buffer
}

// streamItem is an output item being streamed.
type streamItem struct {
	kind   byte // 'm' message, 'f' function call, 'r' reasoning
	id     string
	index  int
	text   []byte // the message's text, the call's arguments, or the reasoning summary
	callID string
	name   string
	final  json.RawMessage // the item once done
}

// chunkIn is what Stream reads of a chunk.
type chunkIn struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int          `json:"index"`
		Delta        schema.Delta `json:"delta"`
		FinishReason *string      `json:"finish_reason"`
	} `json:"choices"`
	Usage *schema.Usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Read hands over what every chunk already buffered makes, and waits only when it has nothing (package sse).
func (s *stream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.off < len(s.out) {
			c := copy(p[n:], s.out[s.off:])
			s.off += c
			n += c
			continue
		}
		if s.finished || n > 0 && s.started && !sse.LineBuffered(s.br) {
			break
		}
		s.out, s.off = s.out[:0], 0
		s.step()
	}
	if n == 0 && s.finished && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (s *stream) Close() error { return s.chat.Close() }

// step writes the events of the next chat event into s.out.
func (s *stream) step() {
	if !s.started {
		s.started = true
		s.responseEvent("response.created")
		s.responseEvent("response.in_progress")
		return
	}
	data, err := s.next()
	switch {
	case errors.Is(err, io.EOF):
		if s.reason != "" {
			s.complete()
			return
		}
		s.fail("the provider's stream ended before its last chunk")
		return
	case err != nil:
		s.fail(err.Error())
		return
	case string(data) == "[DONE]":
		s.complete()
		return
	}
	var c chunkIn
	if err := json.Unmarshal(data, &c); err != nil {
		s.fail("the provider's stream holds a chunk that is not JSON: " + err.Error())
		return
	}
	if c.Error != nil {
		s.fail(c.Error.Message)
		return
	}
	s.chunk(&c)
}

// next reads the data of the next server-sent event (its data lines joined with "\n").
func (s *stream) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil && (!errors.Is(err, io.EOF) || len(line) == 0) {
			if errors.Is(err, io.EOF) && has {
				return s.data, nil // the last event, without its blank line
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if has {
				s.data = append(s.data, '\n')
			}
			if len(s.data)+len(v) > maxEventSize {
				return nil, errTooLarge
			}
			s.data = append(s.data, v...)
			has = true
		}
		if errors.Is(err, io.EOF) {
			if has {
				return s.data, nil
			}
			return nil, io.EOF
		}
	}
}

var errTooLarge = errors.New("the provider's stream holds an event larger than 8 MiB")

// readLine reads one line, a long one (past the reader's buffer) into s.long, up to maxEventSize.
func (s *stream) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	s.long = append(s.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(s.long) > maxEventSize {
			return nil, errTooLarge
		}
		line, err = s.br.ReadSlice('\n')
		s.long = append(s.long, line...)
	}
	return s.long, err
}

// chunk writes the events one chunk makes.
func (s *stream) chunk(c *chunkIn) {
	if c.Model != "" {
		s.resp.Model = c.Model
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // a response has one output: choice 0's
		}
		for _, b := range ch.Delta.ContentBlocks {
			if b.Delta.Thinking != "" {
				s.reasoningDelta(b.Delta.Thinking)
			}
		}
		if ch.Delta.Content != nil && *ch.Delta.Content != "" {
			s.textDelta(*ch.Delta.Content)
		}
		for k := range ch.Delta.ToolCalls {
			s.toolCallDelta(&ch.Delta.ToolCalls[k])
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.reason = *ch.FinishReason
		}
	}
}

// open starts a new output item, ending the open ones first: items follow each other as OpenAI streams them.
func (s *stream) open(kind byte, prefix string) *streamItem {
	if s.cur != nil {
		s.closeCur()
	}
	s.closeCalls()
	it := &streamItem{kind: kind, index: len(s.items)}
	it.id = itemID(prefix, s.resp.ID, it.index)
	s.items = append(s.items, it)
	return it
}

func (s *stream) textDelta(text string) {
	it := s.cur
	if it == nil || it.kind != 'm' {
		it = s.open('m', "msg")
		s.cur = it
		s.itemEvent("response.output_item.added", it.index, &messageItem{ID: it.id, Type: "message", Status: "in_progress", Role: "assistant", Content: []outputText{}})
		d := s.itemRef("response.content_part.added", it, true)
		d = append(d, `,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`...)
		s.end(d)
	}
	it.text = append(it.text, text...)
	d := s.itemRef("response.output_text.delta", it, true)
	d = jsonstr.AppendString(append(d, `,"delta":`...), text)
	s.end(append(d, `,"logprobs":[]`...))
}

func (s *stream) reasoningDelta(text string) {
	it := s.cur
	if it == nil || it.kind != 'r' {
		it = s.open('r', "rs")
		s.cur = it
		s.itemEvent("response.output_item.added", it.index, &reasoningItem{ID: it.id, Type: "reasoning", Summary: []summaryText{}})
		d := s.itemRef("response.reasoning_summary_part.added", it, false)
		s.end(append(d, `,"summary_index":0,"part":{"type":"summary_text","text":""}`...))
	}
	it.text = append(it.text, text...)
	d := s.itemRef("response.reasoning_summary_text.delta", it, false)
	d = jsonstr.AppendString(append(d, `,"summary_index":0,"delta":`...), text)
	s.end(d)
}

func (s *stream) toolCallDelta(tc *schema.ToolCallDelta) {
	idx := 0
	if tc.Index != nil {
		idx = *tc.Index
	}
	it := s.calls[idx]
	if it == nil || (tc.ID != "" && tc.ID != it.callID) {
		it = s.open('f', "fc")
		it.callID, it.name = tc.ID, tc.Function.Name
		if it.callID == "" {
			it.callID = "call_" + it.id
		}
		s.calls[idx] = it
		s.itemEvent("response.output_item.added", it.index, &functionCallItem{ID: it.id, Type: "function_call", Status: "in_progress",
			Arguments: "", CallID: it.callID, Name: it.name})
	} else if it.name == "" {
		it.name = tc.Function.Name
	}
	if args := tc.Function.Arguments; args != "" {
		// Arguments of a call already ended (a provider that interleaves parallel calls) end it again at the end.
		it.final = nil
		it.text = append(it.text, args...)
		d := s.itemRef("response.function_call_arguments.delta", it, false)
		d = jsonstr.AppendString(append(d, `,"delta":`...), args)
		s.end(d)
	}
}

// closeCur ends the open message or reasoning item.
func (s *stream) closeCur() {
	it := s.cur
	s.cur = nil
	switch it.kind {
	case 'm':
		d := s.itemRef("response.output_text.done", it, true)
		d = jsonstr.AppendString(append(d, `,"text":`...), it.text)
		s.end(append(d, `,"logprobs":[]`...))
		d = s.itemRef("response.content_part.done", it, true)
		d = jsonstr.AppendString(append(d, `,"part":{"type":"output_text","text":`...), it.text)
		s.end(append(d, `,"annotations":[],"logprobs":[]}`...))
		it.final = s.itemEvent("response.output_item.done", it.index, &messageItem{ID: it.id, Type: "message", Status: s.itemStatus, Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: string(it.text), Annotations: emptyRaw, Logprobs: emptyRaw}}})
	case 'r':
		d := s.itemRef("response.reasoning_summary_text.done", it, false)
		d = jsonstr.AppendString(append(d, `,"summary_index":0,"text":`...), it.text)
		s.end(d)
		d = s.itemRef("response.reasoning_summary_part.done", it, false)
		d = jsonstr.AppendString(append(d, `,"summary_index":0,"part":{"type":"summary_text","text":`...), it.text)
		s.end(append(d, '}'))
		it.final = s.itemEvent("response.output_item.done", it.index, &reasoningItem{ID: it.id, Type: "reasoning",
			Summary: []summaryText{{Type: "summary_text", Text: string(it.text)}}})
	}
}

// closeCalls ends the open function call items.
func (s *stream) closeCalls() {
	for _, it := range s.calls {
		if it.final == nil {
			s.closeCallsInOrder()
			return
		}
	}
}

func (s *stream) closeCallsInOrder() {
	for _, it := range s.items {
		if it.kind == 'f' {
			s.closeCall(it)
		}
	}
}

// closeCall ends a function call item.
func (s *stream) closeCall(it *streamItem) {
	if it.final != nil {
		return
	}
	d := s.itemRef("response.function_call_arguments.done", it, false)
	d = jsonstr.AppendString(append(d, `,"name":`...), it.name)
	d = jsonstr.AppendString(append(d, `,"arguments":`...), it.text)
	s.end(d)
	it.final = s.itemEvent("response.output_item.done", it.index, &functionCallItem{ID: it.id, Type: "function_call", Status: itemStatusOK,
		Arguments: string(it.text), CallID: it.callID, Name: it.name})
}

// complete ends every open item and writes response.completed or response.incomplete.
func (s *stream) complete() {
	if s.reason == schema.FinishLength || s.reason == schema.FinishContentFilter {
		s.itemStatus = "incomplete" // as OpenAI marks the message a stop cut short
	}
	if s.cur != nil {
		s.closeCur()
	}
	s.closeCalls()
	var text []byte
	for _, it := range s.items {
		if it.kind == 'm' {
			text = append(text, it.text...)
		}
	}
	r := s.resp
	r.Output = s.output()
	t := string(text)
	r.OutputText = &t
	r.Usage = responseUsage(s.usage)
	finish(r, s.reason)
	if r.Status == schema.ResponseIncomplete {
		s.responseEvent("response.incomplete")
	} else {
		s.responseEvent("response.completed")
	}
	s.finished = true
}

// fail writes response.failed: the items done so far, error {code server_error, message}.
func (s *stream) fail(message string) {
	r := s.resp
	r.Output = s.output()
	r.Status = schema.ResponseFailed
	r.Error = &schema.ResponseError{Code: "server_error", Message: message}
	r.Usage = responseUsage(s.usage)
	s.responseEvent("response.failed")
	s.finished = true
}

func (s *stream) output() []json.RawMessage {
	out := make([]json.RawMessage, 0, len(s.items))
	for _, it := range s.items {
		if it.final != nil {
			out = append(out, it.final)
		}
	}
	return out
}

// begin opens event typ: `event: typ\ndata: {"type":"typ"`.
func (s *stream) begin(typ string) []byte {
	d := append(append(append(s.out, "event: "...), typ...), "\ndata: {\"type\":\""...)
	return append(append(d, typ...), '"')
}

// end closes the event opened by begin with its sequence_number.
func (s *stream) end(d []byte) {
	d = strconv.AppendInt(append(d, `,"sequence_number":`...), s.seq, 10)
	s.seq++
	s.out = append(d, "}\n\n"...)
}

// itemRef opens an event about item it: item_id, output_index and, for content, content_index 0.
func (s *stream) itemRef(typ string, it *streamItem, content bool) []byte {
	d := jsonstr.AppendString(append(s.begin(typ), `,"item_id":`...), it.id)
	d = strconv.AppendInt(append(d, `,"output_index":`...), int64(it.index), 10)
	if content {
		d = append(d, `,"content_index":0`...)
	}
	return d
}

// itemEvent writes an output_item event with item and returns the item's JSON.
func (s *stream) itemEvent(typ string, index int, item any) json.RawMessage {
	raw := s.marshal(item)
	d := strconv.AppendInt(append(s.begin(typ), `,"output_index":`...), int64(index), 10)
	s.end(append(append(d, `,"item":`...), raw...))
	return raw
}

// responseEvent writes an event carrying the response object.
func (s *stream) responseEvent(typ string) {
	d := append(s.begin(typ), `,"response":`...)
	s.end(append(d, s.marshal(s.resp)...))
}

// marshal encodes v without escaping HTML, as the chunks are; the bytes are the caller's.
func (s *stream) marshal(v any) json.RawMessage {
	s.enc.Reset()
	e := json.NewEncoder(&s.enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return json.RawMessage("null") // our own shapes always encode
	}
	b := s.enc.Bytes()
	return append(json.RawMessage(nil), b[:len(b)-1]...)
}
