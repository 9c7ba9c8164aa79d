package routes

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// Gateway request headers of inference requests (SPEC.md "Authentication").
const (
	HeaderProvider       = "x-gateway-provider"
	HeaderVirtualKey     = "x-gateway-virtual-key"
	HeaderConfig         = "x-gateway-config"
	HeaderCustomHost     = "x-gateway-custom-host"
	HeaderMetadata       = "x-gateway-metadata"
	HeaderRequestTimeout = "x-gateway-request-timeout"
	HeaderForward        = "x-gateway-forward-headers"
	HeaderCacheRefresh   = "x-gateway-cache-force-refresh"
	HeaderCacheNamespace = "x-gateway-cache-namespace"
)

// Response headers of inference answers (DESIGN.md's contract).
const (
	HeaderAnswerProvider = "x-gateway-provider"
	HeaderRetryCount     = "x-gateway-retry-attempt-count"
	HeaderOptionIndex    = "x-gateway-last-used-option-index"
	HeaderCacheStatus    = "x-gateway-cache-status"
	// HeaderCost is the answer's cost in USD, priced from the model catalogue, when the answer is whole, reports
	// its usage, and the catalogue prices its model.
	HeaderCost = "x-gateway-cost-usd"
)

// maxMetadataPairs bounds x-gateway-metadata.
const maxMetadataPairs = 64

// readGatewayHeaders parses the gateway headers of an inference request into req. Every value is copied:
// fiber reuses the request's buffers.
func readGatewayHeaders(c *fiber.Ctx, req *runtime.Request) error {
	req.Provider = strings.TrimSpace(c.Get(HeaderProvider))
	req.VirtualKey = strings.TrimSpace(c.Get(HeaderVirtualKey))
	req.CustomHost = strings.TrimSpace(c.Get(HeaderCustomHost))
	if auth := c.Get(fiber.HeaderAuthorization); auth != "" {
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			token, ok = strings.CutPrefix(auth, "bearer ")
		}
		if !ok {
			return gwerr.BadRequest("authorization", "Authorization must be \"Bearer <provider token>\"")
		}
		// The gateway key sent again as the Bearer token (a client given one key for both) is no provider's
		// token: it never goes upstream.
		if token = strings.TrimSpace(token); token != c.Get(HeaderAPIKey) {
			req.Authorization = strings.Clone(token)
		}
	}
	req.Provider = strings.Clone(req.Provider)
	req.VirtualKey = strings.Clone(req.VirtualKey)
	req.Config = configTexts.intern(c.Get(HeaderConfig))
	req.CustomHost = strings.Clone(req.CustomHost)

	var err error
	if req.Metadata, err = readMetadata(c); err != nil {
		return err
	}
	if raw := c.Get(HeaderRequestTimeout); raw != "" {
		ms, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || ms <= 0 {
			return gwerr.BadRequest(HeaderRequestTimeout, "x-gateway-request-timeout must be a whole number of milliseconds above 0, not %q", raw)
		}
		req.Timeout = time.Duration(ms) * time.Millisecond
	}
	if raw := strings.TrimSpace(c.Get(HeaderForward)); raw != "" {
		names, err := parseHeaderList(raw)
		if err != nil {
			return gwerr.BadRequest(HeaderForward, "%v", err)
		}
		req.ForwardNames = names
	}
	if raw := c.Get(HeaderCacheRefresh); raw != "" {
		refresh, err := strconv.ParseBool(raw)
		if err != nil {
			return gwerr.BadRequest(HeaderCacheRefresh, "x-gateway-cache-force-refresh must be true or false")
		}
		req.CacheRefresh = refresh
	}
	req.CacheNS = strings.Clone(c.Get(HeaderCacheNamespace))
	return nil
}

// readMetadata parses x-gateway-metadata: a JSON object of at most maxMetadataPairs string values; nil when the
// header is absent.
func readMetadata(c *fiber.Ctx) (map[string]string, error) {
	raw := c.Get(HeaderMetadata)
	if raw == "" {
		return nil, nil
	}
	var md map[string]any
	if err := json.Unmarshal([]byte(raw), &md); err != nil || md == nil {
		return nil, gwerr.BadRequest(HeaderMetadata, "x-gateway-metadata must be a JSON object of string values")
	}
	if len(md) > maxMetadataPairs {
		return nil, gwerr.BadRequest(HeaderMetadata, "x-gateway-metadata has %d keys; at most %d are allowed", len(md), maxMetadataPairs)
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		s, ok := v.(string)
		if !ok {
			return nil, gwerr.BadRequest(HeaderMetadata, "x-gateway-metadata value of %q must be a string", k)
		}
		out[k] = s
	}
	return out, nil
}

// configTexts holds the x-gateway-config values seen lately: callers send the same few configs over and over,
// and a request whose config is held takes the held string instead of a copy of the header's bytes.
var configTexts = textInterner{maxEntries: 256, maxLen: 16 << 10}

// textInterner hands out one string per distinct text, safe to keep past the handler: the one it holds when
// it holds the text, else a copy. It holds at most maxEntries texts of at most maxLen bytes each, and starts
// over when full. It is safe for concurrent use.
type textInterner struct {
	maxEntries, maxLen int

	mu    sync.RWMutex
	texts map[string]string
}

// intern returns s, or a held string of the same text; s may alias a buffer that is reused later.
func (in *textInterner) intern(s string) string {
	if s == "" {
		return ""
	}
	in.mu.RLock()
	held, ok := in.texts[s]
	in.mu.RUnlock()
	if ok {
		return held
	}
	owned := strings.Clone(s)
	if len(owned) > in.maxLen {
		return owned
	}
	in.mu.Lock()
	if in.texts == nil || len(in.texts) >= in.maxEntries {
		in.texts = make(map[string]string, in.maxEntries)
	}
	in.texts[owned] = owned
	in.mu.Unlock()
	return owned
}

// parseHeaderList reads header names separated by commas, or a JSON array of strings.
func parseHeaderList(raw string) ([]string, error) {
	var names []string
	if strings.HasPrefix(raw, "[") {
		if err := json.Unmarshal([]byte(raw), &names); err != nil {
			return nil, errBadHeaderList
		}
	} else {
		for _, n := range strings.Split(raw, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	out := names[:0]
	for _, n := range names {
		if n == "" {
			continue
		}
		if !validHeaderName(n) {
			return nil, errBadHeaderList
		}
		out = append(out, n)
	}
	return out, nil
}

var errBadHeaderList = errors.New("x-gateway-forward-headers must list header names separated by commas (or a JSON array of names)")

func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
