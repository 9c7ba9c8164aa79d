package routes

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Gateway headers read or written by this package.
const (
	HeaderAPIKey  = "x-gateway-api-key"
	HeaderTraceID = "x-gateway-trace-id"
)

// maxTraceIDLength bounds a caller's trace ID; longer ones are refused so that logs stay sane.
const maxTraceIDLength = 256

type localKey int

const (
	localTraceID localKey = iota
	localAPIKey
)

// traceID gives every request a trace ID, the caller's or a new UUID, and echoes it on the response. It runs
// first, so that every answer carries it, errors included.
func traceID(c *fiber.Ctx) error {
	id := c.Get(HeaderTraceID)
	if id == "" {
		ensureTraceID(c)
		return c.Next()
	}
	if !validTraceID(id) {
		ensureTraceID(c)
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: HeaderTraceID,
			Message: "x-gateway-trace-id must be 1 to 256 printable ASCII characters"}
	}
	id = strings.Clone(id) // fiber reuses the request's buffers after the handler returns
	c.Locals(localTraceID, id)
	c.Set(HeaderTraceID, id)
	return c.Next()
}

// accessLog writes one debug line per request with its outcome. It answers errors itself (through the one
// error handler) so that the line shows the status the caller got.
func (s *Server) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	if err := c.Next(); err != nil {
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	s.log.Debug("request", "trace_id", ensureTraceID(c), "method", c.Method(), "path", c.Path(),
		"status", c.Response().StatusCode(), "duration", time.Since(start))
	return nil
}

// ensureTraceID returns the request's trace ID, making one if no middleware did (requests fasthttp refused
// before routing, or a caller's invalid one).
func ensureTraceID(c *fiber.Ctx) string {
	if id, ok := c.Locals(localTraceID).(string); ok {
		return id
	}
	id := c.Get(HeaderTraceID)
	if id != "" && validTraceID(id) {
		id = strings.Clone(id)
	} else {
		id = uuid.NewString()
	}
	c.Locals(localTraceID, id)
	c.Set(HeaderTraceID, id)
	return id
}

func validTraceID(id string) bool {
	if len(id) > maxTraceIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// authenticate admits a /v1 request only with a known x-gateway-api-key and records the key for handlers.
func (s *Server) authenticate(c *fiber.Ctx) error {
	secret := c.Get(HeaderAPIKey)
	if secret == "" {
		return &gwerr.Error{Status: fiber.StatusUnauthorized, Code: gwerr.CodeMissingAPIKey, Param: HeaderAPIKey,
			Message: "missing gateway API key: send it in the x-gateway-api-key header"}
	}
	k, err := s.store.APIKeys.Lookup(secret)
	if errors.Is(err, storage.ErrNotFound) {
		return &gwerr.Error{Status: fiber.StatusUnauthorized, Code: gwerr.CodeInvalidAPIKey, Param: HeaderAPIKey,
			Message: "invalid gateway API key"}
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	c.Locals(localAPIKey, k)
	return c.Next()
}

// callerKey returns the authenticated key of a /v1 request.
func callerKey(c *fiber.Ctx) *storage.APIKey {
	k, _ := c.Locals(localAPIKey).(*storage.APIKey)
	return k
}

// requireAdmin returns the caller's key when it has the admin right, else a 403.
func requireAdmin(c *fiber.Ctx) (*storage.APIKey, error) {
	k := callerKey(c)
	if k == nil || !k.Admin {
		return nil, gwerr.Forbidden("this operation needs an admin API key")
	}
	return k, nil
}

// requireOrgAdmin returns the caller's key when it has the organisation admin right, else a 403.
func requireOrgAdmin(c *fiber.Ctx) (*storage.APIKey, error) {
	k := callerKey(c)
	if k == nil || !k.OrganisationAdmin {
		return nil, gwerr.Forbidden("this operation needs an organisation admin API key")
	}
	return k, nil
}
