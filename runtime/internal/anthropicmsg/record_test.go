package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmgw/gateway/runtime/cache"
)

// record reads src through Record in reads of at most chunk bytes, checks that every byte passes through
// unchanged, and returns what done got (nil when it was not called) and the read error.
func record(t testing.TB, src []byte, chunk int) ([]byte, error) {
	t.Helper()
	var got []byte
	calls := 0
	body := &closeRecorder{Reader: bytes.NewReader(src)}
	r := Record(body, func(message []byte) { got = message; calls++ })
	var out []byte
	buf := make([]byte, chunk)
	var err error
	for {
		var n int
		n, err = r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	if !bytes.Equal(out, src) {
		t.Fatalf("the stream did not pass through unchanged:\n got %q\nwant %q", out, src)
	}
	if calls > 1 {
		t.Fatalf("done called %d times", calls)
	}
	if err := r.Close(); err != nil || !body.closed {
		t.Fatalf("Close = %v, source closed %v", err, body.closed)
	}
	return got, err
}

// recordStreams are the package's golden Anthropic streams that end with message_stop, and the golden file of
// the message Record makes of each.
var recordStreams = []struct{ stream, message string }{
	{"stream/text.sse", "record/text.json"},
	{"stream/tools.sse", "record/tools.json"},
	{"stream/thinking.sse", "record/thinking.json"},
	{"ingress/stream/text.anthropic.sse", "record/ingress_text.json"},
	{"ingress/stream/tools.anthropic.sse", "record/ingress_tools.json"},
	{"ingress/stream/thinking.anthropic.sse", "record/ingress_thinking.json"},
	{"ingress/stream/reasoning.anthropic.sse", "record/ingress_reasoning.json"},
}

func TestRecordGolden(t *testing.T) {
	for _, tc := range recordStreams {
		t.Run(tc.stream, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", tc.stream))
			var first []byte
			for _, chunk := range []int{1, 7, 4096} { // the event boundaries fall anywhere in a Read
				got, err := record(t, in, chunk)
				if err != nil || got == nil {
					t.Fatalf("chunk %d: done not called (err %v)", chunk, err)
				}
				if first != nil && !bytes.Equal(got, first) {
					t.Fatalf("chunk %d gives\n%s\nchunk 1 gave\n%s", chunk, got, first)
				}
				first = got
			}
			golden(t, filepath.Join("testdata", tc.message), first)
		})
	}
}

// TestRecordMatchesStream checks the recorded message against the package's existing path for the same
// stream: the chat completion Response makes of the message is the one the cache's recorder assembles from
// Stream's chunks (strict: the recorder keeps no content_blocks; arguments compared as JSON values, as Record
// parses the input).
func TestRecordMatchesStream(t *testing.T) {
	fixedNow(t)
	for _, tc := range recordStreams {
		t.Run(tc.stream, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", tc.stream))
			message, err := record(t, in, 4096)
			if err != nil || message == nil {
				t.Fatalf("done not called (err %v)", err)
			}
			want, err := Response(message, true)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			chunks := cache.NewRecorder(Stream(io.NopCloser(bytes.NewReader(in)), true), func(c []byte) { got = c })
			if _, err := io.Copy(io.Discard, chunks); err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("the cache's recorder kept nothing of Stream's chunks")
			}
			jsonEqual(t, compactArguments(t, got), compactArguments(t, want))
		})
	}
}

// compactArguments rewrites the tool calls' arguments of a chat completion compacted.
func compactArguments(t testing.TB, chat []byte) []byte {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(chat, &c); err != nil {
		t.Fatal(err)
	}
	for _, ch := range c["choices"].([]any) {
		calls, _ := ch.(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)
		for _, call := range calls {
			f := call.(map[string]any)["function"].(map[string]any)
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(f["arguments"].(string))); err != nil {
				t.Fatal(err)
			}
			f["arguments"] = buf.String()
		}
	}
	out, _ := json.Marshal(c)
	return out
}

// TestRecordIngressMatchesFromChat: the message recorded from StreamFromChat's events is the one FromChat
// makes of the chat answer the same chunks assemble into.
func TestRecordIngressMatchesFromChat(t *testing.T) {
	for _, name := range []string{"text", "tools", "thinking", "reasoning"} {
		t.Run(name, func(t *testing.T) {
			fixedIDs(t)
			chunks := readFile(t, filepath.Join("testdata", "ingress", "stream", name+".openai.sse"))
			var chat []byte
			if _, err := io.Copy(io.Discard, cache.NewRecorder(io.NopCloser(bytes.NewReader(chunks)), func(c []byte) { chat = c })); err != nil {
				t.Fatal(err)
			}
			if chat == nil {
				t.Skip("the chat stream is not one the cache keeps") // a stream without [DONE]
			}
			want, err := FromChat(chat, "claude-sonnet-4-5")
			if err != nil {
				t.Fatal(err)
			}
			events, err := io.ReadAll(StreamFromChat(io.NopCloser(bytes.NewReader(chunks)), "claude-sonnet-4-5"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := record(t, events, 4096)
			if err != nil || got == nil {
				t.Fatalf("done not called (err %v)", err)
			}
			jsonEqual(t, got, want)
		})
	}
}

// TestReplayRoundTrip: Replay writes a well-formed Anthropic stream that an SDK reads as the stored message,
// and that Record turns back into it.
func TestReplayRoundTrip(t *testing.T) {
	var files []string
	for _, tc := range recordStreams {
		files = append(files, tc.message)
	}
	for _, name := range []string{"text", "tool_use", "thinking", "stop_sequence", "refusal"} {
		files = append(files, "response/"+name+".anthropic.json")
	}
	for _, name := range []string{"text", "tool_calls", "thinking", "reasoning", "stop_sequence", "refusal"} {
		files = append(files, "ingress/answer/"+name+".anthropic.json")
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			stored := readFile(t, filepath.Join("testdata", name))
			s, err := Replay(stored)
			if err != nil {
				t.Fatal(err)
			}
			events, err := io.ReadAll(s)
			if err != nil {
				t.Fatal(err)
			}
			checkAnthropicStream(t, events, true)
			got, err := record(t, events, 4096)
			if err != nil || got == nil {
				t.Fatalf("done not called (err %v)\n%s", err, events)
			}
			jsonEqual(t, got, stored)
		})
	}
	// And the other way: a recorded stream replayed reads as the original did.
	for _, tc := range recordStreams {
		t.Run("accumulate "+tc.stream, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", tc.stream))
			message, _ := record(t, in, 4096)
			s, err := Replay(message)
			if err != nil {
				t.Fatal(err)
			}
			events, _ := io.ReadAll(s)
			if got, want := accumulate(t, events), accumulate(t, in); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("replay\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestReplayEvents(t *testing.T) {
	stored := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
		{"type":"thinking","thinking":"hmm","signature":"sig"},
		{"type":"text","text":"Hi \"there\""},
		{"type":"tool_use","id":"toolu_1","name":"f","input":{"a": [1, 2]}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":42,"service_tier":"standard"}}`)
	s, err := Replay(stored)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(s)
	want := `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1,"service_tier":"standard"}}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi \"there\""}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":[1,2]}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}

event: message_stop
data: {"type":"message_stop"}

`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestReplayRefuses(t *testing.T) {
	for name, stored := range map[string]string{
		"not JSON":    `{"id":`,
		"not message": `{"type":"error","error":{"type":"api_error","message":"x"}}`,
		"server tool": `{"type":"message","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`,
		"citations":   `{"type":"message","content":[{"type":"text","text":"x","citations":[{"type":"char_location"}]}]}`,
		"bad content": `{"type":"message","content":{}}`,
	} {
		if _, err := Replay([]byte(stored)); err == nil {
			t.Errorf("%s: Replay accepted %s", name, stored)
		}
	}
	if _, err := Replay([]byte(`{"type":"message","content":[{"type":"web_search_tool_result"}]}`)); !errors.Is(err, ErrNotReplayable) {
		t.Errorf("err = %v, want ErrNotReplayable", err)
	}
}

// ev writes one Anthropic event.
func ev(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

const (
	evStart     = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`
	evTextStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evText      = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`
	evStop0     = `{"type":"content_block_stop","index":0}`
	evDelta     = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`
	evEnd       = `{"type":"message_stop"}`
)

func whole(middle ...string) string {
	s := ev("message_start", evStart) + ev("ping", `{"type":"ping"}`)
	for _, m := range middle {
		s += m
	}
	return s
}

func TestRecordEdges(t *testing.T) {
	good := whole(ev("content_block_start", evTextStart), ev("content_block_delta", evText),
		ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd))
	wantGood := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`
	kept := map[string]string{
		"whole":      good,
		"crlf":       strings.ReplaceAll(good, "\n", "\r\n"),
		"cr":         strings.ReplaceAll(good, "\n", "\r"),
		"no end":     strings.TrimSuffix(good, "\n\n"),
		"comments":   ": hi\n" + strings.ReplaceAll(good, "event: ping\n", ": keep-alive\nevent: ping\n"),
		"after stop": good + ev("error", `{"type":"error","error":{"type":"api_error","message":"late"}}`),
	}
	for name, in := range kept {
		t.Run(name, func(t *testing.T) {
			got, err := record(t, []byte(in), 5)
			if err != nil || got == nil {
				t.Fatalf("done not called (err %v)", err)
			}
			if string(got) != wantGood {
				t.Errorf("got %s\nwant %s", got, wantGood)
			}
		})
	}

	tool := func(deltas ...string) string {
		s := ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`)
		for _, d := range deltas {
			s += ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+d+`}}`)
		}
		return whole(s, ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd))
	}
	for in, want := range map[string]string{
		tool():                            `[{"type":"tool_use","id":"t","name":"f","input":{}}]`,
		tool(`""`):                        `[{"type":"tool_use","id":"t","name":"f","input":{}}]`,
		tool(`"{\"a\": "`, `"1}"`):        `[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]`,
		tool(`"{\"s\": \"<&>\\u00e9\"}"`): `[{"type":"tool_use","id":"t","name":"f","input":{"s":"<&>\u00e9"}}]`,
	} {
		got, err := record(t, []byte(in), 4096)
		if err != nil || got == nil {
			t.Fatalf("done not called (err %v) for\n%s", err, in)
		}
		if !strings.Contains(string(got), `"content":`+want+`,`) {
			t.Errorf("got %s\nwant content %s", got, want)
		}
	}

	big := strings.Repeat("x", recordMaxEvent)
	never := map[string]string{
		"empty": "",
		"no message_stop": whole(ev("content_block_start", evTextStart), ev("content_block_delta", evText),
			ev("content_block_stop", evStop0), ev("message_delta", evDelta)),
		"no message_delta": whole(ev("content_block_start", evTextStart), ev("content_block_stop", evStop0), ev("message_stop", evEnd)),
		"no message_start": ev("message_delta", evDelta) + ev("message_stop", evEnd),
		"block not stopped": whole(ev("content_block_start", evTextStart), ev("content_block_delta", evText),
			ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"error event": whole(ev("content_block_start", evTextStart),
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"error event name": whole(ev("content_block_start", evTextStart), "event: error\ndata: {\"type\":\"ping\"}\n\n",
			ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"citations_delta": whole(ev("content_block_start", evTextStart),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}`),
			ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"server tool block": whole(ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}`),
			ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"unknown event": whole(ev("surprise", `{"type":"surprise"}`), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"not JSON":      whole("data: {oops\n\n", ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"delta to a closed block": whole(ev("content_block_start", evTextStart), ev("content_block_stop", evStop0),
			ev("content_block_delta", evText), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"delta of another type": whole(ev("content_block_start", evTextStart),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}`),
			ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"delta without block": whole(ev("content_block_delta", evText), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"block twice": whole(ev("content_block_start", evTextStart), ev("content_block_stop", evStop0),
			ev("content_block_start", evTextStart), ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
		"bad input": tool(`"{\"a\":"`),
		"event too large": whole(ev("content_block_start", evTextStart),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+big+`"}}`),
			ev("content_block_stop", evStop0), ev("message_delta", evDelta), ev("message_stop", evEnd)),
	}
	for _, name := range []string{"truncated.sse", "error.sse"} {
		never["testdata "+name] = string(readFile(t, filepath.Join("testdata", "stream", name)))
	}
	for _, name := range []string{"truncated", "error"} {
		never["ingress "+name] = string(readFile(t, filepath.Join("testdata", "ingress", "stream", name+".anthropic.sse")))
	}
	for name, in := range never {
		t.Run(name, func(t *testing.T) {
			if got, _ := record(t, []byte(in), 4096); got != nil {
				t.Errorf("done called with %s", got)
			}
		})
	}
}

// TestRecordLargeAnswer: many events within bounds are kept; an answer past 64 MiB is not.
func TestRecordLargeAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about 64 MiB")
	}
	delta := ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+strings.Repeat("y", 1<<20)+`"}}`)
	build := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(whole(ev("content_block_start", evTextStart)))
		for range n {
			b.WriteString(delta)
		}
		b.WriteString(ev("content_block_stop", evStop0) + ev("message_delta", evDelta) + ev("message_stop", evEnd))
		return b.Bytes()
	}
	if got, _ := record(t, build(4), 1<<16); got == nil {
		t.Error("a 4 MiB answer was not kept")
	}
	if got, _ := record(t, build(recordMaxAnswer>>20), 1<<16); got != nil {
		t.Error("an answer past the bound was kept")
	}
}

func TestRecordBrokenSource(t *testing.T) {
	in := readFile(t, filepath.Join("testdata", "stream", "text.sse"))
	called := false
	r := Record(io.NopCloser(io.MultiReader(bytes.NewReader(in[:len(in)/2]), iotest.ErrReader(errors.New("reset")))), func([]byte) { called = true })
	if _, err := io.ReadAll(r); err == nil || err.Error() != "reset" {
		t.Fatalf("err = %v, want the source's", err)
	}
	// A source that fails right after message_stop's data line, before the blank line that ends the event.
	cut := bytes.LastIndex(in, []byte("message_stop\"}")) + len("message_stop\"}")
	r = Record(io.NopCloser(io.MultiReader(bytes.NewReader(in[:cut]), iotest.ErrReader(errors.New("reset")))), func([]byte) { called = true })
	_, _ = io.ReadAll(r)
	// Closed before the end.
	r = Record(io.NopCloser(bytes.NewReader(in)), func([]byte) { called = true })
	_, _ = r.Read(make([]byte, len(in)/2))
	_ = r.Close()
	_, _ = io.ReadAll(r)
	if called {
		t.Error("done called for a broken stream")
	}
}

func FuzzRecord(f *testing.F) {
	for _, name := range []string{"stream/text.sse", "stream/tools.sse", "stream/thinking.sse", "stream/error.sse",
		"stream/truncated.sse", "ingress/stream/tools.anthropic.sse", "ingress/stream/reasoning.anthropic.sse"} {
		f.Add(readFile(f, filepath.Join("testdata", name)))
	}
	f.Add([]byte(whole(ev("message_delta", evDelta), ev("message_stop", evEnd))))
	f.Fuzz(func(t *testing.T, in []byte) {
		message, err := record(t, in, 13)
		if message == nil {
			return
		}
		if err != nil {
			t.Fatalf("done called for a stream that failed: %v", err)
		}
		if !hasMessageStop(in) {
			t.Fatalf("done called for a stream without message_stop: %q", in)
		}
		// A message recorded from a replay is replayed and recorded again unchanged (the first replay may add
		// what a fuzzed message lacks: stop_reason, stop_sequence, usage).
		once := replayRecord(t, message)
		if once == nil {
			return
		}
		jsonEqual(t, replayRecord(t, once), once)
	})
}

// replayRecord records the replay of message; nil when Replay refuses it.
func replayRecord(t *testing.T, message []byte) []byte {
	t.Helper()
	s, err := Replay(message)
	if err != nil {
		return nil
	}
	events, _ := io.ReadAll(s)
	got, _ := record(t, events, 4096)
	if got == nil {
		t.Fatalf("the replay of %s is not recorded\n%s", message, events)
	}
	return got
}

// hasMessageStop reports whether an SSE stream has an event whose data is a message_stop.
func hasMessageStop(in []byte) bool {
	text := strings.ReplaceAll(strings.ReplaceAll(string(in), "\r\n", "\n"), "\r", "\n")
	for _, event := range strings.Split(text, "\n\n") {
		var data []string
		for _, line := range strings.Split(event, "\n") {
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data = append(data, strings.TrimPrefix(v, " "))
			}
		}
		var e struct{ Type string }
		if json.Unmarshal([]byte(strings.Join(data, "\n")), &e) == nil && e.Type == "message_stop" {
			return true
		}
	}
	return false
}

func FuzzReplay(f *testing.F) {
	for _, name := range []string{"text", "tool_use", "thinking", "stop_sequence", "refusal"} {
		f.Add(readFile(f, filepath.Join("testdata", "response", name+".anthropic.json")))
	}
	f.Fuzz(func(t *testing.T, stored []byte) {
		s, err := Replay(stored)
		if err != nil {
			return
		}
		events, _ := io.ReadAll(s)
		if got, _ := record(t, events, 4096); got == nil {
			t.Fatalf("the replay of %s is not recorded\n%s", stored, events)
		}
	})
}
