package routes

import (
	"fmt"
	"testing"
)

// A text field given twice would let the checks judge one value and the provider read another (which copy a
// server reads differs: Go's and Werkzeug's forms the first, Starlette's the last). With a guardrail that
// denies a word, a prompt sent twice, the word in the first copy, once went through to the provider.
func TestMediaUploadFieldTwiceIsRefused(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, status(200, `{"created":1,"data":[]}`))
	config := fmt.Sprintf(`{"provider":"openai","api_key":"k","custom_host":%q,`+
		`"input_guardrails":[{"default.contains":{"operator":"none","words":["secret"]},"deny":true}]}`, up.URL+"/v1")
	const form = "multipart/form-data; boundary=b"
	field := func(name, value string) string {
		return "--b\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value + "\r\n"
	}
	image := "--b\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n\r\npng\r\n"
	twice := field("model", "gpt-image-1") + field("prompt", "a secret cat") + field("prompt", "a cat") + image + "--b--\r\n"
	a := f.do(t, "POST", "/v1/images/edits", twice, HeaderAPIKey, f.plain, "Content-Type", form, HeaderConfig, config)
	checkError(t, a, 400, "invalid_request", "prompt")
	if up.calls.Load() != 0 {
		t.Errorf("the upstream was called %d times", up.calls.Load())
	}
	// A field named as an array (OpenAI's timestamp_granularities[]) may repeat: that is how a form sends a list.
	list := field("model", "whisper-1") + field("timestamp_granularities[]", "word") + field("timestamp_granularities[]", "segment") +
		image + "--b--\r\n"
	if a := f.do(t, "POST", "/v1/audio/transcriptions", list, HeaderAPIKey, f.plain, "Content-Type", form, HeaderConfig, config); a.status != 200 {
		t.Errorf("a list field: %d %s", a.status, a.body)
	}
}
