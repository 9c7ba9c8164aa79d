package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// OpenAI's media endpoints, routed through the engine like chat completions (auth, configs, fallbacks,
// retries, rate limits, logs, metrics) to the providers that serve them (runtime/media_step.go). JSON ones take
// a JSON body as chat does; uploads (images/edits, audio transcriptions and translations) take
// multipart/form-data, whose text fields routes reads for the model and the checks, and which goes upstream
// byte for byte. audio/speech answers bytes, relayed as they arrive (rawRelay).

// Bounds of an upload's form as routes reads it (the body itself is bounded by the server's BodyLimit).
const (
	maxFormParts = 64       // parts of a form, files included
	maxFormField = 64 << 10 // bytes of one text field (a prompt, a transcription's prompt)
)

func (s *Server) mediaRoutes(v1 fiber.Router) {
	v1.Post("/images/generations", s.mediaJSON(providers.ImagesGenerations))
	v1.Post("/images/edits", s.mediaForm(providers.ImagesEdits))
	v1.Post("/audio/speech", s.mediaJSON(providers.AudioSpeech))
	v1.Post("/audio/transcriptions", s.mediaForm(providers.AudioTranscriptions))
	v1.Post("/audio/translations", s.mediaForm(providers.AudioTranslations))
	v1.Post("/moderations", s.mediaJSON(providers.Moderations))
	v1.Post("/rerank", s.mediaJSON(providers.Rerank))
}

// mediaJSON serves a media endpoint whose request is JSON.
func (s *Server) mediaJSON(ep providers.Endpoint) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := requireJSON(c); err != nil {
			return err
		}
		body, err := schema.ReadBody(ownedBody(c))
		if err != nil {
			return err
		}
		if body.Stream() {
			return noMediaStream(ep)
		}
		req, err := newEngineRequest(c, ep, body)
		if err != nil {
			return err
		}
		return s.run(c, req, nil)
	}
}

// mediaForm serves a media endpoint whose request is a multipart/form-data upload.
func (s *Server) mediaForm(ep providers.Endpoint) fiber.Handler {
	return func(c *fiber.Ctx) error {
		contentType := c.Get(fiber.HeaderContentType)
		boundary, err := mediaBoundary(contentType)
		if err != nil {
			return err
		}
		// The body is read once, by limitBody; its text fields are read from those bytes, its files skipped.
		raw := ownedBody(c)
		fields, err := readFormFields(raw, boundary)
		if err != nil {
			return err
		}
		if fields["stream"] == "true" {
			return noMediaStream(ep)
		}
		req, err := newEngineRequest(c, ep, schema.FormBody(raw, fields))
		if err != nil {
			return err
		}
		req.ContentType = strings.Clone(contentType)
		return s.run(c, req, nil)
	}
}

// noMediaStream refuses stream: true on a media endpoint: the gateway relays its answer whole (or, for audio,
// as raw bytes), not as events.
func noMediaStream(ep providers.Endpoint) error {
	return gwerr.BadRequest("stream", "streamed answers of /v1%s are not supported by the gateway: leave stream unset", ep.Path())
}

// mediaBoundary checks that the request is multipart/form-data (415 when it is not) and returns its boundary.
func mediaBoundary(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" {
		got := contentType
		if got == "" {
			got = "none"
		}
		return "", &gwerr.Error{Status: fiber.StatusUnsupportedMediaType, Code: gwerr.CodeUnsupportedMediaType, Param: "content-type",
			Message: fmt.Sprintf("request body must be multipart/form-data (content-type was %s)", got)}
	}
	if params["boundary"] == "" {
		return "", gwerr.BadRequest("content-type", "multipart/form-data needs a boundary parameter")
	}
	return params["boundary"], nil
}

// readFormFields reads the text fields of a multipart form (a file's bytes are skipped, never copied), at most
// maxFormParts parts and maxFormField bytes a field. A field given twice is refused, so that the gateway (its
// routing, conditions and checks) and the provider cannot read two different values; only a field named as a
// list ("timestamp_granularities[]") may repeat.
func readFormFields(raw []byte, boundary string) (map[string]string, error) {
	mr := multipart.NewReader(bytes.NewReader(raw), boundary)
	fields := make(map[string]string, 8)
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, nil
		}
		if err != nil {
			return nil, gwerr.BadRequest("body", "malformed multipart/form-data body: %v", err)
		}
		if n >= maxFormParts {
			return nil, gwerr.BadRequest("body", "a form may have at most %d parts", maxFormParts)
		}
		name := part.FormName()
		if name == "" || part.FileName() != "" {
			continue // a file: its bytes stay in raw, which goes upstream; NextPart skips them
		}
		value, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
		if err != nil {
			return nil, gwerr.BadRequest(name, "malformed multipart/form-data body: %v", err)
		}
		if len(value) > maxFormField {
			return nil, gwerr.BadRequest(name, "form field %s is longer than %d bytes", name, maxFormField)
		}
		if _, dup := fields[name]; dup && !strings.HasSuffix(name, "[]") {
			return nil, gwerr.BadRequest(name, "form field %s is given more than once", name)
		}
		fields[name] = string(value)
	}
}

// rawRelay is a raw answer's body (audio/speech), read by fasthttp as it writes the answer: each Read hands
// over what the provider has sent so far, which fasthttp sends as one chunk and flushes. Close (fasthttp's,
// once the answer is written or the caller went away) closes the upstream, reports the request and ends its
// context, as sseRelay's does.
type rawRelay struct {
	srv     *Server
	req     *runtime.Request
	resp    *runtime.Response
	ctx     context.Context
	cancel  context.CancelFunc
	arrived time.Time

	started, first time.Time
	ended, closed  bool
	err            error
}

func (s *Server) newRawRelay(req *runtime.Request, resp *runtime.Response, cancel context.CancelFunc, arrived time.Time, ctx context.Context) *rawRelay {
	streamOpened()
	return &rawRelay{srv: s, req: req, resp: resp, ctx: ctx, cancel: cancel, arrived: arrived}
}

func (r *rawRelay) Read(p []byte) (int, error) {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	n, err := r.resp.Stream.Read(p)
	if n > 0 && r.first.IsZero() {
		r.first = time.Now()
	}
	if err != nil {
		r.ended = true
		if !errors.Is(err, io.EOF) {
			r.err = err // the caller's body ends short: audio has no error event to send
		}
	}
	return n, err
}

func (r *rawRelay) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	defer streamClosed()
	defer r.cancel()
	err := r.err
	if err == nil && !r.ended {
		err = errCallerGone
	}
	if err != nil {
		r.srv.log.Warn("stream ended early", "trace_id", r.req.TraceID, "err", err)
	}
	r.resp.Stream.Close()
	var times streamTimes
	if !r.started.IsZero() {
		times.relayed = time.Since(r.started)
	}
	if !r.first.IsZero() {
		times.firstEvent = r.first.Sub(r.arrived)
	}
	r.srv.observe(r.ctx, r.arrived, r.req, r.resp, r.resp.Status, false, times)
	return nil
}

// loggedRequest is the request body a log entry keeps: an upload's is not JSON (nor small), so its text fields
// stand in for it.
func loggedRequest(req *runtime.Request) []byte {
	if req.ContentType == "" {
		return req.Body.Raw()
	}
	fields := make(map[string]string)
	for k, v := range req.Body.Params() {
		fields[k], _ = v.(string)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return b
}

// loggedAnswer reports whether a whole answer's body can be kept in a log entry: a JSON one (a transcript as
// text, SRT or WebVTT is not).
func loggedAnswer(resp *runtime.Response) bool {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == fiber.MIMEApplicationJSON || strings.HasSuffix(mt, "+json"))
}
