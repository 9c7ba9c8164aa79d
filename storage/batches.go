package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Batch states (SPEC.md "States").
const (
	BatchValidating = "validating"
	BatchFailed     = "failed"
	BatchInProgress = "in_progress"
	BatchFinalizing = "finalizing"
	BatchCompleted  = "completed"
	BatchExpired    = "expired"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
)

// BatchDone reports whether status is final: nothing more happens to such a batch.
func BatchDone(status string) bool {
	switch status {
	case BatchFailed, BatchCompleted, BatchExpired, BatchCancelled:
		return true
	}
	return false
}

// Batch is a batch as the store keeps it: SPEC.md's batch object plus what running it needs. Timestamps are
// Unix seconds, 0 while the state they record has not been reached.
type Batch struct {
	ID               string            `json:"id"`
	WorkspaceID      string            `json:"workspace_id"`
	Endpoint         string            `json:"endpoint"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     int64             `json:"in_progress_at,omitempty"`
	ExpiresAt        int64             `json:"expires_at,omitempty"`
	FinalizingAt     int64             `json:"finalizing_at,omitempty"`
	CompletedAt      int64             `json:"completed_at,omitempty"`
	FailedAt         int64             `json:"failed_at,omitempty"`
	ExpiredAt        int64             `json:"expired_at,omitempty"`
	CancellingAt     int64             `json:"cancelling_at,omitempty"`
	CancelledAt      int64             `json:"cancelled_at,omitempty"`
	OutputFileID     string            `json:"output_file_id,omitempty"`
	ErrorFileID      string            `json:"error_file_id,omitempty"`
	Counts           BatchCounts       `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"` // nil: none given (null)
	Errors           []BatchError      `json:"errors,omitempty"`
	// Upstream is set on a batch forwarded to its provider's batch API; nil on one the gateway runs itself.
	Upstream *BatchUpstream `json:"upstream,omitempty"`
	// Request is what shapes each line's request: the caller's gateway headers. It holds secrets (an
	// Authorization token, an inline config's api_key, forwarded headers), so the store seals it at rest.
	Request BatchRequest `json:"-"`
}

// BatchCounts are a batch's request_counts.
type BatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// BatchError is one item of a batch's errors.data: an input line refused at validation (Line from 1), or a
// failure of the whole batch (Line 0).
type BatchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	Line    int    `json:"line,omitempty"`
}

// BatchUpstream is the provider side of a forwarded batch.
type BatchUpstream struct {
	Provider string `json:"provider"`           // canonical provider identifier
	FileID   string `json:"file_id,omitempty"`  // the input file as the provider knows it
	BatchID  string `json:"batch_id,omitempty"` // the provider's batch
	// Submitting is set before the batch is sent to the provider and cleared once its ID is stored: a start
	// that finds it set does not know whether the provider has the batch, and looks before sending it again.
	Submitting bool `json:"submitting,omitempty"`
	// Final is the provider's final status, mirrored once its result files are imported (the gateway shows
	// finalizing meanwhile).
	Final        string `json:"final,omitempty"`
	FinalAt      int64  `json:"final_at,omitempty"`       // when the provider reached Final
	OutputFileID string `json:"output_file_id,omitempty"` // the provider's
	ErrorFileID  string `json:"error_file_id,omitempty"`  // the provider's
}

// BatchRequest is what a batch's lines are sent with: the gateway headers of the request that created it.
type BatchRequest struct {
	KeyID         string            `json:"key_id"` // the gateway API key that created the batch
	Provider      string            `json:"provider,omitempty"`
	Authorization string            `json:"authorization,omitempty"`
	VirtualKey    string            `json:"virtual_key,omitempty"`
	Config        string            `json:"config,omitempty"`
	CustomHost    string            `json:"custom_host,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	TraceID       string            `json:"trace_id,omitempty"`
	TimeoutMS     int64             `json:"timeout_ms,omitempty"`
	ForwardNames  []string          `json:"forward_names,omitempty"`
	CacheRefresh  bool              `json:"cache_refresh,omitempty"`
	CacheNS       string            `json:"cache_namespace,omitempty"`
	// Headers holds the caller's other headers a line's request may read (forwarded ones, provider-specific
	// ones), by lower-case name.
	Headers map[string]string `json:"headers,omitempty"`
}

// LineKind says what a batch line's stored result is.
type LineKind byte

// Kinds of line results.
const (
	LineSucceeded LineKind = 1 // a line of the output file
	LineFailed    LineKind = 2 // a line of the error file
	LineInvalid   LineKind = 3 // a BatchError (JSON): the line was refused at validation and never ran
)

const (
	tableBatch     = "batch"
	tableBatchOpen = "batchopen"
	tableBatchLine = "batchline"
	tableBatchCID  = "batchcid"

	// validationFlush is how many writes a validation pass stages before it applies them (unsynced).
	validationFlush = 1024
)

// BatchStore keeps batches: their records, the index of unfinished ones, each line's result and, during
// validation, the custom_ids seen. A result is written synced before it is counted, and a batch's lines are
// dropped when it reaches a final state, in the same synced write.
type BatchStore struct {
	s *Store
	// mu serialises read-modify-writes of batch records in this process (records): the runner's state changes
	// and a caller's cancel must not overwrite each other.
	mu sync.Mutex
	// lineLocks serialise PutLine's check and write of a line in this process, striped by line number so that
	// lines written at once still share pebble's synced commits.
	lineLocks [64]sync.Mutex
}

// Names of the store-wide locks that stand for mu and lineLocks on a shared engine, where a cancel on one
// replica and the run on another update the same record, and a run that lost its lease may still write a line.
const (
	lockBatchRecords = "storage.batches"
	lockBatchLines   = "storage.batch-lines"
)

// records returns the lock of read-modify-writes of batch records: across replicas on a shared engine.
func (bs *BatchStore) records() sync.Locker {
	if bs.s.Shared() {
		return bs.s.Mutex(lockBatchRecords)
	}
	return &bs.mu
}

// lineLock returns the lock of PutLine's check and write of line: across replicas on a shared engine.
func (bs *BatchStore) lineLock(line int) sync.Locker {
	if bs.s.Shared() {
		return bs.s.Mutex(lockBatchLines)
	}
	return &bs.lineLocks[uint(line)%uint(len(bs.lineLocks))]
}

// batchRecord is a Batch as written to disk: Request sealed under the record's key.
type batchRecord struct {
	*Batch
	Sealed []byte `json:"sealed,omitempty"`
}

func (bs *BatchStore) encode(k []byte, b *Batch) ([]byte, error) {
	plain, err := json.Marshal(&b.Request)
	if err != nil {
		return nil, err
	}
	return json.Marshal(batchRecord{Batch: b, Sealed: bs.s.keys.seal(plain, k)})
}

func (bs *BatchStore) decode(k, raw []byte) (*Batch, error) {
	rec := batchRecord{Batch: new(Batch)}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	if len(rec.Sealed) > 0 {
		plain, err := bs.s.keys.open(rec.Sealed, k)
		if err != nil {
			return nil, fmt.Errorf("storage: open request of batch %s: %w", rec.ID, err)
		}
		if err := json.Unmarshal(plain, &rec.Request); err != nil {
			return nil, fmt.Errorf("storage: decode request of batch %s: %w", rec.ID, err)
		}
	}
	return rec.Batch, nil
}

// Create stores a new batch and lists it as unfinished, synced. ErrConflict when the ID is taken.
func (bs *BatchStore) Create(b *Batch) error {
	if err := CheckID("workspace id", b.WorkspaceID); err != nil {
		return err
	}
	if err := CheckID("batch id", b.ID); err != nil {
		return err
	}
	k := key(tableBatch, b.WorkspaceID, b.ID)
	raw, err := bs.encode(k, b)
	if err != nil {
		return err
	}
	mu := bs.records()
	mu.Lock()
	defer mu.Unlock()
	if _, err := bs.s.get(k); err == nil {
		return ErrConflict
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	wb := bs.s.db.NewBatch()
	_ = wb.Set(k, raw, nil)
	if !BatchDone(b.Status) {
		_ = wb.Set(key(tableBatchOpen, b.WorkspaceID, b.ID), nil, nil)
	}
	return bs.s.commit(wb)
}

// Get returns the workspace's batch id, or ErrNotFound.
func (bs *BatchStore) Get(workspaceID, id string) (*Batch, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	k := key(tableBatch, workspaceID, id)
	raw, err := bs.s.get(k)
	if err != nil {
		return nil, err
	}
	return bs.decode(k, raw)
}

// List returns up to limit of the workspace's batches, newest first (batch IDs sort by creation time),
// starting after the batch ID after when it is not "", and whether more follow.
func (bs *BatchStore) List(workspaceID, after string, limit int) (page []*Batch, more bool, err error) {
	if !ValidID(workspaceID) || limit <= 0 {
		return nil, false, nil
	}
	p := prefix(tableBatch, workspaceID)
	it, err := bs.s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, false, fmt.Errorf("storage: list batches: %w", err)
	}
	defer it.Close()
	var valid bool
	if after != "" {
		valid = it.SeekLT(append(p, after...))
	} else {
		valid = it.Last()
	}
	for ; valid; valid = it.Prev() {
		if len(page) == limit {
			return page, true, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, fmt.Errorf("storage: list batches: %w", err)
		}
		b, err := bs.decode(it.Key(), v)
		if err != nil {
			return nil, false, err
		}
		page = append(page, b)
	}
	return page, false, it.Error()
}

// BatchRef names a batch.
type BatchRef struct{ WorkspaceID, ID string }

// UnfinishedRefs names every batch, of every workspace, not yet in a final state, reading only the index:
// the cheap look a runner takes, again and again, for batches whose replica died.
func (bs *BatchStore) UnfinishedRefs() ([]BatchRef, error) {
	var refs []BatchRef
	err := bs.s.scan([]byte(tableBatchOpen+"/"), func(k, _ []byte) error {
		ws, id, _ := strings.Cut(string(k[len(tableBatchOpen)+1:]), "/")
		refs = append(refs, BatchRef{ws, id})
		return nil
	})
	return refs, err
}

// Unfinished returns every batch, of every workspace, not yet in a final state: the batches to resume at start.
func (bs *BatchStore) Unfinished() ([]*Batch, error) {
	refs, err := bs.UnfinishedRefs()
	if err != nil {
		return nil, err
	}
	out := make([]*Batch, 0, len(refs))
	for _, r := range refs {
		b, err := bs.Get(r.WorkspaceID, r.ID)
		if errors.Is(err, ErrNotFound) {
			continue // an index entry without its record: nothing to resume
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// ErrUnchanged, returned by an Update function, leaves the record as it is; Update then returns the stored
// batch and no error.
var ErrUnchanged = errors.New("storage: unchanged")

// Update applies change to the stored batch and writes it back, synced, under the store's lock for batches so
// that concurrent updates do not overwrite each other. When change returns an error nothing is written, and
// Update returns it (ErrUnchanged: the stored batch, no error). A batch that reaches a final state leaves the
// index of unfinished batches and its stored line results are dropped, in the same write.
func (bs *BatchStore) Update(workspaceID, id string, change func(b *Batch) error) (*Batch, error) {
	mu := bs.records()
	mu.Lock()
	defer mu.Unlock()
	b, err := bs.Get(workspaceID, id)
	if err != nil {
		return nil, err
	}
	if err := change(b); err != nil {
		if errors.Is(err, ErrUnchanged) {
			return b, nil
		}
		return nil, err
	}
	k := key(tableBatch, workspaceID, id)
	raw, err := bs.encode(k, b)
	if err != nil {
		return nil, err
	}
	wb := bs.s.db.NewBatch()
	_ = wb.Set(k, raw, nil)
	if BatchDone(b.Status) {
		_ = wb.Delete(key(tableBatchOpen, workspaceID, id), nil)
		for _, table := range []string{tableBatchLine, tableBatchCID} {
			p := prefix(table, workspaceID, id)
			_ = wb.DeleteRange(p, prefixEnd(p), nil)
		}
	}
	if err := bs.s.commit(wb); err != nil {
		return nil, err
	}
	return b, nil
}

func lineKey(workspaceID, id string, line int) []byte {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(line))
	return key(tableBatchLine, workspaceID, id, hex.EncodeToString(n[:]))
}

// PutLine stores the result of line (from 1) of an unfinished batch, synced, unless the line has one already:
// a run that lost its batch's lease late cannot give a line a second result, nor the lines of a batch that is
// over a first one. It returns the kind of the result the line holds (kind when this call stored it, 0 for a
// batch that is over); once it returns, the line is done for good and is counted as that kind. data is the
// line of the output or error file (without its newline), or for LineInvalid a BatchError in JSON.
func (bs *BatchStore) PutLine(workspaceID, id string, line int, kind LineKind, data []byte) (held LineKind, err error) {
	k := lineKey(workspaceID, id, line)
	mu := bs.lineLock(line)
	mu.Lock()
	defer mu.Unlock()
	switch cur, err := bs.s.get(k); {
	case err == nil && len(cur) > 0:
		return LineKind(cur[0]), nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return 0, err
	}
	switch _, err := bs.s.get(key(tableBatchOpen, workspaceID, id)); {
	case errors.Is(err, ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	v := make([]byte, 1+len(data))
	v[0] = byte(kind)
	copy(v[1:], data)
	if err := bs.s.db.Set(k, v, pebble.Sync); err != nil {
		return 0, fmt.Errorf("storage: batch line: %w", err)
	}
	return kind, nil
}

// Lines calls fn with each stored line result of a batch, in line order; data is valid only during the call.
func (bs *BatchStore) Lines(workspaceID, id string, fn func(line int, kind LineKind, data []byte) error) error {
	p := prefix(tableBatchLine, workspaceID, id)
	return bs.s.scan(p, func(k, v []byte) error {
		var n [4]byte
		if _, err := hex.Decode(n[:], k[len(p):]); err != nil || len(v) == 0 {
			return fmt.Errorf("storage: malformed batch line %s", k)
		}
		return fn(int(binary.BigEndian.Uint32(n[:])), LineKind(v[0]), v[1:])
	})
}

// BatchValidation is one validation pass over a batch's input: it tells custom_ids seen before from new ones
// and records refused lines, holding neither in memory: they go to pebble in unsynced batches of writes, which
// Finish ends with one synced commit. It is not safe for concurrent use.
type BatchValidation struct {
	bs      *BatchStore
	ws, id  string
	b       kvBatch // indexed: SeeID reads its own writes
	pending int
}

// Validate starts a validation pass of a batch, dropping what an earlier pass cut short left behind.
func (bs *BatchStore) Validate(workspaceID, id string) (*BatchValidation, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, fmt.Errorf("storage: invalid batch %s/%s", workspaceID, id)
	}
	wb := bs.s.db.NewBatch()
	for _, table := range []string{tableBatchLine, tableBatchCID} {
		p := prefix(table, workspaceID, id)
		_ = wb.DeleteRange(p, prefixEnd(p), nil)
	}
	if err := wb.Commit(pebble.NoSync); err != nil {
		wb.Close()
		return nil, fmt.Errorf("storage: start batch validation: %w", err)
	}
	wb.Close()
	return &BatchValidation{bs: bs, ws: workspaceID, id: id, b: bs.s.db.NewIndexedBatch()}, nil
}

// SeeID records that line holds customID and returns the line that held it first, or 0 when none did.
func (v *BatchValidation) SeeID(customID string, line int) (first int, err error) {
	sum := sha256.Sum256([]byte(customID))
	k := key(tableBatchCID, v.ws, v.id, hex.EncodeToString(sum[:16]))
	val, closer, err := v.b.Get(k)
	switch {
	case err == nil:
		first = int(binary.BigEndian.Uint32(val))
		closer.Close()
		return first, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, fmt.Errorf("storage: batch validation: %w", err)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(line))
	if err := v.b.Set(k, n[:], nil); err != nil {
		return 0, err
	}
	return 0, v.count()
}

// Invalid records that line was refused; data is its BatchError in JSON.
func (v *BatchValidation) Invalid(line int, data []byte) error {
	val := make([]byte, 1+len(data))
	val[0] = byte(LineInvalid)
	copy(val[1:], data)
	if err := v.b.Set(lineKey(v.ws, v.id, line), val, nil); err != nil {
		return err
	}
	return v.count()
}

func (v *BatchValidation) count() error {
	v.pending++
	if v.pending < validationFlush {
		return nil
	}
	if err := v.b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("storage: batch validation: %w", err)
	}
	v.b.Close()
	v.b, v.pending = v.bs.s.db.NewIndexedBatch(), 0
	return nil
}

// Finish applies the pass's last writes and drops the custom_ids, synced: the refused lines are then stored
// for good.
func (v *BatchValidation) Finish() error {
	p := prefix(tableBatchCID, v.ws, v.id)
	_ = v.b.DeleteRange(p, prefixEnd(p), nil)
	err := v.b.Commit(pebble.Sync)
	v.b.Close()
	v.b = nil
	if err != nil {
		return fmt.Errorf("storage: finish batch validation: %w", err)
	}
	return nil
}

// Abort drops the pass's unapplied writes; the next pass starts over. Safe after Finish.
func (v *BatchValidation) Abort() {
	if v.b != nil {
		v.b.Close()
		v.b = nil
	}
}
