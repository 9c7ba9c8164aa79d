package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// UploadFile mirrors a gateway file to the provider once (multipart upload streamed from the store; the mapping is kept
// in storage.FineTuning, so a second call returns the same provider file ID) and returns the provider's file ID.
// An unknown gateway file is a 404 *gwerr.Error that wraps storage.ErrNotFound; a provider's refusal a
// *ProviderError.
func (t *Target) UploadFile(ctx context.Context, gatewayFileID, purpose string) (string, error) {
	defer t.c.locks.lock(t.ws + "/" + t.slug + "/g/" + gatewayFileID + "/" + purpose)()
	if id, err := t.c.store.FineTuning.ProviderFileID(t.ws, t.slug, gatewayFileID, purpose); err == nil {
		return id, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return "", gwerr.Internal(err)
	}
	f, content, err := t.c.store.Files.Open(t.ws, gatewayFileID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Err: err,
			Message: fmt.Sprintf("file %q not found", gatewayFileID)}
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	defer content.Close()
	name := f.Filename
	if name == "" {
		name = f.ID + ".jsonl"
	}
	// The multipart frame around the content is built first, so that the body streams from the store with an
	// exact Content-Length (some providers refuse chunked uploads) and no copy of the file.
	var frame bytes.Buffer
	mw := multipart.NewWriter(&frame)
	if err := mw.WriteField("purpose", purpose); err != nil {
		return "", gwerr.Internal(err)
	}
	if _, err := mw.CreateFormFile("file", name); err != nil {
		return "", gwerr.Internal(err)
	}
	head := bytes.Clone(frame.Bytes())
	frame.Reset()
	if err := mw.Close(); err != nil {
		return "", gwerr.Internal(err)
	}
	tail := frame.Bytes()
	body := io.MultiReader(bytes.NewReader(head), io.LimitReader(content, f.Bytes), bytes.NewReader(tail))

	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	resp, err := t.send(ctx, http.MethodPost, "/files", nil, body, mw.FormDataContentType(), int64(len(head))+f.Bytes+int64(len(tail)))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	answer, err := t.read(ctx, resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", &ProviderError{Provider: t.t.Provider, Status: resp.StatusCode, Body: answer}
	}
	var uploaded struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(answer, &uploaded) != nil || uploaded.ID == "" {
		return "", gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered the upload of file %q without a file id", t.t.Provider, gatewayFileID)
	}
	if err := t.c.store.FineTuning.PutFileMirror(t.ws, t.slug, gatewayFileID, purpose, uploaded.ID); err != nil {
		return "", gwerr.Internal(err)
	}
	t.c.log.Info("file mirrored to provider", "workspace_id", t.ws, "virtual_key", t.slug, "provider", t.t.Provider,
		"file_id", gatewayFileID, "provider_file_id", uploaded.ID, "bytes", f.Bytes)
	return uploaded.ID, nil
}

// ImportFile copies a provider file's content into a gateway file of the workspace (streamed), records the mapping both
// ways and returns it; importing the same provider file twice returns the first gateway file. An empty filename
// takes the provider's name of the file. The gateway file's ID is derived from the provider's, so that an import a
// crash cut short is written again, not doubled. A provider's refusal is a *ProviderError; a file larger than the
// client's file limit a 502.
func (t *Target) ImportFile(ctx context.Context, providerFileID, purpose, filename string) (*storage.File, error) {
	if providerFileID == "" {
		return nil, gwerr.Internal(errors.New("upstream: ImportFile of an empty provider file ID"))
	}
	defer t.c.locks.lock(t.ws + "/" + t.slug + "/p/" + providerFileID)()
	if known, err := t.c.store.FineTuning.GatewayFileID(t.ws, t.slug, providerFileID); err == nil {
		f, err := t.c.store.Files.Get(t.ws, known)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, storage.ErrNotFound) { // a deleted copy is copied again
			return nil, gwerr.Internal(err)
		}
	} else if !errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.Internal(err)
	}
	filePath := "/files/" + url.PathEscape(providerFileID)
	if filename == "" {
		status, answer, err := t.Do(ctx, http.MethodGet, filePath, nil, nil)
		if err != nil {
			return nil, err
		}
		if status < 200 || status > 299 {
			return nil, &ProviderError{Provider: t.t.Provider, Status: status, Body: answer}
		}
		var meta struct {
			Filename string `json:"filename"`
		}
		_ = json.Unmarshal(answer, &meta)
		filename = meta.Filename
		if filename == "" {
			filename = providerFileID
		}
	}

	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	resp, err := t.send(ctx, http.MethodGet, filePath+"/content", nil, nil, "", -1)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		answer, err := t.read(ctx, resp.Body)
		if err != nil {
			return nil, err
		}
		return nil, &ProviderError{Provider: t.t.Provider, Status: resp.StatusCode, Body: answer}
	}
	w, err := t.c.store.Files.Create(t.ws, storage.File{ID: importedFileID(t.ws, t.slug, providerFileID), Filename: filename, Purpose: purpose}, t.c.fileLimit)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	defer w.Abort()
	src := &readSide{r: resp.Body}
	if _, err := io.Copy(w, src); err != nil {
		switch {
		case src.err != nil:
			return nil, runtime.ManagementCallError(ctx, t.t, src.err)
		case errors.Is(err, storage.ErrFileTooLarge):
			return nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s file %q is larger than the gateway's file limit of %d bytes",
				t.t.Provider, providerFileID, t.c.fileLimit)
		}
		return nil, gwerr.Internal(err)
	}
	f, err := w.Commit()
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if err := t.c.store.FineTuning.PutFileMirror(t.ws, t.slug, f.ID, purpose, providerFileID); err != nil {
		return nil, gwerr.Internal(err)
	}
	t.c.log.Info("provider file copied into the gateway", "workspace_id", t.ws, "virtual_key", t.slug, "provider", t.t.Provider,
		"file_id", f.ID, "provider_file_id", providerFileID, "bytes", f.Bytes)
	return f, nil
}

// GatewayFileID maps a provider file ID back to the gateway file ID it mirrors ("" when there is none).
func (t *Target) GatewayFileID(_ context.Context, providerFileID string) (string, error) {
	id, err := t.c.store.FineTuning.GatewayFileID(t.ws, t.slug, providerFileID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	return id, nil
}

// importedFileID is the gateway ID of a provider file's copy: the same for the same file of the same stored
// provider, so that a copy a crash cut short is replaced by the next.
func importedFileID(workspaceID, slug, providerFileID string) string {
	sum := sha256.Sum256([]byte(workspaceID + "\x00" + slug + "\x00" + providerFileID))
	return "file-" + hex.EncodeToString(sum[:12])
}

// readSide remembers a failed read, so that a failed copy can be blamed on the provider or on the store.
type readSide struct {
	r   io.Reader
	err error
}

func (s *readSide) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}
