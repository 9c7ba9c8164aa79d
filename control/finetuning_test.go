package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

func TestFineTuningStatus(t *testing.T) {
	for in, want := range map[string]string{"validating_files": "validating_files", "queued": "queued", "running": "running",
		"succeeded": "succeeded", "failed": "failed", "cancelled": "cancelled", "canceled": "cancelled", "pending": "queued",
		"notRunning": "queued", "created": "queued", "": "running", "paused": "running"} {
		if got := fineTuningStatus(in); got != want {
			t.Errorf("fineTuningStatus(%q) = %q, want %q", in, got, want)
		}
	}
}

// ftUpstream is a provider whose one job answers with body, whatever is asked.
func newFTPlane(t *testing.T, body string) (*fixture, *storage.FineTuningJob, *upstream.Target) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	log := slog.New(slog.DiscardHandler)
	f := newFixture(t, Options{})
	engine := runtime.New(f.store, runtime.Options{Logger: log})
	f.plane = New(f.store, nil, Options{Logger: log, Upstream: upstream.New(f.store, engine, log)})
	raw, _ := json.Marshal(srv.URL + "/v1")
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.caller.WorkspaceID, Slug: "oa", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"k"`), "custom_host": raw}}); err != nil {
		t.Fatal(err)
	}
	tg, err := f.plane.fineTuningTarget(ctx, f.caller, "oa")
	if err != nil {
		t.Fatal(err)
	}
	rec := &storage.FineTuningJob{ID: "ftjob-gw1", WorkspaceID: f.caller.WorkspaceID, VirtualKey: "oa", Provider: "openai",
		ProviderJobID: "ftjob-p1", CreatedAt: 1700000000}
	return f, rec, tg
}

// TestFineTuningView: a sparse provider answer becomes SPEC.md's whole object.
func TestFineTuningView(t *testing.T) {
	f, rec, tg := newFTPlane(t, "")
	ws, _ := f.store.Workspaces.Get(f.caller.WorkspaceID)
	tests := []struct {
		name, answer string
		check        func(t *testing.T, j *FineTuningJob)
	}{
		{"sparse and pending", `{"id":"ftjob-p1","status":"pending","model":"m","training_file":"file-p","fine_tuned_model":"ft:x","trained_tokens":3,"finished_at":9,"estimated_finish":99}`,
			func(t *testing.T, j *FineTuningJob) {
				if j.Status != "queued" || j.FineTunedModel != nil || j.TrainedTokens != nil || j.FinishedAt != nil || j.EstimatedFinish != nil {
					t.Errorf("null rules broken: %+v", j)
				}
				if j.OrganizationID != ws.OrganisationID || string(j.Hyperparameters["n_epochs"]) != `"auto"` || j.Seed != 0 ||
					j.ResultFiles == nil || j.Integrations != nil || j.TrainingFile != "file-p" || j.ID != "ftjob-gw1" || j.CreatedAt != 1700000000 {
					t.Errorf("defaults: %+v", j)
				}
			}},
		{"failed with wandb", `{"id":"ftjob-p1","status":"failed","model":"m","organization_id":"org-1","seed":7,"hyperparameters":{"n_epochs":2},
			"error":{"code":"invalid_file","message":"bad","param":"training_file"},"integrations":[{"type":"wandb","wandb":{"project":"p"}}],
			"method":{"type":"supervised"},"metadata":null}`,
			func(t *testing.T, j *FineTuningJob) {
				if j.Status != "failed" || j.Error.Code != "invalid_file" || j.Error.Param == nil || *j.Error.Param != "training_file" ||
					j.OrganizationID != "org-1" || j.Seed != 7 || string(j.Hyperparameters["n_epochs"]) != "2" {
					t.Errorf("%+v", j)
				}
				if len(j.Integrations) != 1 || j.Integrations[0].Type != "tracker" || string(j.Integrations[0].Tracker) != `{"project":"p"}` {
					t.Errorf("integrations %+v", j.Integrations)
				}
				if string(j.Method) != `{"type":"supervised"}` || j.Metadata != nil {
					t.Errorf("method %s metadata %s", j.Method, j.Metadata)
				}
			}},
		{"running", `{"id":"ftjob-p1","status":"running","estimated_finish":99}`,
			func(t *testing.T, j *FineTuningJob) {
				if j.EstimatedFinish == nil || *j.EstimatedFinish != 99 {
					t.Errorf("estimated_finish = %v", j.EstimatedFinish)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := f.plane.viewFineTuningJob(ctx, tg, rec, []byte(tc.answer))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, j)
			out, _ := json.Marshal(j)
			var m map[string]any
			json.Unmarshal(out, &m)
			if _, ok := m["error"].(map[string]any); !ok {
				t.Errorf("error is not an object: %s", out)
			}
		})
	}
	_, err := f.plane.viewFineTuningJob(ctx, tg, rec, []byte(`<html>`))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != 502 {
		t.Errorf("an unreadable job: %v", err)
	}
}

// TestFineTuningListKeepsSnapshots: a job the provider cannot be asked about is listed as last seen; a job
// never seen is left out rather than invented.
func TestFineTuningListKeepsSnapshots(t *testing.T) {
	f, rec, _ := newFTPlane(t, `{"error":{"message":"down"}}`)
	snap, _ := json.Marshal(&FineTuningJob{ID: rec.ID, Object: "fine_tuning.job", Status: "running"})
	rec.Snapshot = snap
	if err := f.store.FineTuning.PutJob(rec); err != nil {
		t.Fatal(err)
	}
	jobs, more, err := f.plane.ListFineTuningJobs(ctx, f.caller, "oa", "", 20)
	if err != nil || more || len(jobs) != 1 || jobs[0].Status != "running" {
		t.Fatalf("list = %v %v %v", jobs, more, err)
	}
}

func TestFineTuningWithoutUpstream(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.plane.GetFineTuningJob(ctx, f.caller, "oa", "ftjob-1")
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != 503 {
		t.Errorf("err = %v", err)
	}
}

func TestFineTuningBody(t *testing.T) {
	pairs := make([]string, 17)
	for i := range pairs {
		pairs[i] = fmt.Sprintf(`"k%d":"v"`, i)
	}
	tests := []struct{ body, param string }{
		{`{"model":"m","training_file":"file-1","integrations":[{"type":"wandb","wandb":{"project":"p","name":null,"entity":"e","tags":["t"]}}],"method":{"type":"supervised"},"seed":null,"suffix":null}`, ""},
		{`{"model":"m","training_file":"file-1","metadata":{` + strings.Join(pairs, ",") + `}}`, "metadata"},
		{`{"model":"m","training_file":"file-1","metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`, "metadata"},
		{`{"model":"m","training_file":"file-1","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata.k"},
		{`{"model":"` + strings.Repeat("m", 257) + `","training_file":"file-1"}`, "model"},
		{`{"model":"m","training_file":"file-1","method":{"type":3}}`, "method.type"},
		{`{"model":"m","training_file":"file-1","integrations":[{"type":"tracker","tracker":{"project":"p"},"extra":1}]}`, "integrations[0].extra"},
		{`{"model":"m","training_file":"file-1","integrations":[{"type":"tracker","tracker":{"project":"p","colour":"red"}}]}`, "integrations[0].tracker.colour"},
		{`{"model":"m","training_file":"file-1","integrations":[1]}`, "integrations[0]"},
		{`null`, ""},
	}
	for _, tc := range tests {
		_, err := checkFineTuningBody([]byte(tc.body))
		if tc.param == "" && tc.body != "null" {
			if err != nil {
				t.Errorf("%s: %v", tc.body, err)
			}
			continue
		}
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param || ge.Code != gwerr.CodeInvalidRequest || strings.Contains(ge.Message, "config") {
			t.Errorf("%.80s: err = %v (param %q), want a 400 naming %q", tc.body, err, ge.Param, tc.param)
		}
	}
}
