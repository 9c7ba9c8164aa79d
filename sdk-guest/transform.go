package sdk

import (
	"runtime/debug"
	"strconv"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// KindTransform is the kind of a transform call (gateway_transform), for RunTransform's callers that build
// WireInputs by hand.
const KindTransform = hostapi.KindTransform

// TransformInput is what a transform handler receives: the fields of a check's Input (Text is empty: the
// text is in the body) and Body, the JSON body to rewrite. For Stage "before" it is the request in OpenAI's
// shape (a chat completion, completion or embeddings request, as it is about to be sent); for Stage "after" the
// whole answer in OpenAI's shape. Body is the handler's own copy: it may keep it, change it and return it.
type TransformInput struct {
	Input
	Body []byte
}

// TransformResult is what a transform handler returns. Start from Unchanged, Replace, FailTransform or
// TransformError.
type TransformResult struct {
	// Body, when non-nil, replaces the body: one JSON object, at most twice the size of the body given. A
	// request must stay a valid request of its endpoint and keep its "stream"; the gateway refuses anything else
	// as a check error.
	Body []byte
	// Pass is the verdict: false fails the hook (which denies the request when the hook says on_fail.deny).
	Pass bool
	// Data is shown in the check's hook_results, as for a Result.
	Data map[string]any
	// Err, when non-nil, makes the call a check error (the body is left as it was).
	Err error
}

// Unchanged returns a passing TransformResult that leaves the body as it was.
func Unchanged() TransformResult { return TransformResult{Pass: true} }

// Replace returns a passing TransformResult that replaces the body with body (one JSON object).
func Replace(body []byte) TransformResult { return TransformResult{Pass: true, Body: body} }

// FailTransform returns a failing TransformResult with Data {"reason": reason}; the body is left as it was.
func FailTransform(reason string) TransformResult {
	return TransformResult{Data: map[string]any{"reason": reason}}
}

// TransformError returns a TransformResult that reports err as a check error.
func TransformError(err error) TransformResult { return TransformResult{Err: err} }

// With sets Data[key] to value, making Data if it is nil, and returns r.
func (r TransformResult) With(key string, value any) TransformResult {
	if r.Data == nil {
		r.Data = make(map[string]any, 2)
	}
	r.Data[key] = value
	return r
}

var transformHandler func(TransformInput) TransformResult

// HandleTransform registers fn as the plugin's body transformer, the checks of a mutator hook: the gateway
// calls it through gateway_transform with the request before it is sent (before_request_hooks) or the answer
// before the client gets it (after_request_hooks). Call it in an init function. A plugin may register a check,
// a condition and a transform. It panics if fn is nil or a transform handler is already registered.
//
// Every Go plugin exports gateway_transform (the SDK cannot export it only when a handler is registered); one
// without a transform handler answers a transform call with a check error that says so.
func HandleTransform(fn func(in TransformInput) TransformResult) {
	if fn == nil {
		panic("sdk: HandleTransform(nil)")
	}
	if transformHandler != nil {
		panic("sdk: HandleTransform called twice")
	}
	transformHandler = fn
}

// transform runs the transform handler on the encoded input b and returns the encoded Output, which stays
// valid until the next call. It never panics.
func transform(kind hostapi.Kind, b []byte) []byte {
	out := dispatchTransform(kind, b)
	outBuf = hostapi.AppendOutput(outBuf[:0], &out)
	return outBuf
}

func dispatchTransform(kind hostapi.Kind, b []byte) (out hostapi.Output) {
	if kind != hostapi.KindTransform {
		return errorOutput("sdk: gateway_transform called with kind " + strconv.Itoa(int(kind)))
	}
	if err := hostapi.DecodeInput(b, &scratch); err != nil {
		return errorOutput("sdk: " + err.Error())
	}
	in := TransformInput{Input: NewInput(&scratch), Body: scratch.Body}
	clear(scratch.Metadata[:cap(scratch.Metadata)]) // drop references to the input copy
	clear(scratch.Params[:cap(scratch.Params)])
	scratch = hostapi.Input{Metadata: scratch.Metadata[:0], Params: scratch.Params[:0]}

	defer func() {
		if r := recover(); r != nil {
			msg := "panic: " + panicString(r)
			Log(LevelError, msg+"\n"+string(debug.Stack()))
			out = errorOutput(msg)
		}
	}()
	if transformHandler == nil {
		return errorOutput("sdk: the plugin registers no transform, so gateway_transform has nothing to run (call sdk.HandleTransform in init)")
	}
	r := transformHandler(in)
	out = resultOutput(Result{Pass: r.Pass, Data: r.Data, Err: r.Err})
	if r.Err == nil && r.Body != nil {
		out.Body = r.Body
	}
	return out
}

// RunTransform runs the registered transform handler on in exactly as gateway_transform does (in.Body is the
// body) and returns the Output decoded: its Body is the replacement, nil when unchanged. It is for native tests
// of a plugin; it is safe for concurrent use.
func RunTransform(in *WireInput) WireOutput {
	mu.Lock()
	defer mu.Unlock()
	enc := transform(hostapi.KindTransform, hostapi.AppendInput(nil, in))
	var out hostapi.Output
	if err := hostapi.DecodeOutput(enc, &out); err != nil {
		return errorOutput("sdk: " + err.Error()) // unreachable: AppendOutput's encoding decodes
	}
	return out
}
