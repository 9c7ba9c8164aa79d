package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/schema"
)

// ErrNotReplayable is returned by Replay for a stored answer that is not a chat.completion or text_completion
// with choices (an embeddings list, an error body).
var ErrNotReplayable = errors.New("cache: the stored answer cannot be replayed as a stream")

// Replay turns a stored non-streamed answer (chat.completion or text_completion JSON, as a provider or
// NewRecorder made it) into the SSE stream the same request with "stream": true would have had, so a cached
// answer serves streaming and non-streaming callers alike. Every event is "data: <json>\n\n" and the stream
// ends with "data: [DONE]\n\n".
//
// For a chat.completion, each chunk is {id, object: "chat.completion.chunk", created, model,
// [system_fingerprint], [service_tier], choices: [{index, delta, logprobs, finish_reason}]}, finish_reason
// null until the last. Per choice, in order: a chunk whose delta is {role, content: ""} (content null when the
// stored content is null, as OpenAI streams tool calls); one chunk with the whole content, the message's other
// string fields (refusal, reasoning_content) and the choice's logprobs, when there is any of them; one chunk
// per tool call {index, id, type, function: {name, arguments}}; a chunk with an empty delta and the
// finish_reason. Then, only when the stored answer has usage, a chunk with choices [] and the usage.
// Non-string message fields other than tool_calls (content_blocks, annotations, audio) are not replayed.
//
// A text_completion becomes text_completion chunks: per choice the whole text (with its logprobs), then an
// empty text with the finish_reason; then the usage chunk as above.
func Replay(answer []byte) (io.ReadCloser, error) {
	var a storedAnswer
	if err := a.parse(answer); err != nil {
		return nil, fmt.Errorf("cache: replay: %w", err)
	}
	text := false
	switch string(a.Object) {
	case `"chat.completion"`:
	case `"text_completion"`:
		text = true
	case "", "null":
		if len(a.Choices) > 0 && isNull(a.Choices[0].Message) && !isNull(a.Choices[0].Text) {
			text = true
		}
	default:
		return nil, ErrNotReplayable
	}
	if len(a.Choices) == 0 {
		return nil, ErrNotReplayable
	}
	b := make([]byte, 0, 2*len(answer)+512)
	r := replayer{b: b, prefix: a.prefix(text)}
	for i := range a.Choices {
		c := &a.Choices[i]
		var err error
		if text {
			err = r.textChoice(c)
		} else {
			err = r.chatChoice(c)
		}
		if err != nil {
			return nil, fmt.Errorf("cache: replay: %w", err)
		}
	}
	if !isNull(a.Usage) {
		r.b = append(r.b, r.prefix...)
		r.b = appendCompact(append(r.b, `],"usage":`...), a.Usage)
		r.b = append(r.b, "}\n\n"...)
	}
	r.b = append(r.b, schema.DoneEvent...)
	return io.NopCloser(bytes.NewReader(r.b)), nil
}

// storedAnswer holds the raw members of a stored answer that a replay uses, as written (the last of
// duplicates, as encoding/json would read them).
type storedAnswer struct {
	ID, Object, Created, Model, SystemFingerprint, ServiceTier, Usage []byte
	Choices                                                           []storedChoice
}

type storedChoice struct {
	Index                                 int
	Message, Text, FinishReason, Logprobs []byte
}

// parse reads a stored answer with the package's JSON scanner (checking its syntax once) rather than
// encoding/json: a replay runs on every cache hit of a streamed request.
func (a *storedAnswer) parse(b []byte) error {
	i := jsonstr.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotObject
	}
	end, err := eachMember(b, i, 0, func(k0, k1, v0, v1 int) error {
		v := b[v0:v1]
		switch string(b[k0:k1]) {
		case `"id"`:
			a.ID = v
		case `"object"`:
			a.Object = v
		case `"created"`:
			a.Created = v
		case `"model"`:
			a.Model = v
		case `"system_fingerprint"`:
			a.SystemFingerprint = v
		case `"service_tier"`:
			a.ServiceTier = v
		case `"usage"`:
			a.Usage = v
		case `"choices"`:
			a.Choices = a.Choices[:0]
			if v[0] != '[' {
				return ErrNotReplayable
			}
			_, err := eachElement(b, v0, 1, func(e0, e1 int) error {
				if b[e0] != '{' {
					return errors.New("a choice is not an object")
				}
				c := storedChoice{Index: len(a.Choices)}
				_, err := eachMember(b, e0, 2, func(k0, k1, v0, v1 int) error {
					v := b[v0:v1]
					switch string(b[k0:k1]) {
					case `"index"`:
						n, err := strconv.Atoi(string(v))
						if err != nil || n < 0 {
							return errors.New("a choice's index is not a number")
						}
						c.Index = n
					case `"message"`:
						c.Message = v
					case `"text"`:
						c.Text = v
					case `"finish_reason"`:
						c.FinishReason = v
					case `"logprobs"`:
						c.Logprobs = v
					}
					return nil
				})
				a.Choices = append(a.Choices, c)
				return err
			})
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if jsonstr.SkipSpace(b, end) != len(b) {
		return errSyntax
	}
	return nil
}

// prefix is what every chunk starts with: `data: {"id":...,"choices":[`.
func (a *storedAnswer) prefix(text bool) []byte {
	b := make([]byte, 0, 128+len(a.ID)+len(a.Model)+len(a.SystemFingerprint)+len(a.ServiceTier))
	b = appendRaw(append(b, `data: {"id":`...), a.ID, `""`)
	if text {
		b = append(b, `,"object":"text_completion","created":`...)
	} else {
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
	}
	b = appendRaw(b, a.Created, "0")
	b = appendRaw(append(b, `,"model":`...), a.Model, `""`)
	if !isNull(a.SystemFingerprint) {
		b = appendRaw(append(b, `,"system_fingerprint":`...), a.SystemFingerprint, "null")
	}
	if !isNull(a.ServiceTier) {
		b = appendRaw(append(b, `,"service_tier":`...), a.ServiceTier, "null")
	}
	return append(b, `,"choices":[`...)
}

// appendRaw appends a raw JSON value of the stored answer compacted (it may be indented, and an SSE data line
// must not break), or def when it is absent.
func appendRaw(b, raw []byte, def string) []byte {
	if len(raw) == 0 {
		return append(b, def...)
	}
	return appendCompact(b, raw)
}

// appendCompact appends the valid JSON value v without the white space outside its strings.
func appendCompact(b, v []byte) []byte {
	inString := false
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case jsonstr.IsSpace(c):
			b = append(b, v[start:i]...)
			start = i + 1
		}
	}
	return append(b, v[start:]...)
}

type replayer struct {
	b      []byte
	prefix []byte
}

// chunk starts a chunk of choice index: the prefix, the index and the delta key; end finishes it.
func (r *replayer) chunk(index int, deltaKey string) {
	r.b = append(r.b, r.prefix...)
	r.b = strconv.AppendInt(append(r.b, `{"index":`...), int64(index), 10)
	r.b = append(append(append(r.b, `,"`...), deltaKey...), `":`...)
}

func (r *replayer) end(logprobs, finish []byte) {
	r.b = appendRaw(append(r.b, `,"logprobs":`...), logprobs, "null")
	r.b = appendRaw(append(r.b, `,"finish_reason":`...), finish, "null")
	r.b = append(r.b, "}]}\n\n"...)
}

func (r *replayer) chatChoice(c *storedChoice) error {
	msg := c.Message
	if isNull(msg) || msg[0] != '{' {
		return errors.New("choice without a message")
	}
	var role, content []byte
	var calls [][4][]byte  // id, type, name, arguments
	var extras [][2][]byte // other string members: key and value, both quoted
	_, err := eachMember(msg, 0, 0, func(k0, k1, v0, v1 int) error {
		key, val := msg[k0:k1], msg[v0:v1]
		switch string(key) {
		case `"role"`:
			role = val
		case `"content"`:
			content = val
		case `"tool_calls"`:
			calls = calls[:0]
			if isNull(val) {
				return nil
			}
			if val[0] != '[' {
				return errors.New("tool_calls is not an array")
			}
			_, err := eachElement(msg, v0, 1, func(e0, e1 int) error {
				if msg[e0] != '{' {
					return errors.New("a tool call is not an object")
				}
				var call [4][]byte
				_, err := eachMember(msg, e0, 2, func(k0, k1, v0, v1 int) error {
					switch string(msg[k0:k1]) {
					case `"id"`:
						call[0] = msg[v0:v1]
					case `"type"`:
						call[1] = msg[v0:v1]
					case `"function"`:
						if msg[v0] != '{' {
							return nil
						}
						_, err := eachMember(msg, v0, 3, func(k0, k1, v0, v1 int) error {
							switch string(msg[k0:k1]) {
							case `"name"`:
								call[2] = msg[v0:v1]
							case `"arguments"`:
								call[3] = msg[v0:v1]
							}
							return nil
						})
						return err
					}
					return nil
				})
				calls = append(calls, call)
				return err
			})
			return err
		default:
			if val[0] == '"' {
				extras = append(extras, [2][]byte{key, val})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !isNull(content) && content[0] != '"' {
		return errors.New("message content is not a string") // content parts are for requests
	}
	if isNull(role) {
		role = []byte(`"assistant"`)
	}
	r.chunk(c.Index, "delta")
	r.b = appendCompact(append(r.b, `{"role":`...), role)
	if isNull(content) {
		r.b = append(r.b, `,"content":null}`...)
	} else {
		r.b = append(r.b, `,"content":""}`...)
	}
	r.end(nil, nil)
	hasText := !isNull(content) && string(content) != `""`
	if hasText || len(extras) > 0 || !isNull(c.Logprobs) {
		r.chunk(c.Index, "delta")
		r.b = append(r.b, '{')
		if hasText {
			r.b = append(append(r.b, `"content":`...), content...)
		}
		for i, e := range extras {
			if hasText || i > 0 {
				r.b = append(r.b, ',')
			}
			r.b = append(append(append(r.b, e[0]...), ':'), e[1]...)
		}
		r.b = append(r.b, '}')
		r.end(c.Logprobs, nil)
	}
	for i, call := range calls {
		r.chunk(c.Index, "delta")
		r.b = strconv.AppendInt(append(r.b, `{"tool_calls":[{"index":`...), int64(i), 10)
		r.b = appendRaw(append(r.b, `,"id":`...), call[0], `""`)
		r.b = appendRaw(append(r.b, `,"type":`...), call[1], `"function"`)
		r.b = appendRaw(append(r.b, `,"function":{"name":`...), call[2], `""`)
		r.b = appendRaw(append(r.b, `,"arguments":`...), call[3], `""`)
		r.b = append(r.b, "}}]}"...)
		r.end(nil, nil)
	}
	r.chunk(c.Index, "delta")
	r.b = append(r.b, "{}"...)
	r.end(nil, c.FinishReason)
	return nil
}

func (r *replayer) textChoice(c *storedChoice) error {
	if !isNull(c.Text) && c.Text[0] != '"' {
		return errors.New("choice text is not a string")
	}
	r.chunk(c.Index, "text")
	r.b = appendRaw(r.b, c.Text, `""`)
	r.end(c.Logprobs, nil)
	r.chunk(c.Index, "text")
	r.b = append(r.b, `""`...)
	r.end(nil, c.FinishReason)
	return nil
}
