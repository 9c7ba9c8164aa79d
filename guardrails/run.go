package guardrails

import (
	"context"
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
func (s *Set) Run(ctx context.Context, stage Stage, in *hostapi.Input, req hostapi.RequestView) Outcome {
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
	for _, it := range items {
		if it.async {
			out.Async = append(out.Async, asyncRun(it, &s.policy, stage, in, req))
			continue
		}
		if out.Results == nil {
			out.Results = make([]HookResult, 0, len(items))
		}
		res, text, transformed := it.run(ctx, &s.policy, stage, cur, req)
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
	return res, text, transformed
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
