package cache

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/internal/sse"
)

// Limits of a recorded stream. A stream beyond them still passes through; it is just not cached.
const (
	// MaxEventSize bounds one SSE line or event.
	MaxEventSize = sse.MaxEvent
	// MaxAnswerSize bounds the assembled answer (the storage limit of a cached body).
	MaxAnswerSize = sse.MaxAnswer
)

// NewRecorder passes an OpenAI SSE stream (chat.completion.chunk or text_completion chunks) through unchanged,
// byte for byte and without holding bytes back, while it assembles the answer the same request would have
// had without "stream": a chat.completion (id, created, model, choices with role, content, tool calls
// assembled from their deltas by index, other string deltas such as refusal or reasoning_content
// concatenated, logprobs arrays concatenated, finish_reason; usage when a chunk carried it;
// system_fingerprint and service_tier when present) or a text_completion (choices with text, logprobs,
// finish_reason).
//
// When the stream reaches "data: [DONE]", done is called once with the assembled JSON, which then belongs to
// done. It is called on the reading goroutine, inside the Read that delivers the end of the [DONE] line, so
// it should be quick (a Put, or hand the bytes to a goroutine). done is never called for a stream that is
// not complete and whole: one that ends or fails before [DONE], carries an error event (data: {"error": ...}
// or event: error), an event that is not a JSON chunk, a choice without finish_reason, no choice at all, a
// delta it cannot assemble (a non-string field other than tool_calls, such as content_blocks or audio), or
// exceeds MaxEventSize or MaxAnswerSize. Closing the recorder closes src. A recorder is not safe for
// concurrent use.
func NewRecorder(src io.ReadCloser, done func(completion []byte)) io.ReadCloser {
	return &recorder{src: src, done: done}
}

type recorder struct {
	src  io.ReadCloser
	done func([]byte)

	stopped bool // [DONE] seen, or the stream cannot be cached: pass the rest through untouched
	events  sse.Splitter
	asm     assembler
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	if !r.stopped {
		if !r.events.Feed(p[:n], r) || err == io.EOF && !r.events.End(r) {
			r.stop()
		}
		if err != nil {
			r.stop() // a stream that breaks is never cached
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
	r.asm = assembler{}
}

// Event handles one event of the stream (sse.Handler); false stops following it.
func (r *recorder) Event(data []byte, errorEvent bool) bool {
	if r.stopped || errorEvent {
		return false
	}
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		answer, ok := r.asm.build()
		r.stop()
		if ok {
			r.done(answer)
		}
		return false
	}
	return r.asm.add(data)
}

// assembler gathers the chunks of one stream into the answer.
type assembler struct {
	kind        int // kindUnknown until a chunk with choices says
	id, model   string
	created     int64
	fingerprint string
	serviceTier string
	usage       []byte
	choices     []*choiceAsm
	size        int
}

const (
	kindUnknown = iota
	kindChat
	kindText
)

type choiceAsm struct {
	index      int
	role       string
	content    strings.Builder
	hasContent bool
	extras     []*extraField // other string fields of the deltas, in the order first seen
	tools      []*toolAsm
	finish     *string
	logprobs   []*lpField
	hasLP      bool
}

type extraField struct {
	key  string // as written, with its quotes
	text strings.Builder
}

type toolAsm struct {
	index         int
	id, typ, name string
	args          strings.Builder
}

// lpField is a member of logprobs: arrays are concatenated chunk after chunk (content, refusal, tokens,
// token_logprobs, top_logprobs, text_offset).
type lpField struct {
	key   string // with its quotes
	elems []byte // the elements, compacted and joined by ','
	isArr bool
}

func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// add folds one chunk into the answer. It reports false when the stream cannot be cached. Chunks are read
// with the package's JSON scanner rather than encoding/json: a stream has a chunk per token or so.
func (a *assembler) add(data []byte) bool {
	a.size += len(data)
	if a.size > MaxAnswerSize {
		return false
	}
	i := jsonstr.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	var id, object, created, model, fingerprint, tier, choices, usage, errv []byte
	end, err := eachMember(data, i, 0, func(k0, k1, v0, v1 int) error {
		v := data[v0:v1]
		switch string(data[k0:k1]) {
		case `"id"`:
			id = v
		case `"object"`:
			object = v
		case `"created"`:
			created = v
		case `"model"`:
			model = v
		case `"system_fingerprint"`:
			fingerprint = v
		case `"service_tier"`:
			tier = v
		case `"choices"`:
			choices = v
		case `"usage"`:
			usage = v
		case `"error"`:
			errv = v
		}
		return nil
	})
	if err != nil || jsonstr.SkipSpace(data, end) != len(data) || !isNull(errv) {
		return false
	}
	if isNull(choices) && isNull(usage) {
		return true // another event of the gateway's (hook_results): not part of the answer
	}
	ok := true
	if a.id == "" && !isNull(id) {
		a.id, ok = jsonstr.Unquote(id)
	}
	if a.created == 0 && !isNull(created) {
		a.created, err = strconv.ParseInt(string(created), 10, 64)
		ok = ok && err == nil
	}
	if a.model == "" && !isNull(model) {
		var m string
		m, ok2 := jsonstr.Unquote(model)
		a.model, ok = m, ok && ok2
	}
	if !isNull(fingerprint) {
		var f string
		f, ok2 := jsonstr.Unquote(fingerprint)
		ok = ok && ok2
		if f != "" {
			a.fingerprint = f
		}
	}
	if !isNull(tier) {
		var t string
		t, ok2 := jsonstr.Unquote(tier)
		ok = ok && ok2
		if t != "" {
			a.serviceTier = t
		}
	}
	if !ok {
		return false
	}
	if !isNull(usage) {
		a.usage = appendCompact(a.usage[:0], usage)
	}
	if isNull(choices) {
		return true
	}
	if choices[0] != '[' {
		return false
	}
	text := string(object) == `"text_completion"`
	_, err = eachElement(choices, 0, 1, func(e0, e1 int) error {
		if !a.addChoice(choices[e0:e1], text, isNull(object)) {
			return errStop
		}
		return nil
	})
	return err == nil
}

var errStop = errors.New("stop")

// addChoice folds one choice of a chunk. text says the chunk is a text_completion; unknown that its object
// is absent, so that the kind is told by the choice (text without delta).
func (a *assembler) addChoice(ch []byte, text, unknown bool) bool {
	if ch[0] != '{' {
		return false
	}
	var index, delta, txt, finish, logprobs []byte
	if _, err := eachMember(ch, 0, 0, func(k0, k1, v0, v1 int) error {
		v := ch[v0:v1]
		switch string(ch[k0:k1]) {
		case `"index"`:
			index = v
		case `"delta"`:
			delta = v
		case `"text"`:
			txt = v
		case `"finish_reason"`:
			finish = v
		case `"logprobs"`:
			logprobs = v
		}
		return nil
	}); err != nil {
		return false
	}
	kind := kindChat
	if text || unknown && !isNull(txt) && isNull(delta) {
		kind = kindText
	}
	if a.kind == kindUnknown {
		a.kind = kind
	} else if a.kind != kind {
		return false
	}
	n := 0
	if !isNull(index) {
		var err error
		if n, err = strconv.Atoi(string(index)); err != nil || n < 0 || n > 1024 {
			return false
		}
	}
	c := a.choice(n)
	if !isNull(finish) {
		f, ok := jsonstr.Unquote(finish)
		if !ok {
			return false
		}
		c.finish = &f
	}
	if !isNull(logprobs) && !c.addLogprobs(logprobs) {
		return false
	}
	if kind == kindText {
		if !isNull(txt) {
			c.hasContent = true
			return jsonstr.AppendUnquote(&c.content, txt)
		}
		return true
	}
	return isNull(delta) || delta[0] == '{' && c.addDelta(delta)
}

func (a *assembler) choice(index int) *choiceAsm {
	for _, c := range a.choices {
		if c.index == index {
			return c
		}
	}
	c := &choiceAsm{index: index}
	a.choices = append(a.choices, c)
	return c
}

// addDelta folds a chat delta (a valid JSON object) into the choice.
func (c *choiceAsm) addDelta(delta []byte) bool {
	_, err := eachMember(delta, 0, 0, func(k0, k1, v0, v1 int) error {
		key, val := delta[k0:k1], delta[v0:v1]
		if isNull(val) {
			return nil
		}
		ok := true
		switch string(key) {
		case `"role"`:
			c.role, ok = jsonstr.Unquote(val)
		case `"content"`:
			ok = jsonstr.AppendUnquote(&c.content, val)
			c.hasContent = true
		case `"tool_calls"`:
			ok = val[0] == '['
			if ok {
				_, err := eachElement(val, 0, 0, func(e0, e1 int) error {
					if !c.addTool(val[e0:e1]) {
						return errStop
					}
					return nil
				})
				ok = err == nil
			}
		default:
			if val[0] != '"' {
				return errStop // an array or object we cannot assemble (content_blocks, audio, ...)
			}
			i := slices.IndexFunc(c.extras, func(e *extraField) bool { return e.key == string(key) })
			if i < 0 {
				c.extras = append(c.extras, &extraField{key: string(key)})
				i = len(c.extras) - 1
			}
			ok = jsonstr.AppendUnquote(&c.extras[i].text, val)
		}
		if !ok {
			return errStop
		}
		return nil
	})
	return err == nil
}

// addTool folds a tool-call delta (a valid JSON value): the call is found by index (or, for servers that send
// none, by id, else the last call); its id, type and name are set once and its arguments concatenated.
func (c *choiceAsm) addTool(d []byte) bool {
	if d[0] != '{' {
		return false
	}
	index := -1
	var id, typ, name, args string
	ok := true
	str := func(v []byte) string {
		if isNull(v) {
			return ""
		}
		s, good := jsonstr.Unquote(v)
		ok = ok && good
		return s
	}
	_, err := eachMember(d, 0, 0, func(k0, k1, v0, v1 int) error {
		v := d[v0:v1]
		switch string(d[k0:k1]) {
		case `"index"`:
			if !isNull(v) {
				n, err := strconv.Atoi(string(v))
				if err != nil || n < 0 {
					return errStop
				}
				index = n
			}
		case `"id"`:
			id = str(v)
		case `"type"`:
			typ = str(v)
		case `"function"`:
			if isNull(v) {
				return nil
			}
			if v[0] != '{' {
				return errStop
			}
			_, err := eachMember(v, 0, 0, func(k0, k1, v0, v1 int) error {
				switch string(v[k0:k1]) {
				case `"name"`:
					name = str(v[v0:v1])
				case `"arguments"`:
					args = str(v[v0:v1])
				}
				return nil
			})
			return err
		}
		return nil
	})
	if err != nil || !ok {
		return false
	}
	var t *toolAsm
	switch {
	case index >= 0:
		for _, x := range c.tools {
			if x.index == index {
				t = x
			}
		}
		if t == nil {
			t = &toolAsm{index: index}
			c.tools = append(c.tools, t)
		}
	case len(c.tools) > 0 && (id == "" || c.tools[len(c.tools)-1].id == id):
		t = c.tools[len(c.tools)-1]
	default:
		t = &toolAsm{index: len(c.tools)}
		c.tools = append(c.tools, t)
	}
	if t.id == "" {
		t.id = id
	}
	if t.typ == "" {
		t.typ = typ
	}
	if name != "" && name != t.name {
		t.name += name
	}
	t.args.WriteString(args)
	return true
}

// addLogprobs folds a choice's logprobs object: array members are concatenated; anything else but null makes
// the stream uncacheable.
func (c *choiceAsm) addLogprobs(lp []byte) bool {
	if lp[0] != '{' {
		return false
	}
	c.hasLP = true
	ok := true
	eachMember(lp, 0, 0, func(k0, k1, v0, v1 int) error {
		key, val := lp[k0:k1], lp[v0:v1]
		i := slices.IndexFunc(c.logprobs, func(f *lpField) bool { return f.key == string(key) })
		if i < 0 {
			c.logprobs = append(c.logprobs, &lpField{key: string(key)})
			i = len(c.logprobs) - 1
		}
		f := c.logprobs[i]
		switch {
		case isNull(val):
		case val[0] == '[':
			f.isArr = true
			eachElement(val, 0, 0, func(e0, e1 int) error {
				if len(f.elems) > 0 {
					f.elems = append(f.elems, ',')
				}
				f.elems = appendCompact(f.elems, val[e0:e1])
				return nil
			})
		default:
			ok = false
		}
		return nil
	})
	return ok
}

// build writes the assembled answer. It reports false when the stream is not a whole answer.
func (a *assembler) build() ([]byte, bool) {
	if len(a.choices) == 0 {
		return nil, false
	}
	for _, c := range a.choices {
		if c.finish == nil {
			return nil, false
		}
	}
	slices.SortFunc(a.choices, func(x, y *choiceAsm) int { return x.index - y.index })
	var b bytes.Buffer
	b.Grow(a.size + 256)
	b.WriteString(`{"id":`)
	b.Write(jsonstr.AppendString(b.AvailableBuffer(), a.id))
	object := "chat.completion"
	if a.kind == kindText {
		object = "text_completion"
	}
	b.WriteString(`,"object":"` + object + `","created":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), a.created, 10))
	b.WriteString(`,"model":`)
	b.Write(jsonstr.AppendString(b.AvailableBuffer(), a.model))
	b.WriteString(`,"choices":[`)
	for i, c := range a.choices {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"index":`)
		b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(c.index), 10))
		if a.kind == kindText {
			b.WriteString(`,"text":`)
			b.Write(jsonstr.AppendString(b.AvailableBuffer(), c.content.String()))
		} else {
			c.writeMessage(&b)
		}
		b.WriteString(`,"logprobs":`)
		c.writeLogprobs(&b)
		b.WriteString(`,"finish_reason":`)
		b.Write(jsonstr.AppendString(b.AvailableBuffer(), *c.finish))
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if len(a.usage) > 0 {
		b.WriteString(`,"usage":`)
		b.Write(a.usage) // compacted by add
	}
	if a.serviceTier != "" {
		b.WriteString(`,"service_tier":`)
		b.Write(jsonstr.AppendString(b.AvailableBuffer(), a.serviceTier))
	}
	if a.fingerprint != "" {
		b.WriteString(`,"system_fingerprint":`)
		b.Write(jsonstr.AppendString(b.AvailableBuffer(), a.fingerprint))
	}
	b.WriteByte('}')
	return b.Bytes(), true
}

func (c *choiceAsm) writeMessage(b *bytes.Buffer) {
	role := c.role
	if role == "" {
		role = "assistant"
	}
	b.WriteString(`,"message":{"role":`)
	b.Write(jsonstr.AppendString(b.AvailableBuffer(), role))
	b.WriteString(`,"content":`)
	if c.hasContent {
		b.Write(jsonstr.AppendString(b.AvailableBuffer(), c.content.String()))
	} else {
		b.WriteString("null")
	}
	for _, e := range c.extras {
		b.WriteByte(',')
		b.WriteString(e.key)
		b.WriteByte(':')
		b.Write(jsonstr.AppendString(b.AvailableBuffer(), e.text.String()))
	}
	if len(c.tools) > 0 {
		slices.SortFunc(c.tools, func(x, y *toolAsm) int { return x.index - y.index })
		b.WriteString(`,"tool_calls":[`)
		for i, t := range c.tools {
			if i > 0 {
				b.WriteByte(',')
			}
			typ := t.typ
			if typ == "" {
				typ = "function"
			}
			b.WriteString(`{"id":`)
			b.Write(jsonstr.AppendString(b.AvailableBuffer(), t.id))
			b.WriteString(`,"type":`)
			b.Write(jsonstr.AppendString(b.AvailableBuffer(), typ))
			b.WriteString(`,"function":{"name":`)
			b.Write(jsonstr.AppendString(b.AvailableBuffer(), t.name))
			b.WriteString(`,"arguments":`)
			b.Write(jsonstr.AppendString(b.AvailableBuffer(), t.args.String()))
			b.WriteString("}}")
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
}

func (c *choiceAsm) writeLogprobs(b *bytes.Buffer) {
	if !c.hasLP {
		b.WriteString("null")
		return
	}
	b.WriteByte('{')
	for i, f := range c.logprobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.key)
		b.WriteByte(':')
		if !f.isArr {
			b.WriteString("null")
			continue
		}
		b.WriteByte('[')
		b.Write(f.elems)
		b.WriteByte(']')
	}
	b.WriteByte('}')
}
