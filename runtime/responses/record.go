package responses

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// maxFinalEvent bounds the event a recorded stream's response object is read from.
const maxFinalEvent = 16 << 20

// Record passes a responses event stream through unchanged while it watches its data lines for the final event
// (response.completed, .incomplete or .failed). When the stream is closed, done is called once with the
// response object of the last such event, or nil when none came (a stream cut short). Routes stores streamed
// responses with it; the cache keeps them.
func Record(src io.ReadCloser, done func(final json.RawMessage)) io.ReadCloser {
	return &recorder{src: src, done: done}
}

// recorder is the reader Record returns. It is read by one goroutine.
type recorder struct {
	src   io.ReadCloser
	done  func(json.RawMessage)
	line  []byte // the current line so far
	long  bool   // the current line passed maxFinalEvent: it is skipped
	final json.RawMessage
	once  sync.Once
}

func (f *recorder) Read(p []byte) (int, error) {
	n, err := f.src.Read(p)
	data := p[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			f.add(data)
			break
		}
		f.add(data[:i])
		f.endLine()
		data = data[i+1:]
	}
	return n, err
}

func (f *recorder) add(b []byte) {
	if f.long {
		return
	}
	if len(f.line)+len(b) > maxFinalEvent {
		f.long, f.line = true, f.line[:0]
		return
	}
	f.line = append(f.line, b...)
}

func (f *recorder) endLine() {
	line := f.line
	f.line, f.long = f.line[:0], false
	payload, ok := bytes.CutPrefix(line, []byte("data:"))
	// Only events that carry a response object hold the key "response" (in a delta's text it is escaped).
	if !ok || !bytes.Contains(payload, []byte(`"response"`)) {
		return
	}
	if obj, ok := FinalResponse(bytes.TrimSpace(payload)); ok {
		f.final = append(json.RawMessage(nil), obj...)
	}
}

func (f *recorder) Close() error {
	err := f.src.Close()
	f.once.Do(func() { f.done(f.final) })
	return err
}
