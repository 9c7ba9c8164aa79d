package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/schema"
)

// hookStream passes a streamed answer through unchanged while it assembles the answer's text; at the end it
// runs the output guardrails on that text and sends their result as one more event before [DONE]
// (DESIGN.md): data: {"hook_results": ...}. A deny instead ends the stream with data: {"error": ...} and no
// [DONE].
type hookStream struct {
	src     io.ReadCloser
	br      *bufio.Reader
	pending bytes.Buffer
	text    strings.Builder
	done    bool
	finish  func(text string) (event []byte, deny bool)
}

func (h *hookStream) Read(p []byte) (int, error) {
	for h.pending.Len() == 0 {
		if h.done {
			return 0, io.EOF
		}
		line, err := h.br.ReadBytes('\n')
		if len(line) > 0 {
			h.line(line)
		}
		if err != nil {
			if h.pending.Len() > 0 {
				break
			}
			return 0, err
		}
	}
	return h.pending.Read(p)
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

func (h *hookStream) Close() error { return h.src.Close() }

// streamWithOutputHooks wraps a streamed answer so that its output guardrails run on the assembled text.
func (e *Engine) streamWithOutputHooks(ctx context.Context, st *state, set *guardrails.Set, out *outcome, results hookResults) {
	src := out.stream.ReadCloser
	out.stream.ReadCloser = &hookStream{src: src, br: bufio.NewReaderSize(src, 32<<10), finish: func(text string) ([]byte, bool) {
		after := set.Run(ctx, guardrails.StageAfter, checkInput(st, guardrails.StageAfter, text), requestView{st})
		results.After = after.Results
		e.runAsync(ctx, st.req.TraceID, after.Async)
		if after.Deny {
			return append(append([]byte("data: "), hooksDenied(results)...), "\n\n"...), true
		}
		body, _ := json.Marshal(map[string]any{"hook_results": results})
		return append(append([]byte("data: "), body...), "\n\n"...), false
	}}
}
