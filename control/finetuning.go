package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

// Fine-tuning jobs (SPEC.md's fine_tuning.job), forwarded to the provider of the caller's virtual key through
// runtime/upstream. Decisions SPEC.md and DESIGN.md leave open:
//   - Job IDs are the gateway's own ("ftjob-" and a time-ordered suffix), recorded in storage.FineTuning with the
//     provider's job ID, the workspace and the virtual key. A job is reached only through the workspace and the
//     virtual key that made it: any other pair is a 404, whether the ID exists elsewhere or not, and lists show
//     only that pair's jobs, newest first. Jobs made on the provider's account outside the gateway (or by another
//     workspace sharing the account) are never shown.
//   - Files are gateway files both ways: training_file and validation_file must be files of the workspace (400
//     naming the field otherwise) and are uploaded to the provider once (upstream.UploadFile, purpose
//     fine-tune); result_files are copied into the workspace (purpose fine-tune-results) the first time a job
//     shows them.
//   - Answers are normalised to SPEC.md's object: every required field present; error is always an object (with
//     empty code and message while the job has not failed), since SPEC.md does not allow it null;
//     fine_tuned_model, finished_at and trained_tokens are null while the job is validating_files, queued or
//     running; estimated_finish is null unless it is running; hyperparameters always holds n_epochs ("auto"
//     when the provider gives none); integrations are SPEC.md's tracker items (OpenAI's wandb items, renamed,
//     as llmvendor stands for openai); a status outside SPEC.md's six is mapped (pending and notRunning are
//     queued, canceled is cancelled, anything else unknown running).
//   - The provider's own errors keep their status and body (an *upstream.ProviderError, which routes writes as
//     it is). A list shows a job as last seen when the provider cannot be asked about it.
//   - A crash between the provider's answer to a create and the record's write leaves a job on the provider that
//     the gateway does not show; the provider's create is not idempotent, so it is not retried.

// FineTuningJob is SPEC.md's fine-tuning job object as the gateway shows it (and keeps, as a job's snapshot).
type FineTuningJob struct {
	ID              string                     `json:"id"`
	Object          string                     `json:"object"`
	CreatedAt       int64                      `json:"created_at"`
	Error           FineTuningError            `json:"error"`
	FineTunedModel  *string                    `json:"fine_tuned_model"`
	FinishedAt      *int64                     `json:"finished_at"`
	Hyperparameters map[string]json.RawMessage `json:"hyperparameters"`
	Model           string                     `json:"model"`
	OrganizationID  string                     `json:"organization_id"`
	ResultFiles     []string                   `json:"result_files"`
	Status          string                     `json:"status"`
	TrainedTokens   *int64                     `json:"trained_tokens"`
	TrainingFile    string                     `json:"training_file"`
	ValidationFile  *string                    `json:"validation_file"`
	Seed            int64                      `json:"seed"`
	Integrations    []FineTuningIntegration    `json:"integrations"`
	EstimatedFinish *int64                     `json:"estimated_finish"`
	// The provider's further fields that OpenAI's SDKs read, passed on when it gives them.
	Method             json.RawMessage `json:"method,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	UserProvidedSuffix *string         `json:"user_provided_suffix,omitempty"`
}

// FineTuningError is a job's error object.
type FineTuningError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// FineTuningIntegration is an integrations item: {type: "tracker", tracker: {...}}.
type FineTuningIntegration struct {
	Type    string          `json:"type"`
	Tracker json.RawMessage `json:"tracker"`
}

// FineTuningList is a page of a job's events or checkpoints, the provider's items with gateway IDs.
type FineTuningList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID *string           `json:"first_id,omitempty"`
	LastID  *string           `json:"last_id,omitempty"`
}

// Bounds of fine-tuning requests.
const (
	MaxFineTuningIntegrations = 5   // SPEC.md
	maxFineTuningTags         = 50  // per tracker integration
	maxFineTuningTagLength    = 64  // characters
	maxFineTuningSuffix       = 64  // characters, as OpenAI's API
	maxFineTuningModel        = 256 // characters
	maxFineTuningMetadata     = 16  // pairs; keys at most 64 characters, values at most 512 (SPEC.md's metadata)
	// fineTuningRefreshes bounds the jobs of one list page asked about at once.
	fineTuningRefreshes = 4
)

// fineTuningFields are the fields a create takes.
var fineTuningFields = []string{"hyperparameters", "integrations", "metadata", "method", "model", "seed", "suffix",
	"training_file", "validation_file"}

// fineTuningTarget resolves the caller's virtual key for fine-tuning.
func (p *Plane) fineTuningTarget(ctx context.Context, caller Caller, virtualKey string) (*upstream.Target, error) {
	if p.upstream == nil {
		return nil, gwerr.New(http.StatusServiceUnavailable, gwerr.CodeUnavailable, "fine-tuning is not available: the gateway runs without a client of providers' management APIs")
	}
	return p.upstream.Target(ctx, caller.WorkspaceID, virtualKey, upstream.FineTuning)
}

// CreateFineTuningJob validates a create body (SPEC.md's, with suffix and method optional as DESIGN.md decides),
// uploads its gateway files to the virtual key's provider and creates the job there.
func (p *Plane) CreateFineTuningJob(ctx context.Context, caller Caller, virtualKey string, body []byte) (*FineTuningJob, error) {
	fields, err := checkFineTuningBody(body)
	if err != nil {
		return nil, err
	}
	tg, err := p.fineTuningTarget(ctx, caller, virtualKey)
	if err != nil {
		return nil, err
	}
	// Both files are checked before either is uploaded: a refused create costs the provider nothing.
	files := map[string]string{}
	for _, name := range []string{"training_file", "validation_file"} {
		raw := fields[name]
		if raw == nil || string(raw) == "null" {
			continue
		}
		var id string
		_ = json.Unmarshal(raw, &id) // checked
		if _, err := p.store.Files.Get(caller.WorkspaceID, id); errors.Is(err, storage.ErrNotFound) {
			return nil, gwerr.BadRequest(name, "%s %q is not a file of this workspace: upload it with POST /v1/files (purpose fine-tune) and send its id", name, id)
		} else if err != nil {
			return nil, gwerr.Internal(err)
		}
		files[name] = id
	}
	for _, name := range []string{"training_file", "validation_file"} {
		id, ok := files[name]
		if !ok {
			continue
		}
		providerID, err := tg.UploadFile(ctx, id, "fine-tune")
		if err != nil {
			var ge *gwerr.Error
			if errors.As(err, &ge) && ge.Status == http.StatusNotFound { // deleted meanwhile
				return nil, gwerr.BadRequest(name, "%s %q is not a file of this workspace", name, id)
			}
			return nil, err
		}
		fields[name], _ = json.Marshal(providerID)
	}
	if raw := fields["integrations"]; raw != nil {
		fields["integrations"] = renameIntegrations(raw, "tracker", "wandb")
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	status, answer, err := tg.Do(ctx, http.MethodPost, "/fine_tuning/jobs", nil, out)
	if err != nil {
		return nil, err
	}
	if !ftSuccess(status) {
		return nil, &upstream.ProviderError{Provider: tg.Provider(), Status: status, Body: answer}
	}
	var created struct {
		ID        string `json:"id"`
		CreatedAt int64  `json:"created_at"`
	}
	if json.Unmarshal(answer, &created) != nil || created.ID == "" {
		return nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered the fine-tuning job's creation without a job id", tg.Provider())
	}
	now := time.Now()
	rec := &storage.FineTuningJob{ID: storage.NewTimeOrderedID("ftjob-", now), WorkspaceID: caller.WorkspaceID,
		VirtualKey: virtualKey, Provider: tg.Provider(), ProviderJobID: created.ID, CreatedAt: created.CreatedAt}
	if rec.CreatedAt <= 0 {
		rec.CreatedAt = now.Unix()
	}
	job, err := p.viewFineTuningJob(ctx, tg, rec, answer)
	if err != nil {
		return nil, err
	}
	if err := p.storeFineTuningJob(rec, job); err != nil {
		return nil, err
	}
	p.log.Info("fine-tuning job created", "trace_id", caller.TraceID, "job_id", rec.ID, "provider_job_id", rec.ProviderJobID,
		"provider", rec.Provider, "virtual_key", virtualKey, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return job, nil
}

// ListFineTuningJobs returns the jobs made through the virtual key, newest first: limit of them after the job
// after, and whether more follow. Jobs that have not ended are asked about afresh.
func (p *Plane) ListFineTuningJobs(ctx context.Context, caller Caller, virtualKey, after string, limit int) ([]*FineTuningJob, bool, error) {
	tg, err := p.fineTuningTarget(ctx, caller, virtualKey)
	if err != nil {
		return nil, false, err
	}
	if after != "" {
		if _, err := p.store.FineTuning.GetJob(caller.WorkspaceID, virtualKey, after); errors.Is(err, storage.ErrNotFound) {
			return nil, false, gwerr.BadRequest("after", "after %q is not a fine-tuning job of this virtual key", after)
		} else if err != nil {
			return nil, false, gwerr.Internal(err)
		}
	}
	recs, more, err := p.store.FineTuning.ListJobs(caller.WorkspaceID, virtualKey, after, limit)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	jobs := make([]*FineTuningJob, len(recs))
	slots := make(chan struct{}, fineTuningRefreshes)
	var wg sync.WaitGroup
	for i, rec := range recs {
		var last FineTuningJob
		if json.Unmarshal(rec.Snapshot, &last) == nil && last.ID != "" {
			jobs[i] = &last
			if fineTuningFinal(last.Status) {
				continue
			}
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			fresh, err := p.refreshFineTuningJob(ctx, tg, rec)
			if err != nil {
				p.log.Warn("fine-tuning job not refreshed: showing it as last seen", "trace_id", caller.TraceID, "job_id", rec.ID, "err", err)
				return
			}
			jobs[i] = fresh
		})
	}
	wg.Wait()
	out := jobs[:0]
	for _, j := range jobs {
		if j != nil { // never seen and not reachable now: nothing to show
			out = append(out, j)
		}
	}
	return out, more, nil
}

// GetFineTuningJob asks the provider about the job id of the virtual key.
func (p *Plane) GetFineTuningJob(ctx context.Context, caller Caller, virtualKey, id string) (*FineTuningJob, error) {
	tg, rec, err := p.fineTuningJob(ctx, caller, virtualKey, id)
	if err != nil {
		return nil, err
	}
	return p.refreshFineTuningJob(ctx, tg, rec)
}

// CancelFineTuningJob asks the provider to cancel the job id of the virtual key.
func (p *Plane) CancelFineTuningJob(ctx context.Context, caller Caller, virtualKey, id string) (*FineTuningJob, error) {
	tg, rec, err := p.fineTuningJob(ctx, caller, virtualKey, id)
	if err != nil {
		return nil, err
	}
	answer, err := p.callFineTuning(ctx, tg, http.MethodPost, fineTuningPath(rec, "/cancel"), nil)
	if err != nil {
		return nil, err
	}
	job, err := p.viewFineTuningJob(ctx, tg, rec, answer)
	if err != nil {
		return nil, err
	}
	if err := p.storeFineTuningJob(rec, job); err != nil {
		return nil, err
	}
	p.log.Info("fine-tuning job cancelled", "trace_id", caller.TraceID, "job_id", rec.ID, "status", job.Status,
		"workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return job, nil
}

// FineTuningJobEvents returns a page of the job's events as the provider lists them (after is an event ID).
func (p *Plane) FineTuningJobEvents(ctx context.Context, caller Caller, virtualKey, id, after string, limit int) (*FineTuningList, error) {
	return p.fineTuningItems(ctx, caller, virtualKey, id, "/events", after, limit)
}

// FineTuningJobCheckpoints returns a page of the job's checkpoints as the provider lists them (after is a
// checkpoint ID), each naming the job by its gateway ID.
func (p *Plane) FineTuningJobCheckpoints(ctx context.Context, caller Caller, virtualKey, id, after string, limit int) (*FineTuningList, error) {
	return p.fineTuningItems(ctx, caller, virtualKey, id, "/checkpoints", after, limit)
}

func (p *Plane) fineTuningItems(ctx context.Context, caller Caller, virtualKey, id, sub, after string, limit int) (*FineTuningList, error) {
	tg, rec, err := p.fineTuningJob(ctx, caller, virtualKey, id)
	if err != nil {
		return nil, err
	}
	q := url.Values{"limit": {fmt.Sprint(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	answer, err := p.callFineTuning(ctx, tg, http.MethodGet, fineTuningPath(rec, sub), q)
	if err != nil {
		return nil, err
	}
	var list FineTuningList
	if err := json.Unmarshal(answer, &list); err != nil {
		return nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered the job's %s with a body that is not a list", tg.Provider(), sub[1:])
	}
	list.Object = "list"
	if list.Data == nil {
		list.Data = []json.RawMessage{}
	}
	for i, item := range list.Data {
		var m map[string]json.RawMessage
		if json.Unmarshal(item, &m) != nil || m == nil {
			return nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered the job's %s with an item that is not an object", tg.Provider(), sub[1:])
		}
		if _, ok := m["fine_tuning_job_id"]; ok {
			m["fine_tuning_job_id"], _ = json.Marshal(rec.ID)
			list.Data[i], _ = json.Marshal(m)
		}
	}
	return &list, nil
}

// fineTuningJob resolves the virtual key and finds the job id it made in the caller's workspace, or a 404.
func (p *Plane) fineTuningJob(ctx context.Context, caller Caller, virtualKey, id string) (*upstream.Target, *storage.FineTuningJob, error) {
	tg, err := p.fineTuningTarget(ctx, caller, virtualKey)
	if err != nil {
		return nil, nil, err
	}
	rec, err := p.store.FineTuning.GetJob(caller.WorkspaceID, virtualKey, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, gwerr.NotFound("fine-tuning job", id)
	}
	if err != nil {
		return nil, nil, gwerr.Internal(err)
	}
	return tg, rec, nil
}

// refreshFineTuningJob asks the provider about a job and keeps what it shows.
func (p *Plane) refreshFineTuningJob(ctx context.Context, tg *upstream.Target, rec *storage.FineTuningJob) (*FineTuningJob, error) {
	answer, err := p.callFineTuning(ctx, tg, http.MethodGet, fineTuningPath(rec, ""), nil)
	if err != nil {
		return nil, err
	}
	job, err := p.viewFineTuningJob(ctx, tg, rec, answer)
	if err != nil {
		return nil, err
	}
	return job, p.storeFineTuningJob(rec, job)
}

// callFineTuning makes one call whose answer must be 2xx; the provider's other answers are its errors.
func (p *Plane) callFineTuning(ctx context.Context, tg *upstream.Target, method, path string, q url.Values) ([]byte, error) {
	status, answer, err := tg.Do(ctx, method, path, q, nil)
	if err != nil {
		return nil, err
	}
	if !ftSuccess(status) {
		return nil, &upstream.ProviderError{Provider: tg.Provider(), Status: status, Body: answer}
	}
	return answer, nil
}

func fineTuningPath(rec *storage.FineTuningJob, sub string) string {
	return "/fine_tuning/jobs/" + url.PathEscape(rec.ProviderJobID) + sub
}

func ftSuccess(status int) bool { return status >= 200 && status <= 299 }

// storeFineTuningJob keeps job as rec's snapshot, writing only when it changed.
func (p *Plane) storeFineTuningJob(rec *storage.FineTuningJob, job *FineTuningJob) error {
	snap, err := json.Marshal(job)
	if err != nil {
		return gwerr.Internal(err)
	}
	if bytes.Equal(snap, rec.Snapshot) {
		return nil
	}
	next := *rec
	next.Snapshot = snap
	if err := p.store.FineTuning.PutJob(&next); err != nil {
		return gwerr.Internal(err)
	}
	return nil
}

// viewFineTuningJob normalises a provider's job object (see the decisions above) for rec, mapping its file IDs
// to gateway files, copying result files in on first sight.
func (p *Plane) viewFineTuningJob(ctx context.Context, tg *upstream.Target, rec *storage.FineTuningJob, answer []byte) (*FineTuningJob, error) {
	// The provider's job has the view's shape, read leniently: what it lacks is filled in below, and the
	// fields that may be null or differ are read apart.
	var pj struct {
		FineTuningJob
		Error        *FineTuningError `json:"error"`
		Seed         *int64           `json:"seed"`
		Integrations json.RawMessage  `json:"integrations"`
	}
	if err := json.Unmarshal(answer, &pj); err != nil {
		return nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered with a fine-tuning job the gateway could not read: %v", tg.Provider(), err)
	}
	job := &pj.FineTuningJob
	providerFiles := job.ResultFiles
	job.ID, job.Object, job.CreatedAt, job.Status = rec.ID, "fine_tuning.job", rec.CreatedAt, fineTuningStatus(job.Status)
	job.ResultFiles, job.Integrations = []string{}, nil
	job.Method, job.Metadata = ftNullable(job.Method), ftNullable(job.Metadata)
	if pj.Error != nil {
		job.Error = *pj.Error
	}
	if job.OrganizationID == "" {
		if ws, err := p.store.Workspaces.Get(rec.WorkspaceID); err == nil {
			job.OrganizationID = ws.OrganisationID
		}
	}
	if pj.Seed != nil {
		job.Seed = *pj.Seed
	}
	if job.Hyperparameters == nil {
		job.Hyperparameters = map[string]json.RawMessage{}
	}
	if _, ok := job.Hyperparameters["n_epochs"]; !ok {
		job.Hyperparameters["n_epochs"] = json.RawMessage(`"auto"`)
	}
	if !fineTuningFinal(job.Status) {
		job.FineTunedModel, job.FinishedAt, job.TrainedTokens = nil, nil, nil
	}
	if job.Status != "running" {
		job.EstimatedFinish = nil
	}
	if raw := ftNullable(pj.Integrations); raw != nil {
		var items []FineTuningIntegration
		if json.Unmarshal(renameIntegrations(raw, "wandb", "tracker"), &items) == nil {
			job.Integrations = items
		}
	}
	var err error
	if job.TrainingFile, err = p.ftInputFile(ctx, tg, job.TrainingFile); err != nil {
		return nil, err
	}
	if job.ValidationFile != nil && *job.ValidationFile != "" {
		id, err := p.ftInputFile(ctx, tg, *job.ValidationFile)
		if err != nil {
			return nil, err
		}
		job.ValidationFile = &id
	} else {
		job.ValidationFile = nil
	}
	for _, pid := range providerFiles {
		id, err := tg.GatewayFileID(ctx, pid)
		if err != nil {
			return nil, err
		}
		if id == "" {
			f, err := tg.ImportFile(ctx, pid, "fine-tune-results", "")
			if err != nil {
				return nil, err
			}
			id = f.ID
		}
		job.ResultFiles = append(job.ResultFiles, id)
	}
	return job, nil
}

// ftInputFile maps a provider's file ID of a job's input back to the gateway file it mirrors. Inputs of jobs
// made through the gateway are always mirrors; an unknown one keeps the provider's ID rather than a copy of a
// training set being made.
func (p *Plane) ftInputFile(ctx context.Context, tg *upstream.Target, providerID string) (string, error) {
	if providerID == "" {
		return "", nil
	}
	id, err := tg.GatewayFileID(ctx, providerID)
	if err != nil || id != "" {
		return id, err
	}
	return providerID, nil
}

// ftNullable is raw, or nil when raw is absent or null.
func ftNullable(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

func fineTuningFinal(status string) bool {
	return status == "succeeded" || status == "failed" || status == "cancelled"
}

// fineTuningStatus maps a provider's status onto SPEC.md's six.
func fineTuningStatus(s string) string {
	switch s {
	case "validating_files", "queued", "running", "succeeded", "failed", "cancelled":
		return s
	case "pending", "notRunning", "created":
		return "queued"
	case "canceled":
		return "cancelled"
	}
	return "running"
}

// renameIntegrations rewrites integrations items of type from into type to (their settings move to the key of
// the new type): SPEC.md's tracker items are OpenAI's wandb items. Items it cannot read stay as they are.
func renameIntegrations(raw json.RawMessage, from, to string) json.RawMessage {
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return raw
	}
	for _, item := range items {
		var typ string
		if json.Unmarshal(item["type"], &typ) != nil || typ != from {
			continue
		}
		item["type"], _ = json.Marshal(to)
		if settings, ok := item[from]; ok {
			delete(item, from)
			item[to] = settings
		}
	}
	out, err := json.Marshal(items)
	if err != nil {
		return raw
	}
	return out
}

// checkFineTuningBody validates a create body and returns its fields; errors are 400s naming the field.
func checkFineTuningBody(body []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, gwerr.BadRequest("", "the body must be a JSON object: a fine-tuning job with model and training_file")
	}
	o := jsonfield.ObjectOf(fields, "")
	err := o.OnlyKeys(fineTuningFields...)
	if err == nil {
		err = checkFineTuningFields(o)
	}
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) && ge.Code == jsonfield.CodeInvalidConfig {
			// jsonfield speaks of configs; these are a job's fields.
			return nil, gwerr.BadRequest(ge.Param, "invalid fine-tuning job: %s", strings.TrimPrefix(ge.Message, "invalid config: "))
		}
		return nil, err
	}
	return fields, nil
}

func checkFineTuningFields(o *jsonfield.Object) error {
	model, _, err := o.Str("model", true, true)
	if err != nil {
		return err
	}
	if len(model) > maxFineTuningModel {
		return jsonfield.Invalid("model", "must be at most %d characters", maxFineTuningModel)
	}
	for _, name := range []string{"training_file", "validation_file"} {
		id, given, err := o.Str(name, name == "training_file", true)
		if err != nil {
			return err
		}
		if given && !storage.ValidID(id) {
			return jsonfield.Invalid(name, "must be a file id such as file-abc123, not %q", ftClip(id))
		}
	}
	suffix, _, err := o.Str("suffix", false, false)
	if err != nil {
		return err
	}
	if len([]rune(suffix)) > maxFineTuningSuffix {
		return jsonfield.Invalid("suffix", "must be at most %d characters", maxFineTuningSuffix)
	}
	for _, name := range []string{"method", "hyperparameters"} {
		if _, err := o.RawObject(name, false); err != nil {
			return err
		}
	}
	if method := o.Get("method"); method != nil {
		m, _ := jsonfield.NewObject(method, "method")
		if _, _, err := m.Str("type", false, true); err != nil {
			return err
		}
	}
	if _, err := o.Integer("seed", false, -(1 << 53), 1<<53); err != nil {
		return err
	}
	if err := checkFineTuningMetadata(o); err != nil {
		return err
	}
	return checkFineTuningIntegrations(o)
}

func checkFineTuningMetadata(o *jsonfield.Object) error {
	raw, err := o.RawObject("metadata", false)
	if raw == nil || err != nil {
		return err
	}
	var pairs map[string]json.RawMessage
	_ = json.Unmarshal(raw, &pairs)
	if len(pairs) > maxFineTuningMetadata {
		return jsonfield.Invalid("metadata", "holds %d pairs; at most %d are allowed", len(pairs), maxFineTuningMetadata)
	}
	m := jsonfield.ObjectOf(pairs, "metadata")
	for k := range pairs {
		if len([]rune(k)) > 64 {
			return jsonfield.Invalid("metadata", "key %q is longer than 64 characters", ftClip(k))
		}
		v, _, err := m.Str(k, true, false)
		if err != nil {
			return err
		}
		if len([]rune(v)) > 512 {
			return jsonfield.Invalid(m.At(k), "must be at most 512 characters")
		}
	}
	return nil
}

// checkFineTuningIntegrations checks SPEC.md's integrations: at most 5 items {type: "tracker", tracker:
// {project, name, entity, tags}}; OpenAI's spelling, wandb, is taken too.
func checkFineTuningIntegrations(o *jsonfield.Object) error {
	items, err := o.Array("integrations", false)
	if err != nil {
		return err
	}
	if len(items) > MaxFineTuningIntegrations {
		return jsonfield.Invalid("integrations", "holds %d items; at most %d are allowed", len(items), MaxFineTuningIntegrations)
	}
	for i, raw := range items {
		item, err := jsonfield.NewObject(raw, jsonfield.Index("integrations", i))
		if err != nil {
			return err
		}
		typ, _, err := item.Str("type", true, true)
		if err != nil {
			return err
		}
		if typ != "tracker" && typ != "wandb" {
			return jsonfield.Invalid(item.At("type"), "must be \"tracker\", not %q", ftClip(typ))
		}
		if err := item.OnlyKeys("type", typ); err != nil {
			return err
		}
		settingsRaw, err := item.RawObject(typ, true)
		if err != nil {
			return err
		}
		settings, _ := jsonfield.NewObject(settingsRaw, item.At(typ))
		if err := settings.OnlyKeys("entity", "name", "project", "tags"); err != nil {
			return err
		}
		if _, _, err := settings.Str("project", true, true); err != nil {
			return err
		}
		for _, name := range []string{"name", "entity"} {
			if _, _, err := settings.Str(name, false, false); err != nil {
				return err
			}
		}
		tags, err := settings.Array("tags", false)
		if err != nil {
			return err
		}
		if len(tags) > maxFineTuningTags {
			return jsonfield.Invalid(settings.At("tags"), "holds %d tags; at most %d are allowed", len(tags), maxFineTuningTags)
		}
		for j, tag := range tags {
			var s string
			if jsonfield.Kind(tag) != "string" || json.Unmarshal(tag, &s) != nil || s == "" || len([]rune(s)) > maxFineTuningTagLength {
				return jsonfield.Invalid(jsonfield.Index(settings.At("tags"), j), "must be a string of 1 to %d characters", maxFineTuningTagLength)
			}
		}
	}
	return nil
}

// ftClip shortens a caller's value for an error message.
func ftClip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
