package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the gateway's spans. The GenAI and HTTP ones are OpenTelemetry's semantic conventions
// (semconv v1.40.0); gen_ai.system, which those conventions renamed gen_ai.provider.name, is set beside it
// for back ends that still read the old name. The gateway.* keys are the gateway's own.
const (
	KeyOperation    = semconv.GenAIOperationNameKey    // "chat", "text_completion", "embeddings", "responses"
	KeyProvider     = semconv.GenAIProviderNameKey     // the provider's identifier ("openai")
	KeySystem       = attribute.Key("gen_ai.system")   // the same, by its former name
	KeyRequestModel = semconv.GenAIRequestModelKey     // the model the caller asked for
	KeyModel        = semconv.GenAIResponseModelKey    // the model that answered, when the answer says
	KeyInputTokens  = semconv.GenAIUsageInputTokensKey // of a whole answer
	KeyOutputTokens = semconv.GenAIUsageOutputTokensKey
	KeyStatusCode   = semconv.HTTPResponseStatusCodeKey
	KeyServer       = semconv.ServerAddressKey // the upstream's host
	KeyMethod       = semconv.HTTPRequestMethodKey
	KeyRoute        = semconv.HTTPRouteKey

	KeyTraceID     = attribute.Key("gateway.trace_id") // the x-gateway-trace-id of the request
	KeyEndpoint    = attribute.Key("gateway.endpoint") // "chat/completions", "completions", "embeddings", "responses"
	KeyCacheStatus = attribute.Key("gateway.cache_status")
	KeyRetries     = attribute.Key("gateway.retries")     // retries on the target that answered
	KeyTarget      = attribute.Key("gateway.target")      // the answering target's option path
	KeyHookStage   = attribute.Key("gateway.hook.stage")  // "before" or "after"
	KeyHookItems   = attribute.Key("gateway.hook.items")  // synchronous hooks and guardrails that ran
	KeyHookFailed  = attribute.Key("gateway.hook.failed") // some check failed
	KeyHookDenied  = attribute.Key("gateway.hook.denied") // the stage denied the request (446)
	KeyPlugin      = attribute.Key("gateway.plugin.id")
	KeyPluginKind  = attribute.Key("gateway.plugin.kind") // "check" or "condition"
)

// Operation is the gen_ai.operation.name of an endpoint path ("/chat/completions" → "chat"); a path it does
// not know is named by itself, without its slash.
func Operation(path string) string {
	switch path {
	case "/chat/completions":
		return semconv.GenAIOperationNameChat.Value.AsString()
	case "/completions":
		return semconv.GenAIOperationNameTextCompletion.Value.AsString()
	case "/embeddings":
		return semconv.GenAIOperationNameEmbeddings.Value.AsString()
	case "/responses":
		return "responses"
	}
	if len(path) > 0 && path[0] == '/' {
		return path[1:]
	}
	return path
}

// Provider returns the attributes naming the provider p: gen_ai.provider.name and gen_ai.system.
func Provider(p string) [2]attribute.KeyValue {
	return [2]attribute.KeyValue{KeyProvider.String(p), KeySystem.String(p)}
}

// SetProvider sets Provider(p) on span; an empty p sets nothing.
func SetProvider(span trace.Span, p string) {
	if p == "" {
		return
	}
	a := Provider(p)
	span.SetAttributes(a[:]...)
}

// SetUsage sets the token usage of a whole answer.
func SetUsage(span trace.Span, input, output int64) {
	span.SetAttributes(KeyInputTokens.Int64(input), KeyOutputTokens.Int64(output))
}

// SetStatus sets the HTTP status an answer had and marks the span failed when it is a 5xx (a 4xx is the
// caller's or the provider's refusal, not a failure of the span's operation; OpenTelemetry's HTTP conventions
// leave a client span's 4xx unset too, but for the gateway a provider's 4xx is an answer it passes on).
func SetStatus(span trace.Span, status int) {
	span.SetAttributes(KeyStatusCode.Int(status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
}

// SetError records err on span and marks it failed.
func SetError(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
