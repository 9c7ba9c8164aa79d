package storage

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// kvEngine is the ordered key-value store the typed stores are written over: the subset of pebble's API they
// use, so that pebble (the embedded default) and PostgreSQL (--postgres, storage/postgres.go) are one code path
// above this line. The semantics are pebble's: keys sort bytewise; Get answers pebble.ErrNotFound; a batch
// commits atomically; WriteOptions pebble.Sync means the write is durable when Commit returns, pebble.NoSync
// that it may be lost in a crash (never half-applied).
type kvEngine interface {
	Get(k []byte) ([]byte, io.Closer, error)
	Set(k, v []byte, o *pebble.WriteOptions) error
	Delete(k []byte, o *pebble.WriteOptions) error
	DeleteRange(lo, hi []byte, o *pebble.WriteOptions) error
	NewIter(o *pebble.IterOptions) (kvIter, error)
	NewBatch() kvBatch
	// NewIndexedBatch returns a batch whose Get sees its own writes over the store's.
	NewIndexedBatch() kvBatch
	Close() error
}

// kvIter walks the keys in [LowerBound, UpperBound) of its IterOptions, in either direction.
type kvIter interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	SeekGE(k []byte) bool
	SeekLT(k []byte) bool
	Valid() bool
	// Key and the value are valid until the next move.
	Key() []byte
	ValueAndErr() ([]byte, error)
	Error() error
	Close() error
}

// kvBatch collects writes applied together by Commit.
type kvBatch interface {
	Set(k, v []byte, o *pebble.WriteOptions) error
	Delete(k []byte, o *pebble.WriteOptions) error
	DeleteRange(lo, hi []byte, o *pebble.WriteOptions) error
	// Get is only for indexed batches.
	Get(k []byte) ([]byte, io.Closer, error)
	Empty() bool
	// Reset empties a committed batch for reuse.
	Reset()
	Commit(o *pebble.WriteOptions) error
	Close() error
}

// pebbleEngine is the embedded engine: *pebble.DB as it is, its batches and iterators behind the interfaces.
type pebbleEngine struct{ *pebble.DB }

func (e pebbleEngine) NewIter(o *pebble.IterOptions) (kvIter, error) {
	it, err := e.DB.NewIter(o)
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (e pebbleEngine) NewBatch() kvBatch        { return e.DB.NewBatch() }
func (e pebbleEngine) NewIndexedBatch() kvBatch { return e.DB.NewIndexedBatch() }
