package storage

import (
	"math"
	"strconv"
)

// The request log writes thousands of entries a second in the background: its records are encoded by hand
// into reused buffers, in exactly the bytes an encoding/json Encoder without HTML escaping writes
// (TestAppendLogEntryMatchesEncodingJSON), instead of through reflection, maps and fresh buffers per entry.
// Strings are jsonstr.AppendString's.

// appendJSONFloat appends f as encoding/json writes a float64: the shortest text that reads back the same,
// in exponent form below 1e-6 and from 1e21 (with a one-digit exponent unpadded: 1e-07 is written 1e-7).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
