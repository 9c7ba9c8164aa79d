package storage

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"
)

// File is a stored file's metadata: OpenAI's file object plus what the store needs to read it back.
type File struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspace_id"`
	Bytes       int64  `json:"bytes"`
	CreatedAt   int64  `json:"created_at"` // Unix seconds
	Filename    string `json:"filename"`
	Purpose     string `json:"purpose"`
	Chunks      int    `json:"chunks"`
}

// FileChunkSize is how much of a file one stored chunk holds: a writer or reader keeps about one chunk (and
// its compressed form) in memory, whatever the file's size.
const FileChunkSize = 256 << 10

// ErrFileTooLarge is returned by FileWriter.Write once the file passes the writer's limit.
var ErrFileTooLarge = errors.New("storage: file is larger than the limit")

// FileStore keeps files (uploads, batch inputs and outputs) in chunks under file/ and filechunk/, compressed with
// zstd where that saves at least a tenth. Files are written and read as streams: no method holds a whole file.
// A file becomes visible only once its writer commits; an upload cut short by a crash leaves a filepending/
// marker that SweepPending (run at start) turns into a deletion of its chunks.
type FileStore struct {
	s *Store

	codecOnce sync.Once
	enc       *zstd.Encoder
	dec       *zstd.Decoder
	bufs      sync.Pool // *[]byte of FileChunkSize capacity
}

const (
	tableFile        = "file"
	tableFileChunk   = "filechunk"
	tableFilePending = "filepending"

	chunkRaw  byte = 0
	chunkZstd byte = 1

	// flushEvery chunks, the writer's pebble batch is applied (without a sync: the commit syncs).
	flushEvery = 4
)

func (fs *FileStore) codec() (*zstd.Encoder, *zstd.Decoder) {
	fs.codecOnce.Do(func() {
		var err error
		// Each chunk is compressed alone, so a window past a chunk is of no use; zstd's default (8 MiB) would
		// make each of its per-CPU encoders keep a history of that size.
		if fs.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true),
			zstd.WithWindowSize(FileChunkSize)); err != nil {
			panic("storage: zstd encoder: " + err.Error())
		}
		if fs.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(FileChunkSize)); err != nil {
			panic("storage: zstd decoder: " + err.Error())
		}
	})
	return fs.enc, fs.dec
}

func (fs *FileStore) buf() *[]byte {
	if b, ok := fs.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, FileChunkSize)
	return &b
}

// NewTimeOrderedID returns prefix followed by 24 hex digits: the time in milliseconds (12), a sequence number
// (4) and random (8). IDs made this way sort by creation time, and strictly so within one process even in the
// same millisecond, so lists can walk keys newest first without an index.
func NewTimeOrderedID(prefix string, now time.Time) string {
	stamp := uint64(now.UnixMilli()) << 16
	for {
		last := lastTimeOrdered.Load()
		next := max(stamp, last+1)
		if lastTimeOrdered.CompareAndSwap(last, next) {
			stamp = next
			break
		}
	}
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], stamp)
	_, _ = rand.Read(b[8:])
	return prefix + hex.EncodeToString(b[:])
}

// lastTimeOrdered is the time and sequence (ms << 16 | seq) of the last ID NewTimeOrderedID made.
var lastTimeOrdered atomic.Uint64

// Create starts a new file in the workspace. f.Filename and f.Purpose are the caller's; f.ID, when empty, gets a
// new time-ordered "file-" ID. When f.ID names a file that exists or was left half written, its chunks are
// replaced (writers of derived files, such as a batch's output, use that to write the same file again after a
// crash). limit bounds the file's size (0: none). The caller must Commit or Abort the writer.
func (fs *FileStore) Create(workspaceID string, f File, limit int64) (*FileWriter, error) {
	if !ValidID(workspaceID) {
		return nil, fmt.Errorf("storage: invalid workspace ID %q", workspaceID)
	}
	now := fs.s.now()
	if f.ID == "" {
		f.ID = NewTimeOrderedID("file-", now)
	}
	if !ValidID(f.ID) {
		return nil, fmt.Errorf("storage: invalid file ID %q", f.ID)
	}
	f.WorkspaceID, f.CreatedAt, f.Bytes, f.Chunks = workspaceID, now.Unix(), 0, 0
	w := &FileWriter{fs: fs, meta: f, limit: limit, buf: fs.buf(), batch: fs.s.db.NewBatch()}
	// The marker goes in first, so that a crash at any later point leaves chunks that SweepPending finds.
	p := prefix(tableFileChunk, workspaceID, f.ID)
	// The marker holds when the upload began, so that a replica sharing the store sweeps only uploads far older
	// than any still running (SweepPendingOlder).
	if err := w.batch.Set(key(tableFilePending, workspaceID, f.ID), strconv.AppendInt(nil, fs.s.now().UnixNano(), 10), nil); err != nil {
		return nil, err
	}
	if err := w.batch.DeleteRange(p, prefixEnd(p), nil); err != nil {
		return nil, err
	}
	if err := w.batch.Commit(pebble.NoSync); err != nil {
		return nil, fmt.Errorf("storage: start file: %w", err)
	}
	w.batch.Reset()
	return w, nil
}

// FileWriter writes one file chunk by chunk. It is not safe for concurrent use.
type FileWriter struct {
	fs      *FileStore
	meta    File
	limit   int64
	buf     *[]byte
	val     []byte // a chunk's stored form, reused
	batch   kvBatch
	pending int // chunks in batch not yet applied
	done    bool
}

// ID is the file's ID.
func (w *FileWriter) ID() string { return w.meta.ID }

// Size is the number of bytes written so far.
func (w *FileWriter) Size() int64 { return w.meta.Bytes }

// SetPurpose sets the purpose the file is committed with: a multipart upload may send its purpose after the
// content, which is written as it arrives.
func (w *FileWriter) SetPurpose(purpose string) { w.meta.Purpose = purpose }

// Write appends p. It returns ErrFileTooLarge, writing nothing of p, when the file would pass its limit.
func (w *FileWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("storage: write to a closed file")
	}
	if w.limit > 0 && w.meta.Bytes+int64(len(p)) > w.limit {
		return 0, ErrFileTooLarge
	}
	n := 0
	for len(p) > 0 {
		b := *w.buf
		room := FileChunkSize - len(b)
		take := min(room, len(p))
		b = append(b, p[:take]...)
		*w.buf = b
		p = p[take:]
		n += take
		w.meta.Bytes += int64(take)
		if len(b) == FileChunkSize {
			if err := w.flushChunk(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flushChunk stages the buffered chunk, compressed when that pays, and applies the batch every flushEvery chunks.
func (w *FileWriter) flushChunk() error {
	raw := *w.buf
	if len(raw) == 0 {
		return nil
	}
	enc, _ := w.fs.codec()
	// The batch copies the value: one buffer per writer serves every chunk, so that an upload allocates about
	// a chunk, not its size.
	val := append(w.val[:0], chunkZstd)
	val = enc.EncodeAll(raw, val)
	if len(val)-1 > len(raw)-len(raw)/10 {
		val = append(append(val[:0], chunkRaw), raw...)
	}
	w.val = val
	if err := w.batch.Set(chunkKey(w.meta.WorkspaceID, w.meta.ID, w.meta.Chunks), val, nil); err != nil {
		return err
	}
	w.meta.Chunks++
	*w.buf = raw[:0]
	w.pending++
	if w.pending >= flushEvery {
		if err := w.batch.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("storage: write file: %w", err)
		}
		w.batch.Reset()
		w.pending = 0
	}
	return nil
}

// Commit writes the last chunk and the file's metadata, synced: once it returns the file survives a crash.
func (w *FileWriter) Commit() (*File, error) {
	if w.done {
		return nil, errors.New("storage: file already closed")
	}
	defer w.release()
	if err := w.flushChunk(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(&w.meta)
	if err != nil {
		return nil, err
	}
	if err := w.batch.Set(key(tableFile, w.meta.WorkspaceID, w.meta.ID), raw, nil); err != nil {
		return nil, err
	}
	if err := w.batch.Delete(key(tableFilePending, w.meta.WorkspaceID, w.meta.ID), nil); err != nil {
		return nil, err
	}
	if err := w.batch.Commit(pebble.Sync); err != nil {
		return nil, fmt.Errorf("storage: commit file: %w", err)
	}
	f := w.meta
	return &f, nil
}

// Abort drops what was written. It is safe to call after Commit (it then does nothing), so callers can defer it.
func (w *FileWriter) Abort() error {
	if w.done {
		return nil
	}
	defer w.release()
	return w.fs.dropChunks(w.meta.WorkspaceID, w.meta.ID)
}

func (w *FileWriter) release() {
	w.done = true
	w.batch.Close()
	*w.buf = (*w.buf)[:0]
	w.fs.bufs.Put(w.buf)
	w.buf = nil
}

// dropChunks deletes a file's chunks and pending marker (not its metadata).
func (fs *FileStore) dropChunks(workspaceID, id string) error {
	b := fs.s.db.NewBatch()
	p := prefix(tableFileChunk, workspaceID, id)
	_ = b.DeleteRange(p, prefixEnd(p), nil)
	_ = b.Delete(key(tableFilePending, workspaceID, id), nil)
	return fs.s.commit(b)
}

func chunkKey(workspaceID, id string, seq int) []byte {
	var n [8]byte
	binary.BigEndian.PutUint32(n[:4], uint32(seq))
	return key(tableFileChunk, workspaceID, id, hex.EncodeToString(n[:4]))
}

// Get returns a file's metadata, or ErrNotFound.
func (fs *FileStore) Get(workspaceID, id string) (*File, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	return getJSON[File](fs.s, key(tableFile, workspaceID, id))
}

// FileList filters and pages List.
type FileList struct {
	Purpose string // "" for every purpose
	After   string // a file ID: the page starts after it in the list's order
	Limit   int    // at most this many (0: no limit)
	Asc     bool   // oldest first; newest first otherwise
}

// List returns the workspace's files in creation order (newest first unless Asc), filtered and paged, and
// whether more follow the page.
func (fs *FileStore) List(workspaceID string, q FileList) (files []*File, more bool, err error) {
	if !ValidID(workspaceID) {
		return nil, false, nil
	}
	all, err := listJSON[File](fs.s, prefix(tableFile, workspaceID))
	if err != nil {
		return nil, false, err
	}
	// IDs the store makes sort by time; files named by their writer (batch outputs) sort by created_at with them.
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].CreatedAt != all[j].CreatedAt {
			return all[i].CreatedAt < all[j].CreatedAt
		}
		return all[i].ID < all[j].ID
	})
	if !q.Asc {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	start := 0
	if q.After != "" {
		start = len(all)
		for i, f := range all {
			if f.ID == q.After {
				start = i + 1
				break
			}
		}
	}
	for _, f := range all[start:] {
		if q.Purpose != "" && f.Purpose != q.Purpose {
			continue
		}
		if q.Limit > 0 && len(files) == q.Limit {
			return files, true, nil
		}
		files = append(files, f)
	}
	return files, false, nil
}

// Open returns the file's metadata and a reader of its content, chunk by chunk. The reader must be closed.
func (fs *FileStore) Open(workspaceID, id string) (*File, io.ReadCloser, error) {
	f, err := fs.Get(workspaceID, id)
	if err != nil {
		return nil, nil, err
	}
	p := prefix(tableFileChunk, workspaceID, id)
	it, err := fs.s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, nil, fmt.Errorf("storage: open file: %w", err)
	}
	it.First()
	return f, &fileReader{fs: fs, it: it, buf: fs.buf(), left: f.Bytes}, nil
}

type fileReader struct {
	fs   *FileStore
	it   kvIter
	buf  *[]byte
	off  int
	left int64 // bytes the metadata promises still to come
	err  error
}

func (r *fileReader) Read(p []byte) (int, error) {
	for r.off >= len(*r.buf) {
		if r.err != nil {
			return 0, r.err
		}
		r.err = r.next()
	}
	n := copy(p, (*r.buf)[r.off:])
	r.off += n
	return n, nil
}

// next decodes the iterator's chunk into buf; io.EOF once the chunks are read and the size matches.
func (r *fileReader) next() error {
	*r.buf, r.off = (*r.buf)[:0], 0
	if !r.it.Valid() {
		if err := r.it.Error(); err != nil {
			return fmt.Errorf("storage: read file: %w", err)
		}
		if r.left != 0 {
			return fmt.Errorf("storage: read file: %d bytes missing", r.left)
		}
		return io.EOF
	}
	v, err := r.it.ValueAndErr()
	if err != nil || len(v) == 0 {
		return fmt.Errorf("storage: read file chunk: %v", err)
	}
	switch v[0] {
	case chunkRaw:
		*r.buf = append(*r.buf, v[1:]...)
	case chunkZstd:
		_, dec := r.fs.codec()
		if *r.buf, err = dec.DecodeAll(v[1:], *r.buf); err != nil {
			return fmt.Errorf("storage: read file chunk: %w", err)
		}
	default:
		return fmt.Errorf("storage: read file chunk: unknown codec %d", v[0])
	}
	r.left -= int64(len(*r.buf))
	r.it.Next()
	return nil
}

func (r *fileReader) Close() error {
	if r.buf == nil {
		return nil
	}
	err := r.it.Close()
	*r.buf = (*r.buf)[:0]
	r.fs.bufs.Put(r.buf)
	r.buf = nil
	return err
}

// Delete removes a file and its content, synced. ErrNotFound when there is no such file.
func (fs *FileStore) Delete(workspaceID, id string) error {
	if _, err := fs.Get(workspaceID, id); err != nil {
		return err
	}
	b := fs.s.db.NewBatch()
	p := prefix(tableFileChunk, workspaceID, id)
	_ = b.DeleteRange(p, prefixEnd(p), nil)
	_ = b.Delete(key(tableFile, workspaceID, id), nil)
	return fs.s.commit(b)
}

// SweepPending deletes the chunks of files whose writing a crash cut short. Run it at start, before serving.
// It reports how many it found.
func (fs *FileStore) SweepPending() (int, error) { return fs.SweepPendingOlder(0) }

// SweepPendingOlder is SweepPending for the uploads that began more than age ago (markers of older gateways,
// which carry no time, count as old). Replicas sharing a store use it: another replica may be uploading now.
func (fs *FileStore) SweepPendingOlder(age time.Duration) (int, error) {
	type pending struct{ ws, id string }
	var found []pending
	cutoff := fs.s.now().Add(-age).UnixNano()
	err := fs.s.scan([]byte(tableFilePending+"/"), func(k, v []byte) error {
		ws, id, _ := strings.Cut(string(k[len(tableFilePending)+1:]), "/")
		if began, err := strconv.ParseInt(string(v), 10, 64); age > 0 && err == nil && began > cutoff {
			return nil
		}
		if ws != "" && id != "" {
			found = append(found, pending{ws, id})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, p := range found {
		if err := fs.dropChunks(p.ws, p.id); err != nil {
			return 0, err
		}
	}
	return len(found), nil
}
