package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// The mock upstream runs as a child process (this binary, with mockEnv set) so that the gateway's CPU, the
// mock's and the load generator's are each measured apart.
const (
	mockEnv       = "LOADBENCH_MOCK"        // set: run as the mock upstream
	mockChunksEnv = "LOADBENCH_MOCK_CHUNKS" // chunks of a streamed answer
)

const mockModel = "gpt-4o-mini" // a priced model, so that the gateway's cost accounting runs as for users

var mockAnswer = []byte(`{"id":"chatcmpl-loadbench","object":"chat.completion","created":1700000000,"model":"` + mockModel +
	`","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the load benchmark's mock."},` +
	`"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}}`)

// mockStream returns the fixed SSE answer: chunks small content deltas, a finishing chunk with usage, [DONE].
func mockStream(chunks int) [][]byte {
	const head = `data: {"id":"chatcmpl-loadbench","object":"chat.completion.chunk","created":1700000000,"model":"` + mockModel + `",`
	events := make([][]byte, 0, chunks+2)
	for i := 0; i < chunks; i++ {
		events = append(events, []byte(head+`"choices":[{"index":0,"delta":{"content":"tok `+strconv.Itoa(i)+` "},"finish_reason":null}]}`+"\n\n"))
	}
	events = append(events, []byte(head+`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":12,"completion_tokens":`+strconv.Itoa(chunks)+`,"total_tokens":`+strconv.Itoa(chunks+12)+`}}`+"\n\n"))
	return append(events, []byte("data: [DONE]\n\n"))
}

// wantsStream reports whether a request body sets "stream": true. The mock only scans for the key, as a fixed
// upstream should cost as little as possible; the benchmark's prompts never contain the text "stream".
func wantsStream(body []byte) bool {
	i := bytes.Index(body, []byte(`"stream"`))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(body[i+len(`"stream"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte("true"))
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// mockHandler answers every POST with the fixed answer, or the fixed stream, flushing each event as a provider does.
func mockHandler(chunks int) http.Handler {
	events := mockStream(chunks)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"POST only"}}`, http.StatusMethodNotAllowed)
			return
		}
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		if _, err := io.Copy(buf, io.LimitReader(r.Body, 64<<20)); err != nil {
			return
		}
		if !wantsStream(buf.Bytes()) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(mockAnswer)))
			w.Write(mockAnswer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		flusher, _ := w.(http.Flusher)
		for _, e := range events {
			if _, err := w.Write(e); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	})
}

// serveMock runs the mock upstream on a free loopback port, prints "listening <addr>" on stdout and serves until
// its stdin closes (the parent ended, however it ended).
func serveMock() error {
	chunks, err := strconv.Atoi(os.Getenv(mockChunksEnv))
	if err != nil || chunks < 1 || chunks > maxChunks {
		return fmt.Errorf("%s must be 1 to %d, not %q", mockChunksEnv, maxChunks, os.Getenv(mockChunksEnv))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mockHandler(chunks), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
