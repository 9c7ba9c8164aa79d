package routes

import "testing"

// BenchmarkResponsesGateway is a non-streamed, stored response through the whole gateway to a loopback
// upstream: natively (OpenAI) and translated (Anthropic Messages), each with the synced store of the answer.
func BenchmarkResponsesGateway(b *testing.B) {
	for _, tc := range []struct {
		name, provider, model, answer string
	}{
		{"native", "openai", "gpt-4o-mini", nativeResponse},
		{"translated", "anthropic", "claude-sonnet-4-5", anthropicAnswer(1)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f := newFixture(b, Options{})
			up := benchUpstreamAnswering(b, tc.answer)
			f.storeProvider(b, "p", tc.provider, up.URL+"/v1")
			runPost(b, f.srv.Handler().Handler(), "/v1/responses", `{"model":"`+tc.model+`","input":"Hello there"}`,
				HeaderAPIKey, f.plain, HeaderVirtualKey, "p")
		})
	}
}
