package bedrock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// The application/vnd.amazon.eventstream framing of ConverseStream answers. A message is
//
//	total length  uint32 (big endian; the whole message, these 4 bytes and the final CRC included)
//	headers length uint32
//	prelude CRC   uint32 (CRC-32/IEEE of the 8 bytes above)
//	headers       headers-length bytes: name length byte, name, value type byte, value
//	payload       total - headers - 16 bytes
//	message CRC   uint32 (CRC-32/IEEE of everything before it)
//
// Header value types: 0 true, 1 false, 2 byte, 3 int16, 4 int32, 5 int64, 6 bytes and 7 string (uint16
// length, then the bytes), 8 timestamp (int64 ms), 9 UUID (16 bytes).
const (
	preludeLen = 12
	// minMessageLen is a message with no headers and no payload.
	minMessageLen = preludeLen + 4
	// MaxMessageLen bounds one message, so a hostile or broken stream cannot make the decoder hold more memory.
	// Bedrock's events are small (a few tokens each); 16 MiB leaves room for any real one.
	MaxMessageLen = 16 << 20
	// readStep is how much of a message is read (and memory grown) at a time: a message that claims a large
	// length costs memory only as its bytes actually arrive.
	readStep = 64 << 10
)

// Errors of the eventstream decoder; they wrap ErrEventStream.
var (
	ErrEventStream = errors.New("bedrock: malformed eventstream")
	errPreludeCRC  = fmt.Errorf("%w: prelude CRC mismatch", ErrEventStream)
	errMessageCRC  = fmt.Errorf("%w: message CRC mismatch", ErrEventStream)
	errTruncated   = fmt.Errorf("%w: stream ends inside a message: %w", ErrEventStream, io.ErrUnexpectedEOF)
)

// event is one decoded eventstream message. Its slices point into the decoder's buffer and are valid only
// until the next call of next.
type event struct {
	messageType   []byte // :message-type: "event", "exception" or "error"
	eventType     []byte // :event-type
	exceptionType []byte // :exception-type
	errorCode     []byte // :error-code
	errorMessage  []byte // :error-message
	payload       []byte
}

// eventDecoder reads eventstream messages one at a time. It is not safe for concurrent use.
type eventDecoder struct {
	r   io.Reader
	buf []byte
	max int
}

func newEventDecoder(r io.Reader) *eventDecoder {
	return &eventDecoder{r: r, max: MaxMessageLen}
}

// next reads and checks the next message. It returns io.EOF at a clean end (between messages), and an error
// wrapping ErrEventStream for a bad CRC, a bad length, bad headers or a stream that stops inside a message.
func (d *eventDecoder) next(ev *event) error {
	*ev = event{}
	if cap(d.buf) < preludeLen {
		d.buf = make([]byte, preludeLen, 4<<10)
	}
	d.buf = d.buf[:preludeLen]
	if _, err := io.ReadFull(d.r, d.buf); err != nil {
		if err == io.ErrUnexpectedEOF {
			return errTruncated
		}
		return err // io.EOF: clean end
	}
	total := binary.BigEndian.Uint32(d.buf[0:4])
	headersLen := binary.BigEndian.Uint32(d.buf[4:8])
	if crc32.ChecksumIEEE(d.buf[:8]) != binary.BigEndian.Uint32(d.buf[8:12]) {
		return errPreludeCRC
	}
	if total < minMessageLen || uint64(total) > uint64(d.max) {
		return fmt.Errorf("%w: message length %d outside [%d, %d]", ErrEventStream, total, minMessageLen, d.max)
	}
	if uint64(headersLen) > uint64(total)-minMessageLen {
		return fmt.Errorf("%w: headers length %d exceeds message length %d", ErrEventStream, headersLen, total)
	}
	for n := int(total); len(d.buf) < n; {
		step := min(n-len(d.buf), readStep)
		at := len(d.buf)
		d.buf = slices.Grow(d.buf, step)[:at+step]
		if _, err := io.ReadFull(d.r, d.buf[at:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return errTruncated
			}
			return err
		}
	}
	end := int(total) - 4
	if crc32.ChecksumIEEE(d.buf[:end]) != binary.BigEndian.Uint32(d.buf[end:]) {
		return errMessageCRC
	}
	if err := parseHeaders(d.buf[preludeLen:preludeLen+int(headersLen)], ev); err != nil {
		return err
	}
	ev.payload = d.buf[preludeLen+int(headersLen) : end]
	return nil
}

// parseHeaders walks the headers, keeping the string ones the translator reads.
func parseHeaders(h []byte, ev *event) error {
	for len(h) > 0 {
		nameLen := int(h[0])
		if nameLen == 0 || len(h) < 1+nameLen+1 {
			return fmt.Errorf("%w: bad header name", ErrEventStream)
		}
		name := h[1 : 1+nameLen]
		typ := h[1+nameLen]
		h = h[2+nameLen:]
		var size int
		switch typ {
		case 0, 1:
			size = 0
		case 2:
			size = 1
		case 3:
			size = 2
		case 4:
			size = 4
		case 5, 8:
			size = 8
		case 9:
			size = 16
		case 6, 7:
			if len(h) < 2 {
				return fmt.Errorf("%w: header %q is cut short", ErrEventStream, name)
			}
			n := int(binary.BigEndian.Uint16(h))
			if len(h) < 2+n {
				return fmt.Errorf("%w: header %q is cut short", ErrEventStream, name)
			}
			if typ == 7 {
				value := h[2 : 2+n]
				switch string(name) { // the conversion does not allocate in a switch
				case ":message-type":
					ev.messageType = value
				case ":event-type":
					ev.eventType = value
				case ":exception-type":
					ev.exceptionType = value
				case ":error-code":
					ev.errorCode = value
				case ":error-message":
					ev.errorMessage = value
				}
			}
			h = h[2+n:]
			continue
		default:
			return fmt.Errorf("%w: header %q has unknown value type %d", ErrEventStream, name, typ)
		}
		if len(h) < size {
			return fmt.Errorf("%w: header %q is cut short", ErrEventStream, name)
		}
		h = h[size:]
	}
	return nil
}

// StreamError is an error event of a ConverseStream answer (an exception such as throttlingException or
// modelStreamErrorException, or an error message): the stream stops with it.
type StreamError struct {
	Type    string
	Message string
}

func (e *StreamError) Error() string {
	return "bedrock: " + e.Type + ": " + e.Message
}

// TranslateStream turns a ConverseStream answer (eventstream frames) into OpenAI chat.completion.chunk events.
// Each Bedrock event is decoded and translated when the caller reads, so every chunk leaves as soon as the
// event that makes it has arrived:
//
//	messageStart                  → delta {"role":"assistant","content":""}
//	contentBlockStart (toolUse)   → delta.tool_calls[{index, id, type, function{name, arguments:""}}]
//	contentBlockDelta text        → delta.content
//	contentBlockDelta toolUse     → delta.tool_calls[{index, function{arguments}}]
//	contentBlockDelta reasoning   → delta.content_blocks[{index, delta{thinking|signature}}] unless strict
//	messageStop                   → delta {} with finish_reason
//	metadata (usage)              → a chunk with "choices": [] and "usage"
//	end of stream                 → data: [DONE]
//
// An exception or error message, a frame that fails its checks, or an end before messageStop makes Read return
// an error (never io.EOF).
func (a *Adapter) TranslateStream(t *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	s := &streamTranslator{body: body, dec: newEventDecoder(body), strict: c.Strict, tools: map[int]int{}}
	s.w.Start(a.newID(), a.now().Unix(), requestModel(c))
	return s
}

// streamTranslator is the reader TranslateStream returns. It is not safe for concurrent use.
type streamTranslator struct {
	body    io.ReadCloser
	dec     *eventDecoder
	ev      event
	delta   evContentBlockDelta // reused by every contentBlockDelta
	strict  bool
	w       schema.ChunkWriter
	out     []byte      // translated bytes not yet read
	off     int         // read position in out
	err     error       // the error Read returns once out is drained
	tools   map[int]int // contentBlockIndex → tool_calls index
	stopped bool        // messageStop seen
}

func (s *streamTranslator) Read(p []byte) (int, error) {
	for s.off >= len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		s.out, s.off = s.out[:0], 0
		s.err = s.step()
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

func (s *streamTranslator) Close() error { return s.body.Close() }

// step decodes one message and appends what it translates to; its error ends the stream after out is read.
func (s *streamTranslator) step() error {
	err := s.dec.next(&s.ev)
	if err == io.EOF {
		if !s.stopped {
			return fmt.Errorf("bedrock: stream ended before messageStop: %w", io.ErrUnexpectedEOF)
		}
		s.out = append(s.out, schema.DoneEvent...)
		return io.EOF
	}
	if err != nil {
		return err
	}
	ev := &s.ev
	switch string(ev.messageType) {
	case "event", "":
		return s.translate(ev)
	case "exception":
		var e evException
		_ = json.Unmarshal(ev.payload, &e)
		if e.Message == "" {
			e.Message = e.MessageU
		}
		return &StreamError{Type: string(ev.exceptionType), Message: e.Message}
	case "error":
		return &StreamError{Type: string(ev.errorCode), Message: string(ev.errorMessage)}
	default:
		return fmt.Errorf("%w: unknown message type %q", ErrEventStream, ev.messageType)
	}
}

func (s *streamTranslator) translate(ev *event) error {
	switch string(ev.eventType) {
	case "messageStart":
		s.out = s.w.Role(s.out)
	case "contentBlockStart":
		var e evContentBlockStart
		if err := json.Unmarshal(ev.payload, &e); err != nil {
			return badEvent("contentBlockStart", err)
		}
		if tu := e.Start.ToolUse; tu != nil {
			s.out = s.w.ToolCallStart(s.out, s.toolIndex(e.ContentBlockIndex), tu.ToolUseID, tu.Name)
		}
	case "contentBlockDelta":
		e := s.resetDelta()
		if err := json.Unmarshal(ev.payload, e); err != nil {
			return badEvent("contentBlockDelta", err)
		}
		// Bedrock's string values are valid JSON string literals already: they are spliced in as they came.
		d := &e.Delta
		switch {
		case isJSONString(d.Text):
			s.out = s.w.ContentJSON(s.out, d.Text)
		case d.ToolUse != nil && isJSONString(d.ToolUse.Input):
			s.out = s.w.ToolCallArgsJSON(s.out, s.toolIndex(e.ContentBlockIndex), d.ToolUse.Input)
		case d.ReasoningContent != nil && !s.strict:
			rc := d.ReasoningContent
			switch {
			case isJSONString(rc.Text):
				s.out = s.w.BlockPieceJSON(s.out, e.ContentBlockIndex, "thinking", rc.Text)
			case isJSONString(rc.Signature):
				s.out = s.w.BlockPieceJSON(s.out, e.ContentBlockIndex, "signature", rc.Signature)
			case isJSONString(rc.RedactedContent):
				s.out = s.w.BlockPieceJSON(s.out, e.ContentBlockIndex, "data", rc.RedactedContent)
			}
		}
	case "messageStop":
		var e evMessageStop
		if err := json.Unmarshal(ev.payload, &e); err != nil {
			return badEvent("messageStop", err)
		}
		s.stopped = true
		s.out = s.w.Finish(s.out, finishReason(e.StopReason), nil)
	case "metadata":
		var e evMetadata
		if err := json.Unmarshal(ev.payload, &e); err != nil {
			return badEvent("metadata", err)
		}
		if u := usage(e.Usage); u != nil {
			s.out = s.w.UsageChunk(s.out, u)
		}
	}
	// contentBlockStop, text block starts and events added later carry nothing for OpenAI's chunks.
	return nil
}

// resetDelta empties the reused contentBlockDelta payload while keeping its buffers: deltas are most of a
// stream, and decoding into the same RawMessages again allocates nothing once they have grown.
func (s *streamTranslator) resetDelta() *evContentBlockDelta {
	e := &s.delta
	e.ContentBlockIndex = 0
	e.Delta.Text = e.Delta.Text[:0]
	if tu := e.Delta.ToolUse; tu != nil {
		tu.Input = tu.Input[:0]
	}
	if rc := e.Delta.ReasoningContent; rc != nil {
		rc.Text, rc.Signature, rc.RedactedContent = rc.Text[:0], rc.Signature[:0], rc.RedactedContent[:0]
	}
	return e
}

func (s *streamTranslator) toolIndex(block int) int {
	idx, ok := s.tools[block]
	if !ok {
		idx = len(s.tools)
		s.tools[block] = idx
	}
	return idx
}

func badEvent(name string, err error) error {
	return fmt.Errorf("%w: %s payload: %v", ErrEventStream, name, err)
}

// isJSONString reports whether raw (as decoded by encoding/json, so valid) is a JSON string literal, which can
// be spliced into a chunk as it is.
func isJSONString(raw json.RawMessage) bool {
	return len(raw) >= 2 && raw[0] == '"'
}
