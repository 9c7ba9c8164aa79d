package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Files (OpenAI's files API, DESIGN.md "Files, batches, fine-tuning") of the caller's workspace: uploads, batch
// inputs and outputs, fine-tuning data. Any key of the workspace may use them, as OpenAI's do; the admin right
// is not needed. A file is written as a stream (FileUpload) and read as one (OpenFile): no operation holds a
// whole file, so the file limit bounds the disk, not the memory.
//
// Decisions the contract leaves open:
//   - The purpose may be learnt after the content (multipart parts come in either order): an upload starts
//     without one and Commit checks it, dropping what was written when it is missing or unknown.
//   - A filename is 1 to 512 bytes of UTF-8 without control characters, so that it can be logged and sent back
//     in a header-safe form.
//   - Lists are newest first unless order=asc; limit is 1 to 10000, default 10000, as OpenAI's; an after that
//     names no file of the list gives an empty page.

// FilePurposes are the purposes a file may be uploaded with (DESIGN.md).
var FilePurposes = []string{"assistants", "batch", "batch_output", "fine-tune", "user_data"}

const (
	// DefaultFileLimit is the largest file an upload stores when Options.FileLimit is zero: 512 MiB.
	DefaultFileLimit = 512 << 20
	// DefaultFileListLimit and MaxFileListLimit bound the page of a file list, as OpenAI's do.
	DefaultFileListLimit = 10000
	MaxFileListLimit     = 10000
	// maxFilenameBytes bounds a file's name.
	maxFilenameBytes = 512
	// maxEcho bounds how much of a caller's value an error message repeats.
	maxEcho = 128
)

// FileLimit is the largest file an upload may store, in bytes.
func (p *Plane) FileLimit() int64 { return p.fileLimit }

// CheckUploadSize refuses, before anything is stored, an upload whose content is known to be at least size
// bytes: 413 when that passes the file limit.
func (p *Plane) CheckUploadSize(size int64) error {
	if size > p.fileLimit {
		return p.fileTooLarge()
	}
	return nil
}

func (p *Plane) fileTooLarge() *gwerr.Error {
	return gwerr.Newf(http.StatusRequestEntityTooLarge, gwerr.CodeRequestTooLarge,
		"file is larger than the limit of %d bytes (--file-limit)", p.fileLimit)
}

// CheckFilePurpose returns a 400 naming purpose unless it is one of FilePurposes.
func CheckFilePurpose(purpose string) error {
	if purpose == "" {
		return gwerr.BadRequest("purpose", "purpose is required: one of %s", strings.Join(FilePurposes, ", "))
	}
	if !slices.Contains(FilePurposes, purpose) {
		return gwerr.BadRequest("purpose", "purpose must be one of %s, not %q", strings.Join(FilePurposes, ", "), echo(purpose))
	}
	return nil
}

// checkFilename returns a 400 naming file unless name is a filename the store keeps.
func checkFilename(name string) error {
	switch {
	case name == "":
		return gwerr.BadRequest("file", "file must be sent with a filename (Content-Disposition: form-data; name=\"file\"; filename=\"...\")")
	case len(name) > maxFilenameBytes:
		return gwerr.BadRequest("file", "the filename of file is %d bytes long; at most %d are allowed", len(name), maxFilenameBytes)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		return gwerr.BadRequest("file", "the filename of file must be UTF-8 text without control characters")
	}
	return nil
}

// echo is s cut to maxEcho bytes, for error messages that repeat a caller's value.
func echo(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return strings.ToValidUTF8(s[:maxEcho], "") + "…"
}

// FileUpload is a file being uploaded: Write its content as it arrives, then Commit or Abort. It is not safe
// for concurrent use.
type FileUpload struct {
	p      *Plane
	caller Caller
	w      *storage.FileWriter
}

// StartFile begins an upload of a file named filename into the caller's workspace. The caller must Commit or
// Abort it (Abort after Commit does nothing, so it can be deferred).
func (p *Plane) StartFile(_ context.Context, caller Caller, filename string) (*FileUpload, error) {
	if err := checkFilename(filename); err != nil {
		return nil, err
	}
	w, err := p.store.Files.Create(caller.WorkspaceID, storage.File{Filename: filename}, p.fileLimit)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return &FileUpload{p: p, caller: caller, w: w}, nil
}

// Write appends b to the file. Past the file limit it returns the 413 to answer, having stored nothing of b.
func (u *FileUpload) Write(b []byte) (int, error) {
	n, err := u.w.Write(b)
	if errors.Is(err, storage.ErrFileTooLarge) {
		return n, u.p.fileTooLarge()
	}
	if err != nil {
		return n, gwerr.Internal(err)
	}
	return n, nil
}

// Commit checks purpose and stores the file, synced: once it returns, the file survives a crash. With a
// missing or unknown purpose the upload is aborted and the 400 names purpose.
func (u *FileUpload) Commit(purpose string) (*storage.File, error) {
	if err := CheckFilePurpose(purpose); err != nil {
		u.Abort()
		return nil, err
	}
	u.w.SetPurpose(purpose)
	f, err := u.w.Commit()
	if err != nil {
		u.Abort()
		return nil, gwerr.Internal(err)
	}
	u.p.log.Info("file uploaded", "trace_id", u.caller.TraceID, "file_id", f.ID, "workspace_id", f.WorkspaceID,
		"bytes", f.Bytes, "purpose", f.Purpose, "by", u.caller.KeyID)
	return f, nil
}

// Abort drops what was written. A failure leaves a pending marker that the next start's sweep clears.
func (u *FileUpload) Abort() {
	if err := u.w.Abort(); err != nil {
		u.p.log.Warn("dropping an aborted upload failed; the next start sweeps it", "trace_id", u.caller.TraceID,
			"file_id", u.w.ID(), "workspace_id", u.caller.WorkspaceID, "err", err)
	}
}

// FileQuery is a file list's query as the caller sent it; ListFiles checks every value.
type FileQuery struct {
	Purpose string // "": every purpose; else one of FilePurposes
	After   string // a file ID: the page starts after it
	Limit   string // "": DefaultFileListLimit; else 1 to MaxFileListLimit
	Order   string // "" or "desc": newest first; "asc": oldest first
}

// ListFiles returns a page of the caller's workspace's files and whether more follow it.
func (p *Plane) ListFiles(_ context.Context, caller Caller, q FileQuery) ([]*storage.File, bool, error) {
	var l storage.FileList
	if q.Purpose != "" {
		if err := CheckFilePurpose(q.Purpose); err != nil {
			return nil, false, err
		}
		l.Purpose = q.Purpose
	}
	l.Limit = DefaultFileListLimit
	if q.Limit != "" {
		n, err := strconv.Atoi(q.Limit)
		if err != nil || n < 1 || n > MaxFileListLimit {
			return nil, false, gwerr.BadRequest("limit", "limit must be an integer from 1 to %d, not %q", MaxFileListLimit, echo(q.Limit))
		}
		l.Limit = n
	}
	switch q.Order {
	case "", "desc":
	case "asc":
		l.Asc = true
	default:
		return nil, false, gwerr.BadRequest("order", "order must be asc or desc, not %q", echo(q.Order))
	}
	if q.After != "" {
		if !storage.ValidID(q.After) {
			return nil, false, gwerr.BadRequest("after", "after must be a file ID, not %q", echo(q.After))
		}
		l.After = q.After
	}
	files, more, err := p.store.Files.List(caller.WorkspaceID, l)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	return files, more, nil
}

// GetFile returns a file of the caller's workspace, or a 404 (another workspace's file included).
func (p *Plane) GetFile(_ context.Context, caller Caller, id string) (*storage.File, error) {
	f, err := p.store.Files.Get(caller.WorkspaceID, id)
	if err != nil {
		return nil, fileError(id, err)
	}
	return f, nil
}

// OpenFile returns a file of the caller's workspace and a reader of its content, which the caller must close.
func (p *Plane) OpenFile(_ context.Context, caller Caller, id string) (*storage.File, io.ReadCloser, error) {
	f, r, err := p.store.Files.Open(caller.WorkspaceID, id)
	if err != nil {
		return nil, nil, fileError(id, err)
	}
	return f, r, nil
}

// DeleteFile removes a file of the caller's workspace and its content, synced.
func (p *Plane) DeleteFile(_ context.Context, caller Caller, id string) error {
	if err := p.store.Files.Delete(caller.WorkspaceID, id); err != nil {
		return fileError(id, err)
	}
	p.log.Info("file deleted", "trace_id", caller.TraceID, "file_id", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return nil
}

// fileError is the answer to a store error about file id: 404 when there is no such file in the workspace.
func fileError(id string, err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("file", echo(id))
	}
	return gwerr.Internal(fmt.Errorf("file %s: %w", echo(id), err))
}
