package routes

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// serve runs the fixture's server on a loopback port and returns its base URL and a channel that yields
// Serve's result.
func (f *fixture) serve(t testing.TB) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ln) }()
	t.Cleanup(func() { f.srv.Shutdown(time.Second) })
	return "http://" + ln.Addr().String(), done
}

func readAnswer(t *testing.T, resp *http.Response) answer {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// Bodies over the limit are refused by fasthttp before routing; the answer must still be our JSON with a
// trace ID, whether the client declares the length or streams the body.
func TestBodyOverLimit(t *testing.T) {
	f := newFixture(t, Options{BodyLimit: 1024})
	base, _ := f.serve(t)
	tests := []struct {
		name    string
		body    io.Reader
		withKey bool
		// fasthttp drops the request headers when a chunked body overflows, so the answer carries a new trace ID.
		callersTrace bool
	}{
		{"declared length, with key", strings.NewReader(`{"name": "` + strings.Repeat("x", 4000) + `"}`), true, true},
		{"declared length, no key", strings.NewReader(strings.Repeat("x", 4000)), false, true},
		{"chunked", io.MultiReader(strings.NewReader(`{"name": "`), strings.NewReader(strings.Repeat("x", 4000)), strings.NewReader(`"}`)), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/v1/api-keys", tc.body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(HeaderTraceID, "big-body-1")
			if tc.withKey {
				req.Header.Set(HeaderAPIKey, f.admin)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			a := readAnswer(t, resp)
			checkError(t, a, 413, "request_too_large", nil)
			if got := a.header.Get(HeaderTraceID); tc.callersTrace && got != "big-body-1" {
				t.Errorf("trace id %q, want the caller's", got)
			}
		})
	}
	// The limit is a limit, not an off-by-one: a body just under it passes.
	req, _ := http.NewRequest("POST", base+"/v1/api-keys", strings.NewReader(`{"name": "`+strings.Repeat("x", 100)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderAPIKey, f.admin)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, resp); a.status != 200 {
		t.Fatalf("small body: %d %s", a.status, a.body)
	}
}

// Shutdown lets a request in flight finish, then Serve returns and new connections are refused.
func TestShutdownLetsRequestsInFlightFinish(t *testing.T) {
	f := newFixture(t, Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	f.srv.Handler().Get("/slow", func(c *fiber.Ctx) error {
		close(entered)
		<-release
		return c.SendString("finished")
	})
	base, served := f.serve(t)

	result := make(chan answer, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			result <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		result <- readAnswer(t, resp)
	}()
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- f.srv.Shutdown(10 * time.Second) }()

	// New connections are refused once shutdown has begun.
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 200*time.Millisecond)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepts connections after Shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	default:
	}
	close(release)
	if a := <-result; a.status != 200 || string(a.body) != "finished" {
		t.Fatalf("request in flight got %d %q", a.status, a.body)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// When the grace period runs out, Shutdown gives up on the stuck request and says so.
func TestShutdownGracePeriodEnds(t *testing.T) {
	f := newFixture(t, Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	f.srv.Handler().Get("/stuck", func(c *fiber.Ctx) error {
		close(entered)
		<-release
		return nil
	})
	base, _ := f.serve(t)
	go func() {
		if resp, err := http.Get(base + "/stuck"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	err := f.srv.Shutdown(100 * time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a stuck request = %v, want a deadline error", err)
	}
}
