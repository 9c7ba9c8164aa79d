// Package console serves the gateway's web console: the static files of web/ (an HTML page, ES modules, style
// sheets and a vendored charting library, C2's), embedded in the binary, under /console (DESIGN.md "Operating
// the gateway (contract)").
//
// Everything it serves is public static content: the page asks for an admin API key itself and sends it to the
// admin API, so no key is needed to fetch the files. Every answer carries a strict Content-Security-Policy
// (only the gateway's own origin may be fetched from, no inline script or style, no framing), nosniff and
// no-referrer; files are revalidated on every load (Cache-Control: no-cache with a strong ETag), since their
// names are not content-hashed.
//
// It owns the embedded files and the way they are served, as a net/http handler that routes mounts (routes is
// the only package that imports fiber). It imports only the standard library.
//
// Example:
//
//	h := console.Handler("/console")
//	// GET /console, /console/ → index.html; /console/app.js → app.js; anything else under /console → 404
//
// The handler is safe for concurrent use.
package console
