package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Stored providers (virtual keys) of the caller's workspace, at /v1/providers and /v1/virtual-keys alike. Admin
// keys only. A provider reads back as the bootstrap item it was made from, with its secrets masked (api_key as
// "…" and its last four characters), plus object, workspace_id and its stamps; the operations are
// control.Plane's (control/providers.go).

// providerRoutes registers the endpoints of this file under /v1.
func (s *Server) providerRoutes(v1 fiber.Router) {
	for _, base := range []string{"/providers", "/virtual-keys"} {
		v1.Get(base, adminList(adminCaller, s.plane.ListProviders, viewProvider)) // ordered by slug
		v1.Post(base, s.createProvider)
		v1.Get(base+"/:slug", adminOne("slug", s.plane.GetProvider, viewProvider))
		v1.Put(base+"/:slug", s.replaceProvider)
		v1.Delete(base+"/:slug", s.deleteProvider)
	}
}

// viewProvider is a provider as the endpoints show it: its fields at the top level, as in a bootstrap item,
// every secret masked.
func viewProvider(pr *storage.Provider) map[string]any {
	v := make(map[string]any, len(pr.Fields)+7)
	for name, raw := range control.MaskProviderFields(pr) {
		v[name] = raw
	}
	v["object"], v["slug"], v["provider"], v["workspace_id"] = "provider", pr.Slug, pr.Provider, pr.WorkspaceID
	if pr.Name != "" {
		v["name"] = pr.Name
	}
	v["created_at"] = pr.CreatedAt.UTC().Format(time.RFC3339)
	v["updated_at"] = pr.UpdatedAt.UTC().Format(time.RFC3339)
	return v
}

// cursorList is the shape of the lists paged by limit and after: {"object": "list", "data": [...],
// "has_more": bool}.
type cursorList[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
}

// adminOne is the handler of an admin read of one record: the record the path parameter param names, read by
// get for the caller's workspace, answered as view shows it. Admin only.
func adminOne[R, V any](param string, get func(context.Context, control.Caller, string) (R, error), view func(R) V) fiber.Handler {
	return func(c *fiber.Ctx) error {
		caller, err := adminCaller(c)
		if err != nil {
			return err
		}
		r, err := get(c.UserContext(), caller, strings.Clone(c.Params(param)))
		if err != nil {
			return err
		}
		return c.JSON(view(r))
	}
}

// pagedList answers items as a page of a list ordered by id: the query's limit (1 to 100, default 20) and after
// (an id) choose the page; {object: "list", data, has_more}.
func pagedList[R, V any](c *fiber.Ctx, items []R, id func(R) string, view func(R) V) error {
	pg, err := cursorPage(c)
	if err != nil {
		return err
	}
	slices.SortFunc(items, func(a, b R) int { return strings.Compare(id(a), id(b)) })
	page, more := control.PageOf(items, id, pg)
	return answerPage(c, page, more, view)
}

// adminList is the handler of a list the control plane pages by limit and after: caller checks the right it
// needs (adminCaller, orgAdminCaller), list reads the page, view shows each record.
func adminList[R, V any](caller func(*fiber.Ctx) (control.Caller, error), list func(context.Context, control.Caller, control.Page) ([]R, bool, error), view func(R) V) fiber.Handler {
	return func(c *fiber.Ctx) error {
		who, err := caller(c)
		if err != nil {
			return err
		}
		pg, err := cursorPage(c)
		if err != nil {
			return err
		}
		page, more, err := list(c.UserContext(), who, pg)
		if err != nil {
			return err
		}
		return answerPage(c, page, more, view)
	}
}

// answerPage writes a page as {object: "list", data, has_more}.
func answerPage[R, V any](c *fiber.Ctx, page []R, more bool, view func(R) V) error {
	data := make([]V, 0, len(page))
	for _, r := range page {
		data = append(data, view(r))
	}
	return c.JSON(cursorList[V]{Object: "list", Data: data, HasMore: more})
}

// cursorPage reads the limit (1 to 100, default 20) and after query parameters.
func cursorPage(c *fiber.Ctx) (control.Page, error) {
	pg := control.Page{After: strings.Clone(c.Query("after"))}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > control.MaxPageLimit {
			return pg, gwerr.BadRequest("limit", "limit must be an integer from 1 to %d, not %q", control.MaxPageLimit, raw)
		}
		pg.Limit = n
	}
	return pg, nil
}

// rawBody returns a copy of the request's JSON body, refusing another content type or an empty body.
func rawBody(c *fiber.Ctx) ([]byte, error) {
	if err := requireJSON(c); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(c.Body())) == 0 {
		return nil, &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body is empty: send a JSON object"}
	}
	if !json.Valid(c.Body()) {
		var v any
		return nil, decodeJSON(c, &v) // the decoder's message names the line and column
	}
	return bytes.Clone(c.Body()), nil
}

// createProvider answers POST /v1/providers with a bootstrap "providers" item without "workspace" as the body.
func (s *Server) createProvider(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	body, err := rawBody(c)
	if err != nil {
		return err
	}
	pr, err := s.plane.CreateProvider(c.UserContext(), caller, body)
	if err != nil {
		return err
	}
	return c.JSON(viewProvider(pr))
}

// replaceProvider answers PUT /v1/providers/:slug: the body (as POST's; slug optional) replaces the provider.
func (s *Server) replaceProvider(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	body, err := rawBody(c)
	if err != nil {
		return err
	}
	pr, err := s.plane.ReplaceProvider(c.UserContext(), caller, strings.Clone(c.Params("slug")), body)
	if err != nil {
		return err
	}
	return c.JSON(viewProvider(pr))
}

// deleteProvider answers DELETE /v1/providers/:slug[?force=true].
func (s *Server) deleteProvider(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	force, err := queryForce(c)
	if err != nil {
		return err
	}
	slug := strings.Clone(c.Params("slug"))
	if err := s.plane.DeleteProvider(c.UserContext(), caller, slug, force); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"slug": slug, "object": "provider", "deleted": true})
}

// queryForce reads the optional force query parameter (true or false).
func queryForce(c *fiber.Ctx) (bool, error) {
	switch v := c.Query("force"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, gwerr.BadRequest("force", "force must be true or false, not %q", v)
	}
}
