// Package ratelimit enforces the rate-limit policies of workspaces on inference requests and MCP tool calls,
// and keeps their counters across restarts in storage's Counters.
//
// What a policy means:
//
//   - Policies belong to a workspace (storage's Policies). Only status "active" is enforced. A policy that
//     cannot be enforced (unknown type, unit or key) is skipped with a warning in the log; CheckKey lets writers
//     refuse such keys first.
//   - Keys of conditions and group_by: api_key (the gateway API key's ID), workspace_id, provider (the
//     x-gateway-provider header as sent: "openai", "@slug"), virtual_key (x-gateway-virtual-key), model (the
//     body's top-level "model", as schema.Body reads it), config (x-gateway-config when it names a saved config; "" for an inline
//     config), metadata.<name> (x-gateway-metadata), mcp_server (the registry ID of a tool call's upstream
//     server) and tool (the tool's bare name as its server knows it, not the listed "<server>__<tool>"). A
//     request without the attribute has "" for it.
//   - Tool calls and model requests are counted apart. A policy whose conditions or group_by name mcp_server or
//     tool applies to tool calls (Attrs.ToolCall) only; every other policy applies to model requests only, so a
//     "60 rpm per api_key" policy counts model requests as it always did and tool calls never use it up. For a
//     tool call api_key, workspace_id and metadata.<name> have their values; provider, virtual_key, model and
//     config are "". Whether a policy is one of tool calls is compiled with it: matching costs one more bool
//     comparison. A "tokens" policy cannot name mcp_server or tool (tool calls use no tokens): ReadPolicy and
//     ReadUsageLimit refuse it at "type", and one found in storage anyway is skipped with a warning.
//   - A condition holds when the attribute equals its value exactly; a policy applies when all its conditions
//     hold, so a policy without conditions applies to every request of its workspace.
//   - group_by gives each distinct value (with several keys, each tuple of values) its own counter; without
//     group_by the policy has one counter.
//   - type "requests" counts one per admitted request or tool call, refused when count + 1 > value. type
//     "tokens" counts the usage total_tokens that the caller reports with AddTokens after the answer; since a
//     request cannot know its cost in advance, it is admitted while the count is below value (refused when
//     count >= value) and its tokens are added afterwards.
//   - Windows slide: rpm counts the last 60 s, rph the last hour, rpd the last 24 h, each in 60 buckets (1 s, 1
//     min, 24 min). The count is the sum of the buckets of the last window; usage leaves it bucket by bucket.
//   - A request goes through only when every matched policy lets it: all are checked before any is counted,
//     and a refused request counts nowhere. The refusal (Exceeded) names the policy that frees up last, with
//     RetryAfter = the time until enough old buckets leave the window for the request to fit.
//   - Admission.Headers gives x-ratelimit-limit, -remaining and -reset of the most constrained matched policy
//     (lowest remaining share of its limit); reset is the time until the counted usage has left the window.
//   - A policy change (create, update, archive, delete) takes effect on the workspace's next request: the limiter
//     keeps each workspace's compiled active policies with the generation of the policy store they were read
//     at (storage's DocStore.Generation) and reads them again when it changed, which costs the common path one
//     atomic load. The generation is the whole policy store's, so a write in one workspace makes every workspace
//     list its policies once more: policy writes are rare, requests are not. An update that keeps type, unit
//     and group_by keeps the counts (a new value applies to them); any other change starts empty. Tokens reported
//     for a request admitted just before its policy was archived are not counted.
//
// Persistence: a counter is read from the store when it is first used in the process; changed counters are
// saved by a background flusher every FlushInterval (default 1 s) in one synced batch, and by Close. A restart
// therefore does not reset a day's window, and a crash loses at most FlushInterval of counts, which can only make
// the policies admit more afterwards, never refuse wrongly. Counts are not saved per request: encoding and
// writing a record costs a few microseconds and a couple of kilobytes of garbage (BenchmarkFlush, dirty), many
// times what Admit costs, and a synced write would add a disk flush to every request. A saved counter
// whose buckets have all left the window starts empty. Counters idle for a whole window are evicted from
// memory (and their records removed) by the flusher, so memory follows the groups active in the last window.
// Archiving a policy saves and drops its counters; deleting it removes its saved counters too, also for
// policies deleted while the gateway was not running (checked when a workspace is first seen).
//
// Cost: for a workspace with one or two active policies grouped by api_key, Admit takes well under a
// microsecond and allocates nothing once the counters exist (BenchmarkAdmit, TestAdmitAllocs). Counters live
// in one sync.Map per policy, keyed by the group's value itself when group_by has one key, each behind its own
// mutex.
//
// Budgets (usage-limit policies, budget*.go) are enforced by Budgets beside the Limiter, with the same Attrs,
// conditions and group_by (compiled by the same code, so that a key means exactly the same thing):
//
//   - A policy (storage's UsageLimits) caps the cost in USD ("cost") or the tokens ("tokens") of the requests it
//     matches, per group, at credit_limit; with periodic_reset "monthly" (from the 1st, 00:00 UTC) or "weekly"
//     (from Monday, 00:00 UTC) each group's spend and alert start again at the boundary (PeriodBounds).
//   - Reserve takes the request's largest possible use before it is routed: input tokens bounded by the body's
//     length in bytes (a token is rarely shorter than a byte), output by max_tokens, max_completion_tokens or
//     max_output_tokens, else the catalogue's MaxOutputTokens, else DefaultReserveOutputTokens; a cost policy
//     prices it at catalog.MaxPrice (the dearest provider of the model: the provider is not chosen yet; an
//     unpriced model reserves 0, logged once). It refuses the request when, for any matched policy, the group's
//     spend plus what running requests hold reserved already reaches credit_limit; all are checked, under the
//     groups' locks in policy-ID order, before any reserves, so a refused request holds nothing and concurrent
//     requests pass a limit by at most one request's reservation.
//   - A tool call is reserved by ReserveTool with its server's cost_per_call (storage.MCPServer.CostPerCall),
//     which only policies naming mcp_server or tool (all of type cost) see. Its cost is known in advance, so it is
//     refused when it would take the group past credit_limit, not only once the limit is reached: spend plus
//     reservations plus the call's cost must stay within credit_limit, give or take a billionth of it, since
//     sums of prices are not exact in binary (0.02 + 0.02 + 0.02 > 0.06). A limit of 0.06 with calls of 0.02
//     admits exactly three, also from concurrent calls. Hold.SettleTool counts the cost when the call was
//     forwarded to its server and releases it when it was not. With Redis it takes the same path as Reserve
//     and Settle below (shared spend read in one MGET, settled by INCRBYFLOAT).
//   - Hold.Settle, once per reservation, removes it and adds the real use (tokens, or the answer's catalogue cost;
//     0 and a warning once per model when unpriced); nil releases. The first time in a period that a group's
//     spend reaches alert_threshold it logs a warning and calls OnAlert. A group whose spend reached
//     credit_limit is exhausted until its period resets.
//   - Persistence: spend is read from storage's BudgetSpend when a group is first used, and saved by a flusher
//     every FlushInterval (1 s) in one synced batch, and by Close: a crash loses at most one interval of spend.
//     Reservations are never saved. Groups idle for 10 minutes with nothing reserved are dropped from memory.
//   - Policy changes apply on the workspace's next request (the generation of the UsageLimits store, as above);
//     an update that keeps type, periodic_reset and group_by keeps the spend, and an archived policy's spend is
//     kept in case it comes back. Deleting a policy removes its saved spend.
//   - Cost: in a workspace without usage-limit policies, Enforces and Reserve are a map read and an atomic load
//     and allocate nothing (BenchmarkReserveNoPolicy).
//
// Several replicas (Options.Redis, BudgetOptions.Redis; nil keeps everything above unchanged): the replicas
// count in Redis, so that 60 rpm means 60 across all of them.
//
//   - Admit makes one round trip per request that matched a policy: a Lua script (admitScript) over the shared
//     counter of every matched policy and group, a hash of bucket number → count under
//     Key("rl", workspace, policy, type, unit, sha256(group)[:16]) that expires a window and a bucket after its
//     last write. It drops the buckets that left the window, checks every policy with the same rule as above,
//     counts the requests policies only when all fit, and answers each counter's buckets. Bucket numbers come
//     from the caller's clock, so replicas must keep their clocks in step (NTP): a window ends at the newest
//     bucket any replica wrote. The answer fills scratch counters from which the Admission or Exceeded are
//     computed by the same code as locally, and is merged into the local counters (per bucket, the larger
//     count), so the flusher keeps saving the shared view and a fallback starts from it. Concurrent Admits share
//     a pipeline (admitBatch, a group commit): a request that finds one of two flights free sends at once, with
//     whatever is queued; the others queue and the first queued sends them all when a flight ends. A lone
//     request so waits for nothing more, while under load the write, the read and the wake-ups are paid per
//     pipeline; every caller still waits at most the client's Timeout, queueing included.
//   - AddTokens counts locally as before and queues the tokens for Redis (HINCRBYFLOAT into the counter's current
//     bucket): a bounded queue written in pipelines of up to 128 writes by one goroutine, every 2 ms at most, so
//     no request waits for it. A full queue drops the write (counted locally only) and says so in the log at
//     most every 10 s. A replica therefore sees another's tokens a few milliseconds late.
//   - Budgets keep the spend of each (policy, group, period) as a Redis number under
//     Key("budget", workspace, policy, type, reset, period start, sha256(group)[:16]), which expires a day after
//     its period ends (30 days after its last write without periodic reset; storage keeps the spend and seeds it
//     again). Reserve reads the spend of every matched group in one MGET and checks it plus this replica's own
//     reservations against credit_limit: reservations stay per replica, so concurrent requests on N replicas
//     can pass a limit by up to N requests' reservations. A key Redis lacks is seeded with the spend storage
//     saved (SET NX, first replica wins). Settle counts locally and queues INCRBYFLOAT through the same kind of
//     queue; the replica whose settlement took Redis's total across alert_threshold raises the alert, once. The
//     flusher saves the larger of the local and the last seen shared spend, so that the usage endpoint and a
//     restart without Redis stay right; Usage also reads the shared spend of the groups it lists.
//   - Redis down (redisstate.Client.Available false) or a failed call: the request is decided by the local
//     counters and spend, exactly as without Redis (they kept running, with the shared view merged in); the
//     failure is reported through redisstate.Failed, which logs it and counts it. When Redis answers again,
//     requests count there again; what replicas counted locally meanwhile is not copied up, so for one window
//     (or the rest of a budget's period) each replica's local counts are lost to the others. A Redis that
//     restarted empty starts every rate-limit window afresh; budget spend is seeded again from storage.
//   - A Redis Cluster is not supported: one request's counters may lie in different slots.
//   - Cost: BenchmarkAdmitRedis is one round trip (see BenchmarkRedisRoundTrip for the floor) plus about 20
//     allocations, most of them go-redis's arguments and reply; the process's CPU per Admit (cpu-ns/op) is
//     almost all the round trip's syscalls and wake-ups, not the script's answer. From 32 goroutines on one hot
//     counter (BenchmarkAdmitRedisHotKey32) the pipelines cut that CPU to about a third.
package ratelimit
