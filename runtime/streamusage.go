package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/internal/sse"
	"github.com/llmgw/gateway/runtime/providers"
)

// Usage on every stream: a streamed chat completion whose body does not ask for usage (stream_options.
// include_usage) still gets it from the provider, so that rate limits, budgets, metrics and logs count the
// provider's own figures rather than an estimate; the caller is shown the usage chunk only when it asked.
//   - To an adapter that passes the body upstream as it is (providers.StreamUsageAsker: OpenAI and the hosts
//     that speak its format and take the option), the attempt sends the body with include_usage set
//     (askStreamUsage, bodypatch.go).
//   - The translating adapters (Anthropic, Bedrock, Gemini, Vertex AI) report usage whether asked or not.
//   - Either way, when the caller did not ask, hideUsageChunks takes the usage chunk ("choices":[] with "usage") out
//     of the stream, innermost, before the cache records it and before output guardrails or the caller read
//     it, and keeps its figures for the usage watcher (usage.go); the "usage":null OpenAI then adds to every
//     other chunk is taken out too, in place.

// streamUsageCall returns the call an attempt sends and whether its stream's usage chunk is to be hidden: for
// a streamed chat completion that does not ask for usage, hidden is true, and call is a copy whose body asks
// for it when the adapter's provider takes the option. Any other call is returned as it is.
func streamUsageCall(adapter providers.Adapter, t *providers.Target, call *providers.Call) (_ *providers.Call, hidden bool) {
	if !call.Stream || call.Endpoint != providers.ChatCompletions {
		return call, false
	}
	patched, asked, err := askStreamUsage(call.Body)
	if err != nil || asked {
		return call, false
	}
	if a, ok := adapter.(providers.StreamUsageAsker); ok && a.AsksStreamUsage(t) {
		withUsage := *call
		withUsage.Body = patched // Request stays: Call.Chat sees that Body is no longer the caller's bytes
		return &withUsage, true
	}
	return call, true
}

// usageHider passes a chat completion stream through without its usage chunks, whose figures it keeps
// (usage), and without the "usage":null members of the other chunks. It reads line by line from a buffer of
// its own; a line longer than the buffer passes unread, in parts (no provider sends a usage chunk that long).
// It is made per stream and is not safe for concurrent use.
type usageHider struct {
	src       io.ReadCloser
	br        *bufio.Reader
	pending   []byte // the part of the current line not yet handed to Read
	err       error  // what ended the stream, returned once pending is handed over
	cont      bool   // the next line read continues a line longer than the buffer
	dropBlank bool   // the blank line that ends a dropped usage chunk's event is dropped too
	usage     Usage  // the last usage chunk's figures; Known once one was read
}

// usageHiderBuffer holds a few chunks: usage chunks are a few hundred bytes.
const usageHiderBuffer = 2 << 10

func hideUsageChunks(src io.ReadCloser) *usageHider {
	return &usageHider{src: src, br: bufio.NewReaderSize(src, usageHiderBuffer)}
}

// Read hands over every line already buffered, not one line a call: the relay above flushes when no further
// event is waiting, and a reader that gave a line at a time would make it flush (a write to the caller) on
// every line. It never waits for more once it has something to return.
func (h *usageHider) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(h.pending) > 0 {
			c := copy(p[n:], h.pending)
			h.pending = h.pending[c:]
			n += c
			continue
		}
		if h.err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, h.err
		}
		if n > 0 && !h.lineBuffered() {
			break
		}
		line, err := h.br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		if long {
			err = nil
		}
		if err == nil && !long && !h.cont {
			line = h.filter(line)
		}
		h.cont = long
		h.pending, h.err = line, err
	}
	return n, nil
}

func (h *usageHider) lineBuffered() bool { return sse.LineBuffered(h.br) }

func (h *usageHider) Close() error { return h.src.Close() }

var (
	nullUsage  = []byte(`,"usage":null`)
	choicesKey = []byte(`"choices"`)
)

// filter returns what the caller is shown of one whole line: nothing of a usage chunk (nor of the blank line
// after it), the line without its "usage":null member, or the line as it is. It edits the line in place: the
// line is the reader's buffer, which holds nothing else of use once the line is read.
func (h *usageHider) filter(line []byte) []byte {
	if h.dropBlank {
		h.dropBlank = false
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return line[:0]
		}
	}
	payload, ok := bytes.CutPrefix(line, dataPrefix)
	if !ok {
		return line
	}
	if i := bytes.Index(payload, nullUsage); i >= 0 {
		// In valid JSON the bytes ,"usage": can only be a member: inside a string its quotes would be escaped.
		at := len(dataPrefix) + i
		return line[:at+copy(line[at:], line[at+len(nullUsage):])]
	}
	if !emptyChoices(payload) {
		return line
	}
	if in, out, found := AnswerTokens(payload); found {
		h.usage = Usage{InputTokens: in, OutputTokens: out, Known: true}
		h.dropBlank = true
		return line[:0]
	}
	return line
}

// emptyChoices reports whether a chunk's choices member is an empty array, as a usage chunk's is.
func emptyChoices(payload []byte) bool {
	i := bytes.Index(payload, choicesKey)
	if i < 0 {
		return false
	}
	j := jsonstr.SkipSpace(payload, i+len(choicesKey))
	if j >= len(payload) || payload[j] != ':' {
		return false
	}
	j = jsonstr.SkipSpace(payload, j+1)
	if j >= len(payload) || payload[j] != '[' {
		return false
	}
	j = jsonstr.SkipSpace(payload, j+1)
	return j < len(payload) && payload[j] == ']'
}
