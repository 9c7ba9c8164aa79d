package routes

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/mcpgw"
)

// The server runs with fasthttp's StreamRequestBody, so that a file upload reaches its handler as a stream
// instead of a buffer of its whole size. fasthttp then hands every body over as a stream (its first 8 KiB read
// ahead) and no longer enforces BodyLimit: c.Body() reads the stream whole, a body past the limit or chunked
// included. limitBody puts the limit back for every request but the upload, which reads its stream itself
// (files.go).

// maxDrain is how much of a refused body is read and dropped before answering, so that a client still sending
// it reads the answer instead of a reset connection; past it the connection is closed after the answer.
const maxDrain = 1 << 20

// maxPooledBody bounds the buffers kept for reading chunked bodies, so that one large body does not pin its
// buffer for good.
const maxPooledBody = 64 << 10

var chunkedBodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// limitBody refuses a body larger than the app's BodyLimit with 413, before anything else reads it, and reads
// an accepted one whole, so that handlers keep using c.Body() and a handler that answers without reading the
// body leaves nothing of it on the connection. An upload's body passes as a stream.
func limitBody(c *fiber.Ctx) error {
	stream := c.Context().RequestBodyStream()
	if stream == nil {
		return c.Next()
	}
	if isUpload(c) {
		// The upload reads its body itself; what is left of it (the whole body when authentication refused
		// it, the rest after an error, the bytes past the form's end) is dropped here, whoever answered.
		err := c.Next()
		discardBody(c, stream)
		return err
	}
	limit := c.App().Config().BodyLimit
	var tooLarge error = fiber.ErrRequestEntityTooLarge
	if isMCP(c) && limit > mcpgw.MaxRequestBytes {
		// Read no more than /mcp takes, before authentication: a caller without a key could otherwise make
		// the gateway hold BodyLimit bytes per request.
		limit, tooLarge = mcpgw.MaxRequestBytes, mcpBodyTooLarge(-1)
	}
	switch n := c.Request().Header.ContentLength(); {
	case n > limit:
		discardBody(c, stream)
		return tooLarge
	case n >= 0:
		body, err := readDeclared(stream, n)
		if err != nil {
			return bodyReadError(c, err)
		}
		keepBody(c, body)
		return c.Next()
	}
	// Chunked: no length to check up front.
	buf := chunkedBodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			chunkedBodies.Put(buf)
		}
	}()
	read, err := buf.ReadFrom(io.LimitReader(stream, int64(limit)+1))
	if err != nil {
		return bodyReadError(c, err)
	}
	if read > int64(limit) {
		discardBody(c, stream)
		return tooLarge
	}
	keepBody(c, bytes.Clone(buf.Bytes()))
	return c.Next()
}

// eagerBody is how much of a declared length is allocated before its bytes arrive: a typical body is read
// into a buffer of its exact size, while a large one grows as it arrives, so that a declared length alone
// cannot reserve memory.
const eagerBody = 1 << 20

// readDeclared reads a body of n declared bytes from the stream straight into a buffer of its own: fasthttp's
// Body() would copy it in 4 KiB steps into a pooled buffer, which a handler keeping the body must copy again.
func readDeclared(stream io.Reader, n int) ([]byte, error) {
	body := make([]byte, 0, min(n, eagerBody))
	for len(body) < n {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(n-len(body), cap(body)))
		}
		read, err := stream.Read(body[len(body):min(cap(body), n)])
		body = body[:len(body)+read]
		if len(body) == n {
			break
		}
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}

// keptBodyKey marks, in the request's user values, the buffer limitBody read the body into.
type keptBodyKey struct{}

// keepBody makes body, a buffer nothing else holds, the request's body (this ends the body stream), and
// marks it so that a handler whose use of the body outlives it can take it without a copy (ownedBody).
func keepBody(c *fiber.Ctx, body []byte) {
	c.Request().SetBodyRaw(body)
	if len(body) > 0 {
		c.Context().SetUserValue(keptBodyKey{}, unsafe.SliceData(body))
	}
}

// ownedBody is the request's body for a handler whose use of it outlives the handler (the engine's, whose
// streams and logs go on after it): the buffer limitBody read it into, which fasthttp never reuses, when it is
// the body as it stands, or else a copy (fasthttp reuses its own buffers; a decompressed body is new, but
// copying it keeps this simple).
func ownedBody(c *fiber.Ctx) []byte {
	body := c.Body()
	if kept, _ := c.Context().UserValue(keptBodyKey{}).(*byte); kept != nil && len(body) > 0 && kept == unsafe.SliceData(body) {
		return body
	}
	return bytes.Clone(body)
}

// isUpload tells whether the request is routed to the file upload, whose body is not held in memory. It
// matches as the router does: case-insensitive, a trailing slash allowed.
// isMCP reports whether the request is for /mcp (mcp.go), whose bodies are bounded by mcpgw.MaxRequestBytes.
func isMCP(c *fiber.Ctx) bool { return strings.EqualFold(strings.TrimSuffix(c.Path(), "/"), "/mcp") }

func isUpload(c *fiber.Ctx) bool {
	return c.Method() == fiber.MethodPost && strings.EqualFold(strings.TrimSuffix(c.Path(), "/"), "/v1/files")
}

// discardBody reads and drops up to maxDrain bytes of what is left of a body the request will not use; when
// more is left, or it cannot be read, the connection closes after the answer, since the next request could
// not be told from the rest of this body.
func discardBody(c *fiber.Ctx, stream io.Reader) {
	n, err := io.Copy(io.Discard, io.LimitReader(stream, maxDrain+1))
	if err != nil || n > maxDrain {
		c.Context().SetConnectionClose()
	}
}

// bodyReadError is the answer to a body that could not be read: 408 when the client was too slow, else 400.
// The connection closes after it, since what is left of the body cannot be told from the next request.
func bodyReadError(c *fiber.Ctx, err error) error {
	c.Context().SetConnectionClose()
	if isTimeout(err) {
		return fiber.ErrRequestTimeout
	}
	return fiber.NewError(fiber.StatusBadRequest, "the request body could not be read: "+err.Error())
}

// isTimeout tells whether a read of the body failed because the client did not send it in time.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
