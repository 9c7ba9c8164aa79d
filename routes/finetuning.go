package routes

import "github.com/gofiber/fiber/v2"

// fineTuningRoutes registers the endpoints of this file under /v1.
func (s *Server) fineTuningRoutes(v1 fiber.Router) {}
