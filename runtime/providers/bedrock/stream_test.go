package bedrock

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/providers"
)

func streamCall(strict bool) *providers.Call {
	return &providers.Call{Endpoint: providers.ChatCompletions, Stream: true, Strict: strict,
		Body: []byte(`{"model":"` + testModel + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`)}
}

// TestTranslateStreamGolden decodes recorded ConverseStream answers (testdata/stream/*.bin, encoded from the
// *.events.json beside them with the AWS SDK's eventstream encoder) and checks every chunk.
func TestTranslateStreamGolden(t *testing.T) {
	tests := []struct {
		name    string
		strict  bool
		want    string
		wantErr string // the stream must end with this error (not io.EOF)
	}{
		{"text", false, "text.sse", ""},
		{"text", true, "text.sse", ""},
		{"tool", false, "tool.sse", ""},
		{"reasoning", false, "reasoning.sse", ""},
		{"reasoning", true, "reasoning.strict.sse", ""},
		{"exception", false, "exception.sse", "bedrock: throttlingException: Too many tokens, please wait before trying again."},
	}
	for _, tc := range tests {
		t.Run(tc.want+map[bool]string{true: " strict"}[tc.strict], func(t *testing.T) {
			body := &closeRecorder{Reader: bytes.NewReader(readTestdata(t, "stream", tc.name+".bin"))}
			rc := testAdapter().TranslateStream(&providers.Target{Provider: ID}, streamCall(tc.strict), body)
			got, err := io.ReadAll(rc)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("stream error: %v", err)
			}
			if tc.wantErr != "" {
				var se *StreamError
				if !errors.As(err, &se) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
			}
			compareSSE(t, string(got), string(readTestdata(t, "stream", tc.want)))
			if err := rc.Close(); err != nil || !body.closed {
				t.Errorf("Close: %v, body closed %v", err, body.closed)
			}
		})
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestTranslateStreamEmitsPerEvent feeds frames one at a time through a pipe and requires each frame's chunk
// before the next frame is written: the translator must not wait for more of the stream.
func TestTranslateStreamEmitsPerEvent(t *testing.T) {
	frames := [][]byte{
		eventFrame("messageStart", `{"role":"assistant"}`),
		eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"one"}}`),
		eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"two"}}`),
		eventFrame("messageStop", `{"stopReason":"end_turn"}`),
		eventFrame("metadata", `{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}`),
	}
	wants := []string{`"role":"assistant"`, `"content":"one"`, `"content":"two"`, `"finish_reason":"stop"`, `"usage"`}
	pr, pw := io.Pipe()
	rc := testAdapter().TranslateStream(&providers.Target{}, streamCall(false), pr)
	defer rc.Close()
	br := bufio.NewReader(rc)
	for i, f := range frames {
		go func() { pw.Write(f) }()
		got := make(chan string, 1)
		go func() {
			line, _ := br.ReadString('\n')
			br.ReadString('\n') // the blank line
			got <- line
		}()
		select {
		case line := <-got:
			if !strings.Contains(line, wants[i]) {
				t.Fatalf("chunk %d = %s, want it to hold %s", i, line, wants[i])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("chunk %d did not come after its frame was written", i)
		}
	}
	pw.Close()
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "data: [DONE]\n\n" {
		t.Fatalf("end = %q, %v", rest, err)
	}
}

func TestTranslateStreamErrors(t *testing.T) {
	start := eventFrame("messageStart", `{"role":"assistant"}`)
	stop := eventFrame("messageStop", `{"stopReason":"end_turn"}`)
	tests := []struct {
		name    string
		stream  []byte
		is      error  // errors.Is target, or nil
		message string // substring of the error
	}{
		{"ends before messageStop", start, io.ErrUnexpectedEOF, "before messageStop"},
		{"empty body", nil, io.ErrUnexpectedEOF, "before messageStop"},
		{"cut inside a frame", append(bytes.Clone(start), stop[:20]...), io.ErrUnexpectedEOF, "inside a message"},
		{"exception", cat(start, buildFrame([]header{strHeader(":message-type", "exception"), strHeader(":exception-type", "modelStreamErrorException"),
			strHeader(":content-type", "application/json")}, []byte(`{"message":"Model stream error","originalStatusCode":500}`))),
			nil, "bedrock: modelStreamErrorException: Model stream error"},
		{"error message", cat(start, buildFrame([]header{strHeader(":message-type", "error"), strHeader(":error-code", "InternalFailure"),
			strHeader(":error-message", "An internal error occurred")}, nil)), nil, "bedrock: InternalFailure: An internal error occurred"},
		{"unknown message type", cat(start, buildFrame([]header{strHeader(":message-type", "surprise")}, nil)), ErrEventStream, "unknown message type"},
		{"bad payload", cat(start, eventFrame("contentBlockDelta", `{"delta":`)), ErrEventStream, "contentBlockDelta"},
		{"bad message CRC", cat(start, corrupt(stop, len(stop)-10)), ErrEventStream, "message CRC"},
		{"after stop, a bad frame", cat(start, stop, corrupt(stop, 5)), ErrEventStream, "prelude CRC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := testAdapter().TranslateStream(&providers.Target{}, streamCall(false), io.NopCloser(bytes.NewReader(tc.stream)))
			out, err := io.ReadAll(rc)
			if err == nil {
				t.Fatalf("no error; output %s", out)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v, want it to say %q", err, tc.message)
			}
			if strings.Contains(string(out), "[DONE]") {
				t.Error("a broken stream ended with [DONE]")
			}
			// The error is sticky.
			if _, err2 := rc.Read(make([]byte, 10)); err2 == nil || err2 == io.EOF {
				t.Errorf("second read: %v", err2)
			}
		})
	}
}

func TestTranslateStreamIgnoresUnknownEvents(t *testing.T) {
	s := cat(eventFrame("messageStart", `{"role":"assistant"}`),
		eventFrame("somethingNew", `{"x":1}`),
		eventFrame("contentBlockStart", `{"contentBlockIndex":0,"start":{}}`),
		eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"citation":{}}}`),
		eventFrame("contentBlockStop", `{"contentBlockIndex":0}`),
		eventFrame("messageStop", `{"stopReason":"stop_sequence"}`))
	out, err := io.ReadAll(testAdapter().TranslateStream(&providers.Target{}, streamCall(false), io.NopCloser(bytes.NewReader(s))))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sseEvents(string(out))); n != 3 { // role, finish, [DONE]; no usage without metadata
		t.Errorf("%d events:\n%s", n, out)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func corrupt(b []byte, at int) []byte {
	c := bytes.Clone(b)
	c[at] ^= 0x55
	return c
}

func TestEventDecoder(t *testing.T) {
	good := buildFrame([]header{
		{name: "flag-true", typ: 0}, {name: "flag-false", typ: 1}, {name: "byte", typ: 2, value: []byte{7}},
		{name: "short", typ: 3, value: []byte{0, 1}}, {name: "int", typ: 4, value: []byte{0, 0, 0, 1}},
		{name: "long", typ: 5, value: make([]byte, 8)}, {name: "bytes", typ: 6, value: []byte{1, 2, 3}},
		strHeader(":event-type", "contentBlockDelta"), {name: "time", typ: 8, value: make([]byte, 8)},
		{name: "uuid", typ: 9, value: make([]byte, 16)}, strHeader(":message-type", "event"),
	}, []byte(`{"delta":{"text":"x"}}`))
	empty := buildFrame(nil, nil)

	t.Run("good", func(t *testing.T) {
		d := newEventDecoder(bytes.NewReader(cat(good, empty)))
		var ev event
		if err := d.next(&ev); err != nil {
			t.Fatal(err)
		}
		if string(ev.eventType) != "contentBlockDelta" || string(ev.messageType) != "event" || string(ev.payload) != `{"delta":{"text":"x"}}` {
			t.Errorf("decoded %+v", ev)
		}
		if err := d.next(&ev); err != nil || len(ev.payload) != 0 || ev.eventType != nil {
			t.Fatalf("empty message: %v %+v", err, ev)
		}
		if err := d.next(&ev); err != io.EOF {
			t.Fatalf("end: %v, want io.EOF", err)
		}
	})

	// A message claiming the largest length: it passes its prelude CRC but not the bound.
	oversized := make([]byte, 12)
	binary.BigEndian.PutUint32(oversized[0:], MaxMessageLen+1)
	binary.BigEndian.PutUint32(oversized[8:], crc32IEEE(oversized[:8]))
	// A message whose headers length overruns its total length.
	overrun := make([]byte, 12)
	binary.BigEndian.PutUint32(overrun[0:], 20)
	binary.BigEndian.PutUint32(overrun[4:], 10)
	binary.BigEndian.PutUint32(overrun[8:], crc32IEEE(overrun[:8]))
	// A string header whose declared length runs past the headers (CRCs recomputed, so only the header is wrong).
	stringHeaderCut := buildFrame([]header{strHeader("name", "value")}, nil)
	binary.BigEndian.PutUint16(stringHeaderCut[12+1+4+1:], 200)
	binary.BigEndian.PutUint32(stringHeaderCut[len(stringHeaderCut)-4:], crc32IEEE(stringHeaderCut[:len(stringHeaderCut)-4]))
	tooShort := make([]byte, 12)
	binary.BigEndian.PutUint32(tooShort[0:], 15)
	binary.BigEndian.PutUint32(tooShort[8:], crc32IEEE(tooShort[:8]))

	tests := []struct {
		name    string
		stream  []byte
		message string
	}{
		{"bad prelude CRC", corrupt(good, 9), "prelude CRC"},
		{"length changed", corrupt(good, 3), "prelude CRC"},
		{"bad message CRC", corrupt(good, len(good)-1), "message CRC"},
		{"payload changed", corrupt(good, len(good)-8), "message CRC"},
		{"truncated prelude", good[:7], "inside a message"},
		{"truncated headers", good[:30], "inside a message"},
		{"truncated CRC", good[:len(good)-2], "inside a message"},
		{"oversized", oversized, "outside"},
		{"too short", tooShort, "outside"},
		{"headers overrun", overrun, "headers length"},
		{"unknown header type", buildFrame([]header{{name: "x", typ: 10}}, nil), "unknown value type"},
		{"header value cut", buildFrame([]header{{name: "x", typ: 4, value: []byte{1}}}, nil), "cut short"},
		{"string header cut", stringHeaderCut, "cut short"},
		{"empty header name", buildFrame([]header{{name: "", typ: 0}}, nil), "bad header name"},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ev event
			err := newEventDecoder(bytes.NewReader(tc.stream)).next(&ev)
			if !errors.Is(err, ErrEventStream) {
				t.Fatalf("err = %v, want ErrEventStream", err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v, want %q", err, tc.message)
			}
		})
	}
}

// TestEventDecoderMemoryFollowsData: a frame claiming 16 MiB that sends a few bytes makes the decoder grow its
// buffer by what arrived, not by what was claimed.
func TestEventDecoderMemoryFollowsData(t *testing.T) {
	pre := make([]byte, 12)
	binary.BigEndian.PutUint32(pre[0:], MaxMessageLen)
	binary.BigEndian.PutUint32(pre[8:], crc32IEEE(pre[:8]))
	d := newEventDecoder(bytes.NewReader(append(pre, make([]byte, 100)...)))
	var ev event
	if err := d.next(&ev); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	if cap(d.buf) > 4*readStep {
		t.Errorf("buffer grew to %d bytes for 112 received", cap(d.buf))
	}
}

// FuzzEventStreamDecoder feeds arbitrary bytes to the decoder and to the whole stream translator: no panic, no
// hang, errors only of the decoder's kinds, decoded messages within the bytes given, and translated output made
// of well-formed SSE events (one data line of valid JSON each) that ends in [DONE] whenever it ends without error.
func FuzzEventStreamDecoder(f *testing.F) {
	for _, name := range []string{"text", "tool", "reasoning", "exception"} {
		b := readTestdata(f, "stream", name+".bin")
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add(eventFrame("messageStop", `{"stopReason":"end_turn"}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newEventDecoder(bytes.NewReader(data))
		d.max = 1 << 20
		var ev event
		consumed := 0
		for {
			err := d.next(&ev)
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrEventStream) {
					t.Fatalf("unexpected error type: %v", err)
				}
				break
			}
			total := int(binary.BigEndian.Uint32(d.buf[0:4]))
			consumed += total
			if consumed > len(data) || len(ev.payload) > total {
				t.Fatalf("decoded past the input: consumed %d of %d", consumed, len(data))
			}
		}
		rc := testAdapter().TranslateStream(&providers.Target{}, streamCall(false), io.NopCloser(bytes.NewReader(data)))
		out, err := io.ReadAll(io.LimitReader(rc, 64<<20))
		if err == nil && !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
			t.Fatalf("stream ended without error and without [DONE]: %q", out)
		}
		for _, ev := range sseEvents(string(out)) {
			data, ok := strings.CutPrefix(ev, "data: ")
			if !ok || strings.Contains(data, "\n") || (data != "[DONE]" && !json.Valid([]byte(data))) {
				t.Fatalf("malformed SSE event %q", ev)
			}
		}
	})
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

var updateStreams = flag.Bool("update-streams", false, "rewrite testdata/stream/*.bin from the *.events.json beside them")

// TestStreamFixtures checks that each recorded stream (encoded with the AWS SDK's eventstream encoder) is the
// encoding of the events listed beside it, byte for byte with the test encoder here; -update-streams rewrites
// the .bin files after an edit of the .events.json ones.
func TestStreamFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.events.json"))
	if len(files) == 0 {
		t.Fatal("no stream fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var frames []struct {
				Headers [][2]string     `json:"headers"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(raw, &frames); err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			for _, fr := range frames {
				var hs []header
				for _, h := range fr.Headers {
					hs = append(hs, strHeader(h[0], h[1]))
				}
				var payload bytes.Buffer
				if err := json.Compact(&payload, fr.Payload); err != nil {
					t.Fatal(err)
				}
				want.Write(buildFrame(hs, payload.Bytes()))
			}
			bin := strings.TrimSuffix(f, ".events.json") + ".bin"
			if *updateStreams {
				if err := os.WriteFile(bin, want.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%s is not the encoding of %s (run go test -run TestStreamFixtures -update-streams)", bin, f)
			}
		})
	}
}
