package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

// A 24h batch whose provider has a batch API is the provider's to run: the gateway uploads the input file,
// creates the provider's batch, mirrors its state when the batch is read (or cancelled), and once the
// provider is done imports its result files as gateway files (showing finalizing meanwhile), so that callers
// only ever see gateway IDs.

// markerKey is the metadata key that names the gateway's batch on the provider's: a start that does not know
// whether the provider got the batch finds it by it, rather than send it twice.
const markerKey = "gateway_batch_id"

// Bounds of calls made while a caller waits (a read, a cancel), and of the look for a batch sent before a crash.
const (
	mirrorTimeout = 15 * time.Second
	lookupPage    = 100
)

// providerBatch is what the gateway reads of a provider's batch object.
type providerBatch struct {
	ID           string  `json:"id"`
	Status       string  `json:"status"`
	OutputFileID *string `json:"output_file_id"`
	ErrorFileID  *string `json:"error_file_id"`
	Times
	RequestCounts *struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
	Errors *struct {
		Data []struct {
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
			Line    *int    `json:"line"`
		} `json:"data"`
	} `json:"errors"`
	Metadata map[string]any `json:"metadata"`
}

// Times are the state timestamps of a batch object as OpenAI's wire shape has them: Unix seconds, null until
// the state is reached.
type Times struct {
	InProgressAt *int64 `json:"in_progress_at"`
	ExpiresAt    *int64 `json:"expires_at"`
	FinalizingAt *int64 `json:"finalizing_at"`
	CompletedAt  *int64 `json:"completed_at"`
	FailedAt     *int64 `json:"failed_at"`
	ExpiredAt    *int64 `json:"expired_at"`
	CancellingAt *int64 `json:"cancelling_at"`
	CancelledAt  *int64 `json:"cancelled_at"`
}

// TimesOf returns b's timestamps, null where they are 0.
func TimesOf(b *storage.Batch) Times {
	at := func(t int64) *int64 {
		if t == 0 {
			return nil
		}
		return &t
	}
	return Times{InProgressAt: at(b.InProgressAt), ExpiresAt: at(b.ExpiresAt), FinalizingAt: at(b.FinalizingAt),
		CompletedAt: at(b.CompletedAt), FailedAt: at(b.FailedAt), ExpiredAt: at(b.ExpiredAt),
		CancellingAt: at(b.CancellingAt), CancelledAt: at(b.CancelledAt)}
}

// forward moves a forwarded batch on: it sends a batch not yet sent (or finds the one a crash left in doubt),
// and imports the result files of one the provider has finished. A provider's refusal fails the batch with
// the provider's message; a call that gets no answer leaves the state for the next read or start.
func (r *Runner) forward(ctx context.Context, b *storage.Batch) error {
	if r.up == nil {
		r.fail(b, storage.BatchError{Code: gwerr.CodeUnavailable, Message: "this gateway does not forward batches to providers"})
		return nil
	}
	t, err := r.up.Target(ctx, b.WorkspaceID, b.Request.VirtualKey, upstream.Batches)
	if err != nil {
		r.failWith(b, err)
		return nil
	}
	u := b.Upstream
	switch {
	case u.BatchID == "" && b.Status == storage.BatchCancelling:
		if u.Submitting { // the provider may have it: cancel it there
			found, err := r.findSubmitted(ctx, t, b.ID)
			if err != nil {
				return r.leave(b, "look for the batch sent before the cancel", err)
			}
			if found != nil {
				return r.adopt(ctx, t, b, found)
			}
		}
		return r.finishForwarded(b, storage.BatchCancelled, r.now().Unix(), "", "")
	case u.BatchID == "":
		return r.submit(ctx, t, b)
	case u.Final != "":
		return r.importResults(ctx, t, b)
	}
	return nil
}

// submit uploads the input file and creates the provider's batch.
func (r *Runner) submit(ctx context.Context, t *upstream.Target, b *storage.Batch) error {
	md := map[string]string{}
	for k, v := range b.Metadata {
		md[k] = v
	}
	marked := len(md) < 16
	if marked {
		md[markerKey] = b.ID
	}
	if b.Upstream.Submitting {
		if !marked {
			r.fail(b, storage.BatchError{Code: gwerr.CodeUpstream, Message: fmt.Sprintf("the gateway restarted while it sent the batch to %s; "+
				"it may exist there, so it was not sent again", t.Provider())})
			return nil
		}
		found, err := r.findSubmitted(ctx, t, b.ID)
		if err != nil {
			return r.leave(b, "look for the batch sent before a restart", err)
		}
		if found != nil {
			return r.adopt(ctx, t, b, found)
		}
	} else {
		if _, err := r.store.Batches.Update(b.WorkspaceID, b.ID, func(cur *storage.Batch) error {
			cur.Upstream.Submitting = true
			return nil
		}); err != nil {
			return err
		}
	}
	fileID, err := t.UploadFile(ctx, b.InputFileID, "batch")
	if err != nil {
		if ctx.Err() != nil || transient(err) {
			return r.leave(b, "upload the input file", err)
		}
		r.failWith(b, err)
		return nil
	}
	body, err := json.Marshal(map[string]any{"input_file_id": fileID, "endpoint": b.Endpoint,
		"completion_window": Window24h, "metadata": md})
	if err != nil {
		return err
	}
	status, answer, err := t.Do(ctx, http.MethodPost, "/batches", nil, body)
	if err != nil {
		return r.leave(b, "create the provider's batch", err)
	}
	if status < 200 || status > 299 {
		r.failWith(b, &upstream.ProviderError{Provider: t.Provider(), Status: status, Body: answer})
		return nil
	}
	var pb providerBatch
	if json.Unmarshal(answer, &pb) != nil || pb.ID == "" {
		r.fail(b, storage.BatchError{Code: gwerr.CodeUpstream, Message: fmt.Sprintf("%s answered the batch's creation without a batch id", t.Provider())})
		return nil
	}
	b.Upstream.FileID = fileID
	return r.adopt(ctx, t, b, &pb)
}

// findSubmitted looks among the provider's latest batches for the one that carries the gateway's batch ID.
func (r *Runner) findSubmitted(ctx context.Context, t *upstream.Target, id string) (*providerBatch, error) {
	status, answer, err := t.Do(ctx, http.MethodGet, "/batches", url.Values{"limit": {fmt.Sprint(lookupPage)}}, nil)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, &upstream.ProviderError{Provider: t.Provider(), Status: status, Body: answer}
	}
	var list struct {
		Data []providerBatch `json:"data"`
	}
	if err := json.Unmarshal(answer, &list); err != nil {
		return nil, fmt.Errorf("%s: decode the batch list: %w", t.Provider(), err)
	}
	for i := range list.Data {
		if list.Data[i].Metadata[markerKey] == id {
			return &list.Data[i], nil
		}
	}
	return nil, nil
}

// adopt records the provider's batch as the gateway batch's, with its state; a cancel that came while the
// batch was being sent is passed on now.
func (r *Runner) adopt(ctx context.Context, t *upstream.Target, b *storage.Batch, pb *providerBatch) error {
	fileID := b.Upstream.FileID
	cur, err := r.store.Batches.Update(b.WorkspaceID, b.ID, func(cur *storage.Batch) error {
		cur.Upstream.BatchID, cur.Upstream.Submitting = pb.ID, false
		if fileID != "" {
			cur.Upstream.FileID = fileID
		}
		if cur.Status != storage.BatchCancelling {
			r.apply(cur, pb)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.log.Info("batch forwarded", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "provider", t.Provider(), "provider_batch_id", pb.ID)
	if cur.Status == storage.BatchCancelling {
		r.cancelForwarded(ctx, cur)
	}
	return nil
}

// mirror reads the provider's state of a forwarded batch and saves it.
func (r *Runner) mirror(ctx context.Context, b *storage.Batch) *storage.Batch {
	u := b.Upstream
	if u.Final != "" || u.BatchID == "" {
		// Importing, or still to be sent: a start or an earlier read began it, or what failed is tried again.
		r.launch(b.WorkspaceID, b.ID)
		return b
	}
	return r.askProvider(ctx, b, "read", http.MethodGet, "/batches/"+url.PathEscape(u.BatchID))
}

// cancelForwarded asks the provider to cancel and saves the state it answers.
func (r *Runner) cancelForwarded(ctx context.Context, b *storage.Batch) *storage.Batch {
	return r.askProvider(ctx, b, "cancel", http.MethodPost, "/batches/"+url.PathEscape(b.Upstream.BatchID)+"/cancel")
}

// askProvider makes a call about a forwarded batch whose answer is the provider's batch object, while a
// caller waits, and saves the state it answers. A provider that does not answer leaves the stored state,
// which is returned.
func (r *Runner) askProvider(ctx context.Context, b *storage.Batch, what, method, path string) *storage.Batch {
	ctx, cancel := context.WithTimeout(ctx, mirrorTimeout)
	defer cancel()
	t, err := r.up.Target(ctx, b.WorkspaceID, b.Request.VirtualKey, upstream.Batches)
	if err != nil {
		r.log.Warn("batch: cannot reach the provider to "+what+" the batch", "batch_id", b.ID, "err", err)
		return b
	}
	status, answer, err := t.Do(ctx, method, path, nil, nil)
	return r.saveMirror(b, what, status, answer, err)
}

// saveMirror saves a provider's answer about a batch (its batch object) into the gateway's, and starts the
// import of the result files once the provider is done.
func (r *Runner) saveMirror(b *storage.Batch, what string, status int, answer []byte, err error) *storage.Batch {
	var pb providerBatch
	switch {
	case err != nil:
	case status < 200 || status > 299:
		err = fmt.Errorf("the provider answered %d: %s", status, truncate(answer, 512))
	default:
		if jerr := json.Unmarshal(answer, &pb); jerr != nil {
			err = fmt.Errorf("the provider's batch does not decode: %w", jerr)
		}
	}
	if err != nil {
		r.log.Warn("batch: provider "+what+" failed", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "err", err)
		return b
	}
	cur, err := r.store.Batches.Update(b.WorkspaceID, b.ID, func(cur *storage.Batch) error {
		if storage.BatchDone(cur.Status) || cur.Upstream.Final != "" {
			return storage.ErrUnchanged
		}
		r.apply(cur, &pb)
		return nil
	})
	if err != nil {
		r.log.Error("batch: cannot save the provider's state", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "err", err)
		return b
	}
	if cur.Upstream.Final != "" {
		r.launch(cur.WorkspaceID, cur.ID)
	}
	return cur
}

// apply copies a provider's batch state onto the gateway's. A provider that is done with result files to
// import leaves the gateway's batch finalizing, with the final state kept for when the import is done.
func (r *Runner) apply(b *storage.Batch, pb *providerBatch) {
	set := func(dst *int64, src *int64) {
		if src != nil && *src > 0 {
			*dst = *src
		}
	}
	set(&b.InProgressAt, pb.InProgressAt)
	set(&b.ExpiresAt, pb.ExpiresAt)
	set(&b.FinalizingAt, pb.FinalizingAt)
	set(&b.CancellingAt, pb.CancellingAt)
	if c := pb.RequestCounts; c != nil {
		b.Counts = storage.BatchCounts{Total: c.Total, Completed: c.Completed, Failed: c.Failed}
	}
	if pb.Errors != nil {
		b.Errors = b.Errors[:0]
		for _, e := range pb.Errors.Data {
			if len(b.Errors) == maxErrors {
				break
			}
			be := storage.BatchError{Code: e.Code, Message: e.Message}
			if e.Param != nil {
				be.Param = *e.Param
			}
			if e.Line != nil {
				be.Line = *e.Line
			}
			b.Errors = append(b.Errors, be)
		}
	}
	var finalAt *int64
	switch pb.Status {
	case storage.BatchValidating, storage.BatchInProgress, storage.BatchFinalizing, storage.BatchCancelling:
		b.Status = pb.Status
		return
	case storage.BatchCompleted:
		finalAt = pb.CompletedAt
	case storage.BatchFailed:
		finalAt = pb.FailedAt
	case storage.BatchExpired:
		finalAt = pb.ExpiredAt
	case storage.BatchCancelled:
		finalAt = pb.CancelledAt
	default:
		return // a state the gateway does not know: keep the last one it understood
	}
	u := b.Upstream
	u.Final, u.FinalAt = pb.Status, r.now().Unix()
	set(&u.FinalAt, finalAt)
	if pb.OutputFileID != nil {
		u.OutputFileID = *pb.OutputFileID
	}
	if pb.ErrorFileID != nil {
		u.ErrorFileID = *pb.ErrorFileID
	}
	if b.Status != storage.BatchFinalizing {
		b.Status = storage.BatchFinalizing
		if b.FinalizingAt == 0 {
			b.FinalizingAt = u.FinalAt
		}
	}
}

// importResults copies the provider's result files into gateway files and ends the batch in the provider's
// final state. An import that fails is tried again on the next read or start.
func (r *Runner) importResults(ctx context.Context, t *upstream.Target, b *storage.Batch) error {
	u := b.Upstream
	ids := [2]string{b.OutputFileID, b.ErrorFileID}
	for i, pfid := range []string{u.OutputFileID, u.ErrorFileID} {
		if pfid == "" || ids[i] != "" {
			continue
		}
		name := b.ID + "_output.jsonl"
		if i == 1 {
			name = b.ID + "_error.jsonl"
		}
		f, err := t.ImportFile(ctx, pfid, purposeOutput, name)
		if err != nil {
			return r.leave(b, "import a result file", err)
		}
		ids[i] = f.ID
	}
	return r.finishForwarded(b, u.Final, u.FinalAt, ids[0], ids[1])
}

// finishForwarded ends a forwarded batch in state final.
func (r *Runner) finishForwarded(b *storage.Batch, final string, at int64, outputID, errorID string) error {
	_, err := r.store.Batches.Update(b.WorkspaceID, b.ID, func(cur *storage.Batch) error {
		if storage.BatchDone(cur.Status) {
			return storage.ErrUnchanged
		}
		cur.OutputFileID, cur.ErrorFileID = outputID, errorID
		end(cur, final, at)
		return nil
	})
	if err == nil {
		r.log.Info("batch "+final, "batch_id", b.ID, "workspace_id", b.WorkspaceID, "forwarded", true)
	}
	return err
}

// leave logs a provider call that got no answer and leaves the batch as it is, for the next read or start.
func (r *Runner) leave(b *storage.Batch, what string, err error) error {
	r.log.Warn("batch: could not "+what+"; will try again", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "err", err)
	return nil
}

// failWith fails a forwarded batch with a provider's refusal or the gateway's error, in the provider's words.
func (r *Runner) failWith(b *storage.Batch, err error) {
	e := storage.BatchError{Code: gwerr.CodeUpstream, Message: err.Error()}
	var pe *upstream.ProviderError
	var ge *gwerr.Error
	switch {
	case errors.As(err, &pe):
		var body struct {
			Error struct {
				Message string `json:"message"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		e.Message = fmt.Sprintf("%s answered %d", pe.Provider, pe.Status)
		if json.Unmarshal(pe.Body, &body) == nil && body.Error.Message != "" {
			e.Message += ": " + body.Error.Message
			if code, ok := body.Error.Code.(string); ok && code != "" {
				e.Code = code
			}
		}
	case errors.As(err, &ge):
		e = storage.BatchError{Code: ge.Code, Message: ge.Message, Param: ge.Param}
	}
	r.fail(b, e)
}

// transient reports whether an error of a provider call is worth trying again: no answer, or the provider's
// 408, 429 or 5xx.
func transient(err error) bool {
	var pe *upstream.ProviderError
	if errors.As(err, &pe) {
		return pe.Status == http.StatusRequestTimeout || pe.Status == http.StatusTooManyRequests || pe.Status >= 500
	}
	var ge *gwerr.Error
	return errors.As(err, &ge) && (ge.Status == http.StatusRequestTimeout || ge.Status >= 500)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
