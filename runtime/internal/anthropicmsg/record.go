package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/internal/sse"
)

// Limits of a recorded stream, the recorders' own (package sse), as the cache's are.
const (
	recordMaxEvent  = sse.MaxEvent
	recordMaxAnswer = sse.MaxAnswer
)

// Record passes an Anthropic Messages event stream through unchanged, byte for byte and without holding bytes
// back, while it assembles the message the same request would have had without "stream": message_start's
// message (id, type, role, model and any other member), the content blocks by index from content_block_start
// (text, tool_use, thinking, redacted_thinking, each with the members its start event gave) and their deltas
// (text_delta, input_json_delta gathered and parsed as the block's input at content_block_stop, "" giving {},
// thinking_delta, signature_delta), message_delta's members (stop_reason, stop_sequence) and its usage merged
// member by member into message_start's.
//
// When the stream reaches message_stop, done is called once with the message's JSON, which then belongs to
// done; it is called on the reading goroutine, inside the Read that delivers the event's end, so it should be
// quick. done is never called for a stream that is not complete and whole: one that ends or fails before
// message_stop, has an error event, an event it cannot understand (not JSON, an unknown event, block or delta
// type such as citations_delta: nothing is guessed), a block not stopped, no message_start or message_delta,
// or exceeds an event of 8 MiB or a message of 64 MiB. Closing the recorder closes src. A recorder is not safe
// for concurrent use. The cache stores streamed Messages answers with it (runtime/cachestep.go).
func Record(src io.ReadCloser, done func(message []byte)) io.ReadCloser {
	return &recorder{src: src, done: done}
}

type recorder struct {
	src  io.ReadCloser
	done func([]byte)

	stopped bool // message_stop seen, or the stream cannot be recorded: the rest passes through untouched
	events  sse.Splitter
	scratch []byte
	msg     messageAsm
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	if !r.stopped {
		if !r.events.Feed(p[:n], r) || err == io.EOF && !r.events.End(r) {
			r.stop()
		}
		if err != nil {
			r.stop() // a stream that breaks is never recorded
		}
	}
	return n, err
}

func (r *recorder) Close() error {
	r.stop()
	return r.src.Close()
}

// stop gives up on the stream: nothing more is parsed and done is not called.
func (r *recorder) stop() {
	r.stopped = true
	r.events.Reset()
	r.scratch, r.msg = nil, messageAsm{}
}

// Event folds one event into the message (sse.Handler); false stops following the stream.
func (r *recorder) Event(data []byte, errorEvent bool) bool {
	m := &r.msg
	if m.size += len(data); r.stopped || errorEvent || m.size > recordMaxAnswer {
		return false
	}
	if d, ok := parseDelta(data, r.scratch); ok {
		r.scratch = d.value[:0]
		return m.delta(d.index, d.typ, d.value)
	}
	message, ok := m.event(data)
	if ok && message != nil {
		r.stop()
		r.done(message)
		return false
	}
	return ok
}

// messageAsm gathers the events of one stream into the message.
type messageAsm struct {
	started, ended bool     // message_start and message_delta seen
	members        []member // message_start's message, then message_delta's delta members
	usage          []member
	blocks         []*blockAsm
	size           int
}

// member is a member of a JSON object, its value as written.
type member struct {
	key   string
	value json.RawMessage
}

type blockAsm struct {
	index   int
	typ     string
	members []member // the content_block of its start event
	text    []byte   // text or thinking, unescaped
	sig     []byte
	input   []byte // the input_json_delta fragments
	inputs  bool   // a fragment came
	stopped bool
}

// recordEvent is what the recorder reads of an event other than a delta of the fast path's shape.
type recordEvent struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message"`
	Index        *int            `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

// event folds one event; message is the assembled message once message_stop came, ok false when the stream
// cannot be recorded.
func (m *messageAsm) event(data []byte) (message []byte, ok bool) {
	var ev recordEvent
	if json.Unmarshal(data, &ev) != nil {
		return nil, false
	}
	switch ev.Type {
	case "ping":
		return nil, true
	case "message_start":
		if m.started {
			return nil, false
		}
		m.started = true
		var err error
		if m.members, err = members(ev.Message); err != nil {
			return nil, false
		}
		for _, x := range m.members {
			if x.key == "usage" && !isNull(x.value) {
				if m.usage, err = members(x.value); err != nil {
					return nil, false
				}
			}
		}
		return nil, true
	case "content_block_start":
		return nil, m.started && ev.Index != nil && m.start(*ev.Index, ev.ContentBlock)
	case "content_block_delta":
		var d struct {
			Type        string  `json:"type"`
			Text        *string `json:"text"`
			PartialJSON *string `json:"partial_json"`
			Thinking    *string `json:"thinking"`
			Signature   *string `json:"signature"`
		}
		if ev.Index == nil || json.Unmarshal(ev.Delta, &d) != nil {
			return nil, false
		}
		var v *string
		switch d.Type {
		case "text_delta":
			v = d.Text
		case "input_json_delta":
			v = d.PartialJSON
		case "thinking_delta":
			v = d.Thinking
		case "signature_delta":
			v = d.Signature
		}
		return nil, v != nil && m.delta(*ev.Index, d.Type, []byte(*v)) // citations_delta and the like: nil
	case "content_block_stop":
		b := m.block(ev.Index)
		if b == nil || b.stopped {
			return nil, false
		}
		b.stopped = true
		if b.typ == "tool_use" && b.inputs {
			return nil, b.parseInput()
		}
		return nil, true
	case "message_delta":
		if !m.started {
			return nil, false
		}
		m.ended = true
		delta, err := members(ev.Delta)
		if err != nil {
			return nil, false
		}
		m.members = merge(m.members, delta)
		if !isNull(ev.Usage) {
			u, err := members(ev.Usage)
			if err != nil {
				return nil, false
			}
			m.usage = merge(m.usage, u)
		}
		return nil, true
	case "message_stop":
		message, err := m.build()
		return message, err == nil
	}
	return nil, false // error, or an event this recorder does not know
}

// start opens the block of index with the content_block of its start event.
func (m *messageAsm) start(index int, raw json.RawMessage) bool {
	if slices.ContainsFunc(m.blocks, func(b *blockAsm) bool { return b.index == index }) {
		return false
	}
	ms, err := members(raw)
	if err != nil {
		return false
	}
	b := &blockAsm{index: index, members: ms}
	for _, x := range ms {
		var err error
		switch x.key {
		case "type":
			err = json.Unmarshal(x.value, &b.typ)
		case "text", "thinking":
			b.text, err = appendStringValue(b.text[:0], x.value)
		case "signature":
			b.sig, err = appendStringValue(b.sig[:0], x.value)
		}
		if err != nil {
			return false
		}
	}
	switch b.typ {
	case "text", "tool_use", "thinking", "redacted_thinking":
	default:
		return false // server tools' blocks and kinds added later: not guessed at
	}
	m.blocks = append(m.blocks, b)
	return true
}

// appendStringValue appends the JSON string (or null) v unescaped.
func appendStringValue(dst []byte, v json.RawMessage) ([]byte, error) {
	if isNull(v) {
		return dst, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	return append(dst, s...), nil
}

func (m *messageAsm) block(index *int) *blockAsm {
	if index == nil {
		return nil
	}
	for _, b := range m.blocks {
		if b.index == *index {
			return b
		}
	}
	return nil
}

// delta folds a content_block_delta into its open block; a delta the block's type does not take fails.
func (m *messageAsm) delta(index int, typ string, v []byte) bool {
	b := m.block(&index)
	if b == nil || b.stopped {
		return false
	}
	switch {
	case typ == "text_delta" && b.typ == "text", typ == "thinking_delta" && b.typ == "thinking":
		b.text = append(b.text, v...)
	case typ == "signature_delta" && b.typ == "thinking":
		b.sig = append(b.sig, v...)
	case typ == "input_json_delta" && b.typ == "tool_use":
		b.input, b.inputs = append(b.input, v...), true
	default:
		return false
	}
	return true
}

// parseInput turns the gathered input_json_delta fragments into the block's input, compacted.
func (b *blockAsm) parseInput() bool {
	if len(bytes.TrimSpace(b.input)) == 0 {
		b.input = append(b.input[:0], "{}"...)
		return true
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b.input) != nil {
		return false
	}
	b.input = buf.Bytes()
	return true
}

// build writes the message; an error says why the stream is not a whole answer.
func (m *messageAsm) build() ([]byte, error) {
	if !m.started || !m.ended {
		return nil, errors.New("no message_start or message_delta")
	}
	slices.SortFunc(m.blocks, func(x, y *blockAsm) int { return x.index - y.index })
	var b bytes.Buffer
	b.Grow(m.size + 256)
	b.WriteByte('{')
	wrote := map[string]bool{}
	for i, x := range m.members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(appendKey(b.AvailableBuffer(), x.key))
		wrote[x.key] = true
		var err error
		switch x.key {
		case "content":
			err = m.writeContent(&b)
		case "usage":
			err = writeObject(&b, m.usage)
		default:
			err = json.Compact(&b, x.value)
		}
		if err != nil {
			return nil, err
		}
	}
	if !wrote["content"] {
		b.WriteString(`,"content":`)
		if err := m.writeContent(&b); err != nil {
			return nil, err
		}
	}
	if !wrote["usage"] && len(m.usage) > 0 {
		b.WriteString(`,"usage":`)
		if err := writeObject(&b, m.usage); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	if b.Len() > recordMaxAnswer {
		return nil, errors.New("the message is too large")
	}
	return b.Bytes(), nil
}

func (m *messageAsm) writeContent(b *bytes.Buffer) error {
	b.WriteByte('[')
	for i, blk := range m.blocks {
		if !blk.stopped {
			return errors.New("a content block was not stopped")
		}
		if i > 0 {
			b.WriteByte(',')
		}
		if err := blk.write(b); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// write writes the block: its start event's members, with the gathered text, thinking, signature or input in
// place of theirs.
func (blk *blockAsm) write(b *bytes.Buffer) error {
	ms := slices.Clone(blk.members)
	set := func(key string, value []byte) {
		if i := slices.IndexFunc(ms, func(x member) bool { return x.key == key }); i >= 0 {
			ms[i].value = value
		} else {
			ms = append(ms, member{key, value})
		}
	}
	switch blk.typ {
	case "text":
		set("text", jsonstr.AppendString(nil, blk.text))
	case "thinking":
		set("thinking", jsonstr.AppendString(nil, blk.text))
		set("signature", jsonstr.AppendString(nil, blk.sig))
	case "tool_use":
		if blk.inputs {
			set("input", blk.input)
		} else if i := slices.IndexFunc(ms, func(x member) bool { return x.key == "input" }); i < 0 || isNull(ms[i].value) {
			set("input", []byte("{}"))
		}
	}
	return writeObject(b, ms)
}

// writeObject writes the members as a compact JSON object.
func writeObject(b *bytes.Buffer, ms []member) error {
	b.WriteByte('{')
	for i, x := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(appendKey(b.AvailableBuffer(), x.key))
		if err := json.Compact(b, x.value); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func appendKey(dst []byte, key string) []byte { return append(jsonstr.AppendString(dst, key), ':') }

// merge sets each member of update in ms: in place when ms has it, else at the end.
func merge(ms, update []member) []member {
	for _, u := range update {
		if i := slices.IndexFunc(ms, func(x member) bool { return x.key == u.key }); i >= 0 {
			ms[i].value = u.value
		} else {
			ms = append(ms, u)
		}
	}
	return ms
}

// members reads a JSON object's members in order, the last of duplicate keys winning in the first one's place
// (as encoding/json reads it).
func members(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = merge(ms, []member{{key, v}})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}
