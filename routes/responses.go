package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/responses"
	"github.com/llmgw/gateway/runtime/schema"
)

// The responses API (SPEC.md's response object, DESIGN.md "Responses (contract)"). POST /v1/responses is an
// inference request like chat completions (every routing header, config, retry, guardrail and rate-limit
// policy applies; the engine sends it natively or translated, runtime/responses_step.go). Before that, this
// file rebuilds a chained request's input (previous_response_id, which is not sent on); after it, a stored
// request (store, default true) keeps its response object and input items through the control plane
// (control/responses.go). Truncation is the engine's, per attempt, where the target is known.

// responseRoutes registers the endpoints of this file under /v1.
func (s *Server) responseRoutes(v1 fiber.Router) {
	v1.Post("/responses", s.createResponse)
	v1.Get("/responses/:id", s.getResponse)
	v1.Delete("/responses/:id", s.deleteResponse)
	v1.Get("/responses/:id/input_items", s.listResponseInputItems)
}

// createResponse answers POST /v1/responses.
func (s *Server) createResponse(c *fiber.Ctx) error {
	if err := requireJSON(c); err != nil {
		return err
	}
	raw := bytes.Clone(c.Body()) // fiber reuses its buffer
	body, err := schema.ReadBody(raw)
	if err != nil {
		return err
	}
	rr, err := body.Responses()
	if err != nil {
		return err
	}
	items, err := rr.InputItems()
	if err != nil {
		return err
	}
	caller := callerOf(c)
	ctx := c.UserContext()
	_, chained := rawMember(raw, "previous_response_id")
	if rr.PreviousResponseID != nil && *rr.PreviousResponseID != "" {
		if items, err = s.plane.ChainInput(ctx, caller, *rr.PreviousResponseID, items); err != nil {
			return err
		}
	}
	if chained {
		if raw, err = withInput(raw, items); err != nil {
			return gwerr.Internal(err)
		}
		if body, err = schema.ReadBody(raw); err != nil {
			return err
		}
	}
	req, err := newEngineRequest(c, providers.Responses, body)
	if err != nil {
		return err
	}
	// The provider never saw previous_response_id: the answer (and the stored object) gets it back.
	previous := ""
	if rr.PreviousResponseID != nil {
		previous = *rr.PreviousResponseID
	}
	store := rr.Store == nil || *rr.Store
	if !store && previous == "" {
		return s.run(c, req, nil)
	}
	plane, log := s.plane, s.log
	save := func(obj json.RawMessage) {
		// The stream's save runs after the handler returned: nothing here may read c.
		if err := plane.StoreResponse(context.WithoutCancel(ctx), caller, obj, items); err != nil {
			log.Warn("response not stored", "trace_id", caller.TraceID, "err", err)
		}
	}
	if body.Stream() {
		if store {
			c.SetUserContext(runtime.WithResponsesTap(ctx, func(rc io.ReadCloser) io.ReadCloser {
				return responses.Record(rc, func(obj json.RawMessage) {
					if obj == nil {
						log.Warn("streamed response not stored: the stream had no final response event", "trace_id", caller.TraceID)
						return
					}
					save(withPrevious(obj, previous))
				})
			}))
		}
		return s.run(c, req, nil)
	}
	return s.run(c, req, func(_ *fiber.Ctx, resp *runtime.Response) []byte {
		obj := withPrevious(resp.Body, previous)
		if store {
			save(obj)
		}
		return obj
	})
}

// withPrevious sets the response object's previous_response_id to previous when it is not "" (and obj is a
// JSON object); otherwise it returns obj as it is.
func withPrevious(obj []byte, previous string) []byte {
	if previous == "" {
		return obj
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		return obj
	}
	m["previous_response_id"], _ = json.Marshal(previous)
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}

// withInput returns the request body raw with input replaced by items and without previous_response_id: the
// gateway chains the turns itself.
func withInput(raw []byte, items []json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "previous_response_id")
	input, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	m["input"] = input
	return json.Marshal(m)
}

// rawMember reports whether the JSON object raw has the top-level member name.
func rawMember(raw []byte, name string) (json.RawMessage, bool) {
	if !bytes.Contains(raw, []byte(name)) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	v, ok := m[name]
	return v, ok
}

// getResponse answers GET /v1/responses/{id}: the stored response object.
func (s *Server) getResponse(c *fiber.Ctx) error {
	obj, err := s.plane.Response(c.UserContext(), callerOf(c), c.Params("id"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(obj)
}

// deleteResponse answers DELETE /v1/responses/{id}.
func (s *Server) deleteResponse(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	if err := s.plane.DeleteResponse(c.UserContext(), callerOf(c), id); err != nil {
		return err
	}
	return c.JSON(struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "response", true})
}

// listResponseInputItems answers GET /v1/responses/{id}/input_items: limit 1 to 100 (default 20), after an
// item ID, order asc or desc (default desc).
func (s *Server) listResponseInputItems(c *fiber.Ctx) error {
	q := control.InputItemsQuery{After: strings.Clone(c.Query("after")), Order: strings.Clone(c.Query("order"))}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > control.MaxInputItemsPage {
			return gwerr.BadRequest("limit", "limit must be an integer from 1 to %d, not %q", control.MaxInputItemsPage, raw)
		}
		q.Limit = n
	}
	list, err := s.plane.ResponseInputItems(c.UserContext(), callerOf(c), c.Params("id"), q)
	if err != nil {
		return err
	}
	return c.JSON(list)
}
