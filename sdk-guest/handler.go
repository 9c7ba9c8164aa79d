package sdk

import (
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

var (
	checkHandler     func(Input) Result
	conditionHandler func(Input) bool
)

// HandleCheck registers fn as the plugin's check: guardrail, hook check or transformer (a check that returns a
// transformed text). Call it in an init function (in a -buildmode=c-shared module main is never run). It panics
// if fn is nil or a check handler is already registered.
func HandleCheck(fn func(in Input) Result) {
	if fn == nil {
		panic("sdk: HandleCheck(nil)")
	}
	if checkHandler != nil {
		panic("sdk: HandleCheck called twice")
	}
	checkHandler = fn
}

// HandleCondition registers fn as the plugin's routing condition: it reports whether the request matches. Call
// it in an init function. A plugin may register both a check and a condition. It panics if fn is nil or a
// condition handler is already registered.
func HandleCondition(fn func(in Input) bool) {
	if fn == nil {
		panic("sdk: HandleCondition(nil)")
	}
	if conditionHandler != nil {
		panic("sdk: HandleCondition called twice")
	}
	conditionHandler = fn
}

// State kept between calls so that a call allocates little: the decoded input's slices, the data and output
// buffers. A wasm instance runs one call at a time; mu serialises native callers of Run.
var (
	mu      sync.Mutex
	scratch hostapi.Input
	dataBuf []byte
	outBuf  []byte
)

// call runs the handler for kind on the encoded input b and returns the encoded Output, which stays valid until
// the next call. It never panics: a panic in the handler becomes an Output with Error set.
func call(kind hostapi.Kind, b []byte) []byte {
	out := dispatch(kind, b)
	outBuf = hostapi.AppendOutput(outBuf[:0], &out)
	return outBuf
}

func dispatch(kind hostapi.Kind, b []byte) (out hostapi.Output) {
	if err := hostapi.DecodeInput(b, &scratch); err != nil {
		return errorOutput("sdk: " + err.Error())
	}
	in := NewInput(&scratch)
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
	switch kind {
	case hostapi.KindCheck:
		if checkHandler == nil {
			return errorOutput("sdk: the plugin registers no check (call sdk.HandleCheck in init)")
		}
		return resultOutput(checkHandler(in))
	case hostapi.KindCondition:
		if conditionHandler == nil {
			return errorOutput("sdk: the plugin registers no condition (call sdk.HandleCondition in init)")
		}
		out = hostapi.NewOutput()
		out.Match = conditionHandler(in)
		return out
	}
	return errorOutput("sdk: unknown call kind " + strconv.Itoa(int(kind)))
}

func errorOutput(msg string) hostapi.Output {
	out := hostapi.NewOutput()
	out.Error = msg
	return out
}

func resultOutput(r Result) hostapi.Output {
	out := hostapi.Output{Verdict: r.Pass}
	if r.Data != nil {
		var err error
		if dataBuf, err = appendObject(dataBuf[:0], r.Data, ""); err != nil {
			return errorOutput("sdk: encode Result.Data: " + err.Error())
		}
		out.Data = dataBuf
	}
	if r.TransformedText != nil {
		out.SetTransformedText(*r.TransformedText)
	}
	if r.Err != nil {
		out.Error = r.Err.Error()
		if out.Error == "" {
			out.Error = "error"
		}
	}
	return out
}

func panicString(r any) string {
	switch v := r.(type) {
	case error:
		return v.Error()
	case string:
		return v
	case interface{ String() string }:
		return v.String()
	case int:
		return strconv.Itoa(v)
	}
	return "(a value of a type that does not print)"
}

// Run runs the registered handler for kind on in exactly as gateway_call does — encoding in, decoding it,
// calling the handler with panics recovered, encoding the Output — and returns the Output decoded. It is for
// native tests of a plugin; it is safe for concurrent use (calls are serialised).
func Run(kind Kind, in *WireInput) WireOutput {
	mu.Lock()
	defer mu.Unlock()
	enc := call(kind, hostapi.AppendInput(nil, in))
	var out hostapi.Output
	if err := hostapi.DecodeOutput(enc, &out); err != nil {
		return errorOutput("sdk: " + err.Error()) // unreachable: AppendOutput's encoding decodes
	}
	return out
}
