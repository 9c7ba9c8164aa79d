package routes

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime/bootstrap"
)

// lockedBuffer is a log sink that several goroutines may write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// closedPort returns 127.0.0.1:<a port nothing listens on>.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUpstreamPasswordNeverShown: a stored provider (from the bootstrap file) whose custom_host carries
// user:password@ fails with 502 when its host is down; neither the answer, which any key of the workspace
// gets, nor the log holds the password or the user name.
func TestUpstreamPasswordNeverShown(t *testing.T) {
	logs := &lockedBuffer{}
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), AccessLog: true})
	host := "http://tok3nuser:s3cret@" + closedPort(t) + "/v1"
	file, err := bootstrap.Parse([]byte(`{"providers": [{"slug": "locked", "workspace": "default", "provider": "openai",
		"api_key": "sk-x", "custom_host": "`+host+`"}]}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Apply(f.store, file); err != nil {
		t.Fatal(err)
	}
	for _, h := range [][]string{{HeaderVirtualKey, "locked"}, {HeaderConfig, `{"provider": "@locked", "retry": {"attempts": 1}}`}} {
		a := f.chat(t, chatBody, h...)
		checkError(t, a, 502, "upstream_error", nil)
		if !strings.Contains(string(a.body), "***@127.0.0.1") {
			t.Errorf("%v: the message no longer shows the host: %s", h, a.body)
		}
		for _, secret := range []string{"s3cret", "tok3nuser"} {
			if strings.Contains(string(a.body), secret) {
				t.Errorf("%v: the answer holds %q: %s", h, secret, a.body)
			}
		}
	}
	out := logs.String()
	if !strings.Contains(out, "upstream_error") {
		t.Fatalf("the failure was not logged: %s", out)
	}
	for _, secret := range []string{"s3cret", "tok3nuser"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds %q:\n%s", secret, out)
		}
	}
}

// TestCustomHostErrorsRedacted: whatever refuses a custom host with userinfo (the header's check, an inline
// config's validation, the address policy) names the field and hides the userinfo.
func TestCustomHostErrorsRedacted(t *testing.T) {
	logs := &lockedBuffer{}
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), AccessLog: true})
	tests := []struct {
		name    string
		headers []string
		code    string
		param   string
	}{
		{"header not http", []string{HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, "ftp://tok3nuser:s3cret@127.0.0.1/v1"},
			"invalid_request", HeaderCustomHost},
		{"header unparsable", []string{HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, "http://tok3nuser:s3/cret@127.0.0.1/v1"},
			"invalid_request", HeaderCustomHost},
		{"header refused address", []string{HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, "http://tok3nuser:s3cret@169.254.169.254/v1"},
			"host_not_allowed", HeaderCustomHost},
		{"inline config not http", []string{HeaderConfig, `{"provider": "openai", "api_key": "k", "custom_host": "ftp://tok3nuser:s3cret@127.0.0.1/v1"}`},
			"invalid_config", "custom_host"},
		{"inline config refused address", []string{HeaderConfig, `{"provider": "openai", "api_key": "k", "custom_host": "http://tok3nuser:s3cret@[2002:a9fe:a9fe::]/v1"}`},
			"host_not_allowed", "custom_host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.chat(t, chatBody, tc.headers...)
			checkError(t, a, 400, tc.code, tc.param)
			for _, secret := range []string{"s3", "cret", "tok3nuser"} {
				if strings.Contains(string(a.body), secret) {
					t.Errorf("the answer holds %q: %s", secret, a.body)
				}
			}
		})
	}
	for _, secret := range []string{"s3cret", "tok3nuser"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
}
