package routes

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/batch"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Batches (SPEC.md's batch object and /batches endpoints) of the caller's workspace. Making a batch needs
// x-gateway-virtual-key, and records the request's gateway headers (read as for an inference request), so
// that each line runs as that request would. The checks and the decisions SPEC.md leaves open are
// control.Plane's (control/batches.go); running batches is runtime/batch's.

const batchObject = "batch"

// batchKeyWhy is why the batch endpoints that read batches need x-gateway-virtual-key: SPEC.md requires it on
// every batch endpoint. A batch runs on the virtual key it was made with; these do not filter by it.
const batchKeyWhy = "SPEC.md requires it on every batch endpoint (a batch runs on the provider of the key it was made with)"

// batchRoutes registers the endpoints of this file under /v1.
func (s *Server) batchRoutes(v1 fiber.Router) {
	v1.Post("/batches", s.createBatch)
	v1.Get("/batches", s.listBatches)
	v1.Get("/batches/:id", s.getBatch)
	v1.Post("/batches/:id/cancel", s.cancelBatch)
}

// batchView is SPEC.md's batch object: every field present, null until it applies.
type batchView struct {
	ID               string              `json:"id"`
	Object           string              `json:"object"`
	Endpoint         string              `json:"endpoint"`
	Errors           *batchErrors        `json:"errors"`
	InputFileID      string              `json:"input_file_id"`
	CompletionWindow string              `json:"completion_window"`
	Status           string              `json:"status"`
	OutputFileID     *string             `json:"output_file_id"`
	ErrorFileID      *string             `json:"error_file_id"`
	CreatedAt        int64               `json:"created_at"`
	batch.Times                          // in_progress_at, expires_at, ... cancelled_at
	RequestCounts    storage.BatchCounts `json:"request_counts"`
	Metadata         map[string]string   `json:"metadata"`
}

type batchErrors struct {
	Object string           `json:"object"`
	Data   []batchErrorView `json:"data"`
}

type batchErrorView struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

// batchList is the answer of GET /v1/batches.
type batchList struct {
	Object  string      `json:"object"`
	Data    []batchView `json:"data"`
	HasMore bool        `json:"has_more"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
}

func viewBatch(b *storage.Batch) batchView {
	id := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	v := batchView{ID: b.ID, Object: batchObject, Endpoint: b.Endpoint, InputFileID: b.InputFileID,
		CompletionWindow: b.CompletionWindow, Status: b.Status, OutputFileID: id(b.OutputFileID),
		ErrorFileID: id(b.ErrorFileID), CreatedAt: b.CreatedAt, Times: batch.TimesOf(b), RequestCounts: b.Counts,
		Metadata: b.Metadata}
	if len(b.Errors) > 0 {
		v.Errors = &batchErrors{Object: "list", Data: make([]batchErrorView, len(b.Errors))}
		for i, e := range b.Errors {
			ev := batchErrorView{Code: e.Code, Message: e.Message, Param: id(e.Param)}
			if e.Line > 0 {
				line := e.Line
				ev.Line = &line
			}
			v.Errors.Data[i] = ev
		}
	}
	return v
}

// createBatch answers POST /v1/batches: {input_file_id, endpoint, completion_window, metadata}.
func (s *Server) createBatch(c *fiber.Ctx) error {
	var body struct {
		InputFileID      string          `json:"input_file_id"`
		Endpoint         string          `json:"endpoint"`
		CompletionWindow string          `json:"completion_window"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	req := runtime.Request{Key: callerKey(c), TraceID: ensureTraceID(c)}
	if err := readGatewayHeaders(c, &req); err != nil {
		return err
	}
	in := control.BatchInput{InputFileID: body.InputFileID, Endpoint: body.Endpoint,
		CompletionWindow: body.CompletionWindow, Metadata: body.Metadata,
		Request: batch.Capture(&req, func(name string) string { return c.Get(name) }, s.store.Configs)}
	b, err := s.plane.CreateBatch(c.UserContext(), callerOf(c), in)
	if err != nil {
		return err
	}
	return c.JSON(viewBatch(b))
}

// listBatches answers GET /v1/batches: newest first, limit 1 to 100 (default 20), after a batch ID.
func (s *Server) listBatches(c *fiber.Ctx) error {
	if _, err := requiredVirtualKey(c, batchKeyWhy); err != nil {
		return err
	}
	limit := control.DefaultBatchPage
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > control.MaxBatchPage {
			return gwerr.BadRequest("limit", "limit must be an integer from 1 to %d, not %q", control.MaxBatchPage, raw)
		}
		limit = n
	}
	page, more, err := s.plane.ListBatches(c.UserContext(), callerOf(c), strings.Clone(c.Query("after")), limit)
	if err != nil {
		return err
	}
	list := batchList{Object: "list", Data: make([]batchView, 0, len(page)), HasMore: more}
	for _, b := range page {
		list.Data = append(list.Data, viewBatch(b))
	}
	if len(page) > 0 {
		first, last := page[0].ID, page[len(page)-1].ID
		list.FirstID, list.LastID = &first, &last
	}
	return c.JSON(list)
}

// getBatch answers GET /v1/batches/:id.
func (s *Server) getBatch(c *fiber.Ctx) error {
	if _, err := requiredVirtualKey(c, batchKeyWhy); err != nil {
		return err
	}
	b, err := s.plane.GetBatch(c.UserContext(), callerOf(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(viewBatch(b))
}

// cancelBatch answers POST /v1/batches/:id/cancel: the batch is cancelling, then cancelled with what finished.
func (s *Server) cancelBatch(c *fiber.Ctx) error {
	if _, err := requiredVirtualKey(c, batchKeyWhy); err != nil {
		return err
	}
	b, err := s.plane.CancelBatch(c.UserContext(), callerOf(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(viewBatch(b))
}
