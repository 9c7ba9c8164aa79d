package storage

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

const (
	// pgFirstPage is the rows an iterator asks for first: most scans are short (a Seek then a read or two).
	pgFirstPage = 32
	// pgMaxPage and pgPageBytes bound a page, in rows and roughly in bytes (from the rows seen so far), so that
	// a scan of millions of rows, or of 256 KiB file chunks, holds one page in memory at a time.
	pgMaxPage   = 256
	pgMinPage   = 4
	pgPageBytes = 4 << 20
)

type pgRow struct{ k, v []byte }

type pgIterPos uint8

const (
	// as pebble: Next on an iterator never positioned answers false and leaves it past the end (Prev: before the
	// start)
	pgUnpositioned pgIterPos = iota
	pgValid
	pgBeforeFirst // moved backward past the first key: Next goes to the first
	pgAfterLast   // moved forward past the last key: Prev goes to the last
)

// pgIter walks [lower, upper) a page at a time. Each page is its own query, so unlike pebble's iterators it is
// no snapshot: rows committed during the walk may or may not be seen, keys already passed are not seen twice.
// A page is a run of consecutive keys, so moves in either direction stay inside it until they reach its ends.
type pgIter struct {
	e            *pgEngine
	lower, upper []byte
	rows         []pgRow // the page, ascending
	i            int
	// moreBelow and moreAbove say that keys in bounds may exist below and above the page.
	moreBelow, moreAbove bool
	pos                  pgIterPos
	limit                int
	err                  error
}

func (e *pgEngine) NewIter(o *pebble.IterOptions) (kvIter, error) {
	it := &pgIter{e: e, limit: pgFirstPage}
	if o != nil {
		it.lower, it.upper = bytes.Clone(o.LowerBound), bytes.Clone(o.UpperBound)
	}
	return it, nil
}

func (it *pgIter) First() bool { return it.fetch(true, it.lower, true) }

func (it *pgIter) Last() bool { return it.fetch(false, it.upper, false) }

func (it *pgIter) SeekGE(k []byte) bool {
	if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
		k = it.lower
	}
	if it.upper != nil && bytes.Compare(k, it.upper) >= 0 {
		return it.set(pgAfterLast)
	}
	return it.fetch(true, k, true)
}

func (it *pgIter) SeekLT(k []byte) bool {
	if it.upper != nil && bytes.Compare(k, it.upper) > 0 {
		k = it.upper
	}
	if it.lower != nil && bytes.Compare(k, it.lower) <= 0 {
		return it.set(pgBeforeFirst)
	}
	return it.fetch(false, k, false)
}

func (it *pgIter) Next() bool {
	switch it.pos {
	case pgAfterLast:
		return false
	case pgUnpositioned:
		return it.set(pgAfterLast)
	case pgBeforeFirst:
		return it.First()
	}
	switch {
	case it.i+1 < len(it.rows):
		it.i++
		return true
	case it.moreAbove:
		return it.fetch(true, it.rows[it.i].k, false)
	}
	return it.set(pgAfterLast)
}

func (it *pgIter) Prev() bool {
	switch it.pos {
	case pgBeforeFirst:
		return false
	case pgUnpositioned:
		return it.set(pgBeforeFirst)
	case pgAfterLast:
		return it.Last()
	}
	switch {
	case it.i > 0:
		it.i--
		return true
	case it.moreBelow:
		return it.fetch(false, it.rows[it.i].k, false)
	}
	return it.set(pgBeforeFirst)
}

func (it *pgIter) Valid() bool { return it.pos == pgValid }

func (it *pgIter) Key() []byte { return it.rows[it.i].k }

func (it *pgIter) ValueAndErr() ([]byte, error) { return it.rows[it.i].v, nil }

func (it *pgIter) Error() error { return it.err }

func (it *pgIter) Close() error {
	it.rows = nil
	return it.err
}

func (it *pgIter) set(p pgIterPos) bool {
	it.pos = p
	return p == pgValid
}

// fetch loads the page that starts at from (inclusive or not; nil: the bound) going forward or backward, and
// positions the iterator on the row nearest from.
func (it *pgIter) fetch(forward bool, from []byte, inclusive bool) bool {
	if it.err != nil {
		return it.set(pgUnpositioned)
	}
	var q strings.Builder
	args := make([]any, 0, 2)
	cond := func(op string, b []byte) {
		if b == nil {
			return
		}
		if len(args) == 0 {
			q.WriteString(" WHERE ")
		} else {
			q.WriteString(" AND ")
		}
		args = append(args, b)
		q.WriteString("k " + op + " $" + strconv.Itoa(len(args)))
	}
	q.WriteString("SELECT k, v FROM gateway_kv")
	if forward {
		op := ">"
		if inclusive {
			op = ">="
		}
		cond(op, from)
		cond("<", it.upper)
		q.WriteString(" ORDER BY k LIMIT ")
	} else {
		cond("<", from)
		cond(">=", it.lower)
		q.WriteString(" ORDER BY k DESC LIMIT ")
	}
	q.WriteString(strconv.Itoa(it.limit))

	ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
	defer cancel()
	rows, err := it.e.pool.Query(ctx, q.String(), args...)
	if err != nil {
		it.err = it.e.redact(err)
		return it.set(pgUnpositioned)
	}
	page := it.rows[:0:0] // a new page: the previous one's slices stay valid for whoever holds them
	size := 0
	for rows.Next() {
		var r pgRow
		if err := rows.Scan(&r.k, &r.v); err != nil {
			rows.Close()
			it.err = it.e.redact(err)
			return it.set(pgUnpositioned)
		}
		size += len(r.k) + len(r.v)
		page = append(page, r)
	}
	if err := rows.Err(); err != nil {
		it.err = it.e.redact(err)
		return it.set(pgUnpositioned)
	}
	full := len(page) == it.limit
	if len(page) > 0 {
		it.limit = max(pgMinPage, min(pgMaxPage, pgPageBytes/max(1, size/len(page))))
	}
	if len(page) == 0 {
		it.rows = nil
		if forward {
			return it.set(pgAfterLast)
		}
		return it.set(pgBeforeFirst)
	}
	if forward {
		it.rows, it.i = page, 0
		it.moreAbove = full
		it.moreBelow = from != nil && !(inclusive && bytes.Equal(from, it.lower))
	} else {
		slices.Reverse(page)
		it.rows, it.i = page, len(page)-1
		it.moreBelow = full
		it.moreAbove = from != nil && !bytes.Equal(from, it.upper)
	}
	return it.set(pgValid)
}
