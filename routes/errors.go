package routes

import (
	"context"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// toGatewayError is the one place where an error becomes a status and a code. A *gwerr.Error passes as it is;
// fiber's own errors (unknown route, wrong method, body too large) and deadlines get their codes; anything else
// is an internal error whose cause is logged, never shown.
func toGatewayError(c *fiber.Ctx, err error) *gwerr.Error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &gwerr.Error{Status: http.StatusRequestTimeout, Code: gwerr.CodeRequestTimeout, Message: "the request timed out", Err: err}
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return gwerr.Newf(fe.Code, gwerr.CodeNotFound, "no route for %s %s", c.Method(), c.Path())
		case fiber.StatusMethodNotAllowed:
			return gwerr.Newf(fe.Code, gwerr.CodeMethodNotAllowed, "method %s is not allowed on %s", c.Method(), c.Path())
		case fiber.StatusRequestEntityTooLarge:
			return gwerr.Newf(fe.Code, gwerr.CodeRequestTooLarge, "request body is larger than the limit of %d bytes", c.App().Config().BodyLimit)
		case fiber.StatusRequestTimeout:
			return gwerr.New(fe.Code, gwerr.CodeRequestTimeout, "the request was not received in time")
		case fiber.StatusRequestHeaderFieldsTooLarge:
			return gwerr.New(fe.Code, "request_headers_too_large", "request headers are too large")
		}
		if fe.Code >= 500 {
			return gwerr.Internal(err)
		}
		return &gwerr.Error{Status: fe.Code, Code: gwerr.CodeInvalidRequest, Message: fe.Message}
	}
	return gwerr.Internal(err)
}

// handleError is fiber's ErrorHandler: every error of every route, and of requests fasthttp refused before
// routing (a body over the limit), is answered here.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	ge := toGatewayError(c, err)
	trace := ensureTraceID(c)
	if ge.Status >= 500 {
		s.log.Error("request failed", "trace_id", trace, "method", c.Method(), "path", c.Path(),
			"status", ge.Status, "code", ge.Code, "err", errorString(ge))
	} else {
		s.log.Debug("request refused", "trace_id", trace, "method", c.Method(), "path", c.Path(),
			"status", ge.Status, "code", ge.Code, "message", ge.Message)
	}
	return writeError(c, ge)
}

func errorString(ge *gwerr.Error) string {
	if ge.Err != nil {
		return ge.Err.Error()
	}
	return ge.Message
}

func writeError(c *fiber.Ctx, ge *gwerr.Error) error {
	if isMessagesPath(c.Path()) {
		return writeMessagesError(c, ge) // Anthropic's envelope (messages.go)
	}
	body := ge.Body()
	for name, values := range ge.Header {
		for _, v := range values {
			c.Response().Header.Add(name, v)
		}
	}
	return c.Status(ge.Status).JSON(body)
}
