package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// hookStream passes a streamed answer through unchanged while it assembles the answer's text; at the end it
// runs the output guardrails on that text and sends their result as one more event before [DONE]
// (DESIGN.md): data: {"hook_results": ...}. A deny instead ends the stream with data: {"error": ...} and no
// [DONE].
//
// A responses event stream has no [DONE]: its end is the event that carries the whole response
// (response.completed, response.incomplete or response.failed). The guardrails run before that event is
// passed on, on the text of its response.output_text.delta events; a deny replaces it with an error event and
// ends the stream, so a denied answer never reaches the caller whole. A stream that ends without either end is
// cut off after the guardrails ran on what came (never passed on unjudged). Anthropic's Messages event stream
// is read the same way: its end is message_stop, its text the text_delta of content_block_delta events, and a
// deny is Anthropic's error event.
type hookStream struct {
	src       io.ReadCloser
	br        *bufio.Reader
	long      []byte // a line longer than br's buffer, assembled
	pending   bytes.Buffer
	text      strings.Builder
	done      bool
	responses bool   // the stream is a responses (or Anthropic Messages) event stream
	eventLine []byte // a responses stream's "event:" line, held until its data line shows whether it ends the stream
	finish    func(text string) (event []byte, deny bool)
}

func (h *hookStream) Read(p []byte) (int, error) {
	for h.pending.Len() == 0 {
		if h.done {
			return 0, io.EOF
		}
		line, err := h.readLine()
		if len(line) > 0 {
			if h.responses {
				h.responsesLine(line)
			} else {
				h.line(line)
			}
		}
		if err != nil {
			if h.responses && !h.done {
				// The stream ended without its final event: judge what came, and pass on only a deny.
				h.done = true
				if event, deny := h.finish(h.text.String()); deny {
					h.pending.Write(event)
				}
			}
			if h.pending.Len() > 0 {
				break
			}
			return 0, err
		}
	}
	return h.pending.Read(p)
}

// readLine returns the next line with its line end; the slice is valid until the next call. Lines are read
// whole: the guardrails must judge all of the text.
func (h *hookStream) readLine() ([]byte, error) {
	line, err := h.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	h.long = append(h.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = h.br.ReadSlice('\n')
		h.long = append(h.long, line...)
	}
	return h.long, err
}

// line handles one line of the upstream stream.
func (h *hookStream) line(line []byte) {
	payload, isData := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
	payload = bytes.TrimSpace(payload)
	if isData && string(payload) == "[DONE]" {
		event, deny := h.finish(h.text.String())
		h.pending.Write(event)
		if !deny {
			h.pending.WriteString(schema.DoneEvent)
		}
		h.done = true // anything after [DONE] is dropped
		return
	}
	if isData {
		var chunk streamChunk
		if json.Unmarshal(payload, &chunk) == nil && len(chunk.Choices) > 0 {
			h.text.WriteString(chunk.text(0))
		}
	}
	h.pending.Write(line)
}

// responsesLine handles one line of a responses event stream.
func (h *hookStream) responsesLine(line []byte) {
	trimmed := bytes.TrimRight(line, "\r\n")
	if bytes.HasPrefix(trimmed, []byte("event:")) {
		h.eventLine = append(h.eventLine[:0], line...)
		return
	}
	payload, isData := bytes.CutPrefix(trimmed, []byte("data:"))
	if !isData {
		h.pending.Write(h.eventLine)
		h.eventLine = h.eventLine[:0]
		h.pending.Write(line)
		return
	}
	var ev struct {
		Type  string          `json:"type"`
		Delta json.RawMessage `json:"delta"`
	}
	_ = json.Unmarshal(bytes.TrimSpace(payload), &ev)
	switch ev.Type {
	case "response.output_text.delta":
		var delta string
		_ = json.Unmarshal(ev.Delta, &delta)
		h.text.WriteString(delta)
	case "content_block_delta": // Anthropic's Messages stream: {"delta": {"type": "text_delta", "text": ...}}
		var delta struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(ev.Delta, &delta)
		h.text.WriteString(delta.Text)
	case "response.completed", "response.incomplete", "response.failed", "message_stop":
		h.done = true
		if event, deny := h.finish(h.text.String()); deny {
			h.eventLine = h.eventLine[:0]
			h.pending.Write(event)
			return
		}
	}
	h.pending.Write(h.eventLine)
	h.eventLine = h.eventLine[:0]
	h.pending.Write(line)
	if h.done {
		h.pending.WriteString("\n") // the blank line that ends the final event: nothing after it is read
	}
}

func (h *hookStream) Close() error { return h.src.Close() }

// hookStreamBuffer holds a few typical chunks: what a guarded stream keeps while open (a longer line is
// assembled in hookStream.long).
const hookStreamBuffer = 4 << 10

// streamWithOutputHooks wraps a streamed answer so that its output guardrails run on the assembled text.
func (e *Engine) streamWithOutputHooks(ctx context.Context, st *state, set *guardrails.Set, out *outcome, results HookResults) {
	src := out.stream.ReadCloser
	messages := st.req.Endpoint == providers.Messages
	responses := st.req.Endpoint == providers.Responses || messages // both end with an event of their own
	out.stream.ReadCloser = &hookStream{src: src, br: bufio.NewReaderSize(src, hookStreamBuffer), responses: responses, finish: func(text string) ([]byte, bool) {
		after := e.runHooks(ctx, st, set, guardrails.StageAfter, text)
		results.After = after.Results
		e.runAsync(ctx, st.req.TraceID, after.Async)
		if after.Deny && messages {
			// Anthropic's error event, which its SDKs raise as an error.
			body := anthropicmsg.ErrorBody(gwerr.StatusHooksFailed, "the answer was denied by a guardrail or hook")
			return append(append([]byte("event: error\ndata: "), body...), "\n\n"...), true
		}
		if after.Deny && responses {
			// The responses stream's own error event, which the SDKs raise as an error.
			body, _ := json.Marshal(struct {
				Type        string      `json:"type"`
				Code        string      `json:"code"`
				Message     string      `json:"message"`
				Param       *string     `json:"param"`
				HookResults HookResults `json:"hook_results"`
			}{"error", gwerr.CodeHooksFailed, "the answer was denied by a guardrail or hook", nil, results})
			return append(append([]byte("event: error\ndata: "), body...), "\n\n"...), true
		}
		if after.Deny {
			return append(append([]byte("data: "), hooksDenied(results)...), "\n\n"...), true
		}
		if responses {
			return nil, false // a responses stream has no place for an extra event: the results are not sent
		}
		body, _ := json.Marshal(map[string]any{"hook_results": results})
		return append(append([]byte("data: "), body...), "\n\n"...), false
	}}
}
