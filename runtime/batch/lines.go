package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// maxCustomID bounds a line's custom_id, which every result line repeats.
const maxCustomID = 512

// Codes of the errors of refused lines (errors.data) that are not the gateway's usual ones.
const (
	codeDuplicateID = "duplicate_custom_id"
	codeLineTooLong = "line_too_long"
)

// lineReader reads a file's lines one at a time, each at most max bytes: a longer line is skipped whole and
// reported, never buffered.
type lineReader struct {
	r    *bufio.Reader
	max  int
	buf  []byte
	line int // number of the line last returned, from 1
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending, valid until the following call, and its number; long
// is set (and data nil) when the line passes the limit. io.EOF once every line is read.
func (lr *lineReader) next() (data []byte, n int, long bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !long {
			if len(lr.buf)+len(chunk) > lr.max+2 { // room for the "\r\n" trimmed below
				long, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(lr.buf) == 0 && !long && len(chunk) == 0 {
				return nil, 0, false, io.EOF
			}
		case err != nil:
			return nil, 0, false, err
		}
		lr.line++
		if long {
			return nil, lr.line, true, nil
		}
		data = bytes.TrimSuffix(bytes.TrimSuffix(lr.buf, []byte{'\n'}), []byte{'\r'})
		if len(data) > lr.max {
			return nil, lr.line, true, nil
		}
		return data, lr.line, false, nil
	}
}

// blank reports whether a line holds only white space: such lines are skipped, not refused.
func blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// inputLine is one request of a batch's input file.
type inputLine struct {
	CustomID *string         `json:"custom_id"`
	Method   *string         `json:"method"`
	URL      *string         `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// parseLine reads and checks one input line of a batch for endpoint. A refused line gets its BatchError
// (Line set by the caller).
func parseLine(data []byte, endpoint string) (*inputLine, *storage.BatchError) {
	in := new(inputLine)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		return nil, lineError(schema.DecodeError(data, "", err))
	}
	if dec.More() {
		return nil, &storage.BatchError{Code: gwerr.CodeInvalidJSON, Message: "the line holds more than one JSON value"}
	}
	missing := func(field string) *storage.BatchError {
		return &storage.BatchError{Code: gwerr.CodeInvalidRequest, Param: field, Message: field + " is required"}
	}
	switch {
	case in.CustomID == nil:
		return nil, missing("custom_id")
	case *in.CustomID == "" || len(*in.CustomID) > maxCustomID:
		return nil, &storage.BatchError{Code: gwerr.CodeInvalidRequest, Param: "custom_id",
			Message: fmt.Sprintf("custom_id must be 1 to %d characters", maxCustomID)}
	case in.Method == nil:
		return nil, missing("method")
	case *in.Method != http.MethodPost:
		return nil, &storage.BatchError{Code: gwerr.CodeInvalidRequest, Param: "method",
			Message: fmt.Sprintf("method must be POST, not %q", *in.Method)}
	case in.URL == nil:
		return nil, missing("url")
	case *in.URL != endpoint:
		return nil, &storage.BatchError{Code: gwerr.CodeInvalidRequest, Param: "url",
			Message: fmt.Sprintf("url must be the batch's endpoint %s, not %q", endpoint, *in.URL)}
	case len(in.Body) == 0 || bytes.Equal(in.Body, []byte("null")):
		return nil, missing("body")
	}
	body, err := schema.ReadBody(in.Body)
	if err != nil {
		e := &storage.BatchError{Code: gwerr.CodeInvalidRequest, Param: "body", Message: "body: " + err.Error()}
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			e.Message = "body: " + ge.Message
			if ge.Param != "" {
				e.Param = "body." + ge.Param
			}
		}
		return nil, e
	}
	if body.Stream() {
		return nil, &storage.BatchError{Code: gwerr.CodeInvalidRequest, Param: "body.stream",
			Message: "a batch line cannot be streamed: leave stream out or set it to false"}
	}
	return in, nil
}

func lineError(ge *gwerr.Error) *storage.BatchError {
	return &storage.BatchError{Code: ge.Code, Message: ge.Message, Param: ge.Param}
}

// doneLines is a set of line numbers, a bit each: the lines of a batch that have a stored result.
type doneLines []uint64

func (d *doneLines) add(n int) {
	for n/64 >= len(*d) {
		*d = append(*d, 0)
	}
	(*d)[n/64] |= 1 << (n % 64)
}

func (d doneLines) has(n int) bool { return n/64 < len(d) && d[n/64]&(1<<(n%64)) != 0 }
