package routes

import (
	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime"
)

// listModels serves GET /v1/models (DESIGN.md "Compatibility ingress"): OpenAI's model list. A request that
// names a provider (x-gateway-provider with Authorization, x-gateway-virtual-key, a config, or a custom host)
// gets that provider's list, translated to OpenAI's (runtime.Engine.ListModels); any other gets the
// catalogue's models of the workspace's stored providers, as "@slug/model" (runtime.Engine.WorkspaceModels).
func (s *Server) listModels(c *fiber.Ctx) error {
	key := callerKey(c)
	if c.Get(HeaderProvider) == "" && c.Get(HeaderVirtualKey) == "" && c.Get(HeaderConfig) == "" && c.Get(HeaderCustomHost) == "" {
		body, err := s.engine.WorkspaceModels(key.WorkspaceID)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	}
	req := &runtime.Request{URLPath: "/v1/models", Key: key, TraceID: ensureTraceID(c)}
	if err := readGatewayHeaders(c, req); err != nil {
		return err
	}
	req.Header = func(name string) string { return c.Get(name) }
	status, body, err := s.engine.ListModels(c.UserContext(), req) // the call is bounded by the engine
	req.Header = nil
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(body)
}
