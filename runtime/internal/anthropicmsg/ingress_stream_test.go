package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStreamFromChatGolden(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // "" when the stream must end with io.EOF after message_stop
	}{
		{"text", ""},
		{"tools", ""},
		{"thinking", ""},
		{"reasoning", ""}, // no [DONE]: it ends after its finish_reason
		{"error", "anthropic: api_error: the provider's stream broke off: unexpected EOF"},
		{"truncated", "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fixedIDs(t)
			in := readFile(t, filepath.Join("testdata", "ingress", "stream", tc.name+".openai.sse"))
			body := &closeRecorder{Reader: bytes.NewReader(in)}
			s := StreamFromChat(body, "claude-sonnet-4-5")
			got, err := io.ReadAll(s)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
			if tc.name == "truncated" && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
			}
			if _, again := s.Read(make([]byte, 10)); again == nil || (err != nil && again.Error() != err.Error()) {
				t.Errorf("a Read after the end = %v, want %v again", again, err)
			}
			checkAnthropicStream(t, got, err == nil)
			golden(t, filepath.Join("testdata", "ingress", "stream", tc.name+".anthropic.sse"), got)
			if err := s.Close(); err != nil || !body.closed {
				t.Errorf("Close = %v, closed %v", err, body.closed)
			}
		})
	}
}

// anthropicEvent is an event of an Anthropic stream as checkAnthropicStream and accumulate read it.
type anthropicEvent struct {
	Type         string          `json:"type"`
	Index        *int            `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock *contentBlock   `json:"content_block"`
	Delta        *eventDelta     `json:"delta"`
	Usage        *usage          `json:"usage"`
	Error        *apiError       `json:"error"`
}

// checkAnthropicStream checks the grammar of an Anthropic event stream: "event: T\ndata: {"type":"T",...}\n\n"
// events; message_start then ping first; blocks opened one at a time with indexes from 0, each delta of a
// block that was opened with its type; message_delta then message_stop last (complete), or an error event
// last.
func checkAnthropicStream(t testing.TB, out []byte, complete bool) {
	t.Helper()
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
		t.Fatalf("output does not end with a blank line: %q", out)
	}
	var events []anthropicEvent
	for i, raw := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
		if raw == "" && len(out) == 0 {
			break
		}
		head, data, ok := strings.Cut(raw, "\n")
		typ, ok2 := strings.CutPrefix(head, "event: ")
		data, ok3 := strings.CutPrefix(data, "data: ")
		if !ok || !ok2 || !ok3 || strings.Contains(data, "\n") {
			t.Fatalf("event %d malformed: %q", i, raw)
		}
		var ev anthropicEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %d data not JSON (%v): %s", i, err, data)
		}
		if ev.Type != typ {
			t.Fatalf("event %d: event %q, data type %q", i, typ, ev.Type)
		}
		events = append(events, ev)
	}
	blockTypes := map[int]string{}
	open := -1
	state := "start" // start, ping, body, delta, stop, error
	for i, ev := range events {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("event %d (%s): %s\n%s", i, ev.Type, fmt.Sprintf(format, args...), out)
		}
		if state == "stop" || state == "error" {
			fail("after the end")
		}
		switch ev.Type {
		case "error":
			if ev.Error == nil || ev.Error.Type == "" || ev.Error.Message == "" {
				fail("error without type or message")
			}
			state = "error"
			continue
		case "message_start":
			if state != "start" {
				fail("not first")
			}
			var m message
			if err := json.Unmarshal(ev.Message, &m); err != nil || !strings.HasPrefix(m.ID, "msg_") || m.Type != "message" ||
				m.Role != "assistant" || len(m.Content) != 0 || m.Usage == nil || m.Usage.InputTokens == nil {
				fail("bad message %s (%v)", ev.Message, err)
			}
			state = "ping"
			continue
		case "ping":
			if state != "ping" {
				fail("not after message_start")
			}
			state = "body"
			continue
		}
		if state == "start" || state == "ping" {
			fail("before message_start and ping")
		}
		switch ev.Type {
		case "content_block_start":
			if state != "body" || open >= 0 || ev.Index == nil || *ev.Index != len(blockTypes) || ev.ContentBlock == nil {
				fail("start of block %v with block %d open and %d before", ev.Index, open, len(blockTypes))
			}
			open = *ev.Index
			blockTypes[open] = ev.ContentBlock.Type
			switch ev.ContentBlock.Type {
			case "text", "thinking", "redacted_thinking":
			case "tool_use":
				if ev.ContentBlock.ID == "" || string(ev.ContentBlock.Input) != "{}" {
					fail("tool_use block without id or with input %s", ev.ContentBlock.Input)
				}
			default:
				fail("block type %q", ev.ContentBlock.Type)
			}
		case "content_block_delta":
			if state != "body" || ev.Index == nil || ev.Delta == nil {
				fail("delta without index or delta")
			}
			bt, started := blockTypes[*ev.Index]
			want := map[string]string{"text": "text_delta", "thinking": "thinking_delta", "tool_use": "input_json_delta"}[bt]
			if ev.Delta.Type == "signature_delta" && bt == "thinking" {
				want = "signature_delta"
			}
			if !started || ev.Delta.Type != want {
				fail("%s in block %d of type %q", ev.Delta.Type, *ev.Index, bt)
			}
			if *ev.Index != open && bt != "tool_use" {
				fail("delta of block %d, which is closed", *ev.Index)
			}
		case "content_block_stop":
			if ev.Index == nil || *ev.Index != open {
				fail("stop of block %v while %d is open", ev.Index, open)
			}
			open = -1
		case "message_delta":
			if state != "body" || open >= 0 || ev.Delta == nil || ev.Delta.StopReason == "" || ev.Usage == nil || ev.Usage.OutputTokens == nil {
				fail("message_delta with block %d open, or without stop_reason or usage", open)
			}
			state = "delta"
		case "message_stop":
			if state != "delta" {
				fail("message_stop not after message_delta")
			}
			state = "stop"
		default:
			fail("unknown event type")
		}
	}
	if complete && state != "stop" {
		t.Fatalf("the stream ends in state %s, want message_stop\n%s", state, out)
	}
	if !complete && state != "error" {
		t.Fatalf("a failed stream ends in state %s, want an error event\n%s", state, out)
	}
}

// accumulated is what an Anthropic SDK makes of a stream: the final message, summarised.
type accumulated struct {
	content    []string // "text:...", "thinking:...", "signature:...", "redacted:...", "tool_use:id/name/input"
	stopReason string
	input      int64
	output     int64
}

func accumulate(t testing.TB, sse []byte) accumulated {
	t.Helper()
	var acc accumulated
	var inputs []string // partial_json per block
	for _, line := range strings.Split(string(sse), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev anthropicEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		switch ev.Type {
		case "message_start":
			var m message
			if err := json.Unmarshal(ev.Message, &m); err != nil {
				t.Fatal(err)
			}
			if m.Usage != nil {
				acc.input = val(m.Usage.InputTokens) + val(m.Usage.CacheReadInputTokens) + val(m.Usage.CacheCreationInputTokens)
			}
		case "content_block_start":
			b := ev.ContentBlock
			switch b.Type {
			case "text":
				acc.content = append(acc.content, "text:"+b.Text)
			case "thinking":
				acc.content = append(acc.content, "thinking:"+b.Thinking)
			case "redacted_thinking":
				acc.content = append(acc.content, "redacted:"+b.Data)
			case "tool_use":
				acc.content = append(acc.content, "tool_use:"+b.ID+"/"+b.Name+"/")
			}
			inputs = append(inputs, "")
		case "content_block_delta":
			i := *ev.Index
			switch ev.Delta.Type {
			case "text_delta":
				acc.content[i] += ev.Delta.Text
			case "thinking_delta":
				acc.content[i] += ev.Delta.Thinking
			case "signature_delta":
				acc.content[i] += "/signature:" + ev.Delta.Signature
			case "input_json_delta":
				inputs[i] += ev.Delta.PartialJSON
			}
		case "message_delta":
			acc.stopReason = ev.Delta.StopReason
			if u := ev.Usage; u != nil {
				acc.output = val(u.OutputTokens)
				if u.InputTokens != nil {
					acc.input = val(u.InputTokens) + val(u.CacheReadInputTokens) + val(u.CacheCreationInputTokens)
				}
			}
		}
	}
	for i, in := range inputs {
		if strings.HasPrefix(acc.content[i], "tool_use:") {
			acc.content[i] += compactArgs(json.RawMessage(in))
		}
	}
	return acc
}

// TestStreamFromChatRoundTrip sends the Anthropic streams of testdata/stream through Stream (as the adapters
// do) and back: an SDK reading the result makes the same message of it as of the original.
func TestStreamFromChatRoundTrip(t *testing.T) {
	for _, name := range []string{"text", "tools", "thinking"} {
		t.Run(name, func(t *testing.T) {
			orig := readFile(t, filepath.Join("testdata", "stream", name+".sse"))
			back, err := io.ReadAll(StreamFromChat(Stream(io.NopCloser(bytes.NewReader(orig)), false), ""))
			if err != nil {
				t.Fatal(err)
			}
			checkAnthropicStream(t, back, true)
			got, want := accumulate(t, back), accumulate(t, orig)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// stepReader hands over its chunks one by one, each only when the test sends on next.
type stepReader struct {
	next   chan string
	buf    []byte
	closed bool
}

func (r *stepReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		s, ok := <-r.next
		if !ok {
			return 0, io.EOF
		}
		r.buf = []byte(s)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *stepReader) Close() error { r.closed = true; return nil }

// TestStreamFromChatIncremental checks that each chunk's events can be read before the next chunk arrives.
func TestStreamFromChatIncremental(t *testing.T) {
	src := &stepReader{next: make(chan string)}
	s := StreamFromChat(src, "m")
	steps := []struct{ chunk, want string }{
		{`data: {"id":"chatcmpl-1","choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n", "event: ping"},
		{`data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n", `"text":"Hi"`},
		{`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{"}}]}}]}` + "\n\n", `"partial_json":"{"`},
		{`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}` + "\n\n", `"partial_json":"}"`},
		{`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n", "content_block_stop"},
		{"data: [DONE]\n\n", "message_stop"},
	}
	buf := make([]byte, 64<<10)
	for i, st := range steps {
		go func() { src.next <- st.chunk }()
		var got []byte
		deadline := time.After(5 * time.Second)
		for !bytes.Contains(got, []byte(st.want)) {
			done := make(chan struct{})
			var n int
			var err error
			go func() { n, err = s.Read(buf); close(done) }()
			select {
			case <-done:
			case <-deadline:
				t.Fatalf("step %d: no %s after its chunk; read %s", i, st.want, got)
			}
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			got = append(got, buf[:n]...)
		}
	}
	close(src.next)
	if _, err := s.Read(buf); err != io.EOF {
		t.Errorf("after message_stop: %v, want EOF", err)
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestStreamFromChatBroken(t *testing.T) {
	first := `data: {"id":"chatcmpl-1","choices":[{"delta":{"content":"Hi"}}]}` + "\n\n"
	cause := errors.New("connection reset")
	tests := []struct {
		name, in  string
		err       error
		wantType  string
		wantInErr string
	}{
		{"read error", first, cause, "api_error", "connection reset"},
		{"not JSON", first + "data: {nope\n\n", io.EOF, "api_error", "decode chat chunk"},
		{"error first", `data: {"error":{"message":"slow down","type":"rate_limit_exceeded"}}` + "\n\n", io.EOF, "rate_limit_error", "slow down"},
		{"error string", first + `data: {"error":"boom"}` + "\n\n", io.EOF, "api_error", "boom"},
		{"event too large", first + "data: " + strings.Repeat("x", MaxEventSize+1), io.EOF, "api_error", "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := StreamFromChat(io.NopCloser(&failingReader{data: []byte(tc.in), err: tc.err}), "m")
			out, err := io.ReadAll(s)
			if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantInErr)
			}
			if tc.err == cause && !errors.Is(err, cause) {
				t.Errorf("err = %v does not wrap the cause", err)
			}
			checkAnthropicStream(t, out, false)
			if !bytes.Contains(out, []byte(`"type":"`+tc.wantType+`"`)) {
				t.Errorf("no %s error event: %s", tc.wantType, out)
			}
			if tc.name == "error first" && bytes.Contains(out, []byte("message_start")) {
				t.Errorf("message_start before an error that came first: %s", out)
			}
		})
	}
}

// TestStreamFromChatToolCallShapes covers tool calls as providers other than OpenAI number them.
func TestStreamFromChatToolCallShapes(t *testing.T) {
	fixedIDs(t)
	chunk := func(delta string) string {
		return `data: {"id":"x","choices":[{"index":0,"delta":` + delta + `}]}` + "\n\n"
	}
	tests := []struct {
		name   string
		chunks []string
		want   []string // accumulated content
	}{
		{"every call index 0", []string{
			chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}`),
		}, []string{`tool_use:a/f/{"x":1}`, "tool_use:b/g/{}"}},
		{"no index", []string{
			chunk(`{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}`),
			chunk(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`),
			chunk(`{"tool_calls":[{"id":"b","function":{"name":"g"}}]}`),
		}, []string{`tool_use:a/f/{"x":1}`, "tool_use:b/g/{}"}},
		{"no id", []string{
			chunk(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}`),
		}, []string{"tool_use:toolu_id1/f/{}"}},
		{"interleaved", []string{
			chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}`),
			chunk(`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`),
		}, []string{`tool_use:a/f/{"x":1}`, "tool_use:b/g/{}"}},
		{"two calls in one chunk", []string{
			chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}`),
		}, []string{"tool_use:a/f/{}", "tool_use:b/g/{}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join(tc.chunks, "") + "data: [DONE]\n\n"
			out, err := io.ReadAll(StreamFromChat(io.NopCloser(strings.NewReader(in)), "m"))
			if err != nil {
				t.Fatal(err)
			}
			checkAnthropicStream(t, out, true)
			acc := accumulate(t, out)
			if fmt.Sprint(acc.content) != fmt.Sprint(tc.want) || acc.stopReason != "tool_use" {
				t.Errorf("content %q stop %q, want %q tool_use\n%s", acc.content, acc.stopReason, tc.want, out)
			}
		})
	}
}

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
		kind     int
		value    string
	}{
		{"openai", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hel\"lo\u00e9"},"logprobs":null,"finish_reason":null}],"obfuscation":"abc"}`, true, blockText, "Hel\"loé"},
		{"reasoning_content", `{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"hm"}}]}`, true, blockThinking, "hm"},
		{"reasoning", `{"choices":[{"delta":{"reasoning":"hm","content":""}}]}`, true, blockThinking, "hm"},
		{"empty", `{"choices":[{"index":0,"delta":{"content":""}}]}`, true, blockNone, ""},
		{"role and nulls", `{"choices":[{"index":0,"delta":{"role":"assistant","content":"a","refusal":null,"tool_calls":null},"stop_reason":null}],"usage":null}`, true, blockText, "a"},
		{"spaces", " { \"choices\" : [ { \"delta\" : { \"content\" : \"a\" } } ] } ", true, blockText, "a"},
		{"two texts", `{"choices":[{"delta":{"content":"a","reasoning_content":"b"}}]}`, false, 0, ""},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false, 0, ""},
		{"usage", `{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}`, false, 0, ""},
		{"error", `{"error":null,"choices":[{"delta":{"content":"a"}}]}`, false, 0, ""},
		{"tool args", `{"choices":[{"delta":{"tool_calls":[{"index":2,"function":{"arguments":"{\"a\": "}}]}}]}`, true, blockTool, `{"a": `},
		{"tool args empty", `{"choices":[{"delta":{"content":null,"tool_calls":[{"function":{"arguments":""},"index":0}]}}]}`, true, blockTool, ""},
		{"tool call start", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"arguments":""}}]}}]}`, false, 0, ""},
		{"tool name", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":""}}]}}]}`, false, 0, ""},
		{"tool without index", `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"x"}}]}}]}`, false, 0, ""},
		{"two tool calls", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"x"}},{"index":1,"function":{"arguments":"y"}}]}}]}`, false, 0, ""},
		{"tool args and text", `{"choices":[{"delta":{"content":"a","tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]}`, false, 0, ""},
		{"no tool calls", `{"choices":[{"delta":{"tool_calls":[]}}]}`, false, 0, ""},
		{"refusal", `{"choices":[{"delta":{"refusal":"no"}}]}`, false, 0, ""},
		{"index 1", `{"choices":[{"index":1,"delta":{"content":"a"}}]}`, false, 0, ""},
		{"two choices", `{"choices":[{"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`, false, 0, ""},
		{"no choices", `{"choices":[]}`, false, 0, ""},
		{"missing choices", `{"id":"x"}`, false, 0, ""},
		{"folded key", `{"Choices":[{"delta":{"content":"a"}}]}`, false, 0, ""},
		{"folded delta key", `{"choices":[{"delta":{"Content":"a"}}]}`, false, 0, ""},
		{"escaped key", `{"choices":[{"delta":{"c\u006fntent":"a"}}]}`, false, 0, ""},
		{"duplicate content", `{"choices":[{"delta":{"content":"a","content":"b"}}]}`, false, 0, ""},
		{"content a number", `{"choices":[{"delta":{"content":1}}]}`, false, 0, ""},
		{"id a number", `{"id":1,"choices":[{"delta":{"content":"a"}}]}`, false, 0, ""},
		{"trailing", `{"choices":[{"delta":{"content":"a"}}]} x`, false, 0, ""},
		{"bad skipped value", `{"x":[1,,2],"choices":[{"delta":{"content":"a"}}]}`, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseChunk([]byte(tc.in), nil)
			if ok != tc.ok || ok && (c.kind != tc.kind || string(c.value) != tc.value) {
				t.Errorf("parseChunk = %d %q %v, want %d %q %v", c.kind, c.value, ok, tc.kind, tc.value, tc.ok)
			}
			if tc.name == "tool args" && c.call != 2 {
				t.Errorf("call = %d, want 2", c.call)
			}
		})
	}
}

// FuzzParseChunk checks that the fast path reads a chunk as encoding/json does, whenever it takes it.
func FuzzParseChunk(f *testing.F) {
	f.Add([]byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"\ud83d\ude00\ud800"}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"reasoning":"a","ſtop_reason":"x"}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":"{\"a\""}}]}}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fc, ok := parseChunk(in, nil)
		if !ok {
			return
		}
		var c chatChunk
		if err := json.Unmarshal(in, &c); err != nil {
			t.Fatalf("fast path took what encoding/json refuses (%v): %s", err, in)
		}
		if len(c.Choices) != 1 || c.Choices[0].Index != 0 || c.Usage != nil || !isNull(c.Error) {
			t.Fatalf("fast path took a chunk of another shape: %s", in)
		}
		ch := c.Choices[0]
		d := ch.Delta
		if ch.FinishReason != nil || !isNull(ch.StopReason) || d.Refusal != "" || d.ContentBlocks != nil {
			t.Fatalf("fast path took a chunk of another shape: %s", in)
		}
		wantKind, want, wantCall := blockNone, "", 0
		thinking := cmpOr(d.ReasoningContent, d.Reasoning)
		values := 0
		for _, v := range []string{d.Content, thinking} {
			if v != "" {
				values++
			}
		}
		switch {
		case len(d.ToolCalls) > 1:
			t.Fatalf("fast path took two tool calls: %s", in)
		case len(d.ToolCalls) == 1:
			tc := d.ToolCalls[0]
			if tc.Index == nil || tc.ID != "" || tc.Type != "" || tc.Function.Name != "" {
				t.Fatalf("fast path took the start of a tool call: %s", in)
			}
			values++
			wantKind, want, wantCall = blockTool, tc.Function.Arguments, *tc.Index
		case d.Content != "":
			wantKind, want = blockText, d.Content
		case thinking != "":
			wantKind, want = blockThinking, thinking
		}
		if values > 1 {
			t.Fatalf("fast path took two values: %s", in)
		}
		if fc.kind != wantKind || fc.call != wantCall || decoded(t, appendQuoted(fc.value)) != decoded(t, appendQuoted([]byte(want))) {
			t.Fatalf("fast path %d %d %q, encoding/json %d %d %q: %s", fc.kind, fc.call, fc.value, wantKind, wantCall, want, in)
		}
	})
}

func appendQuoted(v []byte) []byte {
	b, _ := json.Marshal(string(v))
	return b
}

// FuzzStreamFromChat checks that any input gives a well-formed Anthropic stream: complete, or ended by an
// error event.
func FuzzStreamFromChat(f *testing.F) {
	for _, name := range []string{"text", "tools", "thinking", "reasoning", "error", "truncated"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ingress", "stream", name+".openai.sse"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := StreamFromChat(io.NopCloser(bytes.NewReader(in)), "m")
		out, err := io.ReadAll(io.LimitReader(s, 64<<20))
		s.Close()
		checkAnthropicStream(t, out, err == nil)
	})
}
