package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrNotReplayable is returned by Replay for a stored message it cannot stream as Anthropic would: not a
// message, or one with a content block whose deltas Replay does not write (server tools' blocks, citations).
var ErrNotReplayable = errors.New("anthropicmsg: the stored message cannot be replayed as a stream")

// Replay turns a stored whole message (a cache hit) into the event stream a streamed request expects, framed
// as Anthropic frames it ("event: X\ndata: {...}\n\n"): message_start with the message's members but content
// [], stop_reason and stop_sequence null and usage as stored but output_tokens 1 (or the stored count when it
// is less); a ping; per block content_block_start (text "", tool_use input {}, thinking "", redacted_thinking
// whole), one delta with the whole text, the input as partial_json or the thinking then a signature_delta,
// and content_block_stop; message_delta with stop_reason, stop_sequence and usage {output_tokens}; and
// message_stop. Record reading the stream gives the message back.
func Replay(message []byte) (io.ReadCloser, error) {
	ms, err := members(message)
	if err != nil {
		return nil, fmt.Errorf("anthropicmsg: replay: %w", err)
	}
	var typ string
	var content []json.RawMessage
	var usage []member
	stopReason, stopSeq := json.RawMessage("null"), json.RawMessage("null")
	for _, x := range ms {
		switch x.key {
		case "type":
			err = json.Unmarshal(x.value, &typ)
		case "content":
			err = json.Unmarshal(x.value, &content)
		case "usage":
			if !isNull(x.value) {
				usage, err = members(x.value)
			}
		case "stop_reason":
			stopReason = x.value
		case "stop_sequence":
			stopSeq = x.value
		}
		if err != nil {
			return nil, fmt.Errorf("anthropicmsg: replay: %s: %w", x.key, err)
		}
	}
	if typ != "message" {
		return nil, ErrNotReplayable
	}
	r := replayer{b: make([]byte, 0, 2*len(message)+512)}
	if err := r.start(ms, usage); err != nil {
		return nil, err
	}
	for i, raw := range content {
		if err := r.block(i, raw); err != nil {
			return nil, err
		}
	}
	var out json.RawMessage = []byte("0")
	for _, x := range usage {
		if x.key == "output_tokens" {
			out = x.value
		}
	}
	r.b = appendEventHead(r.b, "message_delta")
	r.b = append(r.b, `,"delta":{"stop_reason":`...)
	if err := r.compact(stopReason); err != nil {
		return nil, err
	}
	r.b = append(r.b, `,"stop_sequence":`...)
	if err := r.compact(stopSeq); err != nil {
		return nil, err
	}
	r.b = append(r.b, `},"usage":{"output_tokens":`...)
	if err := r.compact(out); err != nil {
		return nil, err
	}
	r.b = append(r.b, "}}\n\n"...)
	r.b = append(r.b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	return io.NopCloser(bytes.NewReader(r.b)), nil
}

type replayer struct{ b []byte }

// compact appends the JSON value v without its insignificant white space (a data line must not break).
func (r *replayer) compact(v json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return fmt.Errorf("anthropicmsg: replay: %w", err)
	}
	r.b = append(r.b, buf.Bytes()...)
	return nil
}

// object appends the members as a JSON object.
func (r *replayer) object(ms []member) error {
	var buf bytes.Buffer
	if err := writeObject(&buf, ms); err != nil {
		return fmt.Errorf("anthropicmsg: replay: %w", err)
	}
	r.b = append(r.b, buf.Bytes()...)
	return nil
}

// start writes message_start and a ping.
func (r *replayer) start(ms, usage []member) error {
	head := make([]member, 0, len(ms)+1)
	hasContent := false
	for _, x := range ms {
		switch x.key {
		case "content":
			x.value, hasContent = json.RawMessage("[]"), true
		case "stop_reason", "stop_sequence":
			x.value = json.RawMessage("null")
		case "usage":
			if usage == nil {
				break
			}
			u := make([]member, len(usage))
			for i, m := range usage {
				u[i] = m
				if m.key == "output_tokens" {
					if n, err := strconv.ParseInt(string(bytes.TrimSpace(m.value)), 10, 64); err != nil || n > 1 {
						u[i].value = json.RawMessage("1")
					}
				}
			}
			var buf bytes.Buffer
			if err := writeObject(&buf, u); err != nil {
				return fmt.Errorf("anthropicmsg: replay: usage: %w", err)
			}
			x.value = buf.Bytes()
		}
		head = append(head, x)
	}
	if !hasContent {
		head = append(head, member{"content", json.RawMessage("[]")})
	}
	r.b = append(appendEventHead(r.b, "message_start"), `,"message":`...)
	if err := r.object(head); err != nil {
		return err
	}
	r.b = append(r.b, "}\n\n"...)
	r.b = append(r.b, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...)
	return nil
}

// block writes the events of the content block at index.
func (r *replayer) block(index int, raw json.RawMessage) error {
	ms, err := members(raw)
	if err != nil {
		return fmt.Errorf("anthropicmsg: replay: content[%d]: %w", index, err)
	}
	// Members are read by their exact names, as Record reads them (encoding/json would match "tYpe" too).
	var b struct{ Type, Text, Thinking, Signature string }
	var input, citations json.RawMessage
	for _, x := range ms {
		var err error
		switch x.key {
		case "type":
			err = json.Unmarshal(x.value, &b.Type)
		case "text":
			err = json.Unmarshal(x.value, &b.Text)
		case "thinking":
			err = json.Unmarshal(x.value, &b.Thinking)
		case "signature":
			err = json.Unmarshal(x.value, &b.Signature)
		case "input":
			input = x.value
		case "citations":
			citations = x.value
		}
		if err != nil {
			return fmt.Errorf("anthropicmsg: replay: content[%d].%s: %w", index, x.key, err)
		}
	}
	set := func(key, value string) {
		for i := range ms {
			if ms[i].key == key {
				ms[i].value = json.RawMessage(value)
				return
			}
		}
		ms = append(ms, member{key, json.RawMessage(value)})
	}
	var deltas [][3]string // delta type, its field, and the value
	switch b.Type {
	case "text":
		if !isNull(citations) && string(bytes.TrimSpace(citations)) != "[]" {
			return ErrNotReplayable // citations come in citations_delta events, which Record does not read
		}
		set("text", `""`)
		deltas = append(deltas, [3]string{"text_delta", "text", b.Text})
	case "tool_use":
		partial := []byte("{}")
		if !isNull(input) {
			var buf bytes.Buffer
			if err := json.Compact(&buf, input); err != nil {
				return fmt.Errorf("anthropicmsg: replay: content[%d].input: %w", index, err)
			}
			partial = buf.Bytes()
		}
		set("input", "{}")
		deltas = append(deltas, [3]string{"input_json_delta", "partial_json", string(partial)})
	case "thinking":
		set("thinking", `""`)
		for i := range ms {
			if ms[i].key == "signature" {
				ms = append(ms[:i], ms[i+1:]...)
				break
			}
		}
		deltas = append(deltas, [3]string{"thinking_delta", "thinking", b.Thinking})
		if b.Signature != "" {
			deltas = append(deltas, [3]string{"signature_delta", "signature", b.Signature})
		}
	case "redacted_thinking":
	default:
		return ErrNotReplayable
	}
	d := appendEventHead(r.b, "content_block_start")
	r.b = append(strconv.AppendInt(append(d, `,"index":`...), int64(index), 10), `,"content_block":`...)
	if err := r.object(ms); err != nil {
		return err
	}
	r.b = append(r.b, "}\n\n"...)
	for _, x := range deltas {
		if x[2] != "" || x[0] == "input_json_delta" {
			r.b = appendDelta(r.b, index, x[0], x[1], x[2])
		}
	}
	d = appendEventHead(r.b, "content_block_stop")
	r.b = append(strconv.AppendInt(append(d, `,"index":`...), int64(index), 10), "}\n\n"...)
	return nil
}
