package guardrails

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/llmgw/gateway/hostapi"
)

// ErrorPolicy says how a Set treats checks that error (or panic, or outlive the request's context).
type ErrorPolicy struct {
	// Fail makes a check that errors count as failed when its parameters carry no "failOnError". The default,
	// false, lets it pass, as Portkey does. A check's own failOnError always wins.
	Fail bool
	// Report, when not nil, is called once for each check that errored, after its item ran, on the goroutine
	// that ran the item (Run's, or an async closure's). req is the RequestView given to Run, so that the caller
	// can tell which request it was. It must be safe for concurrent use and should not block.
	Report func(req hostapi.RequestView, e CheckError)
}

// CheckError is one check that errored, for ErrorPolicy.Report.
type CheckError struct {
	Stage   Stage
	HookID  string
	CheckID string // the full id, e.g. "default.webhook" or "pii.detect"
	Plugin  string // the plugin of a wasm check ("pii"); "" for a built-in
	Async   bool
	Err     string // the error as hook_results shows it
	Failed  bool   // whether it counted as failed (its failOnError, or ErrorPolicy.Fail)
}

// WithErrorPolicy returns a Set that runs s's items under p; s itself is unchanged, and the two share their
// compiled checks. Without it a Set lets erroring checks pass (but for failOnError) and reports nothing.
func (s *Set) WithErrorPolicy(p ErrorPolicy) *Set {
	if s == nil {
		return nil
	}
	cp := *s
	cp.policy = p
	return &cp
}

// Run evaluates the before side (before_request_hooks + input_guardrails) or the after side
// (after_request_hooks + output_guardrails) on in, which Run and the checks never modify.
//
// Synchronous items run one after another in config order, so a transformed text flows into the items after it;
// the checks of one item run in parallel (the native built-ins inline, since they never block), except that a
// transformer runs alone, on the text the checks before it left, so transformers apply in order. An item passes
// when all its checks pass; a check that errors passes unless its parameters say "failOnError": true, or carry
// no failOnError and the Set's ErrorPolicy says Fail; each one is reported to ErrorPolicy.Report. Async
// items are returned as closures in Outcome.Async and not run. A nil Set gives the zero Outcome. Run is safe for
// concurrent use.
//
// Run gives mutator hooks no body: their checks error. Callers whose set Mutates call RunBody.
func (s *Set) Run(ctx context.Context, stage Stage, in *hostapi.Input, req hostapi.RequestView) Outcome {
	return s.RunBody(ctx, stage, in, req, nil)
}

// Body is what mutator hooks rewrite: the request (StageBefore) or the answer (StageAfter), and the caller's
// rules for a replacement.
type Body struct {
	// JSON is the body, one JSON object in OpenAI's shape. Nil: mutators cannot run here, and each of their
	// checks errors with Refusal.
	JSON []byte
	// Refusal says why there is no body ("mutators do not run on streamed answers").
	Refusal string
	// Validate judges a replacement before it is taken; its error, which names the field, makes the check
	// error (its failOnError decides). Nil takes any JSON object.
	Validate func(body []byte) error
	// Text is what the checks of the items after a mutator see of the body it left. Nil: the text they would
	// have seen without it.
	Text func(body []byte) string
	// ReplaceText writes a text that items before a mutator transformed into the body, so that the mutator sees
	// it. Nil: the mutator sees the body without it, and the text is left in Outcome.Transformed.
	ReplaceText func(body []byte, text string) ([]byte, error)
}

// RunBody is Run with the body that mutator hooks rewrite (b; nil as for Run). Mutator hooks run in config
// order with the other items, each of their checks alone and in order on the body the one before left, through
// BodyTransformer. A replacement larger than twice the body it was given, or that b.Validate refuses, is a
// check error and the body stays as it was. The body after the mutators is Outcome.Body when one changed it;
// a text transformed before a mutator is written into the body first (b.ReplaceText), so Outcome.Transformed
// is then only what items after the last mutator transformed.
func (s *Set) RunBody(ctx context.Context, stage Stage, in *hostapi.Input, req hostapi.RequestView, b *Body) Outcome {
	var out Outcome
	if s == nil {
		return out
	}
	items := s.before
	if stage == StageAfter {
		items = s.after
	}
	if len(items) == 0 {
		return out
	}
	cur := in
	var body []byte
	if b != nil {
		body = b.JSON
	}
	for _, it := range items {
		if it.async {
			out.Async = append(out.Async, asyncRun(it, &s.policy, stage, in, req))
			continue
		}
		if out.Results == nil {
			out.Results = make([]HookResult, 0, len(items))
		}
		var res HookResult
		var text string
		var transformed bool
		if it.mutator {
			if out.Transformed != nil && body != nil && b.ReplaceText != nil {
				if folded, err := b.ReplaceText(body, *out.Transformed); err == nil {
					body, out.Body, out.Transformed = folded, folded, nil
				}
			}
			var changed bool
			res, body, changed = it.mutate(ctx, &s.policy, stage, cur, req, b, body)
			if changed {
				out.Body = body
				if b.Text != nil {
					if cur == in {
						cp := *in
						cur = &cp
					}
					cur.Text = b.Text(body)
				}
			}
		} else {
			res, text, transformed = it.run(ctx, &s.policy, stage, cur, req)
		}
		if transformed {
			if cur == in {
				cp := *in
				cur = &cp
			}
			cur.Text = text
			t := text
			out.Transformed = &t
		}
		if res.Deny {
			out.Deny = true
		}
		if !res.Verdict {
			out.Failed = true
		}
		fb := it.onFail
		if res.Verdict {
			fb = it.onSuccess
		}
		if fb != nil {
			out.Feedback = append(out.Feedback, Feedback{HookID: it.id, Verdict: res.Verdict, Value: fb.Value,
				Weight: fb.Weight, Metadata: fb.Metadata})
		}
		out.Results = append(out.Results, res)
	}
	return out
}

// asyncRun returns a closure that evaluates it on a copy of in.
func asyncRun(it *item, p *ErrorPolicy, stage Stage, in *hostapi.Input, req hostapi.RequestView) func(context.Context) HookResult {
	cp := *in
	cp.Metadata = slices.Clone(in.Metadata)
	cp.Params = slices.Clone(in.Params)
	return func(ctx context.Context) HookResult {
		res, _, _ := it.run(ctx, p, stage, &cp, req)
		return res
	}
}

// run evaluates one item; it returns its result and, when a check transformed it, the new text.
func (it *item) run(ctx context.Context, p *ErrorPolicy, stage Stage, in *hostapi.Input, req hostapi.RequestView) (HookResult, string, bool) {
	start := time.Now()
	res := HookResult{ID: it.id, Verdict: true, Async: it.async, Type: it.typ,
		Checks: make([]CheckResult, len(it.checks))}
	text, transformed := in.Text, false
	cur := in
	i := 0
	for _, g := range it.groups {
		if len(g) == 1 || it.allInline {
			for _, cc := range g {
				if t, ok := runCheck(ctx, cc, p.Fail, cur, req, &res.Checks[i]); ok {
					text, transformed = t, true
				}
				i++
			}
		} else {
			texts := make([]string, len(g))
			oks := make([]bool, len(g))
			var wg sync.WaitGroup
			for j, cc := range g {
				if cc.inline {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					texts[j], oks[j] = runCheck(ctx, cc, p.Fail, cur, req, &res.Checks[i+j])
				}()
			}
			for j, cc := range g {
				if cc.inline {
					texts[j], oks[j] = runCheck(ctx, cc, p.Fail, cur, req, &res.Checks[i+j])
				}
			}
			wg.Wait()
			for j := range g {
				if oks[j] {
					text, transformed = texts[j], true
				}
			}
			i += len(g)
		}
		if transformed && text != cur.Text {
			if cur == in {
				cp := *in
				cur = &cp
			}
			cur.Text = text
		}
	}
	it.finish(&res, p, stage, req, start)
	return res, text, transformed
}

// finish sets an item's verdict and deny from its checks' and reports the checks that errored.
func (it *item) finish(res *HookResult, p *ErrorPolicy, stage Stage, req hostapi.RequestView, start time.Time) {
	for k := range res.Checks {
		r := &res.Checks[k]
		if !r.Verdict {
			res.Verdict = false
		}
		if r.Error != nil && p.Report != nil {
			cc := it.checks[k]
			p.Report(req, CheckError{Stage: stage, HookID: it.id, CheckID: cc.id, Plugin: cc.plugin, Async: it.async,
				Err: *r.Error, Failed: !r.Verdict})
		}
	}
	res.Deny = !res.Verdict && it.denyOnFail || res.Verdict && it.denyOnSuccess
	res.ExecutionTime = time.Since(start).Milliseconds()
}

// mutate runs a mutator hook: its checks one after another, each on the body the one before left. It returns
// the item's result and the body after it, and whether a check changed it.
func (it *item) mutate(ctx context.Context, p *ErrorPolicy, stage Stage, in *hostapi.Input, req hostapi.RequestView, b *Body, body []byte) (HookResult, []byte, bool) {
	start := time.Now()
	res := HookResult{ID: it.id, Verdict: true, Type: it.typ, Checks: make([]CheckResult, len(it.checks))}
	changed := false
	for k, cc := range it.checks {
		if nb, ok := runMutator(ctx, cc, p.Fail, in, req, b, body, &res.Checks[k]); ok {
			body, changed = nb, true
		}
	}
	it.finish(&res, p, stage, req, start)
	return res, body, changed
}

// runMutator runs one check of a mutator hook into r; it returns the new body when the check changed it.
func runMutator(ctx context.Context, cc *compiledCheck, failByDefault bool, in *hostapi.Input, req hostapi.RequestView, b *Body, body []byte, r *CheckResult) ([]byte, bool) {
	start := time.Now()
	r.ID = cc.id
	var out hostapi.Output
	var err error
	if body == nil {
		msg := "mutators do not run here"
		if b != nil && b.Refusal != "" {
			msg = b.Refusal
		}
		err = errors.New(msg)
	} else {
		call := *in
		call.Text, call.Body = "", body
		out, err = safeTransform(ctx, cc.check.(BodyTransformer), &call, req) // Compile made sure
		if err == nil && out.Error != "" {
			err = fmt.Errorf("%s", out.Error)
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err == nil && out.Body != nil {
			if len(out.Body) > 2*len(body) {
				err = fmt.Errorf("the replacement body of %d bytes is more than twice the %d bytes it replaces", len(out.Body), len(body))
			} else if b.Validate != nil {
				if verr := b.Validate(out.Body); verr != nil {
					err = fmt.Errorf("the replacement body is refused: %w", verr)
				}
			}
		}
	}
	r.Verdict = out.Verdict
	if len(out.Data) > 0 {
		r.Data = out.Data
	}
	r.ExecutionTime = time.Since(start).Milliseconds()
	if err != nil {
		msg := err.Error()
		r.Error = &msg
		fail := failByDefault
		if cc.hasFailOnError {
			fail = cc.failOnError
		}
		r.Verdict = !fail
		return nil, false
	}
	if out.Body == nil || bytes.Equal(out.Body, body) {
		return nil, false
	}
	r.Transformed = true
	return out.Body, true
}

// safeTransform turns a panicking body transformer into an error, as safeCheck does for a check.
func safeTransform(ctx context.Context, t BodyTransformer, in *hostapi.Input, req hostapi.RequestView) (out hostapi.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = hostapi.Output{}, fmt.Errorf("check panicked: %v", p)
		}
	}()
	return t.TransformBody(ctx, in, req)
}

// runCheck runs one check into r; it returns the transformed text when there is one. failByDefault is what an
// error counts as when the check's parameters carry no failOnError.
func runCheck(ctx context.Context, cc *compiledCheck, failByDefault bool, in *hostapi.Input, req hostapi.RequestView, r *CheckResult) (text string, ok bool) {
	start := time.Now()
	r.ID = cc.id
	out, err := safeCheck(ctx, cc.check, in, req)
	if err == nil && out.Error != "" {
		err = fmt.Errorf("%s", out.Error)
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	r.Verdict = out.Verdict
	if len(out.Data) > 0 {
		r.Data = out.Data
	}
	if err != nil {
		msg := err.Error()
		r.Error = &msg
		fail := failByDefault
		if cc.hasFailOnError {
			fail = cc.failOnError
		}
		r.Verdict = !fail
	} else if out.HasTransformedText {
		r.Transformed = true
		text, ok = out.TransformedText, true
	}
	r.ExecutionTime = time.Since(start).Milliseconds()
	return text, ok
}

// safeCheck turns a panicking check into an error, so that one bad check cannot take the gateway down.
func safeCheck(ctx context.Context, c Check, in *hostapi.Input, req hostapi.RequestView) (out hostapi.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = hostapi.Output{}, fmt.Errorf("check panicked: %v", p)
		}
	}()
	return c.Check(ctx, in, req)
}
