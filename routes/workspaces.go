package routes

import "github.com/gofiber/fiber/v2"

// workspaceRoutes registers the endpoints of this file under /v1.
func (s *Server) workspaceRoutes(v1 fiber.Router) {}
