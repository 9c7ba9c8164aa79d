package bootstrap

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/storage"
)

// recordingPlane counts the writes a control.Plane reports, by operation.
type recordingPlane struct {
	*control.Plane
	calls, changed map[string]int
}

func (r *recordingPlane) note(op string) func(bool, error) (bool, error) {
	return func(changed bool, err error) (bool, error) {
		r.calls[op]++
		if changed {
			r.changed[op]++
		}
		return changed, err
	}
}

func (r *recordingPlane) UpsertAPIKey(ctx context.Context, c control.Caller, secret, name string, admin, orgAdmin bool) (bool, error) {
	return r.note("UpsertAPIKey")(r.Plane.UpsertAPIKey(ctx, c, secret, name, admin, orgAdmin))
}

func (r *recordingPlane) UpsertPolicy(ctx context.Context, c control.Caller, pol *storage.RateLimitPolicy) (bool, error) {
	return r.note("UpsertPolicy")(r.Plane.UpsertPolicy(ctx, c, pol))
}

func (r *recordingPlane) UpsertPrompt(ctx context.Context, c control.Caller, id, name string, v []storage.PromptVersion) (bool, error) {
	return r.note("UpsertPrompt")(r.Plane.UpsertPrompt(ctx, c, id, name, v))
}

func (r *recordingPlane) UpsertGuardrail(ctx context.Context, c control.Caller, id string, obj json.RawMessage) (bool, error) {
	return r.note("UpsertGuardrail")(r.Plane.UpsertGuardrail(ctx, c, id, obj))
}

func (r *recordingPlane) UpsertPlugin(ctx context.Context, c control.Caller, id string, wasm []byte) (bool, error) {
	return r.note("UpsertPlugin")(r.Plane.UpsertPlugin(ctx, c, id, wasm))
}

// The entries of the control plane's resources are written through it, and the second application of the same
// file writes nothing, through the plane or not.
func TestApplyWritesThroughThePlane(t *testing.T) {
	st := newStore(t)
	f := mustParse(t, designExample, exampleDir(t))
	want := len(f.APIKeys) + len(f.RateLimitPolicies) + len(f.Prompts) + len(f.Guardrails) + len(f.Plugins)
	for run := range 2 {
		r := &recordingPlane{Plane: control.New(st, nil, control.Options{Logger: slog.New(slog.DiscardHandler)}), calls: map[string]int{}, changed: map[string]int{}}
		res, err := ApplyThrough(t.Context(), r, st, f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, changed := 0, 0
		for op, n := range r.calls {
			got += n
			changed += r.changed[op]
		}
		if got != want {
			t.Fatalf("run %d: %d plane calls %v, want %d (one per entry)", run, got, r.calls, want)
		}
		if run == 0 && changed != want {
			t.Fatalf("first run: the plane wrote %d records, want %d", changed, want)
		}
		if run == 1 && (changed != 0 || res.Changed != 0) {
			t.Fatalf("second run wrote: plane %v, result %+v", r.changed, res)
		}
	}
}
