package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"user and password", "http://user:s3cret@127.0.0.1:8080/v1", "http://***@127.0.0.1:8080/v1"},
		{"user only (a token)", "https://tok3n@api.test/v1", "https://***@api.test/v1"},
		{"empty password", "http://user:@api.test/", "http://***@api.test/"},
		{"IPv6 host", "http://u:p@[2002:a9fe:a9fe::]:80/v1", "http://***@[2002:a9fe:a9fe::]:80/v1"},
		{"'@' in the password", "http://u:p@ss@api.test/v1", "http://***@api.test/v1"},
		{"escaped '@' in the password", "http://u:p%40ss@api.test/v1", "http://***@api.test/v1"},
		{"'@' in the path is kept", "http://u:p@api.test/v1/@x?y=a@b#c@d", "http://***@api.test/v1/@x?y=a@b#c@d"},
		{"no userinfo", "http://api.test/v1", "http://api.test/v1"},
		{"no userinfo, '@' in the path", "http://api.test/v1/@x", "http://***@x"},
		{"slash in the password", "http://user:s3/cret@api.test/v1", "http://***@api.test/v1"},
		{"'?' in the password", "http://user:s3?cret@api.test/v1", "http://***@api.test/v1"},
		{"'#' in the password", "http://user:s3#cret@api.test/v1", "http://***@api.test/v1"},
		{"bad port", "http://user:s3cret@api.test:x/v1", "http://***@api.test:x/v1"},
		{"unparsable", "http://user:s3cret@[::1/", "http://***@[::1/"},
		{"no scheme", "user:s3cret@api.test/v1", "***@api.test/v1"},
		{"network-path reference", "//user:s3cret@api.test/v1", "//***@api.test/v1"},
		{"opaque", "http:user:s3cret@api.test", "***@api.test"},
		{"upper-case scheme", "HTTPS://user:s3cret@api.test", "HTTPS://***@api.test"},
		{"already redacted", "http://***@api.test", "http://***@api.test"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactURL(tc.in); got != tc.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestRedactURLAllocs: a URL without '@', the common case of every message, costs nothing.
func TestRedactURLAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { RedactURL("https://api.test/v1") }); n != 0 {
		t.Errorf("RedactURL allocates %v times, want 0", n)
	}
}

// TestRedactErrorHTTPClient: net/http keeps the user name in its error ("user:***@"); after RedactError, neither
// it nor the password is in the text, and the cause is still found through the chain.
func TestRedactErrorHTTPClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	_, err = client.Get("http://tok3n-user:s3cret@" + addr + "/v1/chat/completions")
	if err == nil {
		t.Fatal("a closed port answered")
	}
	if !strings.Contains(err.Error(), "tok3n-user") {
		t.Logf("net/http no longer shows the user name: %v", err) // the redaction below is then belt and braces
	}
	err = RedactError(fmt.Errorf("openai: %w", err))
	if text := err.Error(); strings.Contains(text, "tok3n") || strings.Contains(text, "s3cret") || !strings.Contains(text, "***@"+addr) {
		t.Errorf("redacted error %q", text)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Errorf("the cause is lost: %v", err)
	}
}

// unparsable are URLs that url.Parse refuses, as a caller's custom host may be.
var unparsable = struct{ userinfo, noUserinfo string }{
	// A password with a '/' makes the parser read part of it as the port, which its error quotes.
	userinfo:   "http://user:s3/cret@api.test/v1",
	noUserinfo: "http://api.test:bad/v1",
}

func TestRedactErrorParse(t *testing.T) {
	_, err := url.Parse(unparsable.userinfo)
	if err == nil {
		t.Fatal("parsed")
	}
	joined := errors.Join(errors.New("first"), err)
	if text := RedactError(joined).Error(); strings.Contains(text, "s3") || strings.Contains(text, "cret") || strings.Contains(text, "user") {
		t.Errorf("redacted error %q", text)
	}
	// Without userinfo, the parse error keeps its details.
	_, err = url.Parse(unparsable.noUserinfo)
	if text := RedactError(err).Error(); !strings.Contains(text, `invalid port ":bad"`) {
		t.Errorf("details lost: %q", text)
	}
	if RedactError(nil) != nil {
		t.Error("RedactError(nil) is not nil")
	}
}

// TestRedactErrorWrapped: a wrapper that built its text before RedactError is redacted as text, and the chain
// still holds the cause.
func TestRedactErrorWrapped(t *testing.T) {
	cause := &url.Error{Op: "Post", URL: "http://tok3n@127.0.0.1:1/v1", Err: errors.New("connection refused")}
	err := RedactError(fmt.Errorf("openai: %w", cause))
	if text := err.Error(); text != `openai: Post "http://***@127.0.0.1:1/v1": connection refused` {
		t.Errorf("redacted error %q", text)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || ue.URL != "http://***@127.0.0.1:1/v1" {
		t.Errorf("cause %v", ue)
	}
	plain := errors.New("no URL here")
	if RedactError(plain) != plain {
		t.Error("an error without userinfo was wrapped")
	}
}

func TestRedactText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`Post "http://user:***@h:1/v1": refused; Get "https://tok@h2/x@y" and ftp://a@b c@d`,
			`Post "http://***@h:1/v1": refused; Get "https://***@y" and ftp://***@b c@d`}, // to the last @: never less
		{"no URL here", "no URL here"},
		{"http://***@h", "http://***@h"},
		{"://@", "://@"},
		{"x://a@", "x://***@"},
	}
	for _, tc := range tests {
		if got := redactText(tc.in); got != tc.want {
			t.Errorf("redactText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRedactURL: RedactURL never panics, is stable when applied again, and removes the userinfo up to its first
// '@' whenever it appears once.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"http://u:p@h/v1", "http://u:p/x@h", "//@#@", "http:u@h", "x@y@z", "http://h/@", "HTTP://a:b@[::1]:1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := RedactURL(s)
		if !strings.Contains(s, "@") {
			if r != s {
				t.Fatalf("RedactURL(%q) = %q without an '@'", s, r)
			}
			return
		}
		if again := RedactURL(r); again != r {
			t.Fatalf("RedactURL(%q) = %q, then %q", s, r, again)
		}
		start := authorityStart(s)
		if at := strings.IndexByte(s[start:], '@'); at > 0 {
			secret := s[start : start+at+1]
			if strings.Trim(secret, "*@") != "" && strings.Count(s, secret) == 1 && strings.Contains(r, secret) {
				t.Fatalf("RedactURL(%q) = %q shows %q", s, r, secret)
			}
		}
	})
}
