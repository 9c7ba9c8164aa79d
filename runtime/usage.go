package runtime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/runtime/schema"
)

// countTokens reports the answer's usage to the tokens policies that admitted the request: at once for a
// whole answer, when the stream closes for a streamed one. Answers served from the cache cost the provider
// nothing and count nothing; neither do failed ones.
func (e *Engine) countTokens(req *Request, adm *ratelimit.Admission, resp *Response) {
	if !adm.CountsTokens() || resp.Status < 200 || resp.Status > 299 || resp.CacheStatus == CacheHit || resp.CacheStatus == CacheSemanticHit {
		return
	}
	if resp.Stream == nil {
		if tokens, ok := answerUsage(resp.Body); ok {
			e.limiter.AddTokens(adm, int(tokens))
		}
		return
	}
	a := *adm // the stream outlives Do's frame
	limiter := e.limiter
	resp.Stream = newUsageStream(resp.Stream, req.Body.Len(), func(tokens int64) { limiter.AddTokens(&a, int(tokens)) })
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

// answerUsage reads usage.total_tokens of a non-streamed answer (chat completion, text completion,
// embeddings list or response object). ok is false when the answer carries no usage.
func answerUsage(body []byte) (tokens int64, ok bool) {
	if !bytes.Contains(body, []byte(`"usage"`)) {
		return 0, false
	}
	var a struct {
		Usage *answerUsageFields `json:"usage"`
	}
	if json.Unmarshal(body, &a) != nil || a.Usage == nil {
		return 0, false
	}
	return a.Usage.total(), true
}

// answerUsageFields is the usage of a chat or text completion, an embeddings list, or a response object
// (input_tokens, output_tokens).
type answerUsageFields struct {
	schema.Usage
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

func (u *answerUsageFields) total() int64 {
	if t := u.Usage.Total(); t != 0 {
		return t
	}
	return u.InputTokens + u.OutputTokens
}

// streamChunk is what the gateway reads of an OpenAI stream chunk (chat or text completion): the text of
// its choices and its usage.
type streamChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Text string `json:"text"`
	} `json:"choices"`
	Usage *schema.Usage `json:"usage"`
	// Delta and Response are a responses event's: the text a response.output_text.delta adds, and the
	// response object (its usage) of response.completed.
	Delta    string `json:"delta"`
	Response *struct {
		Usage *answerUsageFields `json:"usage"`
	} `json:"response"`
}

// text is the text choice i adds: a chat delta's content, or a text completion's text.
func (c *streamChunk) text(i int) string { return c.Choices[i].Delta.Content + c.Choices[i].Text }

// estimateTokens is the fallback count when a streamed answer reports no usage (OpenAI sends usage on streams
// only when stream_options.include_usage asks for it): about four bytes of text a token, for the request
// body and for the answer's text. Rough, but a tokens policy must not let unreported streams through free.
func estimateTokens(requestBytes, answerTextBytes int) int64 {
	return int64((requestBytes+3)/4 + (answerTextBytes+3)/4)
}

// usageStream passes a streamed answer through unchanged while it watches its events for usage (or, failing
// that, measures the answer's text). When the stream is closed it reports the tokens once, whether the
// stream ended normally or the caller went away: the provider counted them either way.
type usageStream struct {
	src          io.ReadCloser
	br           *bufio.Reader
	line         []byte // the part of the current line not yet handed to the reader
	usage        int64
	seenUsage    bool
	textBytes    int
	requestBytes int
	report       func(tokens int64)
	once         sync.Once
}

func newUsageStream(src io.ReadCloser, requestBytes int, report func(tokens int64)) *usageStream {
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

// observe reads one whole line of the stream.
func (u *usageStream) observe(line []byte) {
	payload, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || payload[0] != '{' {
		return
	}
	var chunk streamChunk
	if json.Unmarshal(payload, &chunk) != nil {
		return
	}
	for i := range chunk.Choices {
		u.textBytes += len(chunk.text(i))
	}
	if chunk.Usage != nil {
		u.usage, u.seenUsage = chunk.Usage.Total(), true
	}
	u.textBytes += len(chunk.Delta)
	if r := chunk.Response; r != nil && r.Usage != nil {
		u.usage, u.seenUsage = r.Usage.total(), true
	}
}

func (u *usageStream) Close() error {
	u.once.Do(func() {
		tokens := u.usage
		if !u.seenUsage {
			tokens = estimateTokens(u.requestBytes, u.textBytes)
		}
		u.report(tokens)
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
