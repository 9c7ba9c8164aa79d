package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Stored responses of the responses API (DESIGN.md "Responses (contract)"), per workspace. Any key of the
// workspace reads, lists the input items of, deletes and chains from its responses; another workspace's ID is
// a 404, as is an unknown one.
//
// Decisions SPEC.md leaves open:
//   - A response is stored under the id of its response object (the provider's own on a native provider, the
//     gateway's on a translated one), with the input items it answered: a chained request's previous turns
//     included, after truncation.
//   - Input items without an id of their own are listed with one made of the response id and their position
//     ("item_<response>_<n>"), stable across reads, so that after= pages through them.
//   - Chaining (previous_response_id) rebuilds the input as the previous response's input items, then its
//     output items, then the new input; the previous instructions are not carried over (SPEC.md).

// Input item list page sizes, as OpenAI bounds them.
const (
	DefaultInputItemsPage = 20
	MaxInputItemsPage     = 100
)

// ResponseItemList is the answer of GET /v1/responses/{id}/input_items.
type ResponseItemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// InputItemsQuery is a page of input items: Limit 1 to MaxInputItemsPage, after an item ID, Order "asc" or
// "desc" (the default, newest first, as OpenAI lists them).
type InputItemsQuery struct {
	Limit int
	After string
	Order string
}

// StoreResponse keeps the response object obj (its "id" names it) with the input items it answered.
func (p *Plane) StoreResponse(ctx context.Context, c Caller, obj json.RawMessage, input []json.RawMessage) error {
	var head struct {
		ID        string `json:"id"`
		CreatedAt int64  `json:"created_at"`
	}
	if err := json.Unmarshal(obj, &head); err != nil || head.ID == "" {
		return fmt.Errorf("control: store response: the answer is not a response object with an id")
	}
	if err := p.store.Responses().Put(&storage.StoredResponse{ID: head.ID, WorkspaceID: c.WorkspaceID,
		CreatedAt: head.CreatedAt, Response: obj, Input: input}); err != nil {
		return fmt.Errorf("control: store response %s: %w", head.ID, err)
	}
	p.log.Debug("response stored", "workspace_id", c.WorkspaceID, "id", head.ID, "trace_id", c.TraceID)
	return nil
}

// Response returns the workspace's stored response object id.
func (p *Plane) Response(ctx context.Context, c Caller, id string) (json.RawMessage, error) {
	r, err := p.store.Responses().Get(c.WorkspaceID, id)
	if err != nil {
		return nil, responseErr(err, id)
	}
	return r.Response, nil
}

// DeleteResponse deletes the workspace's stored response id and its input items.
func (p *Plane) DeleteResponse(ctx context.Context, c Caller, id string) error {
	if err := p.store.Responses().Delete(c.WorkspaceID, id); err != nil {
		return responseErr(err, id)
	}
	p.log.Info("response deleted", "workspace_id", c.WorkspaceID, "id", id, "key_id", c.KeyID, "trace_id", c.TraceID)
	return nil
}

// ResponseInputItems lists a page of the input items of the workspace's stored response id.
func (p *Plane) ResponseInputItems(ctx context.Context, c Caller, id string, q InputItemsQuery) (*ResponseItemList, error) {
	if q.Limit == 0 {
		q.Limit = DefaultInputItemsPage
	}
	if q.Limit < 1 || q.Limit > MaxInputItemsPage {
		return nil, gwerr.BadRequest("limit", "limit must be from 1 to %d, not %d", MaxInputItemsPage, q.Limit)
	}
	switch q.Order {
	case "":
		q.Order = "desc"
	case "asc", "desc":
	default:
		return nil, gwerr.BadRequest("order", "order must be asc or desc, not %q", q.Order)
	}
	items, err := p.store.Responses().Input(c.WorkspaceID, id)
	if err != nil {
		return nil, responseErr(err, id)
	}
	withIDs := make([]json.RawMessage, len(items))
	ids := make([]string, len(items))
	for i, item := range items {
		withIDs[i], ids[i] = itemWithID(item, id, i)
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
		if q.Order == "desc" {
			order[i] = len(items) - 1 - i
		}
	}
	start := 0
	if q.After != "" {
		start = -1
		for n, i := range order {
			if ids[i] == q.After {
				start = n + 1
				break
			}
		}
		if start < 0 {
			return nil, gwerr.BadRequest("after", "no input item %q in response %s", q.After, id)
		}
	}
	list := &ResponseItemList{Object: "list", Data: []json.RawMessage{}}
	for _, i := range order[start:] {
		if len(list.Data) == q.Limit {
			list.HasMore = true
			break
		}
		list.Data = append(list.Data, withIDs[i])
		if list.FirstID == nil {
			list.FirstID = &ids[i]
		}
		list.LastID = &ids[i]
	}
	return list, nil
}

// ChainInput rebuilds a chained request's input (previous_response_id): the stored input items of the
// workspace's response previousID, then its output items, then input. An unknown ID, or another workspace's,
// is a 404 naming previous_response_id.
func (p *Plane) ChainInput(ctx context.Context, c Caller, previousID string, input []json.RawMessage) ([]json.RawMessage, error) {
	prev, err := p.store.Responses().Get(c.WorkspaceID, previousID)
	if err == nil {
		var items []json.RawMessage
		if items, err = p.store.Responses().Input(c.WorkspaceID, previousID); err == nil {
			var obj struct {
				Output []json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(prev.Response, &obj); err != nil {
				return nil, gwerr.Internal(fmt.Errorf("control: stored response %s: %w", previousID, err))
			}
			out := make([]json.RawMessage, 0, len(items)+len(obj.Output)+len(input))
			out = append(out, items...)
			out = append(out, obj.Output...)
			return append(out, input...), nil
		}
	}
	ge := responseErr(err, previousID)
	if ge.Status == http.StatusNotFound {
		ge.Param = "previous_response_id"
	}
	return nil, ge
}

// itemWithID returns item with an "id" (its own, or "item_<response>_<n>" for the n-th item) and that id.
func itemWithID(item json.RawMessage, responseID string, n int) (json.RawMessage, string) {
	var head struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(item, &head) == nil && head.ID != "" {
		return item, head.ID
	}
	id := fmt.Sprintf("item_%s_%d", strings.TrimPrefix(responseID, "resp_"), n)
	trimmed := bytes.TrimSpace(item)
	if len(trimmed) < 2 || trimmed[0] != '{' {
		return item, id
	}
	out := make([]byte, 0, len(trimmed)+len(id)+10)
	out = append(out, `{"id":`...)
	quoted, _ := json.Marshal(id)
	out = append(out, quoted...)
	if rest := bytes.TrimSpace(trimmed[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, trimmed[1:]...), id
}

// responseErr names a store error: 404 for an unknown response.
func responseErr(err error, id string) *gwerr.Error {
	if errors.Is(err, storage.ErrNotFound) {
		return &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Message: fmt.Sprintf("no response %q in this workspace", id)}
	}
	return gwerr.Internal(err)
}
