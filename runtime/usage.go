package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"sync"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/internal/jsonstr"
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
		if in, out, ok := AnswerTokens(resp.Body); ok {
			resp.Usage = priced(resp, model, Usage{InputTokens: in, OutputTokens: out, Known: true})
		}
		e.reportUsage(adm, hold, resp)
		return
	}
	var counted *ratelimit.Admission
	if adm.CountsTokens() {
		a := *adm // the stream outlives Do's frame
		counted = &a
	}
	resp.Stream = newUsageStream(resp.Stream, req.Body.Len(), func(u Usage) {
		resp.Usage = priced(resp, model, u)
		e.reportUsage(counted, hold, resp)
	})
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
	if m, ok := catalog.LookupWith(resp.Provider, model, resp.models); ok && (m.InputPerMTok > 0 || m.OutputPerMTok > 0) {
		u.CostUSD, u.CostKnown = math.Round(catalog.Price(&m, u.InputTokens, u.OutputTokens)*1e12)/1e12, true
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
type usageStream struct {
	src          io.ReadCloser
	br           *bufio.Reader
	line         []byte // the part of the current line not yet handed to the reader
	usage        Usage
	textBytes    int
	requestBytes int
	report       func(Usage)
	once         sync.Once
}

func newUsageStream(src io.ReadCloser, requestBytes int, report func(Usage)) *usageStream {
	return &usageStream{src: src, br: bufio.NewReaderSize(src, 16<<10), requestBytes: requestBytes, report: report}
}

func (u *usageStream) Read(p []byte) (int, error) {
	if len(u.line) == 0 {
		line, err := u.br.ReadSlice('\n')
		if len(line) == 0 {
			if errors.Is(err, bufio.ErrBufferFull) {
				err = nil
			}
			return 0, err
		}
		if err == nil {
			u.observe(line) // only whole lines are events; a part of an overlong line is passed on unread
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
	if in, out, found := AnswerTokens(payload); found {
		u.usage = Usage{InputTokens: in, OutputTokens: out, Known: true}
		return
	}
	if !u.usage.Known {
		u.textBytes += textBytes(payload)
	}
}

// answerTextKeys hold the text an event adds: a chat delta's content, a text completion's text, a responses
// event's delta, a tool call's arguments. A key is matched only as a key (followed by a colon): inside a JSON
// string its quotes are escaped.
var answerTextKeys = [...][]byte{[]byte(`"content":`), []byte(`"text":`), []byte(`"delta":`), []byte(`"arguments":`)}

// textBytes sums the lengths of the string values of answerTextKeys in one event, escapes included.
func textBytes(payload []byte) int {
	n := 0
	for _, key := range answerTextKeys {
		for rest := payload; ; {
			i := bytes.Index(rest, key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			j := jsonstr.SkipSpace(rest, 0)
			if j >= len(rest) || rest[j] != '"' {
				continue
			}
			end, err := jsonstr.ScanString(rest, j)
			if err != nil {
				break
			}
			n += end - j - 2
			rest = rest[end:]
		}
	}
	return n
}

func (u *usageStream) Close() error {
	u.once.Do(func() {
		usage := u.usage
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
