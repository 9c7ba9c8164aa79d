package anthropicmsg

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// events splits OpenAI SSE output into its events' data.
func events(t testing.TB, b []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(string(b), "\n\n") {
		if ev == "" {
			continue
		}
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Errorf("malformed event %q", ev)
		}
		out = append(out, data)
	}
	return out
}

// closeRecorder is a body that records Close.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestStreamGolden(t *testing.T) {
	fixedNow(t)
	tests := []struct {
		name    string
		wantErr string // "" when the stream must end with io.EOF after [DONE]
	}{
		{"text", ""},
		{"tools", ""},
		{"thinking", ""},
		{"error", "anthropic: overloaded_error: Overloaded"},
		{"truncated", "unexpected EOF"},
	}
	for _, tc := range tests {
		in := readFile(t, filepath.Join("testdata", "stream", tc.name+".sse"))
		for _, strict := range []bool{false, true} {
			variant := "openai"
			if strict {
				variant = "strict"
			}
			t.Run(tc.name+"/"+variant, func(t *testing.T) {
				body := &closeRecorder{Reader: bytes.NewReader(in)}
				s := Stream(body, strict)
				got, err := io.ReadAll(s)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("err = %v", err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				if tc.name == "error" {
					var se *StreamError
					if !errors.As(err, &se) || se.Type != "overloaded_error" || se.Message != "Overloaded" {
						t.Errorf("err = %#v, want a StreamError", err)
					}
				}
				if tc.name == "truncated" && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
				}
				gotEvents := events(t, got)
				wantEvents := events(t, readFile(t, filepath.Join("testdata", "stream", tc.name+"."+variant+".sse")))
				for i := range max(len(gotEvents), len(wantEvents)) {
					switch {
					case i >= len(gotEvents):
						t.Errorf("chunk %d missing, want %s", i, wantEvents[i])
					case i >= len(wantEvents):
						t.Errorf("chunk %d extra: %s", i, gotEvents[i])
					case wantEvents[i] == "[DONE]" || gotEvents[i] == "[DONE]":
						if gotEvents[i] != wantEvents[i] {
							t.Errorf("chunk %d = %s, want %s", i, gotEvents[i], wantEvents[i])
						}
					default:
						if !jsonEqual(t, []byte(gotEvents[i]), []byte(wantEvents[i])) {
							t.Errorf("chunk %d differs", i)
						}
					}
				}
				if err := s.Close(); err != nil || !body.closed {
					t.Errorf("Close = %v, body closed %v", err, body.closed)
				}
			})
		}
	}
}

// chanBody hands out one provider event per receive, so a test can tell what the translator emits before the
// next event exists.
type chanBody struct {
	ch  chan string
	cur string
}

func (c *chanBody) Read(p []byte) (int, error) {
	if c.cur == "" {
		s, ok := <-c.ch
		if !ok {
			return 0, io.EOF
		}
		c.cur = s
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

func (c *chanBody) Close() error { return nil }

// TestStreamEmitsPerEvent checks that each chunk is readable as soon as the provider event that makes it has
// arrived, without waiting for more of the stream.
func TestStreamEmitsPerEvent(t *testing.T) {
	body := &chanBody{ch: make(chan string)}
	br := bufio.NewReader(Stream(body, false))
	steps := []struct {
		name, event, wantSubstring string
	}{
		{"message_start", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n", `"role":"assistant"`},
		{"text delta", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n", `"content":"Hi"`},
		{"message_delta", "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n", `"finish_reason":"stop"`},
		{"message_stop", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", `[DONE]`},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			go func() { body.ch <- st.event }()
			got := make(chan string, 1)
			go func() {
				line, _ := br.ReadString('\n')
				br.ReadString('\n') // the blank line
				got <- line
			}()
			select {
			case line := <-got:
				if !strings.Contains(line, st.wantSubstring) {
					t.Errorf("chunk %q, want it to hold %q", line, st.wantSubstring)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no chunk before the next provider event")
			}
		})
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after [DONE]: %v, want io.EOF", err)
	}
}

func TestStreamBroken(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty body", "", "unexpected EOF"},
		{"bad JSON", "data: {nope\n\n", "decode stream event"},
		{"cut inside an event", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m", "decode stream event"},
		{"read error", "\x00", "read stream"},
		{"error without details", "data: {\"type\":\"error\"}\n\n", "anthropic: error event"},
		{"event too large", "data: " + strings.Repeat("x", MaxEventSize+10) + "\n\n", "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tc.in)
			if tc.name == "read error" {
				r = io.MultiReader(strings.NewReader("data: {\"type\":\"ping\"}\n"), errReader{})
			}
			_, err := io.ReadAll(Stream(io.NopCloser(r), false))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

func TestStreamOddInputs(t *testing.T) {
	fixedNow(t)
	// No message_start, a comment, multi-line data, [DONE] from a proxy, a last event without a blank line.
	in := ": keep-alive\n" +
		"data: {\"type\":\"content_block_delta\",\n" +
		"data:  \"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"data: [DONE]\n\n" +
		"data: {\"type\":\"message_stop\"}"
	got, err := io.ReadAll(Stream(io.NopCloser(strings.NewReader(in)), true))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"id":"","object":"chat.completion.chunk","created":1700000000,"model":"","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`,
		`{"id":"","object":"chat.completion.chunk","created":1700000000,"model":"","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`[DONE]`,
	}
	gotEvents := events(t, got)
	if len(gotEvents) != len(want) {
		t.Fatalf("got %d events, want %d:\n%s", len(gotEvents), len(want), got)
	}
	for i := range want {
		if want[i] == "[DONE]" {
			if gotEvents[i] != want[i] {
				t.Errorf("event %d = %s", i, gotEvents[i])
			}
			continue
		}
		jsonEqual(t, []byte(gotEvents[i]), []byte(want[i]))
	}
}

func TestAppendString(t *testing.T) {
	tests := []string{"", "plain", "quote \" backslash \\ slash /", "\n\r\t\x00\x1f\x7f", "é 😀 \u2028 \u2029", "bad \xff utf8", "<html>&amp;"}
	for _, s := range tests {
		t.Run(s, func(t *testing.T) {
			got := jsonstr.AppendString(nil, s)
			var back string
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			want := strings.ToValidUTF8(s, "\ufffd")
			if back != want {
				t.Errorf("round trip %q → %s → %q", s, got, back)
			}
		})
	}
}

// FuzzStream feeds arbitrary bytes to the stream translator: it must never panic or hang, and whatever it
// emits must be well-formed events of JSON chunks, ending with [DONE] exactly when it reports no error.
func FuzzStream(f *testing.F) {
	for _, name := range []string{"text", "tools", "thinking", "error", "truncated"} {
		b, err := os.ReadFile(filepath.Join("testdata", "stream", name+".sse"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, in []byte, strict bool) {
		s := Stream(io.NopCloser(bytes.NewReader(in)), strict)
		out, err := io.ReadAll(io.LimitReader(s, 64<<20))
		s.Close()
		evs := strings.Split(string(out), "\n\n")
		if len(evs) == 0 || evs[len(evs)-1] != "" {
			t.Fatalf("output does not end with a blank line: %q", out)
		}
		evs = evs[:len(evs)-1]
		for i, ev := range evs {
			data, ok := strings.CutPrefix(ev, "data: ")
			if !ok {
				t.Fatalf("event %d %q", i, ev)
			}
			if data == "[DONE]" {
				if i != len(evs)-1 || err != nil {
					t.Fatalf("[DONE] at %d of %d, err %v", i, len(evs), err)
				}
				continue
			}
			if !json.Valid([]byte(data)) {
				t.Fatalf("event %d not JSON: %s", i, data)
			}
		}
		if err == nil && (len(evs) == 0 || evs[len(evs)-1] != "data: [DONE]") {
			t.Fatalf("no error and no [DONE]: %q", out)
		}
	})
}
