package batch

import (
	"context"
	"strings"

	"github.com/llmgw/gateway/storage"
)

// Purpose of the files a batch writes (OpenAI's).
const purposeOutput = "batch_output"

// OutputFileID and ErrorFileID are the IDs of a batch's result files, derived from its ID: writing them again
// after a crash replaces what a first attempt left half written, and never makes a second file.
func OutputFileID(batchID string) string {
	return "file-" + strings.TrimPrefix(batchID, "batch_") + "-output"
}

// ErrorFileID: see OutputFileID.
func ErrorFileID(batchID string) string {
	return "file-" + strings.TrimPrefix(batchID, "batch_") + "-errors"
}

// finalize writes the batch's output and error files from its stored results, in line order, and ends it in
// state final (completed, cancelled, expired) with the counts the files hold. A file is written only when it
// has a line. A crash at any point before the final state is saved leaves the batch as it was, and finalizing
// again writes the same files under the same IDs. leased ends when the batch's lease is lost: the files are
// then dropped unwritten, and the state left, for the replica that holds the lease now.
func (r *Runner) finalize(leased context.Context, b *storage.Batch, final string) error {
	var files [2]*storage.FileWriter // output, errors
	defer func() {
		for _, w := range files {
			if w != nil {
				w.Abort()
			}
		}
	}()
	var counts [2]int
	seen := 0
	err := r.store.Batches.Lines(b.WorkspaceID, b.ID, func(_ int, kind storage.LineKind, data []byte) error {
		if seen++; seen%checkEvery == 0 && leased.Err() != nil {
			return context.Cause(leased)
		}
		i := 0
		switch kind {
		case storage.LineSucceeded:
		case storage.LineFailed:
			i = 1
		default:
			return nil
		}
		if files[i] == nil {
			id, name := OutputFileID(b.ID), b.ID+"_output.jsonl"
			if i == 1 {
				id, name = ErrorFileID(b.ID), b.ID+"_error.jsonl"
			}
			w, err := r.store.Files.Create(b.WorkspaceID, storage.File{ID: id, Filename: name, Purpose: purposeOutput}, 0)
			if err != nil {
				return err
			}
			files[i] = w
		}
		counts[i]++
		if _, err := files[i].Write(data); err != nil {
			return err
		}
		_, err := files[i].Write([]byte{'\n'})
		return err
	})
	if err != nil {
		return err
	}
	if leased.Err() != nil {
		return context.Cause(leased)
	}
	var ids [2]string
	for i, w := range files {
		if w == nil {
			continue
		}
		f, err := w.Commit()
		if err != nil {
			return err
		}
		ids[i] = f.ID
	}
	now := r.now().Unix()
	done, err := r.store.Batches.Update(b.WorkspaceID, b.ID, func(b *storage.Batch) error {
		if storage.BatchDone(b.Status) {
			return storage.ErrUnchanged
		}
		b.OutputFileID, b.ErrorFileID = ids[0], ids[1]
		b.Counts.Completed, b.Counts.Failed = counts[0], counts[1]
		if final == storage.BatchCompleted && b.FinalizingAt == 0 {
			b.FinalizingAt = now
		}
		end(b, final, now)
		return nil
	})
	if err == nil {
		r.log.Info("batch "+done.Status, "batch_id", b.ID, "workspace_id", b.WorkspaceID, "completed", counts[0], "failed", counts[1])
	}
	return err
}
