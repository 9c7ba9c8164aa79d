package routes

import "github.com/gofiber/fiber/v2"

// batchRoutes registers the endpoints of this file under /v1.
func (s *Server) batchRoutes(v1 fiber.Router) {}
