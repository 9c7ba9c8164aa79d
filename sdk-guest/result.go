package sdk

// Result is what a check handler returns.
//
// The zero Result is a fail without data; start from Pass, Fail or Transform.
type Result struct {
	// Pass is the verdict: true lets the request (or response) through, false denies it.
	Pass bool
	// Data is shown in the check's hook_results as a JSON object. Values may be nil, strings, booleans, numbers,
	// []string, []any, []int, []float64, map[string]any (and map[string] of string, int or float64),
	// []map[string]any, RawJSON, a Marshaler (json.RawMessage and every json.Marshaler) or an error (its
	// message). Keys are written sorted. Anything else makes the call an error.
	Data map[string]any
	// TransformedText, when non-nil, replaces the checked text.
	TransformedText *string
	// Err, when non-nil, makes the call a check error (the gateway applies the check's on-error policy); its
	// message is reported.
	Err error
}

// Pass returns a passing Result.
func Pass() Result { return Result{Pass: true} }

// Fail returns a failing Result with Data {"reason": reason}.
func Fail(reason string) Result { return Result{Data: map[string]any{"reason": reason}} }

// Transform returns a passing Result that replaces the checked text with text.
func Transform(text string) Result { return Result{Pass: true, TransformedText: &text} }

// Error returns a Result that reports err as a check error.
func Error(err error) Result { return Result{Err: err} }

// With sets Data[key] to value, making Data if it is nil, and returns r. Data is a map, so results that share
// it see the change.
func (r Result) With(key string, value any) Result {
	if r.Data == nil {
		r.Data = make(map[string]any, 2)
	}
	r.Data[key] = value
	return r
}
