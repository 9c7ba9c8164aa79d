package routes

import "github.com/gofiber/fiber/v2"

// providerRoutes registers the endpoints of this file under /v1.
func (s *Server) providerRoutes(v1 fiber.Router) {}
