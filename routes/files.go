package routes

import "github.com/gofiber/fiber/v2"

// fileRoutes registers the endpoints of this file under /v1.
func (s *Server) fileRoutes(v1 fiber.Router) {}
