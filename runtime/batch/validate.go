package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/llmgw/gateway/storage"
)

// maxErrors bounds errors.data: a file of a million bad lines must not make a record of a million errors.
// Every refused line is stored; only the first maxErrors are listed.
const maxErrors = 1000

// checkEvery is how many lines a pass reads between looks at its context.
const checkEvery = 256

// Codes of errors that end a whole batch.
const (
	codeEmptyFile     = "empty_file"
	codeInputMissing  = "input_file_missing"
	codeTooManyErrors = "too_many_errors"
)

// openInput opens the batch's input file; a file deleted since the batch was made fails the batch (reported
// by ok false).
func (r *Runner) openInput(b *storage.Batch) (rc io.ReadCloser, ok bool, err error) {
	_, rc, err = r.store.Files.Open(b.WorkspaceID, b.InputFileID)
	if errors.Is(err, storage.ErrNotFound) {
		r.fail(b, storage.BatchError{Code: codeInputMissing, Param: "input_file_id",
			Message: fmt.Sprintf("the input file %s was deleted before the batch was done", b.InputFileID)})
		return nil, false, nil
	}
	return rc, err == nil, err
}

// validate checks every line of the input, streaming through the file: refused lines are stored with their
// error (and listed in errors.data), custom_ids are checked for repeats in the store, not in memory. With no
// good line the batch fails; otherwise it is in_progress, its total the good lines. A pass cut short (a
// crash, a stop) is done again from the start.
func (r *Runner) validate(ctx context.Context, b *storage.Batch) error {
	rc, ok, err := r.openInput(b)
	if !ok {
		return err
	}
	defer rc.Close()
	v, err := r.store.Batches.Validate(b.WorkspaceID, b.ID)
	if err != nil {
		return err
	}
	defer v.Abort()
	lr := newLineReader(rc, r.maxLine)
	good, refused := 0, 0
	var errs []storage.BatchError
	for {
		if lr.line%checkEvery == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		data, n, long, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read input file: %w", err)
		}
		var bad *storage.BatchError
		switch {
		case long:
			bad = &storage.BatchError{Code: codeLineTooLong, Message: fmt.Sprintf("the line is longer than %d bytes", r.maxLine)}
		case blank(data):
			continue
		default:
			var in *inputLine
			if in, bad = parseLine(data, b.Endpoint); bad == nil {
				first, err := v.SeeID(*in.CustomID, n)
				if err != nil {
					return err
				}
				if first != 0 {
					bad = &storage.BatchError{Code: codeDuplicateID, Param: "custom_id",
						Message: fmt.Sprintf("custom_id %q is also the custom_id of line %d", *in.CustomID, first)}
				}
			}
		}
		if bad == nil {
			good++
			continue
		}
		bad.Line = n
		refused++
		raw, err := json.Marshal(bad)
		if err != nil {
			return err
		}
		if err := v.Invalid(n, raw); err != nil {
			return err
		}
		if len(errs) < maxErrors {
			errs = append(errs, *bad)
		}
	}
	if refused > maxErrors {
		errs = append(errs, storage.BatchError{Code: codeTooManyErrors,
			Message: fmt.Sprintf("%d more lines were refused; only the first %d are listed", refused-maxErrors, maxErrors)})
	}
	if err := v.Finish(); err != nil {
		return err
	}
	now := r.now().Unix()
	_, err = r.store.Batches.Update(b.WorkspaceID, b.ID, func(b *storage.Batch) error {
		switch b.Status {
		case storage.BatchValidating:
		case storage.BatchCancelling: // keep what validation found; the cancel goes on
			b.Errors, b.Counts.Total = errs, good
			return nil
		default:
			return storage.ErrUnchanged
		}
		b.Errors, b.Counts.Total = errs, good
		if good == 0 {
			if len(b.Errors) == 0 {
				b.Errors = []storage.BatchError{{Code: codeEmptyFile, Param: "input_file_id", Message: "the input file holds no request"}}
			}
			b.Status, b.FailedAt = storage.BatchFailed, now
			return nil
		}
		b.Status, b.InProgressAt = storage.BatchInProgress, now
		return nil
	})
	if err == nil {
		r.log.Info("batch validated", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "requests", good, "refused", refused)
	}
	return err
}
