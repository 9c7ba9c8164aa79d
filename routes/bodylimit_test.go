package routes

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/llmgw/gateway/mcpgw"
)

// rawCall writes one HTTP/1.1 request on conn (see rawText).
func rawCall(t *testing.T, conn net.Conn, method, path, body string, chunks []string, headers ...string) {
	t.Helper()
	if _, err := io.WriteString(conn, rawText(method, path, body, chunks, headers...)); err != nil {
		t.Fatal(err)
	}
}

// rawText is an HTTP/1.1 request: a declared length unless chunks are given, in which case the body goes
// chunked, one chunk each.
func rawText(method, path, body string, chunks []string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: gateway\r\n", method, path)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	if chunks != nil {
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for _, c := range chunks {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(c), c)
		}
		b.WriteString("0\r\n\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	return b.String()
}

// With bodies streamed to handlers, every body but an upload's is still read whole and bounded before any
// handler runs: a handler that answers without reading its body (401 here) leaves nothing of it on the
// connection, and the next request on it is read right.
func TestBodyIsReadBeforeHandlers(t *testing.T) {
	f := newFixture(t, Options{BodyLimit: 64 << 10})
	base, _ := f.serve(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	next := func(want int, what string) answer {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		a := readAnswer(t, resp)
		if a.status != want {
			t.Fatalf("%s: %d %s, want %d", what, a.status, a.body, want)
		}
		return a
	}
	big := `{"name": "` + strings.Repeat("x", 40<<10) + `"}`
	jsonCT := []string{"Content-Type", "application/json"}

	rawCall(t, conn, "POST", "/v1/api-keys", big, nil, append(jsonCT, HeaderAPIKey, "gw-wrong")...)
	next(401, "declared length, unread by the handler")
	rawCall(t, conn, "POST", "/v1/api-keys", "", []string{big[:100], big[100:]}, append(jsonCT, HeaderAPIKey, "gw-wrong")...)
	next(401, "chunked, unread by the handler")
	rawCall(t, conn, "POST", "/v1/api-keys", "", []string{`{"name":`, ` "chunked"}`}, append(jsonCT, HeaderAPIKey, f.admin)...)
	if a := next(200, "chunked, read by the handler"); a.json(t)["name"] != "chunked" {
		t.Fatalf("the handler read %s", a.body)
	}
	// Over the limit: the rest of a body up to maxDrain is read and dropped, and the connection goes on.
	rawCall(t, conn, "POST", "/v1/api-keys", strings.Repeat("y", 100<<10), nil, append(jsonCT, HeaderAPIKey, f.admin)...)
	checkError(t, next(413, "declared length over the limit"), 413, "request_too_large", nil)
	rawCall(t, conn, "POST", "/v1/api-keys", "", []string{strings.Repeat("y", 40<<10), strings.Repeat("y", 40<<10)}, append(jsonCT, HeaderAPIKey, f.admin)...)
	a := next(413, "chunked over the limit")
	checkError(t, a, 413, "request_too_large", nil)
	if a.header.Get("Connection") == "close" {
		t.Fatal("a body over the limit by less than maxDrain closed the connection")
	}
	// An upload's body is the upload's to read; when authentication refuses it, it is dropped all the same.
	upload, ct := uploadForm(t, formPart{name: "purpose", value: "batch"}, formPart{name: "file", filename: "f", value: big})
	rawCall(t, conn, "POST", "/v1/files", string(upload), nil, HeaderAPIKey, "gw-wrong", "Content-Type", ct)
	next(401, "an upload refused before its handler")
	rawCall(t, conn, "POST", "/v1/files", string(upload), nil, HeaderAPIKey, f.plain, "Content-Type", "application/json")
	next(415, "an upload its handler refuses unread")
	rawCall(t, conn, "POST", "/v1/files", string(upload)+"epilogue", nil, HeaderAPIKey, f.plain, "Content-Type", ct)
	next(200, "an upload with bytes past the form's end")
	rawCall(t, conn, "GET", "/v1/api-keys", "", nil, HeaderAPIKey, f.admin)
	next(200, "a request after them on the same connection")
}

// A body over the limit by more than maxDrain is answered, and the connection closed after the answer; the
// upload route is not held to the body limit.
func TestBodyFarOverLimit(t *testing.T) {
	f := newFixture(t, Options{BodyLimit: 1 << 10})
	base, _ := f.serve(t)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked ", chunked), func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := strings.Repeat("z", maxDrain+64<<10)
			var chunks []string
			if chunked {
				chunks = []string{body}
			}
			req := rawText("POST", "/v1/api-keys", body, chunks, HeaderAPIKey, f.admin, "Content-Type", "application/json")
			go io.WriteString(conn, req) // the server stops reading part way: write from aside (the write fails once it closes)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			a := readAnswer(t, resp)
			checkError(t, a, 413, "request_too_large", nil)
			if !resp.Close {
				t.Error("the connection stays open with the rest of the body unread")
			}
		})
	}

	upload, ct := uploadForm(t, formPart{name: "purpose", value: "batch"}, formPart{name: "file", filename: "f", value: strings.Repeat("u", 10<<10)})
	for _, path := range []string{"/v1/files", "/v1/files/", "/V1/Files"} {
		a := f.do(t, "POST", path, string(upload), HeaderAPIKey, f.plain, "Content-Type", ct)
		if a.status != 200 || a.json(t)["bytes"] != float64(10<<10) {
			t.Fatalf("upload to %s of more than the body limit: %d %s", path, a.status, a.body)
		}
	}
}

// A declared body is read into a buffer of its own, in steps past eagerBody, and a short one is an error.
func TestReadDeclared(t *testing.T) {
	big := strings.Repeat("b", eagerBody*2+123)
	tests := []struct {
		name, sent string
		declared   int
		wantErr    bool
	}{
		{"small", `{"model":"m"}`, 13, false},
		{"empty", ``, 0, false},
		{"past the eager allocation", big, len(big), false},
		{"short", `{"mo`, 13, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// In two reads, as a network stream may deliver it.
			got, err := readDeclared(io.MultiReader(strings.NewReader(tc.sent[:len(tc.sent)/2]), strings.NewReader(tc.sent[len(tc.sent)/2:])), tc.declared)
			if tc.wantErr {
				if err != io.ErrUnexpectedEOF {
					t.Fatalf("readDeclared of a short body: %v, want io.ErrUnexpectedEOF", err)
				}
				return
			}
			if err != nil || string(got) != tc.sent {
				t.Fatalf("readDeclared = %d bytes, %v; want the %d sent", len(got), err, len(tc.sent))
			}
		})
	}
}

// The inference handler keeps the buffer limitBody read the body into, without a copy, and copies any other
// body (fasthttp reuses its own buffers).
func TestOwnedBody(t *testing.T) {
	app := fiber.New()
	var kept, copied bool
	app.Post("/kept", func(c *fiber.Ctx) error {
		body := []byte(`{"model":"m"}`)
		keepBody(c, body)
		kept = &ownedBody(c)[0] == &body[0]
		return nil
	})
	app.Post("/pooled", func(c *fiber.Ctx) error {
		body := ownedBody(c)
		copied = &body[0] != &c.Request().Body()[0] && string(body) == `{"model":"m"}`
		return nil
	})
	for _, path := range []string{"/kept", "/pooled"} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(path)
		ctx.Request.SetBodyString(`{"model":"m"}`)
		app.Handler()(&ctx)
	}
	if !kept || !copied {
		t.Errorf("kept without a copy: %v; fasthttp's buffer copied: %v", kept, copied)
	}
}

// /mcp takes at most mcpgw.MaxRequestBytes, and the limit holds before authentication: a caller without a key
// gets the 413 naming the MCP bound (not a 401 after the gateway read the app's BodyLimit of it), declared or
// chunked, under any spelling of the path.
func TestMCPBodyLimitBeforeAuthentication(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcpgw.MaxRequestBytes) + `"}}`
	for _, path := range []string{"/mcp", "/mcp/", "/MCP"} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprint(path, " chunked ", chunked), func(t *testing.T) {
				conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				var chunks []string
				if chunked {
					chunks = []string{body[:1<<20], body[1<<20:]}
				}
				req := rawText("POST", path, body, chunks, "Content-Type", "application/json")
				go io.WriteString(conn, req) // the server stops reading part way
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				a := readAnswer(t, resp)
				checkError(t, a, 413, "request_too_large", "body")
				if !strings.Contains(string(a.body), fmt.Sprint("at most ", mcpgw.MaxRequestBytes, " bytes")) {
					t.Errorf("the 413 does not name the MCP bound: %s", a.body)
				}
			})
		}
	}
}
