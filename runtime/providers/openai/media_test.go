package openai

import (
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestMediaEndpointsPerProvider(t *testing.T) {
	tests := []struct {
		provider string
		ep       providers.Endpoint
		serves   bool
	}{
		{"openai", providers.ImagesEdits, true},
		{"openai", providers.Rerank, true},
		{"groq", providers.AudioTranscriptions, true},
		{"groq", providers.ImagesGenerations, false},
		{"mistral-ai", providers.Moderations, true},
		{"together-ai", providers.Rerank, true},
		{"deepseek", providers.AudioSpeech, false},
		{"vllm", providers.AudioSpeech, false},
		{"x-ai", providers.ImagesGenerations, true},
		{"lm-studio", providers.ChatCompletions, true}, // not a media endpoint: every adapter serves it
	}
	for _, tc := range tests {
		d, ok := providers.Describe(tc.provider)
		if !ok {
			t.Fatalf("%s is not registered", tc.provider)
		}
		if got := providers.Serves(d.Adapter(), tc.ep); got != tc.serves {
			t.Errorf("%s serves %s: %v, want %v", tc.provider, tc.ep.Path(), got, tc.serves)
		}
	}
}
