package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// API names a provider management API.
type API int

// The management APIs.
const (
	Files API = iota + 1
	Batches
	FineTuning
)

// String names the API as messages do: "files", "batch", "fine-tuning".
func (a API) String() string {
	switch a {
	case Files:
		return "files"
	case Batches:
		return "batch"
	case FineTuning:
		return "fine-tuning"
	}
	return fmt.Sprintf("API(%d)", int(a))
}

// ErrUnsupported is wrapped by the 400 of Target when the stored provider has no such management API; test it
// with errors.Is (a batch, say, then runs gateway-managed instead).
var ErrUnsupported = errors.New("upstream: the provider has no such management API")

// CodeUnsupportedProvider is the error code of that 400.
const CodeUnsupportedProvider = "unsupported_provider"

// HeaderVirtualKey is the header that names the stored provider, which the errors of Target name as their param.
const HeaderVirtualKey = "x-gateway-virtual-key"

// Bounds of management calls.
const (
	// MaxAnswer bounds the answer of Do (and the error answers of file transfers): 16 MiB.
	MaxAnswer = 16 << 20
	// DefaultFileLimit bounds a file ImportFile copies, unless WithFileLimit says otherwise: 512 MiB, as the
	// gateway's --file-limit default.
	DefaultFileLimit = 512 << 20
	callTimeout      = 2 * time.Minute  // one JSON call (Do)
	transferTimeout  = 60 * time.Minute // one file upload or download
)

// Client calls providers' management APIs (files, batches, fine-tuning) for a workspace's stored providers.
type Client struct {
	store     *storage.Store
	engine    *runtime.Engine
	log       *slog.Logger
	fileLimit int64
	locks     keyedMutex // one transfer per file and stored provider at a time, so that a file is mirrored once
}

// New returns a client over the store's stored providers and files; engine resolves virtual keys and lends
// its pooled, host-guarded HTTP client. A nil log means slog.Default().
func New(store *storage.Store, engine *runtime.Engine, log *slog.Logger) *Client {
	if log == nil {
		log = slog.Default()
	}
	return &Client{store: store, engine: engine, log: log, fileLimit: DefaultFileLimit}
}

// WithFileLimit sets the largest file ImportFile copies into the gateway (the gateway's --file-limit; <= 0
// keeps DefaultFileLimit) and returns c. Call it before c is used.
func (c *Client) WithFileLimit(n int64) *Client {
	if n > 0 {
		c.fileLimit = n
	}
	return c
}

// Target resolves the workspace's stored provider named by virtualKey (x-gateway-virtual-key) for api. A provider
// without that API (anthropic, bedrock, vertex-ai, google, ...) gives ErrUnsupported wrapped in a *gwerr.Error 400
// with Param "x-gateway-virtual-key" saying "provider X has no <api> API"; an unknown virtual key a 400 naming it too.
func (c *Client) Target(ctx context.Context, workspaceID, virtualKey string, api API) (*Target, error) {
	if virtualKey == "" {
		return nil, gwerr.BadRequest(HeaderVirtualKey, "%s is required: it names the stored provider whose %s API serves this request",
			HeaderVirtualKey, api)
	}
	t, adapter, err := c.engine.ResolveVirtualKey(ctx, workspaceID, virtualKey)
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) && ge.Status == http.StatusNotFound {
			return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: HeaderVirtualKey, Err: err,
				Message: fmt.Sprintf("%s %q names no stored provider of this workspace", HeaderVirtualKey, virtualKey)}
		}
		return nil, err
	}
	m, ok := adapter.(providers.Manager)
	if !ok {
		return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: CodeUnsupportedProvider, Param: HeaderVirtualKey, Err: ErrUnsupported,
			Message: fmt.Sprintf("provider %s has no %s API (stored provider %q)", t.Provider, api, virtualKey)}
	}
	return &Target{c: c, ws: workspaceID, slug: virtualKey, t: t, m: m}, nil
}

// Target is one stored provider's management API, ready to call.
type Target struct {
	c    *Client
	ws   string
	slug string
	t    *providers.Target
	m    providers.Manager
}

// Provider is the canonical provider identifier ("openai", "azure-openai", ...).
func (t *Target) Provider() string { return t.t.Provider }

// VirtualKey is the stored provider's slug the target was resolved from.
func (t *Target) VirtualKey() string { return t.slug }

// ProviderError is a provider's own error answer (a status outside 2xx) to a call UploadFile or ImportFile made:
// callers pass Status and Body on unchanged, as the gateway does with every provider's errors.
type ProviderError struct {
	Provider string
	Status   int
	Body     []byte
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("upstream: %s answered %d", e.Provider, e.Status)
}

// Do sends a request to the provider API path below its base URL ("/batches", "/fine_tuning/jobs/ftjob-1/cancel"), with
// the target's authentication; body is JSON or nil. The answer body is read whole, bounded to 16 MiB.
// Any status the provider answers is returned as it is; err is a *gwerr.Error when no answer came (502, 408,
// or a 400 of the adapter that cannot address the API).
func (t *Target) Do(ctx context.Context, method, path string, query url.Values, body []byte) (status int, respBody []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var r io.Reader
	contentType := ""
	if body != nil {
		r, contentType = bytes.NewReader(body), "application/json"
	}
	resp, err := t.send(ctx, method, path, query, r, contentType, -1)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	respBody, err = t.read(ctx, resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, respBody, nil
}

// send makes one call; length, when >= 0, is the body's exact length.
func (t *Target) send(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string, length int64) (*http.Response, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, gwerr.Internal(fmt.Errorf("upstream: path %q does not start with /", path))
	}
	req, err := t.m.NewManagementRequest(ctx, t.t, method, path, query, body, contentType)
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return nil, ge
		}
		return nil, gwerr.Internal(fmt.Errorf("%s: build management request: %w", t.t.Provider, netguard.RedactError(err)))
	}
	if length >= 0 {
		req.ContentLength = length
	}
	resp, err := t.t.Client.Do(req)
	if err != nil {
		return nil, runtime.ManagementCallError(ctx, t.t, err)
	}
	return resp, nil
}

// read reads an answer whole, up to MaxAnswer.
func (t *Target) read(ctx context.Context, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxAnswer+1))
	if err != nil {
		return nil, runtime.ManagementCallError(ctx, t.t, err)
	}
	if len(data) > MaxAnswer {
		return nil, gwerr.Newf(http.StatusBadGateway, gwerr.CodeUpstream, "%s answered with more than %d bytes", t.t.Provider, MaxAnswer)
	}
	return data, nil
}

// keyedMutex hands out one lock per key, kept only while someone holds or waits for it.
type keyedMutex struct {
	mu   sync.Mutex
	held map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

// lock takes key's lock and returns its release.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.held == nil {
		k.held = make(map[string]*keyLock)
	}
	l := k.held[key]
	if l == nil {
		l = &keyLock{}
		k.held[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.held, key)
		}
		k.mu.Unlock()
	}
}
