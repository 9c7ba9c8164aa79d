package routes

import (
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/llmgw/gateway/console"
)

// consolePrefix is where the web console is served (DESIGN.md "Operating the gateway (contract)").
const consolePrefix = "/console"

// consoleRoutes mounts the web console: public static files, outside the /v1 group and its key check (the page
// asks for the admin key and sends it to the admin API itself). The console package sets every header; fiber's
// non-strict routing lets "/console/" reach the first route, and the handler tells it from "/console" by the
// raw path, so neither redirects. Every method goes to the handler, which answers all but GET and HEAD with its
// own 405: the router's would lack the console's security headers.
func (s *Server) consoleRoutes() {
	h := adaptor.HTTPHandler(console.Handler(consolePrefix))
	s.app.All(consolePrefix, h)
	s.app.All(consolePrefix+"/*", h)
}
