package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"sync"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/ratelimit"
)

// watchUsage reads the answer's usage once, prices it (resp.Usage), and reports it to the tokens policies that
// admitted the request and to its budget hold: at once for a whole answer, when the stream is closed for a
// streamed one, whether it ended or the caller went away (the provider counted the tokens either way). Answers
// from the cache cost the provider nothing and report no usage; neither do failed ones.
func (e *Engine) watchUsage(req *Request, adm *ratelimit.Admission, hold *budgetHold, resp *Response) {
	if resp.Status < 200 || resp.Status > 299 || resp.CacheStatus == CacheHit || resp.CacheStatus == CacheSemanticHit {
		hold.settle(resp)
		return
	}
	model := req.Body.Model()
	if resp.Stream == nil {
		tokens := AnswerTokens
		if req.Endpoint == providers.Messages {
			tokens = anthropicmsg.Usage // cache reads and writes count as input, as OpenAI's prompt tokens do
		}
		if in, out, ok := tokens(resp.Body); ok {
			resp.Usage = priced(resp, model, Usage{InputTokens: in, OutputTokens: out, Known: true})
		}
		e.reportUsage(adm, hold, resp)
		return
	}
	if resp.Raw { // audio: no tokens to read in it (media_step.go)
		e.reportUsage(adm, hold, resp)
		return
	}
	var counted *ratelimit.Admission
	if adm.CountsTokens() {
		a := *adm // the stream outlives Do's frame
		counted = &a
	}
	us := newUsageStream(resp.Stream, req.Body.Len(), func(u Usage) {
		resp.Usage = priced(resp, model, u)
		e.reportUsage(counted, hold, resp)
	})
	us.messages = req.Endpoint == providers.Messages
	if s, ok := resp.Stream.(*attemptStream); ok && s.hidden != nil {
		us.hidden = &s.hidden.usage // the usage chunk the caller is not shown (streamusage.go)
	}
	resp.Stream = us
}

// reportUsage gives the answer's usage to the tokens policies (adm may be nil) and settles the budget hold.
func (e *Engine) reportUsage(adm *ratelimit.Admission, hold *budgetHold, resp *Response) {
	if adm != nil && adm.CountsTokens() && resp.Usage.Known {
		e.limiter.AddTokens(adm, int(resp.Usage.InputTokens+resp.Usage.OutputTokens))
	}
	hold.settle(resp)
}

// priced adds the usage's cost, from the catalogue as the answering stored provider's overrides amend it,
// rounded to a millionth of a cent so that headers and logs read 0.00000195, not 0.0000019499999999999995.
func priced(resp *Response, model string, u Usage) Usage {
	if usd, ok := catalog.Cost(resp.Provider, model, resp.models, u.InputTokens, u.OutputTokens); ok {
		u.CostUSD, u.CostKnown = math.Round(usd*1e12)/1e12, true
	}
	return u
}

// rateLimitHeaders records the x-ratelimit-* figures of the most constrained policy on the answer; routes
// writes them as headers (without building a header map per request).
func rateLimitHeaders(adm *ratelimit.Admission, resp *Response) {
	limit, remaining, reset, ok := adm.Headers()
	if !ok {
		return
	}
	resp.RateLimit = RateLimitFigures{Limit: limit, Remaining: max(remaining, 0), Reset: reset, Set: true}
}

// streamChunk is what output guardrails read of an OpenAI stream chunk (chat or text completion): the text of
// its choices.
type streamChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Text string `json:"text"`
	} `json:"choices"`
}

// text is the text choice i adds: a chat delta's content, or a text completion's text.
func (c *streamChunk) text(i int) string { return c.Choices[i].Delta.Content + c.Choices[i].Text }

// usageStream passes a streamed answer through unchanged while it watches its events for usage (or, failing
// that, measures the answer's text). When the stream is closed it reports the usage once. It reads events by
// scanning their bytes, without decoding them: it sits on every stream, so it must cost next to nothing a chunk.
// A stream that reports no usage (OpenAI sends usage on streams only when stream_options.include_usage asks for
// it) is estimated at catalog.BytesPerToken bytes a token, of the request body and of the answer's text: rough,
// but a tokens policy or a budget must not let unreported streams through free.
//
// It is the stream's only buffer: routes relays the stream line by line through ReadLine, so an open stream
// holds usageBufferSize bytes, and a longer line only while it is being read (held up to maxUsageLine).
type usageStream struct {
	src          io.ReadCloser
	br           *bufio.Reader
	long         []byte // a line longer than br's buffer, assembled
	inLong       bool   // the next read continues a line over maxUsageLine: passed on in parts, unread
	line         []byte // the part of the current line not yet handed to Read
	usage        Usage
	textBytes    int
	requestBytes int
	messages     bool   // Anthropic's Messages events: usage is read as anthropicmsg.Usage reads it
	hidden       *Usage // the figures of the usage chunk hidden from the caller below this reader; nil: none is
	report       func(Usage)
	once         sync.Once
}

// usageBufferSize holds a few typical chunks (a few hundred bytes each): what a slow stream keeps while open.
const usageBufferSize = 4 << 10

// maxUsageLine bounds a line assembled to be read whole; a longer one is passed on in parts without being read
// for usage (its usage or text then goes uncounted, as no provider sends such chunks).
const maxUsageLine = 1 << 20

func newUsageStream(src io.ReadCloser, requestBytes int, report func(Usage)) *usageStream {
	return &usageStream{src: src, br: bufio.NewReaderSize(src, usageBufferSize), requestBytes: requestBytes, report: report}
}

// ReadLine returns the stream's next line with its line end, having read it for usage, or the next part of a
// line longer than maxUsageLine. The slice is valid until the next call. A last line without a line end comes
// with the error that ended the stream (io.EOF when it ended).
func (u *usageStream) ReadLine() ([]byte, error) {
	line, err := u.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		line, err = u.readLong(line)
	}
	whole := err == nil && line[len(line)-1] == '\n' // only whole lines are events
	if whole && !u.inLong {
		u.observe(line)
	}
	if err == nil {
		u.inLong = !whole
	}
	return line, err
}

// readLong assembles a line longer than the buffer, from its first part, up to maxUsageLine.
func (u *usageStream) readLong(part []byte) ([]byte, error) {
	u.long = append(u.long[:0], part...)
	for len(u.long) < maxUsageLine {
		part, err := u.br.ReadSlice('\n')
		u.long = append(u.long, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return u.long, err
		}
	}
	return u.long, nil // a part of a line over maxUsageLine: the rest follows
}

// LineBuffered reports whether a whole line is already buffered, so that the next ReadLine will not wait for
// the provider.
func (u *usageStream) LineBuffered() bool {
	b, _ := u.br.Peek(u.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

func (u *usageStream) Read(p []byte) (int, error) {
	if len(u.line) == 0 {
		line, err := u.ReadLine()
		if len(line) == 0 {
			return 0, err
		}
		u.line = line
	}
	n := copy(p, u.line)
	u.line = u.line[n:]
	return n, nil
}

var dataPrefix = []byte("data:")

// observe reads one whole line of the stream: a chat or text completion chunk, or a responses event.
func (u *usageStream) observe(line []byte) {
	payload, ok := bytes.CutPrefix(line, dataPrefix)
	if !ok {
		return
	}
	text, usage := scanEvent(payload)
	if usage {
		if u.messages {
			// Anthropic's events: message_start counts the input, message_delta the output so far.
			if in, out, found := anthropicmsg.Usage(payload); found {
				u.usage = Usage{InputTokens: max(in, u.usage.InputTokens), OutputTokens: out, Known: true}
				return
			}
		} else if in, out, found := AnswerTokens(payload); found {
			u.usage = Usage{InputTokens: in, OutputTokens: out, Known: true}
			return
		}
	}
	if !u.usage.Known {
		u.textBytes += text
	}
}

// textBytes sums the lengths of the string values of the keys that hold the text an event adds (a chat
// delta's content, a text completion's text, a responses event's delta, a tool call's arguments), escapes
// included.
func textBytes(payload []byte) int {
	n, _ := scanEvent(payload)
	return n
}

// scanEvent reads an event in one pass, string by string: text is textBytes, and usage tells whether a
// "usage" string is there (for AnswerTokens to read). A key is matched only as a key (followed by a colon), and
// every string is skipped whole, so that nothing inside a string, whose quotes are escaped, is matched.
func scanEvent(payload []byte) (text int, usage bool) {
	for i := 0; ; {
		q := bytes.IndexByte(payload[i:], '"')
		if q < 0 {
			return text, usage
		}
		i += q
		isText := false
		if k := textKeyLen(payload[i:]); k > 0 {
			i += k
			j := jsonstr.SkipSpace(payload, i)
			if j >= len(payload) || payload[j] != '"' {
				continue // a key whose value is no string (an object, null)
			}
			i, isText = j, true
		}
		end, err := jsonstr.ScanString(payload, i)
		if err != nil {
			return text, usage
		}
		if isText {
			text += end - i - 2
		} else if end-i == len(usageKey) && string(payload[i:end]) == string(usageKey) {
			usage = true
		}
		i = end
	}
}

var usageKey = []byte(`"usage"`)

// textKeyLen is the length of the text key with its colon that b begins with ("content":, "text":,
// "delta":, "arguments":), or 0.
func textKeyLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	var key string
	switch b[1] {
	case 'c':
		key = `"content":`
	case 't':
		key = `"text":`
	case 'd':
		key = `"delta":`
	case 'a':
		key = `"arguments":`
	default:
		return 0
	}
	if len(b) < len(key) || string(b[:len(key)]) != key {
		return 0
	}
	return len(key)
}

func (u *usageStream) Close() error {
	u.once.Do(func() {
		usage := u.usage
		if !usage.Known && u.hidden != nil {
			usage = *u.hidden
		}
		if !usage.Known {
			usage = Usage{InputTokens: int64(catalog.EstimateTokens(u.requestBytes)), OutputTokens: int64(catalog.EstimateTokens(u.textBytes)),
				Known: true, Estimated: true}
		}
		u.report(usage)
	})
	return u.src.Close()
}

// AnswerTokens reads the input and output tokens of a non-streamed answer's usage (prompt_tokens and
// completion_tokens of a chat or text completion or an embeddings list, whose completion_tokens is absent;
// input_tokens and output_tokens of a response object) without decoding the answer, and without allocating.
// ok is false when the answer carries no usage. A key is matched only as a key ("name" followed by a colon):
// inside a JSON string its quotes would be escaped, so message text cannot be mistaken for it. The last
// occurrence wins, as usage follows the answer's content.
func AnswerTokens(body []byte) (input, output int64, ok bool) {
	i := bytes.LastIndex(body, []byte(`"usage"`))
	if i < 0 {
		return 0, 0, false
	}
	u := body[i:]
	if in, found := jsonIntField(u, `"prompt_tokens"`); found {
		out, _ := jsonIntField(u, `"completion_tokens"`)
		return in, out, true
	}
	in, foundIn := jsonIntField(u, `"input_tokens"`)
	out, foundOut := jsonIntField(u, `"output_tokens"`)
	return in, out, foundIn || foundOut
}

// jsonIntField finds key followed by a colon and a non-negative integer in b.
func jsonIntField(b []byte, key string) (int64, bool) {
	for {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return 0, false
		}
		b = b[i+len(key):]
		j := 0
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		if j >= len(b) || b[j] != ':' {
			continue
		}
		j++
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		var n int64
		digits := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' && digits < 18 {
			n = n*10 + int64(b[j]-'0')
			j++
			digits++
		}
		if digits == 0 {
			return 0, false
		}
		return n, true
	}
}
