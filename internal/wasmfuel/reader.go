package wasmfuel

import "fmt"

// reader decodes a part of the module. The first failure sticks in err (an *Error at the offset where it
// happened) and every read after it returns zeros, so decoders check err once per item rather than per read.
type reader struct {
	b    []byte
	pos  int
	base int // offset of b[0] in the module, for errors
	fn   int // 1 + the index of the function being decoded; 0 outside code
	err  *Error
}

func (r *reader) abs() int { return r.base + r.pos }

func (r *reader) failAt(pos int, format string, args ...any) {
	if r.err == nil {
		r.err = &Error{Func: r.fn - 1, Offset: r.base + pos, Msg: fmt.Sprintf(format, args...)}
	}
	r.pos = len(r.b)
}

func (r *reader) fail(format string, args ...any) { r.failAt(r.pos, format, args...) }

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("%d bytes wanted, %d left", n, len(r.b)-r.pos)
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

func (r *reader) rest() []byte {
	b := r.b[r.pos:]
	r.pos = len(r.b)
	return b
}

// leb reads an LEB128 number of at most maxBytes bytes and returns its value's bits (signed: sign-extended
// from bits).
func (r *reader) leb(maxBytes int, bits uint, signed bool) uint64 {
	start := r.pos
	var v uint64
	var shift uint
	for i := 0; ; i++ {
		if i == maxBytes {
			r.failAt(start, "integer longer than %d bytes", maxBytes)
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if signed && shift < 64 && v&(1<<(shift-1)) != 0 {
		v |= ^uint64(0) << shift
	}
	if !signed && bits < 64 && v>>bits != 0 {
		r.failAt(start, "integer above %d bits", bits)
		return 0
	}
	return v
}

func (r *reader) u32() uint32 { return uint32(r.leb(5, 32, false)) }
func (r *reader) s32() int32  { return int32(r.leb(5, 32, true)) }
func (r *reader) s33() int64  { return int64(r.leb(5, 33, true)) }
func (r *reader) s64() int64  { return int64(r.leb(10, 64, true)) }

// count reads a vector's length, refusing one whose items (at least minItemBytes each) cannot fit in the
// bytes left, so that nothing is allocated or looped over for a length the input cannot back.
func (r *reader) count(minItemBytes int) uint32 {
	at := r.pos
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(minItemBytes) > uint64(len(r.b)-r.pos) {
		r.failAt(at, "vector of %d items in %d bytes", n, len(r.b)-r.pos)
		return 0
	}
	return n
}

func (r *reader) name() string {
	n := r.count(1)
	return string(r.bytes(int(n)))
}

func (r *reader) limits() (minimum uint32) {
	flags := r.byte()
	minimum = r.u32()
	if flags&1 != 0 {
		r.u32()
	}
	return minimum
}
