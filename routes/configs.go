package routes

import "github.com/gofiber/fiber/v2"

// configRoutes registers the endpoints of this file under /v1.
func (s *Server) configRoutes(v1 fiber.Router) {}
