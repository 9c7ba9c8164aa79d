// Command mockprovider is a stand-in for an OpenAI-compatible provider, for trying the gateway without a
// provider account: POST /v1/chat/completions answers "You said: <the last user message>", streamed (SSE) when
// the request says "stream": true. Any model name is accepted and any Authorization header too. Every other path
// is a 404 in OpenAI's error shape. It logs one line per request to standard error.
//
//	go run ./examples/mockprovider                         # listens on 127.0.0.1:9911
//	go run ./examples/mockprovider -listen 127.0.0.1:0     # a free port, printed at start
//
// Point a stored provider at it with "provider": "openai", "custom_host": "http://127.0.0.1:9911/v1" (any
// api_key). It imports only the standard library.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "mockprovider:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. It writes "mockprovider listening on http://ADDR" to logw once it listens.
func run(ctx context.Context, args []string, logw io.Writer) error {
	fs := flag.NewFlagSet("mockprovider", flag.ContinueOnError)
	fs.SetOutput(logw)
	listen := fs.String("listen", "127.0.0.1:9911", "address to serve on (127.0.0.1:0 picks a free port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	logger := log.New(logw, "", log.LstdFlags)
	srv := &http.Server{Handler: handler(logger), ReadHeaderTimeout: 10 * time.Second}
	logger.Printf("mockprovider listening on http://%s", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string, or an array of parts
	} `json:"messages"`
}

// handler answers the OpenAI-compatible routes the mock knows.
func handler(logger *log.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a chat completion request: "+err.Error())
			return
		}
		reply := "You said: " + lastUserText(req)
		logger.Printf("POST %s model=%q stream=%v messages=%d", r.URL.Path, req.Model, req.Stream, len(req.Messages))
		id, created := fmt.Sprintf("chatcmpl-mock-%d", time.Now().UnixNano()), time.Now().Unix()
		if req.Stream {
			stream(w, id, created, req.Model, reply)
			return
		}
		words := len(strings.Fields(reply))
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": map[string]int{"prompt_tokens": promptWords(req), "completion_tokens": words,
				"total_tokens": promptWords(req) + words},
		})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		logger.Printf("%s %s: not found", r.Method, r.URL.Path)
		apiError(w, http.StatusNotFound, "invalid_request_error", "the mock provider answers only POST /v1/chat/completions")
	})
	return mux
}

// stream writes reply as chat.completion.chunk events, one word at a time, then [DONE].
func stream(w http.ResponseWriter, id string, created int64, model, reply string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, word := range strings.SplitAfter(reply, " ") {
		event(map[string]any{"content": word}, nil)
	}
	event(map[string]any{}, "stop")
	io.WriteString(w, "data: [DONE]\n\n")
}

// lastUserText returns the text of the last user message (string content, or its text parts joined).
func lastUserText(req chatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" {
			return contentText(m.Content)
		}
	}
	return ""
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// promptWords is a rough token count of the request: its messages' words.
func promptWords(req chatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += len(strings.Fields(contentText(m.Content)))
	}
	return n
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
