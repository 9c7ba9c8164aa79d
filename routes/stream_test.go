package routes

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scriptedLines is a lineReader whose lines arrive in batches: the lines of a batch are buffered together, and
// reading past a batch's end waits for the next one (counted in waits).
type scriptedLines struct {
	batches [][]string
	batch   int // the batch being read; -1 before the first wait
	waits   int
}

func (s *scriptedLines) ReadLine() ([]byte, error) {
	for s.batch < 0 || len(s.batches[s.batch]) == 0 {
		if s.batch+1 >= len(s.batches) {
			return nil, io.EOF
		}
		s.batch++
		s.waits++
	}
	line := s.batches[s.batch][0]
	s.batches[s.batch] = s.batches[s.batch][1:]
	return []byte(line), nil
}

func (s *scriptedLines) LineBuffered() bool { return s.batch >= 0 && len(s.batches[s.batch]) > 0 }

// TestRelayFlushPolicy: a Read hands over every line already buffered, in one piece (fasthttp writes and
// flushes each Read), and never waits for the provider with lines in hand; small reads lose nothing.
func TestRelayFlushPolicy(t *testing.T) {
	batches := func() [][]string {
		return [][]string{{"data: a\n", "\n", "data: b\n", "\n"}, {"data: c\n"}, {"\n", "data: [DONE]\n", "\n"}}
	}
	lines := &scriptedLines{batches: batches(), batch: -1}
	r := &sseRelay{lines: lines}
	buf := make([]byte, 4<<10)
	for i, want := range []string{"data: a\n\ndata: b\n\n", "data: c\n", "\ndata: [DONE]\n\n"} {
		n, err := r.Read(buf)
		if err != nil || string(buf[:n]) != want || lines.waits != i+1 {
			t.Fatalf("read %d: %q, %v after %d waits; want %q after %d", i, buf[:n], err, lines.waits, want, i+1)
		}
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the stream: %d, %v", n, err)
	}

	r = &sseRelay{lines: &scriptedLines{batches: batches(), batch: -1}}
	var out bytes.Buffer
	small := make([]byte, 3)
	for {
		n, err := r.Read(small)
		out.Write(small[:n])
		if err != nil {
			break
		}
	}
	if want := strings.Join(append(append(batches()[0], batches()[1]...), batches()[2]...), ""); out.String() != want {
		t.Fatalf("read in 3-byte pieces: %q, want %q", out.String(), want)
	}
}

// brokenLines is a stream that breaks off after one line.
type brokenLines struct{ read bool }

func (b *brokenLines) ReadLine() ([]byte, error) {
	if b.read {
		return nil, errors.New("connection reset")
	}
	b.read = true
	return []byte("data: a\n"), nil
}

func (b *brokenLines) LineBuffered() bool { return false }

// TestRelayBrokenStream: the line read before the break goes out, then the error event, then the end.
func TestRelayBrokenStream(t *testing.T) {
	r := &sseRelay{lines: &brokenLines{}}
	got, err := io.ReadAll(r)
	if err != nil || !strings.HasPrefix(string(got), "data: a\n\n\ndata: {\"error\":") || !strings.HasSuffix(string(got), "}\n\n") ||
		!strings.Contains(string(got), "connection reset") || r.err == nil {
		t.Fatalf("broken stream: %q, %v", got, err)
	}
}

// TestStreamHeadersBeforeFirstEvent: the caller gets the answer's headers as soon as the provider sent its own,
// before the first event.
func TestStreamHeadersBeforeFirstEvent(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select { // the first event waits until the caller has the headers
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, sseEvents)
	})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	for k, v := range map[string]string{HeaderAPIKey: f.plain, "Content-Type": "application/json", HeaderProvider: "openai",
		"Authorization": "Bearer sk", HeaderCustomHost: up.URL + "/v1"} {
		req.Header.Set(k, v)
	}
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		answered <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("no headers before the first event")
	}
	close(release)
	if a.err != nil {
		t.Fatal(a.err)
	}
	resp := a.resp
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != sseEvents {
		t.Fatalf("stream %d: %q", resp.StatusCode, got)
	}
}
