package schema

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// ---- chat completion chunks (streamed answers) ----

// Chunk is a chat.completion.chunk, for translators that build a whole chunk (several choices, logprobs) before
// writing it with ChunkWriter.Encode. Translators with one choice write their chunks piece by piece with
// ChunkWriter's other methods instead, which allocate nothing.
type Chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is one choice of a Chunk. A nil FinishReason or Logprobs is written as null.
type ChunkChoice struct {
	Index        int       `json:"index"`
	Delta        Delta     `json:"delta"`
	Logprobs     *Logprobs `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// Delta is what a chunk adds to its choice's message.
type Delta struct {
	Role          string          `json:"role,omitempty"`
	Content       *string         `json:"content,omitempty"`
	ToolCalls     []ToolCallDelta `json:"tool_calls,omitempty"`
	ContentBlocks []BlockDelta    `json:"content_blocks,omitempty"`
}

// ToolCallDelta is a streamed piece of a tool call: the first one carries its id, type and name.
type ToolCallDelta struct {
	Index    *int              `json:"index,omitempty"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function FunctionCallDelta `json:"function"`
}

// FunctionCallDelta is the function of a ToolCallDelta.
type FunctionCallDelta struct {
	Name             string `json:"name,omitempty"`
	Arguments        string `json:"arguments"`
	ThoughtSignature string `json:"thought_signature,omitempty"` // not strict only
}

// BlockDelta is a streamed piece of a content block (answers that are not strict only):
// {"index": 0, "delta": {"thinking": "..."}} or {"index": 1, "delta": {"text": "..."}}.
type BlockDelta struct {
	Index int `json:"index"`
	Delta struct {
		Text      string `json:"text,omitempty"`
		Thinking  string `json:"thinking,omitempty"`
		Signature string `json:"signature,omitempty"`
	} `json:"delta"`
}

// DoneEvent ends every OpenAI stream.
const DoneEvent = "data: [DONE]\n\n"

// ChunkWriter writes a stream's chat.completion.chunk events, each "data: {chunk}\n\n". It is the one encoder
// of chunks: every translating adapter writes its stream with it, so that the chunks of every provider share
// one shape. Methods append to dst and return it; the single-choice methods write choice 0 and allocate
// nothing. The zero ChunkWriter is not started: Start it before writing.
type ChunkWriter struct {
	prefix []byte // `data: {"id":...,"object":"chat.completion.chunk","created":...,"model":...`
	// enc writes whole chunks into buf (Encode), made on first use and reused: one encoder per stream.
	enc *json.Encoder
	buf bytes.Buffer
}

// Start fixes the id, created time and model every chunk repeats. Only the first call counts.
func (w *ChunkWriter) Start(id string, created int64, model string) {
	if w.prefix != nil {
		return
	}
	p := make([]byte, 0, 80+len(id)+len(model))
	p = jsonstr.AppendString(append(p, `data: {"id":`...), id)
	p = strconv.AppendInt(append(p, `,"object":"chat.completion.chunk","created":`...), created, 10)
	w.prefix = jsonstr.AppendString(append(p, `,"model":`...), model)
}

// Started reports whether Start was called.
func (w *ChunkWriter) Started() bool { return w.prefix != nil }

// Begin opens a chunk of choice 0 up to its delta: the caller appends the delta object, then calls End.
func (w *ChunkWriter) Begin(dst []byte) []byte {
	return append(append(dst, w.prefix...), `,"choices":[{"index":0,"delta":`...)
}

// End closes a chunk opened by Begin with its finish_reason (null when empty) and, when u is not nil, usage.
func (w *ChunkWriter) End(dst []byte, finish string, u *Usage) []byte {
	if finish == "" {
		dst = append(dst, `,"finish_reason":null}]`...)
	} else {
		dst = jsonstr.AppendString(append(dst, `,"finish_reason":`...), finish)
		dst = append(dst, "}]"...)
	}
	if u != nil {
		dst = AppendUsage(append(dst, `,"usage":`...), u)
	}
	return append(dst, "}\n\n"...)
}

// Role writes the first chunk of a message: {"role":"assistant","content":""}.
func (w *ChunkWriter) Role(dst []byte) []byte {
	return w.End(append(w.Begin(dst), `{"role":"assistant","content":""}`...), "", nil)
}

// Finish writes the last chunk of choice 0: an empty delta with the finish reason, and usage when not nil.
func (w *ChunkWriter) Finish(dst []byte, reason string, u *Usage) []byte {
	return w.End(append(w.Begin(dst), `{}`...), reason, u)
}

// UsageChunk writes a chunk with no choices that carries the usage ("choices":[], as OpenAI's last chunk with
// stream_options.include_usage).
func (w *ChunkWriter) UsageChunk(dst []byte, u *Usage) []byte {
	dst = append(append(dst, w.prefix...), `,"choices":[],"usage":`...)
	return append(AppendUsage(dst, u), "}\n\n"...)
}

// ToolCallStart writes the first chunk of tool call number call: its id, type and name, with empty arguments.
func (w *ChunkWriter) ToolCallStart(dst []byte, call int, id, name string) []byte {
	d := strconv.AppendInt(append(w.Begin(dst), `{"tool_calls":[{"index":`...), int64(call), 10)
	d = jsonstr.AppendString(append(d, `,"id":`...), id)
	d = jsonstr.AppendString(append(d, `,"type":"function","function":{"name":`...), name)
	return w.End(append(d, `,"arguments":""}}]}`...), "", nil)
}

// RedactedThinking writes a redacted_thinking content block (not strict only).
func (w *ChunkWriter) RedactedThinking(dst []byte, block int, data string) []byte {
	d := strconv.AppendInt(append(w.Begin(dst), `{"content_blocks":[{"index":`...), int64(block), 10)
	d = jsonstr.AppendString(append(d, `,"delta":{"type":"redacted_thinking","data":`...), data)
	return w.End(append(d, "}}]}"...), "", nil)
}

// Encode writes c, a whole chunk, as one event. Like the other methods it leaves <, > and & unescaped.
func (w *ChunkWriter) Encode(dst []byte, c *Chunk) ([]byte, error) {
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.buf)
		w.enc.SetEscapeHTML(false)
	}
	w.buf.Reset()
	if err := w.enc.Encode(c); err != nil {
		return dst, err
	}
	b := w.buf.Bytes()
	dst = append(append(dst, "data: "...), b[:len(b)-1]...) // Encode ends the JSON with '\n'
	return append(dst, "\n\n"...), nil
}

// The generic writers below take the text as a string or as bytes, so that a translator that reads its
// provider's events without allocating can write the text it found in place. Their JSON variants take a value
// that is already a JSON string literal (a provider's own, spliced in as it is).

// Content writes a chunk whose delta is {"content": text}.
func Content[S ~string | ~[]byte](w *ChunkWriter, dst []byte, text S) []byte {
	d := jsonstr.AppendString(append(w.Begin(dst), `{"content":`...), text)
	return w.End(append(d, '}'), "", nil)
}

// ContentJSON is Content for a text that is already a JSON string literal.
func (w *ChunkWriter) ContentJSON(dst []byte, quoted []byte) []byte {
	d := append(append(w.Begin(dst), `{"content":`...), quoted...)
	return w.End(append(d, '}'), "", nil)
}

// ToolCallArgs writes a piece of tool call number call's arguments.
func ToolCallArgs[S ~string | ~[]byte](w *ChunkWriter, dst []byte, call int, args S) []byte {
	d := strconv.AppendInt(append(w.Begin(dst), `{"tool_calls":[{"index":`...), int64(call), 10)
	d = jsonstr.AppendString(append(d, `,"function":{"arguments":`...), args)
	return w.End(append(d, "}}]}"...), "", nil)
}

// ToolCallArgsJSON is ToolCallArgs for arguments that are already a JSON string literal.
func (w *ChunkWriter) ToolCallArgsJSON(dst []byte, call int, quoted []byte) []byte {
	d := strconv.AppendInt(append(w.Begin(dst), `{"tool_calls":[{"index":`...), int64(call), 10)
	d = append(append(d, `,"function":{"arguments":`...), quoted...)
	return w.End(append(d, "}}]}"...), "", nil)
}

// BlockPiece writes a piece of content block number block: field is "text", "thinking", "signature" or
// "data" (not strict only).
func BlockPiece[S ~string | ~[]byte](w *ChunkWriter, dst []byte, block int, field string, value S) []byte {
	d := strconv.AppendInt(append(w.Begin(dst), `{"content_blocks":[{"index":`...), int64(block), 10)
	d = append(append(append(d, `,"delta":{"`...), field...), `":`...)
	d = jsonstr.AppendString(d, value)
	return w.End(append(d, "}}]}"...), "", nil)
}

// BlockPieceJSON is BlockPiece for a value that is already a JSON string literal.
func (w *ChunkWriter) BlockPieceJSON(dst []byte, block int, field string, quoted []byte) []byte {
	d := strconv.AppendInt(append(w.Begin(dst), `{"content_blocks":[{"index":`...), int64(block), 10)
	d = append(append(append(d, `,"delta":{"`...), field...), `":`...)
	d = append(d, quoted...)
	return w.End(append(d, "}}]}"...), "", nil)
}

// AppendUsage appends u as OpenAI's usage object, written as encoding/json writes a Usage.
func AppendUsage(dst []byte, u *Usage) []byte {
	dst = strconv.AppendInt(append(dst, `{"prompt_tokens":`...), u.PromptTokens, 10)
	dst = strconv.AppendInt(append(dst, `,"completion_tokens":`...), u.CompletionTokens, 10)
	dst = strconv.AppendInt(append(dst, `,"total_tokens":`...), u.TotalTokens, 10)
	if d := u.PromptTokensDetails; d != nil {
		dst = strconv.AppendInt(append(dst, `,"prompt_tokens_details":{"cached_tokens":`...), d.CachedTokens, 10)
		dst = append(dst, '}')
	}
	if d := u.CompletionTokensDetails; d != nil {
		dst = strconv.AppendInt(append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...), d.ReasoningTokens, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}
