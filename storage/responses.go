package storage

import (
	"encoding/json"
	"errors"
	"fmt"
)

const (
	tableResponse      = "response"
	tableResponseInput = "responseinput"
)

// StoredResponse is a response of the responses API kept for its workspace (store: true): the response object
// as the caller got it, and the input items it answered, previous turns included (a chained request's input is
// rebuilt before it is answered), each with an "id".
type StoredResponse struct {
	ID          string            `json:"id"`
	WorkspaceID string            `json:"workspace_id"`
	CreatedAt   int64             `json:"created_at"`
	Response    json.RawMessage   `json:"response"`
	Input       []json.RawMessage `json:"-"` // kept under its own key: a GET of the response does not read it
}

// ResponseStore keeps stored responses: response/<workspace-id>/<id> holds the response object,
// responseinput/<workspace-id>/<id> its input items. Both are written, and deleted, in one synced write. It is
// safe for concurrent use.
type ResponseStore struct{ s *Store }

// Responses returns the store's responses.
func (s *Store) Responses() ResponseStore { return ResponseStore{s: s} }

// Put stores r (replacing a response of the same ID), synced.
func (rs ResponseStore) Put(r *StoredResponse) error {
	if err := CheckID("workspace id", r.WorkspaceID); err != nil {
		return err
	}
	if err := CheckID("response id", r.ID); err != nil {
		return err
	}
	if !json.Valid(r.Response) {
		return fmt.Errorf("storage: response %s: the response object is not JSON", r.ID)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	input := r.Input
	if input == nil {
		input = []json.RawMessage{}
	}
	items, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("storage: response %s: input items: %w", r.ID, err)
	}
	wb := rs.s.db.NewBatch()
	_ = wb.Set(key(tableResponse, r.WorkspaceID, r.ID), raw, nil)
	_ = wb.Set(key(tableResponseInput, r.WorkspaceID, r.ID), items, nil)
	return rs.s.commit(wb)
}

// Get returns the workspace's response id without its input items, or ErrNotFound (also for another
// workspace's ID).
func (rs ResponseStore) Get(workspaceID, id string) (*StoredResponse, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	k := key(tableResponse, workspaceID, id)
	raw, err := rs.s.get(k)
	if err != nil {
		return nil, err
	}
	var r StoredResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	return &r, nil
}

// Input returns the input items of the workspace's response id, or ErrNotFound.
func (rs ResponseStore) Input(workspaceID, id string) ([]json.RawMessage, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	k := key(tableResponseInput, workspaceID, id)
	raw, err := rs.s.get(k)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	return items, nil
}

// Delete removes the workspace's response id and its input items, synced; ErrNotFound when there is none.
func (rs ResponseStore) Delete(workspaceID, id string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return ErrNotFound
	}
	k := key(tableResponse, workspaceID, id)
	rs.s.writeMu.Lock()
	defer rs.s.writeMu.Unlock()
	if _, err := rs.s.get(k); err != nil {
		if errors.Is(err, ErrNotFound) {
			return ErrNotFound
		}
		return err
	}
	wb := rs.s.db.NewBatch()
	_ = wb.Delete(k, nil)
	_ = wb.Delete(key(tableResponseInput, workspaceID, id), nil)
	return rs.s.commit(wb)
}
