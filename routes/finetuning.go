package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/schema"
	mgmt "github.com/llmgw/gateway/runtime/upstream" // routes tests declare their own upstream
)

// Fine-tuning jobs (SPEC.md's fine_tuning.job), forwarded to the provider of the caller's virtual key. Every key
// of the workspace may use them; each needs x-gateway-virtual-key. The operations and the decisions SPEC.md
// leaves open (gateway job IDs, file mirroring, normalisation) are control.Plane's (control/finetuning.go); here
// headers, paths, queries and bodies are read and the answers written. A provider's own error answer is
// written as it came, with its status.

const (
	defaultFineTuningLimit = 20
	maxFineTuningLimit     = 100
)

// fineTuningRoutes registers the endpoints of this file under /v1.
func (s *Server) fineTuningRoutes(v1 fiber.Router) {
	v1.Post("/fine_tuning/jobs", s.createFineTuningJob)
	v1.Get("/fine_tuning/jobs", s.listFineTuningJobs)
	v1.Get("/fine_tuning/jobs/:id", s.getFineTuningJob)
	v1.Post("/fine_tuning/jobs/:id/cancel", s.cancelFineTuningJob)
	v1.Get("/fine_tuning/jobs/:id/events", s.fineTuningJobItems(s.plane.FineTuningJobEvents))
	v1.Get("/fine_tuning/jobs/:id/checkpoints", s.fineTuningJobItems(s.plane.FineTuningJobCheckpoints))
}

// fineTuningList is the answer of GET /v1/fine_tuning/jobs.
type fineTuningList struct {
	Object  string                   `json:"object"`
	Data    []*control.FineTuningJob `json:"data"`
	HasMore bool                     `json:"has_more"`
}

// createFineTuningJob answers POST /v1/fine_tuning/jobs.
func (s *Server) createFineTuningJob(c *fiber.Ctx) error {
	vk, err := fineTuningVirtualKey(c)
	if err != nil {
		return err
	}
	if err := requireJSON(c); err != nil {
		return err
	}
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body is empty: send a fine-tuning job with model and training_file"}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return schema.DecodeError(body, "", err)
	}
	return fineTuningAnswer(s, c, func(ctx context.Context) (*control.FineTuningJob, error) {
		return s.plane.CreateFineTuningJob(ctx, callerOf(c), vk, body)
	})
}

// listFineTuningJobs answers GET /v1/fine_tuning/jobs: the virtual key's jobs, newest first.
func (s *Server) listFineTuningJobs(c *fiber.Ctx) error {
	vk, after, limit, err := fineTuningPage(c)
	if err != nil {
		return err
	}
	return fineTuningAnswer(s, c, func(ctx context.Context) (fineTuningList, error) {
		jobs, more, err := s.plane.ListFineTuningJobs(ctx, callerOf(c), vk, after, limit)
		if jobs == nil {
			jobs = []*control.FineTuningJob{}
		}
		return fineTuningList{Object: "list", Data: jobs, HasMore: more}, err
	})
}

// getFineTuningJob answers GET /v1/fine_tuning/jobs/:id.
func (s *Server) getFineTuningJob(c *fiber.Ctx) error {
	return s.fineTuningJobOp(c, s.plane.GetFineTuningJob)
}

// cancelFineTuningJob answers POST /v1/fine_tuning/jobs/:id/cancel (no body).
func (s *Server) cancelFineTuningJob(c *fiber.Ctx) error {
	return s.fineTuningJobOp(c, s.plane.CancelFineTuningJob)
}

func (s *Server) fineTuningJobOp(c *fiber.Ctx, op func(context.Context, control.Caller, string, string) (*control.FineTuningJob, error)) error {
	vk, err := fineTuningVirtualKey(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	return fineTuningAnswer(s, c, func(ctx context.Context) (*control.FineTuningJob, error) {
		return op(ctx, callerOf(c), vk, id)
	})
}

// fineTuningJobItems answers GET /v1/fine_tuning/jobs/:id/events and /checkpoints with op.
func (s *Server) fineTuningJobItems(op func(context.Context, control.Caller, string, string, string, int) (*control.FineTuningList, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		vk, after, limit, err := fineTuningPage(c)
		if err != nil {
			return err
		}
		id := strings.Clone(c.Params("id"))
		return fineTuningAnswer(s, c, func(ctx context.Context) (*control.FineTuningList, error) {
			return op(ctx, callerOf(c), vk, id, after, limit)
		})
	}
}

// fineTuningAnswer runs fn with a context that ends when the caller goes away or the server's grace period at
// shutdown is over, as inference requests have (fn waits on providers), and writes its result as JSON. A
// provider's own error answer is written as it came, with its status; other errors go to the one error handler.
func fineTuningAnswer[T any](s *Server, c *fiber.Ctx, fn func(ctx context.Context) (T, error)) error {
	t := s.inflight.begin(c.UserContext(), c.Context().Conn())
	defer s.inflight.end(t)
	v, err := fn(t.ctx)
	s.inflight.unwatch(&t)
	var pe *mgmt.ProviderError
	switch {
	case errors.As(err, &pe):
		if json.Valid(pe.Body) {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		} else {
			c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
		}
		return c.Status(pe.Status).Send(pe.Body)
	case err != nil:
		return err
	}
	return c.JSON(v)
}

// fineTuningVirtualKey reads the required x-gateway-virtual-key.
func fineTuningVirtualKey(c *fiber.Ctx) (string, error) {
	return requiredVirtualKey(c, "fine-tuning jobs run on the provider it names")
}

// requiredVirtualKey reads x-gateway-virtual-key, which SPEC.md requires on the batch and fine-tuning endpoints;
// why says what it is for in the error when it is missing.
func requiredVirtualKey(c *fiber.Ctx, why string) (string, error) {
	vk := strings.TrimSpace(c.Get(HeaderVirtualKey))
	if vk == "" {
		return "", gwerr.BadRequest(HeaderVirtualKey, "%s is required: %s", HeaderVirtualKey, why)
	}
	return strings.Clone(vk), nil
}

// fineTuningPage reads the virtual key of a list request and the query's after (an ID) and limit (1 to 100,
// default 20).
func fineTuningPage(c *fiber.Ctx) (vk, after string, limit int, err error) {
	if vk, err = fineTuningVirtualKey(c); err != nil {
		return "", "", 0, err
	}
	limit = defaultFineTuningLimit
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxFineTuningLimit {
			return "", "", 0, gwerr.BadRequest("limit", "limit must be an integer from 1 to %d, not %q", maxFineTuningLimit, raw)
		}
		limit = n
	}
	after = c.Query("after")
	if len(after) > 256 || jsonfield.HasControl(after) {
		return "", "", 0, gwerr.BadRequest("after", "after must be the ID of the last item of the previous page")
	}
	return vk, strings.Clone(after), limit, nil
}
