package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// errStore interrupts a batch whose results can no longer be stored.
var errStore = errors.New("batch: a line's result could not be stored")

// execute runs the lines of an in_progress batch that have no stored result, at most the batch's concurrency
// at once, reading the input one line at a time. Each result is stored, synced, before it is counted. When
// every line is done the batch is finalizing; when the batch is interrupted (cancelled, expired, the lease
// lost, the runner stopping) no line starts, and the lines in flight are dropped without a result.
func (r *Runner) execute(ctx context.Context, rn *run, b *storage.Batch) error {
	var done doneLines
	var completed, failed int64
	err := r.store.Batches.Lines(b.WorkspaceID, b.ID, func(line int, kind storage.LineKind, _ []byte) error {
		done.add(line)
		switch kind {
		case storage.LineSucceeded:
			completed++
		case storage.LineFailed:
			failed++
		}
		return nil
	})
	if err != nil {
		return err
	}
	rn.completed.Store(completed)
	rn.failed.Store(failed)
	rn.live.Store(true)
	if int(completed+failed) < b.Counts.Total {
		r.log.Info("batch running", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "total", b.Counts.Total,
			"done", completed+failed)
	}

	rc, ok, err := r.openInput(b)
	if !ok {
		return err
	}
	defer rc.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	concurrency := r.concurrency
	if b.CompletionWindow == Window24h {
		concurrency = max(1, concurrency/4)
	}
	lines := newLineRequests(b)
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var storeErr, readErr error
	var storeErrOnce sync.Once
	lr := newLineReader(rc, r.maxLine)
read:
	for ctx.Err() == nil {
		data, n, long, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("read input file: %w", err)
			break
		}
		if long || done.has(n) || blank(data) {
			continue
		}
		in, bad := parseLine(data, b.Endpoint)
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break read
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			kind, result := r.runLine(ctx, lines, b, in, bad)
			if ctx.Err() != nil {
				return // interrupted: no result; the line runs again if the batch resumes
			}
			// The store keeps a line's first result only: a run that lost the lease late (another replica's, or
			// this one's) may have stored it already, and the line is counted as what it holds.
			held, err := r.store.Batches.PutLine(b.WorkspaceID, b.ID, n, kind, result)
			if err != nil {
				storeErrOnce.Do(func() { storeErr = err })
				cancel(errStore)
				return
			}
			switch held {
			case storage.LineSucceeded:
				rn.completed.Add(1)
			case storage.LineFailed:
				rn.failed.Add(1)
			}
		}()
	}
	wg.Wait()
	switch {
	case storeErr != nil:
		return storeErr
	case readErr != nil:
		return readErr
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	now := r.now().Unix()
	_, err = r.store.Batches.Update(b.WorkspaceID, b.ID, func(b *storage.Batch) error {
		if b.Status != storage.BatchInProgress {
			return storage.ErrUnchanged
		}
		b.Status, b.FinalizingAt = storage.BatchFinalizing, now
		b.Counts.Completed, b.Counts.Failed = int(rn.completed.Load()), int(rn.failed.Load())
		return nil
	})
	return err
}

// runLine sends one line through the engine and returns its result: a line of the output file for a 2xx
// answer, of the error file otherwise. bad is set for a line the validation let through but that does not
// parse now (the input cannot change, so this is a safety net): it fails without being sent.
func (r *Runner) runLine(ctx context.Context, lines *lineRequests, b *storage.Batch, in *inputLine, bad *storage.BatchError) (storage.LineKind, []byte) {
	res := resultLine{ID: storage.NewTimeOrderedID("batch_req_", r.now())}
	if bad != nil {
		res.Error = &resultError{Code: bad.Code, Message: bad.Message}
		return storage.LineFailed, res.encode()
	}
	res.CustomID = *in.CustomID
	body, err := schema.ReadBody(in.Body)
	if err != nil {
		res.Error = &resultError{Code: gwerr.CodeInvalidRequest, Message: err.Error()}
		return storage.LineFailed, res.encode()
	}
	resp, err := r.engine.Do(ctx, lines.request(body))
	if err != nil {
		ge := &gwerr.Error{Code: gwerr.CodeInternal, Message: "internal error"}
		if !errors.As(err, &ge) && ctx.Err() == nil {
			r.log.Error("batch line failed", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "custom_id", res.CustomID, "err", err)
		}
		res.Error = &resultError{Code: ge.Code, Message: ge.Message}
		return storage.LineFailed, res.encode()
	}
	defer resp.Close()
	requestID := resp.Header.Get("x-request-id")
	if requestID == "" {
		requestID = res.ID
	}
	res.Response = &resultResponse{StatusCode: resp.Status, RequestID: requestID, Body: resp.Body}
	if !json.Valid(resp.Body) {
		res.Response.Body, _ = json.Marshal(string(resp.Body))
	}
	if resp.Status < 200 || resp.Status > 299 {
		return storage.LineFailed, res.encode()
	}
	return storage.LineSucceeded, res.encode()
}

// resultLine is a line of a batch's output or error file, in OpenAI's batch output format.
type resultLine struct {
	ID       string          `json:"id"`
	CustomID string          `json:"custom_id"`
	Response *resultResponse `json:"response"`
	Error    *resultError    `json:"error"`
}

type resultResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

type resultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (l *resultLine) encode() []byte {
	raw, err := json.Marshal(l)
	if err != nil { // only a body json.Valid let through could fail here
		l.Response.Body, _ = json.Marshal(string(l.Response.Body))
		raw, _ = json.Marshal(l)
	}
	return raw
}
