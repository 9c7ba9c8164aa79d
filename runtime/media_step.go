package runtime

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// OpenAI's media endpoints (providers.MediaEndpoints: images, audio, moderations, rerank) go through the same
// steps as chat completions; this file holds what differs for them.
//
//   - A target whose provider does not serve the endpoint (providers.Serves) is not called: its leaf answers a
//     400 that names the endpoint and the provider. It is the gateway's own answer, made before any call, and a
//     fallback moves past it as past any other target that fails (DESIGN.md: without on_status_codes any status
//     outside 2xx falls back; with them, when they list 400).
//   - A multipart upload (images/edits, audio transcriptions and translations; Request.ContentType) goes upstream
//     as the caller sent it: override_params cannot apply to it (400 naming them), metadata._user does not fill
//     it, and a transformer's text is not written back (its verdict still counts).
//   - audio/speech answers bytes: a 2xx goes back open, as a raw stream (Response.Raw) that routes relays as it
//     arrives with the provider's content type; neither the usage watch nor output checks read it.
//   - Transcripts may be text, SRT or WebVTT: such a 2xx passes through with its content type; output checks
//     do not judge it (they have no JSON answer to put hook_results in).
//   - The cache keeps the JSON endpoints' answers (images/generations, moderations, rerank) as it keeps chat's;
//     uploads and audio are not cached (cacheable).

// checkMedia is a leaf's check of a media request before its hooks run: the target's provider serves the
// endpoint, and an upload is not to be patched.
func checkMedia(req *Request, n *config.Node, t *providers.Target, adapter providers.Adapter) *gwerr.Error {
	ep := req.Endpoint
	if !providers.Serves(adapter, ep) {
		return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest,
			Message: fmt.Sprintf("%s does not serve /v1%s", t.Provider, ep.Path())}
	}
	if req.ContentType != "" && len(n.OverrideParams) > 0 {
		return gwerr.BadRequest(configParam(n, "override_params"),
			"override_params cannot change a multipart upload (/v1%s): it goes upstream as it was sent", ep.Path())
	}
	return nil
}

// rawOutcome is a raw 2xx answer (audio), left open: closing it ends the attempt.
func rawOutcome(resp *http.Response, header http.Header, cancel context.CancelFunc) *outcome {
	return &outcome{status: resp.StatusCode, header: header, raw: true,
		stream: &attemptStream{ReadCloser: resp.Body, cancel: cancel}}
}

// unjudged reports whether output checks have nothing to read in an answer: audio, or a transcript that is not
// JSON. Such an answer passes unchanged (a failed input check without deny still makes it 246).
func unjudged(req *Request, out *outcome) bool {
	if !req.Endpoint.AnyAnswer() {
		return false
	}
	return out.raw || !isJSONType(out.header.Get("Content-Type"))
}

// isJSONType reports whether a content type is JSON's (or absent, which OpenAI-shaped answers mean as JSON).
func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
