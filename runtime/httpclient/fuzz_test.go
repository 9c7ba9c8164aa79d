package httpclient

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzReadResponse feeds arbitrary bytes to the answer parser: it must return an answer or an error, never panic,
// and never give a body longer than what followed the head.
func FuzzReadResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nrest",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200\r\nx: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 999 X\n\n",
		"\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr := &Transport{opts: Options{MaxHeaderBytes: 1 << 12, MaxIdlePerHost: 1}}
		p := &pool{}
		c := &conn{t: tr, p: p, br: bufio.NewReaderSize(strings.NewReader(in), 64), nc: nopConn{}}
		req, _ := http.NewRequest("GET", "http://x/", nil)
		resp, err := c.readResponse(req)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(len(in))+1))
		if len(b) > len(in) {
			t.Fatalf("body of %d bytes from %d bytes of input", len(b), len(in))
		}
		if resp.StatusCode < 200 || resp.StatusCode > 999 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
