// Package cache holds the building blocks of the response cache (config "cache": {"mode": "simple" |
// "semantic", "max_age"}): the exact-match key, the semantic partition and query, the stream recorder that
// turns a streamed answer into the answer to cache, the replay that turns a cached answer into a stream, and
// the semantic vector index. The engine (runtime) decides when to use them; answers themselves are stored by
// storage.CacheStore. It imports storage (for the vector store's types) and the standard library only, never
// routes, the providers or the rest of runtime.
//
// Decisions (DESIGN.md, "Cache"):
//
//   - The key (KeyOf) covers the workspace, the resolved target (provider and base URL), the endpoint, the
//     request body without "stream" and "stream_options" (so the model and every parameter), and the scope:
//     x-gateway-cache-namespace when set, which replaces the metadata; otherwise the x-gateway-metadata pairs.
//     The body is canonicalised (members sorted at every level, white space removed, values kept as written),
//     so key order and formatting never split the cache, while a different spelling of a value (0.2, 0.20)
//     only costs a miss. Streamed and non-streamed requests share one answer: Replay serves a stored answer as
//     a stream, NewRecorder turns a stream into the answer to store.
//   - Replay's stream is what OpenAI sends: "data: <chunk>\n\n" events of chat.completion.chunk (or
//     text_completion) objects with the stored id, created and model; per choice a role chunk, the content in
//     one chunk, one chunk per tool call and a chunk with the finish_reason; a usage chunk (choices []) only
//     when the stored answer has usage; then "data: [DONE]\n\n". The OpenAI SDK's accumulator reads it back
//     to the stored answer (replay_test.go).
//   - Only 2xx answers are stored, and only whole ones: that is the caller's job for non-streamed answers;
//     NewRecorder only calls back for a stream that reached [DONE] without an error event.
//   - max_age is in seconds, default 7 days; an entry past it reads as a miss and is deleted by
//     storage.CacheStore.Sweep. x-gateway-cache-force-refresh skips the lookup and overwrites the entry.
//   - Storage compresses bodies with zstd and writes with pebble.NoSync: a cache can be rebuilt, so a crash
//     costs at most some misses, and a cache write never waits for the disk.
//   - Semantic mode: Partition puts requests that differ only in the wording of their last user message in
//     one partition; the caller embeds the query text, Index.Search finds the nearest earlier query (cosine
//     similarity, DefaultThreshold 0.95 unless configured), and the hit serves the answer stored under that
//     query's exact key. A semantic lookup runs only after an exact miss. Index keeps vectors in memory,
//     bounded (IndexOptions: 50,000 entries, 50,000 a partition), scans partitions of up to 2000 entries and
//     uses an HNSW graph above that, and persists them through storage so that hits survive a restart. The
//     graph is this package's own (hnsw.go): github.com/coder/hnsw v0.6.1, its only published version, misses
//     about half of the near-duplicates the cache exists to find and can panic after a Delete.
//   - Several replicas: answers live in Redis when --redis is set (storage.CacheStore.UseRemote), and vectors in
//     the store, which --postgres shares. Each replica keeps its own Index, so a partition it loaded would never
//     see vectors other replicas add after; over a shared store the engine sets IndexOptions.RefreshAfter
//     (DefaultRefreshAfter, 5 s): a search that misses reloads its partition when the last load is older, adding
//     what the store has and the partition lacks, at most once per partition per period, and searches again.
//     So another replica's new answer is found semantically within about 5 s (exact hits share at once). A
//     refresh of a partition of 1,000 vectors of 1536 dimensions costs about 10 ms and 6.6 MB of garbage over
//     the embedded store (BenchmarkIndexRefresh1000), plus the transfer from PostgreSQL; vectors removed on
//     another replica stay here until they expire or are evicted (their answers, gone, then read as misses).
//
// Typical use by the engine, for a non-streamed chat request with mode "simple":
//
//	key, err := cache.KeyOf(ws, cache.Target{Provider: "openai", BaseURL: base}, "chat/completions", body, ns, md)
//	if err == nil && !forceRefresh {
//		if a, ok, _ := store.Cache.Get(ws, key, now); ok {
//			return a // x-gateway-cache-status: HIT
//		}
//	}
//	// call the provider; on a 2xx answer:
//	store.Cache.Put(ws, key, &storage.CachedAnswer{Status: 200, ContentType: ct, Body: body, ExpiresAt: now.Add(maxAge)})
//
// and for a streamed one, wrap the upstream stream with NewRecorder(stream, func(answer []byte) { Put(...) }),
// and serve a hit to a streaming caller with Replay(a.Body).
package cache
