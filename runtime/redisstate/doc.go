// Package redisstate owns the gateway's connection to Redis (or Valkey) when it runs as several replicas
// (--redis URL, DESIGN.md "Several replicas"): one go-redis client, the key prefix every shared key carries,
// and the one view of whether Redis is reachable that every user of it shares.
//
// Redis holds hot state only (rate-limit windows, budget spend, the response cache, circuit-breaker state):
// losing it must never stop the gateway. So every call is bounded by short timeouts and no retries; a failed
// call marks Redis down, the users fall back (limits to local counting, the cache to a miss, breakers to this
// replica's own), a probe pings it every second, and the first good answer marks it up again. Each transition
// is logged once and reported to OnState (the gateway_redis_up gauge); each failed call to OnError
// (gateway_redis_errors_total{op}). Available is one atomic load, so a replica whose Redis is down pays nothing
// per request for trying.
//
// redisstate imports go-redis and nothing of the gateway's; runtime's users (runtime/ratelimit, the response
// cache, the breakers) take a *Client. Client.Cache (cache.go) keeps the response cache's answers for
// storage.CacheStore.UseRemote; Client.Breakers (breakers.go) counts circuit-breaker failures and carries the
// openings and closings between replicas.
package redisstate
