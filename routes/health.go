package routes

import (
	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// health answers GET /health without a key: 200 when the process serves and its store answers a read.
func (s *Server) health(c *fiber.Ctx) error {
	if _, err := s.store.Initialized(); err != nil {
		return &gwerr.Error{Status: fiber.StatusServiceUnavailable, Code: gwerr.CodeUnavailable, Message: "store unavailable", Err: err}
	}
	return c.JSON(fiber.Map{"status": "ok"})
}
