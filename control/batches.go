package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/batch"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Batches (SPEC.md's batch object, DESIGN.md "Files, batches, fine-tuning") of the caller's workspace. The
// Plane checks what a caller sends and which batches it may see; running them is the BatchRunner's.
//
// Decisions SPEC.md leaves open:
//   - Any key of the workspace makes, reads, lists and cancels its batches (no admin right needed); another
//     workspace's batch is a 404 and never listed.
//   - The input file must be a gateway file of the workspace with purpose "batch", as OpenAI requires.
//   - The virtual key is required to make a batch, and must name a stored provider of the workspace: a typo
//     is a 400 at once, not a batch of failed lines. Reads and cancels do not need it: a batch remembers it.
//   - Metadata keys and values are counted in characters (runes), as SPEC.md's limits are stated.
//   - Cancelling a finalizing or finished batch is a 409: its results are written or being written.

// BatchRunner runs batches (runtime/batch.Runner): it stores a new one and starts it, cancels one, and shows
// one as it is now (live counts; a forwarded batch mirrored from its provider when refresh is set).
type BatchRunner interface {
	Create(ctx context.Context, b *storage.Batch) (*storage.Batch, error)
	Cancel(ctx context.Context, workspaceID, id string) (*storage.Batch, error)
	View(ctx context.Context, b *storage.Batch, refresh bool) *storage.Batch
}

// Limits of a batch's metadata (SPEC.md).
const (
	maxBatchMetadataPairs = 16
	maxBatchMetadataKey   = 64
	maxBatchMetadataValue = 512
)

// Batch list page sizes (SPEC.md).
const (
	DefaultBatchPage = 20
	MaxBatchPage     = 100
)

// purposeBatch is the purpose of a file a batch reads.
const purposeBatch = "batch"

// BatchInput is what a caller asks for when it makes a batch: the body's fields, and the request's gateway
// headers as batch.Capture records them.
type BatchInput struct {
	InputFileID      string
	Endpoint         string
	CompletionWindow string
	Metadata         json.RawMessage // absent, null or an object of strings
	Request          storage.BatchRequest
}

// CreateBatch checks a new batch and hands it to the runner, which stores and starts it.
func (p *Plane) CreateBatch(ctx context.Context, caller Caller, in BatchInput) (*storage.Batch, error) {
	if p.batches == nil {
		return nil, errNoBatches
	}
	b, err := p.checkBatch(caller, in)
	if err != nil {
		return nil, err
	}
	return p.batches.Create(ctx, b)
}

var errNoBatches = gwerr.New(http.StatusServiceUnavailable, gwerr.CodeUnavailable, "batches are not available on this gateway")

// headerVirtualKey is the header that names a batch's stored provider.
const headerVirtualKey = "x-gateway-virtual-key"

func (p *Plane) checkBatch(caller Caller, in BatchInput) (*storage.Batch, error) {
	vk := in.Request.VirtualKey
	if vk == "" {
		return nil, gwerr.BadRequest(headerVirtualKey, "%s is required: it names the stored provider that runs the batch's requests", headerVirtualKey)
	}
	if _, err := p.store.Providers.Get(caller.WorkspaceID, vk); errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.BadRequest(headerVirtualKey, "%s %q names no stored provider of this workspace", headerVirtualKey, vk)
	} else if err != nil {
		return nil, gwerr.Internal(err)
	}
	if in.InputFileID == "" {
		return nil, gwerr.BadRequest("input_file_id", "input_file_id is required: the ID of a file uploaded to /v1/files with purpose batch")
	}
	f, err := p.store.Files.Get(caller.WorkspaceID, in.InputFileID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.BadRequest("input_file_id", "input_file_id %q is not a file of this workspace", in.InputFileID)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if f.Purpose != purposeBatch {
		return nil, gwerr.BadRequest("input_file_id", "input_file_id %q has purpose %s; a batch reads a file with purpose batch", in.InputFileID, f.Purpose)
	}
	if _, ok := batch.Endpoints[in.Endpoint]; !ok {
		return nil, gwerr.BadRequest("endpoint", "endpoint must be one of %s, not %q", strings.Join(batch.EndpointNames, ", "), in.Endpoint)
	}
	if windows := []string{batch.WindowImmediate, batch.Window24h}; !slices.Contains(windows, in.CompletionWindow) {
		return nil, gwerr.BadRequest("completion_window", "completion_window must be one of %s, not %q", strings.Join(windows, ", "), in.CompletionWindow)
	}
	md, err := batchMetadata(in.Metadata)
	if err != nil {
		return nil, err
	}
	req := in.Request
	req.KeyID = caller.KeyID
	if req.TraceID == "" {
		req.TraceID = caller.TraceID
	}
	return &storage.Batch{WorkspaceID: caller.WorkspaceID, Endpoint: in.Endpoint, InputFileID: in.InputFileID,
		CompletionWindow: in.CompletionWindow, Metadata: md, Request: req}, nil
}

// batchMetadata reads a batch's metadata: absent or null is none; otherwise an object of at most 16 string
// values, keys at most 64 characters, values at most 512.
func batchMetadata(raw json.RawMessage) (map[string]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, gwerr.BadRequest("metadata", "metadata must be an object of string values or null, not %s", config.Kind(raw))
	}
	if len(fields) > maxBatchMetadataPairs {
		return nil, gwerr.BadRequest("metadata", "metadata has %d keys; at most %d are allowed", len(fields), maxBatchMetadataPairs)
	}
	md := make(map[string]string, len(fields))
	for k, v := range fields {
		param := "metadata." + k
		if n := utf8.RuneCountInString(k); n > maxBatchMetadataKey || n == 0 {
			return nil, gwerr.BadRequest("metadata", "metadata key %q must be 1 to %d characters", k, maxBatchMetadataKey)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, gwerr.BadRequest(param, "%s must be a string, not %s", param, config.Kind(v))
		}
		if utf8.RuneCountInString(s) > maxBatchMetadataValue {
			return nil, gwerr.BadRequest(param, "%s is longer than %d characters", param, maxBatchMetadataValue)
		}
		md[k] = s
	}
	return md, nil
}

// GetBatch returns the caller's workspace's batch id as it is now (a forwarded batch mirrored from its
// provider).
func (p *Plane) GetBatch(ctx context.Context, caller Caller, id string) (*storage.Batch, error) {
	if p.batches == nil {
		return nil, errNoBatches
	}
	b, err := p.findBatch(caller, id)
	if err != nil {
		return nil, err
	}
	return p.batches.View(ctx, b, true), nil
}

// ListBatches returns a page of the caller's workspace's batches, newest first, after the batch ID after
// ("" for the first page), and whether more follow. limit is 1 to MaxBatchPage (checked by the caller).
func (p *Plane) ListBatches(ctx context.Context, caller Caller, after string, limit int) ([]*storage.Batch, bool, error) {
	if p.batches == nil {
		return nil, false, errNoBatches
	}
	if after != "" && !storage.ValidID(after) {
		return nil, false, gwerr.BadRequest("after", "after must be a batch ID, not %q", after)
	}
	page, more, err := p.store.Batches.List(caller.WorkspaceID, after, limit)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	for i, b := range page {
		page[i] = p.batches.View(ctx, b, false)
	}
	return page, more, nil
}

// CancelBatch cancels the caller's workspace's batch id: it is cancelling, then cancelled once the lines in
// flight are dropped and what finished is written to its files.
func (p *Plane) CancelBatch(ctx context.Context, caller Caller, id string) (*storage.Batch, error) {
	if p.batches == nil {
		return nil, errNoBatches
	}
	if _, err := p.findBatch(caller, id); err != nil {
		return nil, err
	}
	b, err := p.batches.Cancel(ctx, caller.WorkspaceID, id)
	if err != nil {
		return nil, err
	}
	p.log.Info("batch cancel asked", "trace_id", caller.TraceID, "batch_id", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return b, nil
}

func (p *Plane) findBatch(caller Caller, id string) (*storage.Batch, error) {
	b, err := p.store.Batches.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("batch", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return b, nil
}
