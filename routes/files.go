package routes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Files: OpenAI's files API over the caller's workspace (DESIGN.md "Files, batches, fine-tuning"). Any key of the
// workspace may use it. The operations and their checks are control.Plane's (control/files.go); here the
// multipart upload is read as a stream, the answers shaped, and content streamed out.

const (
	// fileObject is the object of a file. OpenAI also sends a deprecated status ("processed"); openai-go
	// decodes a file without it, so the contract's fields are all a file has.
	fileObject = "file"

	// maxFieldBytes bounds a form field other than the file (purpose).
	maxFieldBytes = 1 << 10
	// formOverhead is room for what a form holds besides the file's content (boundaries, part headers,
	// purpose): an upload whose declared length passes the file limit by more is refused before it is read.
	formOverhead = 64 << 10
	// uploadCopyBuffer is the buffer the file's content passes through on its way to the store.
	uploadCopyBuffer = 32 << 10
)

var uploadBuffers = sync.Pool{New: func() any { b := make([]byte, uploadCopyBuffer); return &b }}

// fileRoutes registers the endpoints of this file under /v1.
func (s *Server) fileRoutes(v1 fiber.Router) {
	v1.Post("/files", s.uploadFile)
	v1.Get("/files", s.listFiles)
	v1.Get("/files/:id", s.getFile)
	v1.Delete("/files/:id", s.deleteFile)
	v1.Get("/files/:id/content", s.fileContent)
}

// fileView is OpenAI's file object.
type fileView struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

func viewFile(f *storage.File) fileView {
	return fileView{ID: f.ID, Object: fileObject, Bytes: f.Bytes, CreatedAt: f.CreatedAt, Filename: f.Filename,
		Purpose: f.Purpose}
}

// fileList is OpenAI's list of files: its SDKs page on has_more and the last item's id.
type fileList struct {
	Object  string     `json:"object"`
	Data    []fileView `json:"data"`
	HasMore bool       `json:"has_more"`
	FirstID *string    `json:"first_id"`
	LastID  *string    `json:"last_id"`
}

// uploadFile answers POST /v1/files: a multipart/form-data body with the parts file (the content, with a
// filename) and purpose, in either order. The content goes to the store as it arrives, so the body is never
// held in memory (limitBody lets this route's body through as a stream, and drops what is left of it).
func (s *Server) uploadFile(c *fiber.Ctx) error {
	body := c.Context().RequestBodyStream()
	if body == nil { // no body, or one already read: the same parsing applies
		body = bytes.NewReader(c.Request().Body())
	}
	f, err := s.readUpload(c, s.idleDeadline(c, body)) // limitBody drops what it leaves of the body
	if err != nil {
		return err
	}
	return c.JSON(viewFile(f))
}

// readUpload reads the upload form from body and stores its file.
func (s *Server) readUpload(c *fiber.Ctx, body io.Reader) (*storage.File, error) {
	boundary, err := formBoundary(c.Get(fiber.HeaderContentType))
	if err != nil {
		return nil, err
	}
	if n := c.Request().Header.ContentLength(); n > formOverhead {
		if err := s.plane.CheckUploadSize(int64(n) - formOverhead); err != nil {
			return nil, err
		}
	}
	var (
		upload  *control.FileUpload
		purpose string
		seen    = map[string]bool{}
	)
	defer func() {
		if upload != nil {
			upload.Abort() // does nothing once committed
		}
	}()
	form := multipart.NewReader(body, boundary)
	// Unknown and repeated fields are refused, so a form has at most two parts.
	for {
		part, err := form.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, malformedForm(err)
		}
		name := part.FormName()
		if seen[name] {
			return nil, gwerr.BadRequest(clipped(name), "%s is sent more than once", clipped(name))
		}
		seen[name] = true
		switch name {
		case "purpose":
			if purpose, err = readField(part, name); err != nil {
				return nil, err
			}
			if upload == nil { // refuse a bad purpose before the content is stored
				if err := control.CheckFilePurpose(purpose); err != nil {
					return nil, err
				}
			}
		case "file":
			if upload, err = s.plane.StartFile(c.UserContext(), callerOf(c), part.FileName()); err != nil {
				return nil, err
			}
			if err := copyContent(upload, part); err != nil {
				return nil, err
			}
		default:
			return nil, gwerr.BadRequest(clipped(name), "unknown form field %q: an upload has the fields file and purpose", clipped(name))
		}
	}
	if upload == nil {
		return nil, gwerr.BadRequest("file", "file is required: a form part named file holding the content, with a filename")
	}
	return upload.Commit(purpose)
}

// formBoundary returns the boundary of a multipart/form-data content type, or the 415 that says what is
// expected.
func formBoundary(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err == nil && mt == fiber.MIMEMultipartForm && params["boundary"] != "" {
		return params["boundary"], nil
	}
	got := contentType
	if got == "" {
		got = "none"
	}
	return "", &gwerr.Error{Status: fiber.StatusUnsupportedMediaType, Code: gwerr.CodeUnsupportedMediaType, Param: "content-type",
		Message: fmt.Sprintf("an upload must be multipart/form-data with a boundary, holding the fields file and purpose (content-type was %s)", clipped(got))}
}

// copyContent streams a file part into the upload through a small buffer. The store's errors (the file limit's
// 413 among them) pass as they are; a part that cannot be read is a malformed form.
func copyContent(upload *control.FileUpload, part io.Reader) error {
	bp := uploadBuffers.Get().(*[]byte)
	defer uploadBuffers.Put(bp)
	buf := *bp
	for {
		n, rerr := part.Read(buf)
		if n > 0 {
			if _, err := upload.Write(buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return malformedForm(rerr)
		}
	}
}

// readField reads a small form field whole.
func readField(part io.Reader, name string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", malformedForm(err)
	}
	if len(b) > maxFieldBytes {
		return "", gwerr.BadRequest(name, "%s is longer than %d bytes", name, maxFieldBytes)
	}
	return string(b), nil
}

// malformedForm is the answer to a form that cannot be read: 408 when the client stopped sending it in time.
func malformedForm(err error) error {
	if isTimeout(err) {
		return fiber.ErrRequestTimeout
	}
	return gwerr.BadRequest("", "malformed multipart/form-data body: %v", err)
}

// idleDeadline makes the server's read timeout bound each read of an upload rather than the whole request, so
// that a large upload on a slow link is not cut off while it makes progress.
func (s *Server) idleDeadline(c *fiber.Ctx, body io.Reader) io.Reader {
	conn, timeout := c.Context().Conn(), c.App().Config().ReadTimeout
	if conn == nil || timeout <= 0 {
		return body
	}
	return readFunc(func(p []byte) (int, error) {
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		return body.Read(p)
	})
}

// clipped is s cut to 64 bytes, for error messages and params that repeat a caller's form field name.
func clipped(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// listFiles answers GET /v1/files: a page of the workspace's files, newest first unless order=asc.
func (s *Server) listFiles(c *fiber.Ctx) error {
	q := control.FileQuery{Purpose: c.Query("purpose"), After: c.Query("after"), Limit: c.Query("limit"), Order: c.Query("order")}
	files, more, err := s.plane.ListFiles(c.UserContext(), callerOf(c), q)
	if err != nil {
		return err
	}
	list := fileList{Object: "list", Data: make([]fileView, 0, len(files)), HasMore: more}
	for _, f := range files {
		list.Data = append(list.Data, viewFile(f))
	}
	if len(files) > 0 {
		list.FirstID, list.LastID = &files[0].ID, &files[len(files)-1].ID
	}
	return c.JSON(list)
}

// getFile answers GET /v1/files/:id.
func (s *Server) getFile(c *fiber.Ctx) error {
	f, err := s.plane.GetFile(c.UserContext(), callerOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(viewFile(f))
}

// fileContent answers GET /v1/files/:id/content with the file's bytes, streamed from the store chunk by chunk
// (fasthttp closes the reader once it is written, or the client is gone).
func (s *Server) fileContent(c *fiber.Ctx) error {
	f, r, err := s.plane.OpenFile(c.UserContext(), callerOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
	return c.SendStream(r, int(f.Bytes))
}

// deleteFile answers DELETE /v1/files/:id.
func (s *Server) deleteFile(c *fiber.Ctx) error {
	id := c.Params("id")
	if err := s.plane.DeleteFile(c.UserContext(), callerOf(c), id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": strings.Clone(id), "object": fileObject, "deleted": true})
}
