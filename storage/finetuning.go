package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// FineTuningStore keeps the gateway's view of fine-tuning jobs forwarded to providers and the files it mirrored
// to providers for them (and for batches sent to providers' batch APIs). Both are kept per workspace and per
// stored provider (virtual key slug): a provider file or job ID means something only on the account behind
// one stored provider. Writes are synced.
type FineTuningStore struct {
	s *Store
}

const (
	tableFTFile = "ftfile"
	tableFTJob  = "ftjob"

	ftGatewaySide  = "g" // ftfile/<ws>/<slug>/g/<gateway-file-id> → provider file ID
	ftProviderSide = "p" // ftfile/<ws>/<slug>/p/<provider-file-id> → gateway file ID
)

// ftComponent makes a provider's ID a key component: itself when it is a ValidID (OpenAI's and Azure's are),
// else its SHA-256, so that no provider can make a key read two ways.
func ftComponent(id string) string {
	if ValidID(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func ftCheck(workspaceID, slug string) error {
	if !ValidID(workspaceID) || !ValidID(slug) {
		return ErrNotFound
	}
	return nil
}

// PutFileMirror records that the gateway file gatewayFileID of the workspace is providerFileID on the stored
// provider slug, for purpose, both ways, synced. A provider file has one purpose, so one gateway file sent for
// fine-tuning and for a batch is two provider files. A later record of either ID replaces the earlier one.
func (f *FineTuningStore) PutFileMirror(workspaceID, slug, gatewayFileID, purpose, providerFileID string) error {
	if err := ftCheck(workspaceID, slug); err != nil || !ValidID(gatewayFileID) || !ValidID(purpose) || providerFileID == "" {
		return fmt.Errorf("storage: invalid file mirror %q/%q/%q/%q", workspaceID, slug, gatewayFileID, purpose)
	}
	b := f.s.db.NewBatch()
	_ = b.Set(key(tableFTFile, workspaceID, slug, ftGatewaySide, gatewayFileID, purpose), []byte(providerFileID), nil)
	_ = b.Set(key(tableFTFile, workspaceID, slug, ftProviderSide, ftComponent(providerFileID)), []byte(gatewayFileID), nil)
	return f.s.commit(b)
}

// ProviderFileID returns the provider's ID of the gateway file mirrored to the stored provider slug for purpose,
// or ErrNotFound.
func (f *FineTuningStore) ProviderFileID(workspaceID, slug, gatewayFileID, purpose string) (string, error) {
	if err := ftCheck(workspaceID, slug); err != nil || !ValidID(gatewayFileID) || !ValidID(purpose) {
		return "", ErrNotFound
	}
	v, err := f.s.get(key(tableFTFile, workspaceID, slug, ftGatewaySide, gatewayFileID, purpose))
	return string(v), err
}

// GatewayFileID returns the gateway file that mirrors (or was copied from) the provider's file on the stored
// provider slug, or ErrNotFound.
func (f *FineTuningStore) GatewayFileID(workspaceID, slug, providerFileID string) (string, error) {
	if err := ftCheck(workspaceID, slug); err != nil || providerFileID == "" {
		return "", ErrNotFound
	}
	v, err := f.s.get(key(tableFTFile, workspaceID, slug, ftProviderSide, ftComponent(providerFileID)))
	return string(v), err
}

// FineTuningJob is a fine-tuning job the gateway created on a stored provider: the gateway's ID, which callers
// see, and the provider's.
type FineTuningJob struct {
	ID            string `json:"id"` // "ftjob-" and a time-ordered suffix (NewTimeOrderedID)
	WorkspaceID   string `json:"workspace_id"`
	VirtualKey    string `json:"virtual_key"` // the stored provider's slug
	Provider      string `json:"provider"`    // its identifier when the job was made
	ProviderJobID string `json:"provider_job_id"`
	CreatedAt     int64  `json:"created_at"` // Unix seconds
	// Snapshot is the job object as the gateway last showed it, so that lists need not ask the provider about
	// jobs that have ended.
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
}

// PutJob writes a job record, synced.
func (f *FineTuningStore) PutJob(j *FineTuningJob) error {
	if err := ftCheck(j.WorkspaceID, j.VirtualKey); err != nil || !ValidID(j.ID) || j.ProviderJobID == "" {
		return fmt.Errorf("storage: invalid fine-tuning job %q/%q/%q", j.WorkspaceID, j.VirtualKey, j.ID)
	}
	raw, err := json.Marshal(j)
	if err != nil {
		return err
	}
	b := f.s.db.NewBatch()
	_ = b.Set(key(tableFTJob, j.WorkspaceID, j.VirtualKey, j.ID), raw, nil)
	return f.s.commit(b)
}

// GetJob returns the job id made through the stored provider slug of the workspace, or ErrNotFound.
func (f *FineTuningStore) GetJob(workspaceID, slug, id string) (*FineTuningJob, error) {
	if err := ftCheck(workspaceID, slug); err != nil || !ValidID(id) {
		return nil, ErrNotFound
	}
	return getJSON[FineTuningJob](f.s, key(tableFTJob, workspaceID, slug, id))
}

// ListJobs returns the jobs made through the stored provider slug of the workspace, newest first: at most limit
// of them (limit > 0) that come after the job after ("" for the first page), and whether more follow. IDs are
// time-ordered, so the page is read walking the keys backwards, without reading the rest.
func (f *FineTuningStore) ListJobs(workspaceID, slug, after string, limit int) (jobs []*FineTuningJob, more bool, err error) {
	if ftCheck(workspaceID, slug) != nil || (after != "" && !ValidID(after)) || limit <= 0 {
		return nil, false, nil
	}
	p := prefix(tableFTJob, workspaceID, slug)
	it, err := f.s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, false, fmt.Errorf("storage: list fine-tuning jobs: %w", err)
	}
	defer it.Close()
	valid := it.Last()
	if after != "" {
		valid = it.SeekLT(key(tableFTJob, workspaceID, slug, after))
	}
	for ; valid; valid = it.Prev() {
		if len(jobs) == limit {
			return jobs, true, nil
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			return nil, false, fmt.Errorf("storage: list fine-tuning jobs: %w", verr)
		}
		j := new(FineTuningJob)
		if err := json.Unmarshal(v, j); err != nil {
			return nil, false, fmt.Errorf("storage: decode %s: %w", it.Key(), err)
		}
		jobs = append(jobs, j)
	}
	if err := it.Error(); err != nil && !errors.Is(err, pebble.ErrNotFound) {
		return nil, false, fmt.Errorf("storage: list fine-tuning jobs: %w", err)
	}
	return jobs, false, nil
}
