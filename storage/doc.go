// Package storage owns the gateway's persistent state: one embedded pebble database in the data folder, with
// typed stores over it for workspaces, gateway API keys, providers (virtual keys), saved configs, prompts,
// guardrails, rate-limit and usage-limit policies, wasm plugins, rate-limit counters and budget spend, files,
// batches, responses, the request log and the response cache. It is the only package that imports pebble, and it
// imports nothing else of the gateway's but the leaf internal/jsonstr (the request log's hand encoder).
//
// The key layout is documented in keys.go. Values are JSON. What storage guarantees:
//
//   - Writes of user data are committed with pebble.Sync: once a Put returns, the record survives a crash or a
//     kill -9. Related keys (a record and its index) are written in one batch, so they never disagree.
//   - Gateway API keys are stored only as HMAC-SHA256 under a key derived from the master key; the secret
//     cannot be read back. Lookup keeps a positive cache in memory, so authenticating a request is one hash and
//     one map read.
//   - Provider secrets (SecretFields: api_key, cloud credentials, and custom_host, whose userinfo may hold a
//     password) are sealed with AES-256-GCM under a key derived from the master key and bound to the record's
//     key; Open seals any that an older gateway stored in clear. The master key comes from GATEWAY_MASTER_KEY
//     or from master.key (mode 0600) in the data folder; a store opened with another key is refused at Open
//     (ErrWrongMasterKey).
//   - Reads on the inference path do not wait for the disk: providers (opened) and records of the DocStores
//     (encoded) are kept in memory after their first read; writes through the store drop the copy.
//   - Rate-limit counters are saved in synced batches by the limiter's flusher (a crash loses at most one
//     flush interval). The response cache is written with pebble.NoSync: it can be rebuilt from the providers.
//   - Records carry created_at and updated_at, set by the store. Writing a record with unchanged content is a
//     no-op, which makes the bootstrap file idempotent.
//
// With --postgres, OpenPostgres keeps the same keys and values in PostgreSQL instead (table gateway_kv, bytea
// keys sorted bytewise as in pebble; postgres.go, schema versions in postgres_migrations.go), so that several
// gateway replicas share one state. Each batch commits in one transaction; a write to a record that replicas
// keep in memory announces its keys on the LISTEN/NOTIFY channel gateway_changes in that transaction, and the
// other replicas drop their copies (OnChange). Mutex is an advisory lock, TryLease a row of gateway_leases judged
// by the database's clock. Every statement is bounded by a timeout, and errors never show the URL's password.
//
// Storage calls do not take a context: they are local, bounded, and pebble cannot cancel them.
// A *Store is safe for concurrent use; records it returns are the caller's, except APIKeyStore.Lookup's, which
// are shared and read-only.
package storage
