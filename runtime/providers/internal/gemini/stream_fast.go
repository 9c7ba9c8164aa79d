package gemini

import (
	"bytes"
	"strconv"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// Most events of a stream are one candidate's next piece of text:
//
//	{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}],
//	 "usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"abc"}
//
// parseFastEvent reads that shape (keys in any order; finishReason, usageMetadata, thoughtSignature and fields
// the translation ignores, such as safetyRatings, allowed) without encoding/json, and fastStep writes its chunk
// with ChunkWriter's allocation-free methods, byte for byte what handle and Encode write. Anything else makes
// parseFastEvent decline and the event goes through encoding/json: another candidate or a candidate index other
// than 0, a function call, a thought, promptFeedback, an error, logprobs, a null, a duplicate key, a key with an
// escape or a non-ASCII byte, a key that differs only in case from a field of the wire types (encoding/json
// would match it), a number that is not a plain non-negative integer. FuzzStreamFastPath checks that both
// paths write the same bytes.

// fastEvent is what parseFastEvent found. Its buffers are reused from event to event.
type fastEvent struct {
	candidate bool   // the event has its one candidate
	text      []byte // the candidate's text parts, unescaped and joined
	finish    []byte // the candidate's finishReason, unescaped; empty when it has none
	usage     usageMetadata
	hasUsage  bool
	model, id []byte // the literals of modelVersion and responseId, nil when absent
}

// The fields of the wire types each object of the fast shape is decoded into: a key that matches one of them
// only without regard to case is one encoding/json would decode into it.
var (
	responseFields  = []string{"candidates", "promptFeedback", "usageMetadata", "modelVersion", "responseId", "error"}
	candidateFields = []string{"content", "finishReason", "index", "logprobsResult"}
	contentFields   = []string{"role", "parts"}
	partFields      = []string{"text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall", "functionResponse"}
	usageFields     = []string{"promptTokenCount", "candidatesTokenCount", "totalTokenCount", "cachedContentTokenCount", "thoughtsTokenCount"}
)

// fastStep translates data when it is an event of the common shape, and reports whether it did.
func (s *streamReader) fastStep(data []byte) bool {
	ev := &s.fast
	if !parseFastEvent(data, ev) {
		return false
	}
	if !s.w.Started() {
		var model, id string
		if ev.model != nil {
			model, _ = jsonstr.Unquote(ev.model) // parseFastEvent checked the literal
		}
		if ev.id != nil {
			id, _ = jsonstr.Unquote(ev.id)
		}
		s.begin(model, id)
	}
	if u := &ev.usage; ev.hasUsage && (u.PromptTokenCount != 0 || u.TotalTokenCount != 0 || u.CandidatesTokenCount != 0) {
		s.fastUsage = *u
		s.usage = &s.fastUsage
	}
	if !ev.candidate {
		return true
	}
	st := s.state(0)
	role := !st.started
	st.started = true
	var reason string
	if len(ev.finish) > 0 {
		reason = finishReason(string(ev.finish), st.calls > 0)
		s.finished = true
	}
	if !role && len(ev.text) == 0 && reason == "" {
		return true // an empty choice, which handle leaves out
	}
	d := append(s.w.Begin(s.out), '{')
	if role {
		d = append(d, `"role":"assistant"`...)
		if len(ev.text) > 0 {
			d = append(d, ',')
		}
	}
	if len(ev.text) > 0 {
		start := len(d) + len(`"content":`)
		d = jsonstr.AppendString(append(d, `"content":`...), ev.text)
		end := len(d)
		if !s.strict {
			if st.blockKind != 't' {
				st.block++
				st.blockKind = 't'
			}
			d = strconv.AppendInt(append(d, `,"content_blocks":[{"index":`...), int64(st.block), 10)
			d = append(append(d, `,"delta":{"text":`...), d[start:end]...)
			d = append(d, "}}]"...)
		}
	}
	s.out = s.w.End(append(d, `},"logprobs":null`...), reason, nil)
	return true
}

// parseFastEvent reads an event of the common shape into ev, or reports false.
func parseFastEvent(data []byte, ev *fastEvent) bool {
	ev.candidate, ev.hasUsage = false, false
	ev.text, ev.finish = ev.text[:0], ev.finish[:0]
	ev.usage = usageMetadata{}
	ev.model, ev.id = nil, nil
	s := scan{Cursor: jsonstr.Cursor{B: data}}
	if !s.Byte('{') || s.Byte('}') {
		return false
	}
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		switch string(key) {
		case "candidates":
			if ev.candidate || !s.Byte('[') || !s.candidate(ev) || !s.Byte(']') {
				return false // no candidate, or more than one, goes through handle
			}
			ev.candidate = true
		case "usageMetadata":
			if ev.hasUsage || !s.usage(&ev.usage) {
				return false
			}
			ev.hasUsage = true
		case "modelVersion":
			if ev.model != nil {
				return false
			}
			if ev.model, ok = s.Literal(); !ok {
				return false
			}
		case "responseId":
			if ev.id != nil {
				return false
			}
			if ev.id, ok = s.Literal(); !ok {
				return false
			}
		default:
			if !s.skip(key, responseFields) {
				return false
			}
		}
		if !s.next() {
			break
		}
	}
	if s.err || jsonstr.SkipSpace(s.B, s.I) != len(s.B) {
		return false
	}
	// encoding/json writes \b and \f as such where jsonstr.AppendString writes \u0008 and \u000c.
	return bytes.IndexByte(ev.text, '\b') < 0 && bytes.IndexByte(ev.text, '\f') < 0
}

// candidate reads the one candidate: content, finishReason and an index of 0.
func (s *scan) candidate(ev *fastEvent) bool {
	if !s.Byte('{') {
		return false
	}
	if s.Byte('}') {
		return true
	}
	var content, finish, index bool
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		switch string(key) {
		case "content":
			if content || !s.content(ev) {
				return false
			}
			content = true
		case "finishReason":
			q, ok := s.Literal()
			if !ok || finish {
				return false
			}
			if ev.finish, ok = jsonstr.AppendUnquoteBytes(ev.finish[:0], q); !ok {
				return false
			}
			finish = true
		case "index":
			n, ok := s.int()
			if !ok || index || n != 0 {
				return false // another index is another choice: handle's
			}
			index = true
		default:
			if !s.skip(key, candidateFields) {
				return false
			}
		}
		if !s.next() {
			return !s.err
		}
	}
}

// content reads a candidate's content: its role and its text parts.
func (s *scan) content(ev *fastEvent) bool {
	if !s.Byte('{') {
		return false
	}
	if s.Byte('}') {
		return true
	}
	var role, parts bool
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		switch string(key) {
		case "role":
			if _, ok := s.Literal(); !ok || role {
				return false
			}
			role = true
		case "parts":
			if parts || !s.parts(ev) {
				return false
			}
			parts = true
		default:
			if !s.skip(key, contentFields) {
				return false
			}
		}
		if !s.next() {
			return !s.err
		}
	}
}

// parts reads the parts array, appending each part's text to ev.text.
func (s *scan) parts(ev *fastEvent) bool {
	if !s.Byte('[') {
		return false
	}
	if s.Byte(']') {
		return true
	}
	for {
		if !s.part(ev) {
			return false
		}
		if s.Byte(',') {
			continue
		}
		return s.Byte(']')
	}
}

// part reads a text part; a thought or a function call declines.
func (s *scan) part(ev *fastEvent) bool {
	if !s.Byte('{') {
		return false
	}
	if s.Byte('}') {
		return true
	}
	var text, thought, signature bool
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		switch string(key) {
		case "text":
			q, ok := s.Literal()
			if !ok || text {
				return false
			}
			if ev.text, ok = jsonstr.AppendUnquoteBytes(ev.text, q); !ok {
				return false
			}
			text = true
		case "thought":
			if thought || !s.Word("false") {
				return false
			}
			thought = true
		case "thoughtSignature": // ignored on a text part, as parts does
			if _, ok := s.Literal(); !ok || signature {
				return false
			}
			signature = true
		default:
			if !s.skip(key, partFields) {
				return false
			}
		}
		if !s.next() {
			return !s.err
		}
	}
}

// usage reads usageMetadata's token counts.
func (s *scan) usage(u *usageMetadata) bool {
	if !s.Byte('{') {
		return false
	}
	if s.Byte('}') {
		return true
	}
	var seen [5]bool
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		field := -1
		var dst *int64
		switch string(key) {
		case "promptTokenCount":
			field, dst = 0, &u.PromptTokenCount
		case "candidatesTokenCount":
			field, dst = 1, &u.CandidatesTokenCount
		case "totalTokenCount":
			field, dst = 2, &u.TotalTokenCount
		case "cachedContentTokenCount":
			field, dst = 3, &u.CachedContentTokenCount
		case "thoughtsTokenCount":
			field, dst = 4, &u.ThoughtsTokenCount
		default:
			if !s.skip(key, usageFields) {
				return false
			}
		}
		if field >= 0 {
			n, ok := s.int()
			if !ok || seen[field] {
				return false
			}
			*dst, seen[field] = n, true
		}
		if !s.next() {
			return !s.err
		}
	}
}

// scan walks an event with jsonstr's primitives, which check strings and skipped values as encoding/json does.
type scan struct {
	jsonstr.Cursor
	err bool // next found neither ',' nor '}'
}

// next moves past the ',' after an object member (true) or the object's closing '}' (false; err when neither).
func (s *scan) next() bool {
	if s.Byte(',') {
		return true
	}
	s.err = !s.Byte('}')
	return false
}

// key reads an object key and its ':'. Only printable ASCII without escapes is taken: such a key decodes to
// itself, and its case folds as the fast path's comparisons assume.
func (s *scan) key() ([]byte, bool) {
	q, ok := s.Literal()
	if !ok || !s.Byte(':') {
		return nil, false
	}
	k := q[1 : len(q)-1]
	for _, c := range k {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
	}
	return k, true
}

// skip moves past the value of a key the fast path does not read, unless encoding/json would decode it into
// one of fields (which the fast path compared key with exactly): it reports false then, or when the value is
// not valid JSON.
func (s *scan) skip(key []byte, fields []string) bool {
	for _, f := range fields {
		if foldEqual(key, f) {
			return false
		}
	}
	end, err := jsonstr.ScanValue(s.B, jsonstr.SkipSpace(s.B, s.I), 1)
	if err != nil {
		return false
	}
	s.I = end
	return true
}

// int reads a non-negative integer without a leading zero, of at most 18 digits (so that it fits an int64).
func (s *scan) int() (int64, bool) {
	s.I = jsonstr.SkipSpace(s.B, s.I)
	start := s.I
	var n int64
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		n = n*10 + int64(s.B[s.I]-'0')
		s.I++
	}
	digits := s.I - start
	if digits == 0 || digits > 18 || digits > 1 && s.B[start] == '0' {
		return 0, false
	}
	if s.I < len(s.B) {
		switch s.B[s.I] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return n, true
}

// foldEqual reports whether the ASCII key equals field without regard to case.
func foldEqual(key []byte, field string) bool {
	if len(key) != len(field) {
		return false
	}
	for i := range key {
		if lower(key[i]) != lower(field[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
