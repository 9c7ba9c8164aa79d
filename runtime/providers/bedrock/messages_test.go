package bedrock

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func messagesTarget() *providers.Target {
	return &providers.Target{Provider: ID, BaseURL: "http://127.0.0.1:1", Header: func(string) string { return "" },
		Fields: map[string]json.RawMessage{fieldAccessKeyID: json.RawMessage(`"AKIDEXAMPLE"`),
			fieldSecretAccessKey: json.RawMessage(`"secret"`), fieldRegion: json.RawMessage(`"us-east-1"`)}}
}

func TestNativeMessagesRequest(t *testing.T) {
	a := testAdapter()
	if !a.NativeMessages(nil, testModel) || !a.NativeMessages(nil, "us.anthropic.claude-sonnet-4-5-20250929-v1:0") || a.NativeMessages(nil, "amazon.nova-pro-v1:0") {
		t.Fatal("NativeMessages must hold for Claude models only")
	}
	body := `{"model":"` + testModel + `","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}],"system":"Be brief"}`
	tests := []struct {
		name, path, accept string
		stream             bool
	}{
		{"whole", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke", mimeJSON, false},
		{"stream", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke-with-response-stream", mimeEventStream, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := a.NewRequest(context.Background(), messagesTarget(), &providers.Call{Endpoint: providers.Messages, Body: []byte(body), Stream: tc.stream})
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.EscapedPath() != tc.path || req.Header.Get("Accept") != tc.accept {
				t.Errorf("request %s accept %q", req.URL.EscapedPath(), req.Header.Get("Accept"))
			}
			if !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
				t.Errorf("not signed: %q", req.Header.Get("Authorization"))
			}
			sent, _ := io.ReadAll(req.Body)
			jsonEqual(t, sent, []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Hi"}],"system":"Be brief"}`))
		})
	}
	_, err := a.NewRequest(context.Background(), messagesTarget(), &providers.Call{Endpoint: providers.Messages, Body: []byte(`{"model":"amazon.nova-pro-v1:0","messages":[]}`)})
	if err == nil || !strings.Contains(err.Error(), "Claude models only") {
		t.Errorf("a non-Claude model natively: %v", err)
	}
}

// chunkFrame is an InvokeModelWithResponseStream frame carrying one Anthropic event.
func chunkFrame(event string) []byte {
	return eventFrame("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(event))+`"}`)
}

func TestMessagesStream(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","usage":{"input_tokens":9,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		"{\"type\":\"content_block_delta\",\n\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\\n\"}}",
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":9,"outputTokenCount":3}}`,
	}
	var frames [][]byte
	for _, ev := range events {
		frames = append(frames, chunkFrame(ev))
	}
	rc := testAdapter().MessagesStream(messagesTarget(), &providers.Call{Endpoint: providers.Messages, Stream: true}, io.NopCloser(bytes.NewReader(bytes.Join(frames, nil))))
	out, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	want := "event: message_start\ndata: " + events[0] + "\n\n" +
		"event: content_block_start\ndata: " + events[1] + "\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\", \"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\\n\"}}\n\n" +
		"event: content_block_stop\ndata: " + events[3] + "\n\n" +
		"event: message_delta\ndata: " + events[4] + "\n\n" +
		"event: message_stop\ndata: " + events[5] + "\n\n"
	if string(out) != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", out, want)
	}

	// An exception mid-stream ends it with an error, after the events before it.
	broken := append(chunkFrame(events[0]), buildFrame([]header{strHeader(":message-type", "exception"),
		strHeader(":exception-type", "throttlingException")}, []byte(`{"message":"slow down"}`))...)
	rc = testAdapter().MessagesStream(nil, nil, io.NopCloser(bytes.NewReader(broken)))
	out, err = io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "throttlingException: slow down") || !strings.HasPrefix(string(out), "event: message_start\n") {
		t.Fatalf("exception: %q, %v", out, err)
	}
	// A chunk whose bytes are not an Anthropic event is a broken stream.
	rc = testAdapter().MessagesStream(nil, nil, io.NopCloser(bytes.NewReader(chunkFrame(`[1]`))))
	if _, err := io.ReadAll(rc); err == nil {
		t.Fatal("a chunk without an event type passed")
	}
}
