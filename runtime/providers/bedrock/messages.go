package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/providers/internal/claude"
)

// Claude models on Bedrock speak Anthropic's Messages API through InvokeModel: a /v1/messages request for one
// is sent as the caller wrote it, but for the model, which moves to the URL, "stream", which is the choice of
// operation (InvokeModelWithResponseStream), and anthropic_version, which Bedrock wants in the body. The whole
// answer is Anthropic's message and passes through; the streamed one comes in the AWS event stream, one
// Anthropic event per chunk, and MessagesStream turns it into Anthropic's server-sent events. Other models get
// the request translated by the engine and sent through Converse.

// messagesVersion is the anthropic_version Bedrock wants in the body of Claude requests.
const messagesVersion = "bedrock-2023-05-31"

var _ providers.NativeMessages = (*Adapter)(nil)

// NativeMessages reports whether model is a Claude model ("anthropic.claude-...", an inference profile such as
// "us.anthropic.claude-...", or an ARN that names one).
func (a *Adapter) NativeMessages(_ *providers.Target, model string) bool { return isClaude(model) }

func isClaude(model string) bool {
	return strings.Contains(model, "anthropic.claude") || strings.Contains(model, "claude")
}

// messagesRequest is the InvokeModel body of a native Messages call, and its model.
func messagesRequest(c *providers.Call) ([]byte, []byte, error) {
	body, model, err := claude.CloudBody(c.Body, messagesVersion, false)
	if err != nil {
		return nil, nil, err
	}
	if !isClaude(model) {
		return nil, nil, gwerr.BadRequest("model", "bedrock serves /v1/messages natively for Claude models only, not %q", model)
	}
	return body, []byte(model), nil
}

// MessagesStream turns an InvokeModelWithResponseStream answer of a Claude model (eventstream frames whose
// chunk events carry {"bytes": base64 of one Anthropic event}) into Anthropic's server-sent events,
// "event: <type>\ndata: <event>\n\n", each as soon as its frame has been read. An exception or error message,
// or a frame that fails its checks, makes Read return an error (never io.EOF).
func (a *Adapter) MessagesStream(_ *providers.Target, _ *providers.Call, body io.ReadCloser) io.ReadCloser {
	return &messagesStream{body: body, dec: newEventDecoder(body)}
}

// messagesStream is the reader MessagesStream returns. It is not safe for concurrent use.
type messagesStream struct {
	body io.ReadCloser
	dec  *eventDecoder
	ev   event
	out  []byte // events not yet read
	off  int
	err  error // the error Read returns once out is drained
}

func (s *messagesStream) Read(p []byte) (int, error) {
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

func (s *messagesStream) Close() error { return s.body.Close() }

// step decodes one frame and appends the event it carries.
func (s *messagesStream) step() error {
	if err := s.dec.next(&s.ev); err != nil {
		return err // io.EOF: the stream ended between frames
	}
	ev := &s.ev
	switch string(ev.messageType) {
	case "event", "":
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
	if string(ev.eventType) != "chunk" {
		return nil // nothing of Anthropic's
	}
	var chunk struct {
		Bytes []byte `json:"bytes"` // base64 in JSON: encoding/json decodes it
	}
	if err := json.Unmarshal(ev.payload, &chunk); err != nil {
		return badEvent("chunk", err)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(chunk.Bytes, &head); err != nil || head.Type == "" || strings.ContainsAny(head.Type, "\r\n") {
		return badEvent("chunk", fmt.Errorf("bytes are not an Anthropic event: %.64q", chunk.Bytes))
	}
	s.out = append(s.out, "event: "...)
	s.out = append(s.out, head.Type...)
	s.out = append(s.out, "\ndata: "...)
	s.out = appendOneLine(s.out, chunk.Bytes)
	s.out = append(s.out, "\n\n"...)
	return nil
}

// appendOneLine appends the JSON event, whose line breaks can only be whitespace between its tokens (inside
// its strings they are escaped), as one line: a server-sent event's data ends at a line break.
func appendOneLine(dst, event []byte) []byte {
	if !bytes.ContainsAny(event, "\r\n") {
		return append(dst, event...)
	}
	for _, c := range event {
		if c == '\n' || c == '\r' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}
