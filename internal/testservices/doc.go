// Package testservices hands tests the Redis and PostgreSQL servers named by the environment, for the shared-state
// backends (--redis, --postgres). It owns the test-side contract of .ci/services: the variables
// GATEWAY_TEST_REDIS_URL and GATEWAY_TEST_POSTGRES_URL name the servers, a test that needs one skips when its
// variable is empty, and GATEWAY_REQUIRE_SERVICES=1 (set by CI) turns that skip into a failure.
//
// Tests share the servers, with each other and with test binaries running at the same time, so each test works in
// a namespace of its own: PostgresSchemaURL gives it a fresh schema (dropped when the test ends), and RedisPrefix a
// random key prefix its keys must start with. Redis keys are not deleted afterwards: the servers hold nothing on
// disk and are thrown away, so tests should still set TTLs on anything they create in bulk.
//
// Start the servers for a shell with
//
//	eval "$(.ci/services env)"
//
// and use them in a test:
//
//	func TestStore(t *testing.T) {
//		url := testservices.PostgresSchemaURL(t) // skips without GATEWAY_TEST_POSTGRES_URL
//		...
//	}
//
// It imports pgx and the standard library only, and nothing of ours, so that any package's tests may use it. It
// must never be imported by non-test code.
package testservices
