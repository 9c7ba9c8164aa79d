package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgMigrations are the schema's versions, in order: pgMigrations[i] takes the database to version i+1. A
// migration is only ever appended, never edited, since replicas of an older gateway may still run against it.
var pgMigrations = []string{
	// v1: bytea compares bytewise, which is pebble's key order, so the engine's iterators need no collation.
	`CREATE TABLE gateway_kv (
		k bytea PRIMARY KEY,
		v bytea NOT NULL
	);
	CREATE TABLE gateway_leases (
		name       text PRIMARY KEY,
		owner      text NOT NULL,
		expires_at timestamptz NOT NULL
	)`,
}

// pgMigrationLock is the first half of the advisory lock migrations hold; the second half is the schema's
// hash, so that gateways on different schemas of one database do not wait for each other.
const pgMigrationLock = 0x6777 // "gw"

// migrate brings the schema to the newest version this gateway knows, in one transaction under an advisory
// lock, so that replicas starting together apply each migration once. A schema newer than this gateway is
// refused: an older binary would write records the newer one no longer reads.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, pgMigrationLock); err != nil {
			return fmt.Errorf("lock the schema for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS gateway_schema_migrations (
			version    int PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create gateway_schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM gateway_schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if current > len(pgMigrations) {
			return fmt.Errorf("the database schema is version %d, newer than this gateway (%d): upgrade the gateway",
				current, len(pgMigrations))
		}
		for v := current + 1; v <= len(pgMigrations); v++ {
			if _, err := tx.Exec(ctx, pgMigrations[v-1]); err != nil {
				return fmt.Errorf("apply schema version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO gateway_schema_migrations (version, applied_at) VALUES ($1, now())`, v); err != nil {
				return fmt.Errorf("record schema version %d: %w", v, err)
			}
		}
		return nil
	})
}
