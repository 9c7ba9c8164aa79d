package gemini

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// translate runs upstream through the stream translator, with the fast path or (slow) with encoding/json alone.
func translate(t testing.TB, upstream []byte, strict, slow bool) (out, errText string) {
	t.Helper()
	pin(t)
	r := Stream(io.NopCloser(bytes.NewReader(upstream)), streamModel, strict).(*streamReader)
	r.slow = slow
	b, err := io.ReadAll(r)
	if err != nil {
		errText = err.Error()
	}
	return string(b), errText
}

// sameTranslation fails unless the fast path and encoding/json translate upstream to the same bytes and error,
// which it returns.
func sameTranslation(t testing.TB, upstream []byte, strict bool) (errText string) {
	t.Helper()
	fast, fastErr := translate(t, upstream, strict, false)
	slow, slowErr := translate(t, upstream, strict, true)
	if fast != slow || fastErr != slowErr {
		t.Fatalf("strict %v: the fast path differs from encoding/json\nupstream: %q\nfast: %q (err %q)\nslow: %q (err %q)",
			strict, upstream, fast, fastErr, slow, slowErr)
	}
	return slowErr
}

func TestStreamFastPathMatchesRecordedStreams(t *testing.T) {
	files, err := filepath.Glob("testdata/stream/*.sse")
	if err != nil {
		t.Fatal(err)
	}
	odd := []string{
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\ndata: {\"error\":{\"code\":503,\"message\":\"busy\",\"status\":\"UNAVAILABLE\"}}\n\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n", // ends before finishing
		"data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":3,\"totalTokenCount\":3}}\r\n\r\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}},{\"index\":1,\"content\":{\"parts\":[{\"text\":\"b\"}]}}]}\n\ndata: {\"candidates\":[{\"finishReason\":\"STOP\"},{\"index\":1,\"finishReason\":\"STOP\"}]}\n\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"" + strings.Repeat("x", 100000) + "\"}]},\"finishReason\":\"STOP\"}]}\n\n",
		": keepalive\ndata: {\"candidates\":[{\"content\":\ndata: {\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}\n\n",
	}
	var streams [][]byte
	for _, name := range files {
		if !strings.Contains(name, ".openai") {
			streams = append(streams, readFile(t, name))
		}
	}
	for _, s := range odd {
		streams = append(streams, []byte(s))
	}
	for _, upstream := range streams {
		for _, strict := range []bool{false, true} {
			sameTranslation(t, upstream, strict)
		}
	}
}

// TestStreamFastPathMatchesGeneratedStreams translates generated streams of events both ways: text in every
// escape and encoding, several parts, unknown fields, finish reasons, usage, key orders and spacing, and the
// shapes the fast path must leave to encoding/json.
func TestStreamFastPathMatchesGeneratedStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 3))
	events, taken := 0, 0 // in the streams translated to the end
	var ev fastEvent
	for range 500 {
		var upstream bytes.Buffer
		n, fast := 1+rng.IntN(4), 0
		for range n {
			data := generatedEvent(rng)
			if parseFastEvent([]byte(data), &ev) {
				fast++
			}
			upstream.WriteString("data: " + strings.ReplaceAll(data, "\n", "\ndata: ") + "\r\n\r\n")
		}
		errs := ""
		for _, strict := range []bool{false, true} {
			errs += sameTranslation(t, upstream.Bytes(), strict)
		}
		if errs == "" || strings.Contains(errs, errTruncated.Error()) {
			events, taken = events+n, taken+fast
		}
	}
	if taken < events/3 || taken == events {
		t.Errorf("the fast path took %d of %d events of the streams translated to the end: the test no longer exercises both paths", taken, events)
	}
}

// generatedEvent makes one streamGenerateContent event, mostly of the common shape.
func generatedEvent(rng *rand.Rand) string {
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	sp := func() string { return pick("", "", "", " ", "\n  ") }
	object := func(members []string) string {
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		return "{" + sp() + strings.Join(members, ","+sp()) + sp() + "}"
	}
	member := func(key, value string) string { return `"` + key + `":` + sp() + value }
	text := func() string {
		return `"` + pick("Hello", "", "a\\\"b\\\\c\\/\\n\\t\\r", `\u00e9\ud83d\ude00`, "é 漢字 🎉", "<b>&amp;</b>", "\u2028\u2029",
			`\u2028`, `\ud800x`, "\xff\xfe", `\b\f`, `\u0001\u001f`, "\x7f", `\u0041`, strings.Repeat("word ", 40)) + `"`
	}
	var parts []string
	for range rng.IntN(4) {
		p := []string{member("text", text())}
		switch rng.IntN(30) {
		case 0:
			p = append(p, member("thoughtSignature", `"c2lnMQ=="`))
		case 1:
			p = append(p, member("thought", "false"))
		case 2:
			p = append(p, member("thought", "true")) // a thought: encoding/json's
		case 3:
			p = []string{member("functionCall", `{"name":"f","args":{"a":1}}`)}
		case 4:
			p = append(p, member("executableCode", `{"language":"PYTHON","code":"print(1)"}`))
		case 5:
			p = []string{member("Text", text())} // encoding/json matches keys without regard to case
		case 6:
			p = append(p, member("text", `"again"`)) // a duplicate key
		}
		parts = append(parts, object(p))
	}
	var cand []string
	if rng.IntN(8) != 0 {
		content := []string{member("parts", "["+strings.Join(parts, ","+sp())+"]")}
		if rng.IntN(3) != 0 {
			content = append(content, member("role", `"model"`))
		}
		cand = append(cand, member("content", object(content)))
	}
	switch rng.IntN(10) {
	case 0:
		cand = append(cand, member("finishReason", `"STOP"`))
	case 1:
		cand = append(cand, member("finishReason", pick(`"MAX_TOKENS"`, `"SAFETY"`, `"OTHER"`, `"ST\u004fP"`, `""`)))
	case 2:
		cand = append(cand, member("finishReason", "null"))
	}
	switch rng.IntN(8) {
	case 0, 1, 2:
		cand = append(cand, member("index", "0"))
	case 3:
		cand = append(cand, member("index", pick("1", "0.0", "-0", "00")))
	}
	if rng.IntN(4) == 0 {
		cand = append(cand, member("safetyRatings", `[{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"NEGLIGIBLE"}]`))
	}
	if rng.IntN(20) == 0 {
		cand = append(cand, member("logprobsResult", `{"chosenCandidates":[{"token":"a","logProbability":-0.5}]}`))
	}
	var top []string
	switch rng.IntN(12) {
	case 0: // no candidates
	case 1:
		top = append(top, member("candidates", "["+object(cand)+","+`{"index":1,"content":{"parts":[{"text":"b"}]}}`+"]"))
	case 2:
		top = append(top, member("Candidates", "["+object(cand)+"]"))
	default:
		top = append(top, member("candidates", "["+object(cand)+"]"))
	}
	if rng.IntN(2) == 0 {
		var u []string
		for _, k := range []string{"promptTokenCount", "candidatesTokenCount", "totalTokenCount", "cachedContentTokenCount", "thoughtsTokenCount"} {
			if rng.IntN(2) == 0 {
				u = append(u, member(k, pick("0", "7", "12", "4000000000", "1.0", "-3", "1e2")))
			}
		}
		if rng.IntN(3) == 0 {
			u = append(u, member("promptTokensDetails", `[{"modality":"TEXT","tokenCount":8}]`))
		}
		top = append(top, member("usageMetadata", object(u)))
	}
	if rng.IntN(2) == 0 {
		top = append(top, member("modelVersion", pick(`"gemini-2.5-flash"`, `"gemini-\u00e9"`, `""`)))
	}
	if rng.IntN(2) == 0 {
		top = append(top, member("responseId", `"r`+fmt.Sprint(rng.IntN(9))+`"`))
	}
	if rng.IntN(10) == 0 {
		top = append(top, member("createTime", `"2025-01-01T00:00:00Z"`))
	}
	if rng.IntN(40) == 0 {
		top = append(top, member("promptFeedback", `{"blockReason":"SAFETY"}`))
	}
	if len(top) == 0 {
		return "{}"
	}
	return object(top)
}

func TestParseFastEvent(t *testing.T) {
	tests := []struct {
		name, in     string
		ok           bool
		text, finish string
	}{
		{"text", `{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash","responseId":"s1"}`, true, "Hel", ""},
		{"Gemini API spacing", "{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"a\\nb\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0,\"safetyRatings\": [{\"category\": \"HARM_CATEGORY_HARASSMENT\",\"probability\": \"NEGLIGIBLE\"}]}],\"usageMetadata\": {\"promptTokenCount\": 8,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 8}]}}", true, "a\nb", "STOP"},
		{"parts joined", `{"candidates":[{"content":{"parts":[{"text":"a"},{"text":""},{"text":"\u00e9\ud83d\ude00","thoughtSignature":"c2ln"}]}}]}`, true, "aé😀", ""},
		{"no candidates", `{"usageMetadata":{"promptTokenCount":5}}`, true, "", ""},
		{"empty candidate", `{"candidates":[{}]}`, true, "", ""},
		{"thought", `{"candidates":[{"content":{"parts":[{"text":"hmm","thought":true}]}}]}`, false, "", ""},
		{"function call", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]}}]}`, false, "", ""},
		{"two candidates", `{"candidates":[{"content":{"parts":[{"text":"a"}]}},{"index":1}]}`, false, "", ""},
		{"no candidate", `{"candidates":[]}`, false, "", ""},
		{"another index", `{"candidates":[{"index":1,"content":{"parts":[{"text":"a"}]}}]}`, false, "", ""},
		{"error", `{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}`, false, "", ""},
		{"prompt feedback", `{"promptFeedback":{"blockReason":"SAFETY"}}`, false, "", ""},
		{"logprobs", `{"candidates":[{"logprobsResult":{},"content":{"parts":[{"text":"a"}]}}]}`, false, "", ""},
		{"key in another case", `{"candidates":[{"content":{"Parts":[{"text":"a"}]}}]}`, false, "", ""},
		{"escaped key", `{"candidates":[{"content":{"p\u0061rts":[{"text":"a"}]}}]}`, false, "", ""},
		{"duplicate key", `{"candidates":[{"content":{"parts":[{"text":"a","text":"b"}]}}]}`, false, "", ""},
		{"null", `{"candidates":[{"finishReason":null}]}`, false, "", ""},
		{"float count", `{"usageMetadata":{"promptTokenCount":5.0}}`, false, "", ""},
		{"backspace", `{"candidates":[{"content":{"parts":[{"text":"a\bb"}]}}]}`, false, "", ""},
		{"bad skipped value", `{"candidates":[{"content":{"parts":[{"text":"a"}]},"safetyRatings":[1,]}]}`, false, "", ""},
		{"trailing garbage", `{"candidates":[{"content":{"parts":[{"text":"a"}]}}]} x`, false, "", ""},
		{"unterminated", `{"candidates":[{"content":{"parts":[{"text":"a"}]}}]`, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ev fastEvent
			ok := parseFastEvent([]byte(tc.in), &ev)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (string(ev.text) != tc.text || string(ev.finish) != tc.finish) {
				t.Errorf("text %q finish %q, want %q %q", ev.text, ev.finish, tc.text, tc.finish)
			}
		})
	}
}

// TestStreamFastPathAllocates checks that a text event costs no allocation: a stream of 110 events allocates
// what one of 10 does.
func TestStreamFastPathAllocates(t *testing.T) {
	slack := 0.0
	if raceEnabled { // sync.Pool drops items at random under the race detector: a stream may allocate a few more
		slack = 3
	}
	stream := func(events int) []byte {
		var b bytes.Buffer
		for range events - 1 {
			b.WriteString(`data: {"candidates":[{"content":{"parts":[{"text":"Some \"words\" of the answer, "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"abc"}` + "\r\n\r\n")
		}
		b.WriteString(`data: {"candidates":[{"content":{"parts":[{"text":"end."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":400,"totalTokenCount":412},"modelVersion":"gemini-2.5-flash","responseId":"abc"}` + "\r\n\r\n")
		return b.Bytes()
	}
	short, long := stream(10), stream(110)
	for _, strict := range []bool{false, true} {
		allocs := func(upstream []byte) float64 {
			return testing.AllocsPerRun(20, func() {
				if _, err := io.Copy(io.Discard, Stream(io.NopCloser(bytes.NewReader(upstream)), streamModel, strict)); err != nil {
					t.Fatal(err)
				}
			})
		}
		if a, b := allocs(short), allocs(long); b > a+slack {
			t.Errorf("strict %v: 100 more text events cost %v allocations (%v for 10 events, %v for 110)", strict, b-a, a, b)
		}
	}
}

// FuzzStreamFastPath: on any upstream stream the fast path either declines every event or writes what
// encoding/json's path writes, byte for byte. Seeds: testdata/fuzz/FuzzStreamFastPath and testdata/stream.
func FuzzStreamFastPath(f *testing.F) {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, name := range files {
		if !strings.Contains(name, ".openai") {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, false)
			f.Add(b, true)
		}
	}
	f.Fuzz(func(t *testing.T, upstream []byte, strict bool) {
		sameTranslation(t, upstream, strict)
	})
}
