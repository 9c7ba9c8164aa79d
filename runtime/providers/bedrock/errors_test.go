package bedrock

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestTranslateErrorGolden(t *testing.T) {
	var cases []struct {
		Name   string          `json:"name"`
		Status int             `json:"status"`
		Body   string          `json:"body"`
		Want   json.RawMessage `json:"want"`
	}
	if err := json.Unmarshal(readTestdata(t, "errors", "cases.json"), &cases); err != nil {
		t.Fatal(err)
	}
	a := testAdapter()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			got := a.TranslateError(&providers.Target{}, &providers.Call{Endpoint: providers.ChatCompletions}, tc.Status, []byte(tc.Body))
			jsonEqual(t, got, tc.Want)
		})
	}
}

func TestTranslateErrorLongPlainBody(t *testing.T) {
	body := make([]byte, 5000)
	for i := range body {
		body[i] = 'x'
	}
	got := testAdapter().TranslateError(&providers.Target{}, &providers.Call{}, 502, append(body, 0xff))
	var e openaiError
	if err := json.Unmarshal(got, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Error.Message) > maxPlainErrorMessage+4 || e.Error.Type != "server_error" {
		t.Errorf("message of %d bytes, type %s", len(e.Error.Message), e.Error.Type)
	}
	var raw string
	if json.Unmarshal(e.Error.ProviderError, &raw) != nil || len(raw) < 5000 {
		t.Errorf("provider_error is not the whole body as a string")
	}
}
