package runtime

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/cache"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/httpclient"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/storage"
)

// Options configure the engine. The zero value is usable but for Store.
type Options struct {
	// HostPolicy decides which custom hosts may be called. Default: loopback allowed, private ranges refused.
	HostPolicy *netguard.Policy
	// Resolver resolves custom host names for the policy check. Default net.DefaultResolver.
	Resolver netguard.Resolver
	// Transport replaces the pooled upstream transport (tests). Default: an httpclient.Transport whose dialer
	// enforces HostPolicy on every connection.
	Transport http.RoundTripper
	// AttemptTimeout bounds one upstream attempt when neither the config nor the request sets request_timeout.
	// Default 10 minutes: long generations are normal, hanging forever is not.
	AttemptTimeout time.Duration
	// RequestDeadline bounds finding the answer to one request: every upstream call, retry, wait and fallback
	// of it. A request still without an answer then gets 408. A stream that has begun is not cut by it (its
	// attempt's request_timeout bounds it, and it ends when the caller goes away). Default 10 minutes.
	RequestDeadline time.Duration
	// MaxUpstreamAttempts caps the upstream calls of one request, retries included (cache hits are not calls).
	// At the cap no retry, fallback or load-balance re-draw is made, and the caller gets the last attempt's
	// answer. Default 50.
	MaxUpstreamAttempts int
	// ConfigCacheSize bounds the compiled configs kept by hash. Default 1024.
	ConfigCacheSize int
	// Logger receives the engine's warnings. Default slog.Default().
	Logger *slog.Logger
	// PluginChecks resolves "<plugin>.<check>" ids of hooks and guardrails to wasm checks. Nil: none.
	PluginChecks guardrails.PluginChecks
	// CheckErrorsFail makes a check that errors count as failed when its parameters carry no failOnError
	// (--check-errors fail). Default false: it passes, as in Portkey. A check's own failOnError always wins.
	CheckErrorsFail bool
	// PluginCondition answers {"$plugin": ...} routing conditions with a workspace's wasm plugin. Nil: such
	// conditions never match.
	PluginCondition PluginCondition
	// RateLimiter enforces the workspaces' rate-limit policies. Nil: no limits.
	RateLimiter *ratelimit.Limiter
	// Budgets enforces the workspaces' usage-limit policies (budget_step.go). Nil: no budgets.
	Budgets *ratelimit.Budgets
	// Now is the clock of cache expiry and circuit breakers. Default time.Now.
	Now func() time.Time
	// Observer receives breaker changes and guardrail verdicts for the metrics. Nil: none.
	Observer Observer
	// Redis, when replicas run (--redis), shares the circuit breakers' state between them (breaker.go); Close
	// stops listening to it. The caller hands it to the store's response cache itself. Nil: this replica's own.
	Redis *redisstate.Client
}

// PluginCondition asks a workspace's wasm plugin whether a request matches a routing condition.
type PluginCondition func(ctx context.Context, workspaceID, pluginID string, in *hostapi.Input, req hostapi.RequestView) (bool, error)

// Engine executes inference requests: it picks the config, walks its strategy tree, calls providers with
// retries, timeouts and circuit breakers, and returns the answer to send. It is safe for concurrent use.
type Engine struct {
	store     *storage.Store
	client    *http.Client      // for adapters' own calls (Target.Client)
	transport http.RoundTripper // the client's transport, which attempts call directly
	configs   *config.PlanCache
	breakers  breakers
	guard     *netguard.Policy
	resolver  netguard.Resolver
	log       *slog.Logger

	hookSets        hookSets
	pluginChecks    guardrails.PluginChecks
	pluginCondition PluginCondition
	asyncSlots      chan struct{}
	limiter         *ratelimit.Limiter
	budgets         *ratelimit.Budgets
	semantic        *cache.Index
	observer        Observer

	attemptTimeout time.Duration
	deadline       time.Duration // Options.RequestDeadline
	maxAttempts    int           // Options.MaxUpstreamAttempts
	now            func() time.Time
	sleep          func(ctx context.Context, d time.Duration) error
	jitter         func(n int64) int64 // uniform in [0, n)
}

// New builds an engine over the store.
func New(store *storage.Store, opts Options) *Engine {
	if opts.HostPolicy == nil {
		opts.HostPolicy = &netguard.Policy{}
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = 10 * time.Minute
	}
	if opts.RequestDeadline <= 0 {
		opts.RequestDeadline = 10 * time.Minute
	}
	if opts.MaxUpstreamAttempts <= 0 {
		opts.MaxUpstreamAttempts = 50
	}
	if opts.ConfigCacheSize <= 0 {
		opts.ConfigCacheSize = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Transport == nil {
		opts.Transport = httpclient.New(httpclient.Options{Policy: opts.HostPolicy, Resolver: opts.Resolver})
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var vectors cache.VectorStore
	var refresh time.Duration
	if store != nil { // engines of unit tests run without a store
		vectors = store.Cache
		if store.Shared() { // other replicas add vectors this index must come to see
			refresh = cache.DefaultRefreshAfter
		}
	}
	e := &Engine{
		semantic:        cache.NewIndex(vectors, cache.IndexOptions{Now: opts.Now, Logger: opts.Logger, RefreshAfter: refresh}),
		limiter:         opts.RateLimiter,
		budgets:         opts.Budgets,
		observer:        opts.Observer,
		store:           store,
		client:          &http.Client{Transport: opts.Transport, CheckRedirect: noRedirects},
		transport:       opts.Transport,
		configs:         config.NewPlanCache(opts.ConfigCacheSize),
		guard:           opts.HostPolicy,
		resolver:        netguard.NewCachingResolver(opts.Resolver, 30*time.Second), // the dialer resolves afresh
		log:             opts.Logger,
		attemptTimeout:  opts.AttemptTimeout,
		deadline:        opts.RequestDeadline,
		maxAttempts:     opts.MaxUpstreamAttempts,
		pluginChecks:    opts.PluginChecks,
		hookSets:        hookSets{failChecks: opts.CheckErrorsFail},
		pluginCondition: opts.PluginCondition,
		asyncSlots:      make(chan struct{}, maxAsyncHooks),
		now:             opts.Now,
		sleep:           sleepCtx,
		jitter:          rand.Int64N,
	}
	if opts.Redis != nil {
		e.breakers.share(opts.Redis, opts.Now)
	}
	return e
}

// Close stops what New started beside the requests: listening to the other replicas' breakers. Safe to call
// more than once.
func (e *Engine) Close() {
	if sh := e.breakers.shared; sh != nil {
		sh.stop()
	}
}

// noRedirects keeps an upstream from sending the gateway (and the caller's credentials) elsewhere.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Do executes the request and returns the answer to send, or a *gwerr.Error for requests that cannot be
// routed at all (a bad config, no provider). Upstream failures come back as a Response with the provider's
// status and body. The request is bounded: cancelling ctx stops its upstream calls, Options.RequestDeadline
// ends it with 408 when no answer has begun by then, and Options.MaxUpstreamAttempts caps its calls.
func (e *Engine) Do(ctx context.Context, req *Request) (*Response, error) {
	plan, err := e.plan(req)
	if err != nil {
		return nil, err
	}
	st := &state{req: req, planHash: plan.Hash}
	if err := e.checkHooks(st, plan); err != nil {
		return nil, err
	}
	// The budget is asked first: a request the rate limiter then refuses releases its reservation, while one the
	// budget refuses is never counted by the rate limiter.
	hold, refused := e.reserveBudget(req)
	if refused != nil {
		return nil, refused
	}
	adm, refused := e.admit(req)
	if refused != nil {
		hold.settle(nil)
		return nil, refused
	}
	// The deadline cancels the context instead of being its deadline, so that it can be lifted from a stream
	// that has begun: the stream keeps the context until it is closed (Options.RequestDeadline).
	cancel := req.Cancel
	if cancel == nil {
		ctx, cancel = context.WithCancelCause(ctx)
	}
	timer := time.AfterFunc(e.deadline, func() { cancel(errRequestDeadline) })
	st.deadline = e.now().Add(e.deadline)
	out := e.exec(ctx, st, plan.Root)
	timer.Stop()
	req.Route = st.route
	if req.Cancel == nil {
		if s := out.stream; s != nil {
			endAttempt := s.cancel
			s.cancel = func() { endAttempt(); cancel(nil) }
		} else {
			cancel(nil)
		}
	}
	resp, err := out.response()
	if err != nil {
		hold.settle(nil)
		return nil, err
	}
	resp.Upstream, resp.Fallbacks = st.upstream, st.fallbacks
	messagesErrorAnswer(req, resp) // messages_step.go
	e.watchUsage(req, &adm, hold, resp)
	rateLimitHeaders(&adm, resp)
	return resp, nil
}
