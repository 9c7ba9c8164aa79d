package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrNotFound is returned when a record does not exist. Callers test it with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a write would break a uniqueness rule (two workspaces with one slug, say).
var ErrConflict = errors.New("conflict")

// ErrWrongMasterKey is returned by Open when the master key is not the one the store was written with.
var ErrWrongMasterKey = errors.New("the master key does not open this store (was GATEWAY_MASTER_KEY or the key file changed?)")

// keyCheckPlaintext is sealed under keyKeyCheck when a store is created, to recognise a wrong master key at Open
// instead of failing later on every secret.
const keyCheckPlaintext = "gateway master key check v1"

// Options configure Open.
type Options struct {
	// MasterKey seals provider secrets and keys the hashes of gateway API keys. Required, MasterKeySize bytes.
	MasterKey []byte
	// InMemory keeps the whole store in memory, for tests. dir is then only a name.
	InMemory bool
	// Logger receives pebble's messages (at debug level) and its errors. Default: slog.Default().
	Logger *slog.Logger

	fs  vfs.FS           // tests replace the file system to simulate a crash
	now func() time.Time // tests pin the clock
	// feedCheck is how long PostgreSQL's change feed may be silent before its connection is pinged; tests
	// shorten it. Default pgFeedCheck.
	feedCheck time.Duration
}

// Store is the gateway's persistent state: one pebble database with typed stores over it. It is safe for
// concurrent use. Writes of user data are synced before they return, so an acknowledged write survives a crash.
type Store struct {
	db   kvEngine
	pdb  *pebble.DB // the embedded engine's database; nil on PostgreSQL
	keys *keyring
	log  *slog.Logger
	now  func() time.Time

	// writeMu serialises read-modify-write sequences (uniqueness checks, index updates), across replicas on a
	// shared engine. Reads never take it.
	writeMu sync.Locker

	listeners  changeListeners // OnChange
	localLocks localLocks      // Mutex, on the embedded engine
	leases     localLeases     // TryLease, on the embedded engine

	Workspaces *WorkspaceStore
	APIKeys    *APIKeyStore
	Providers  *ProviderStore
	Configs    *DocStore[Config, *Config]
	Prompts    *DocStore[Prompt, *Prompt]
	Guardrails *DocStore[Guardrail, *Guardrail]
	Policies   *DocStore[RateLimitPolicy, *RateLimitPolicy]

	// UsageLimits are the budgets (usage-limit policies); BudgetSpend their spend (storage/usagelimits.go).
	UsageLimits *DocStore[UsageLimitPolicy, *UsageLimitPolicy]
	BudgetSpend *BudgetStore

	Plugins    *PluginStore
	MCPServers *MCPServerStore  // upstream MCP servers (storage/mcpservers.go)
	PluginKV   *PluginKVStore   // the plugins' key-value entries (storage/pluginkv.go)
	Cache      *CacheStore      // the response cache (runtime/cache)
	Counters   *Counters        // the rate limiter's sliding-window counters
	Files      *FileStore       // uploaded files and batch outputs, in chunks
	Batches    *BatchStore      // batches, their progress and per-line results
	FineTuning *FineTuningStore // fine-tuning jobs forwarded to providers, and files mirrored to providers
	Logs       *LogStore        // the request log (package reqlog writes it)
}

// Open opens (creating if needed) the store in dir. A store written with another master key is refused with
// ErrWrongMasterKey; a folder held by another running gateway is refused too.
func Open(dir string, opts Options) (*Store, error) {
	keys, err := newKeyring(opts.MasterKey)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	fs := opts.fs
	if fs == nil {
		if opts.InMemory {
			fs = vfs.NewMem()
		} else {
			fs = vfs.Default
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("create data folder: %w", err)
			}
		}
	}
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: pebbleLogger{log}})
	if err != nil {
		if isLockHeld(err) {
			return nil, fmt.Errorf("open store %s: the folder is in use by another gateway process: %w", filepath.Clean(dir), err)
		}
		return nil, fmt.Errorf("open store %s: %w", filepath.Clean(dir), err)
	}
	s, err := newStore(pebbleEngine{db}, keys, log, opts.now)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.pdb = db
	return s, nil
}

// newStore builds the typed stores over an open engine and checks the master key. The caller closes db when it
// fails.
func newStore(db kvEngine, keys *keyring, log *slog.Logger, now func() time.Time) (*Store, error) {
	s := &Store{db: db, keys: keys, log: log, now: now}
	s.writeMu = s.Mutex("storage.write")
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	if err := s.checkMasterKey(); err != nil {
		return nil, err
	}
	s.Workspaces = &WorkspaceStore{s: s}
	s.APIKeys = &APIKeyStore{s: s, cache: make(map[apiKeyHash]*APIKey)}
	s.Providers = &ProviderStore{s: s}
	if err := s.Providers.sealClearSecrets(); err != nil {
		return nil, err
	}
	s.Configs = &DocStore[Config, *Config]{s: s, table: tableConfig}
	s.Prompts = &DocStore[Prompt, *Prompt]{s: s, table: tablePrompt}
	s.Guardrails = &DocStore[Guardrail, *Guardrail]{s: s, table: tableGuardrail}
	s.Policies = &DocStore[RateLimitPolicy, *RateLimitPolicy]{s: s, table: tablePolicy}
	s.MCPServers = &MCPServerStore{s: s}
	s.PluginKV = newPluginKVStore(s)
	s.Plugins = &PluginStore{docs: DocStore[Plugin, *Plugin]{s: s, table: tablePlugin}}
	s.Cache = &CacheStore{s: s}
	s.Counters = &Counters{s: s}
	s.UsageLimits = &DocStore[UsageLimitPolicy, *UsageLimitPolicy]{s: s, table: tableUsageLimit}
	s.BudgetSpend = &BudgetStore{s: s}
	s.Files = &FileStore{s: s}
	s.Batches = &BatchStore{s: s}
	s.FineTuning = &FineTuningStore{s: s}
	s.Logs = &LogStore{s: s}
	return s, nil
}

// Close flushes and closes the database. It is safe to call on a nil Store.
func (s *Store) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// isLockHeld recognises pebble's LOCK file being held: fcntl answers EAGAIN or EACCES from another process,
// pebble itself "lock held by current process".
func isLockHeld(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held")
}

func (s *Store) checkMasterKey() error {
	// Replicas starting together on a new shared store must not both write their own check: the second reads
	// the first's and is refused if its key differs.
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	sealed, err := s.get(keyKeyCheck)
	if errors.Is(err, ErrNotFound) {
		return s.db.Set(keyKeyCheck, s.keys.seal([]byte(keyCheckPlaintext), keyKeyCheck), pebble.Sync)
	}
	if err != nil {
		return err
	}
	plain, err := s.keys.open(sealed, keyKeyCheck)
	if err != nil || string(plain) != keyCheckPlaintext {
		return ErrWrongMasterKey
	}
	return nil
}

// deleteOne removes the record at k (ErrNotFound when there is none), then runs forget, still under the write
// lock and after the commit, to drop what a cache kept of it.
func (s *Store) deleteOne(k []byte, forget func()) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.get(k); err != nil {
		return err
	}
	b := s.db.NewBatch()
	if err := b.Delete(k, nil); err != nil {
		b.Close()
		return err
	}
	err := s.commit(b)
	forget()
	return err
}

// get returns a copy of the value at k, or ErrNotFound.
func (s *Store) get(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %s: %w", k, err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}

// scan calls fn with each key and value (valid only during the call) under prefix p, in key order.
func (s *Store) scan(p []byte, fn func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return fmt.Errorf("storage: scan %s: %w", p, err)
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("storage: scan %s: %w", p, err)
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("storage: scan %s: %w", p, err)
	}
	return nil
}

// commit applies b durably: it returns only once the batch is synced to disk.
func (s *Store) commit(b kvBatch) error {
	defer b.Close()
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("storage: commit: %w", err)
	}
	return nil
}

func getJSON[T any](s *Store, k []byte) (*T, error) {
	raw, err := s.get(k)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	return v, nil
}

func listJSON[T any](s *Store, p []byte) ([]*T, error) {
	var out []*T
	err := s.scan(p, func(k, raw []byte) error {
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("storage: decode %s: %w", k, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// Stamps are the creation and update times every record carries. Writers do not set them: the store does.
type Stamps struct {
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (st *Stamps) stamps() *Stamps { return st }

type stamped interface{ stamps() *Stamps }

// upsert stages v at k in b unless the stored record already holds the same content, keeping the stored
// CreatedAt. It reports whether anything changed, which makes applying the same input twice a no-op.
// The caller holds writeMu.
func upsert[T any, P interface {
	*T
	stamped
}](s *Store, b kvBatch, k []byte, v P) (changed bool, err error) {
	old, err := s.get(k)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	now := s.now()
	st := v.stamps()
	if old != nil {
		var prev Stamps
		if err := json.Unmarshal(old, &prev); err != nil {
			return false, fmt.Errorf("storage: decode %s: %w", k, err)
		}
		*st = prev
		same, err := json.Marshal(v)
		if err != nil {
			return false, err
		}
		if string(same) == string(old) {
			return false, nil
		}
		st.UpdatedAt = now
	} else {
		*st = Stamps{CreatedAt: now, UpdatedAt: now}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	return true, b.Set(k, raw, nil)
}

// Initialized reports whether the store has been through its first start.
func (s *Store) Initialized() (bool, error) {
	_, err := s.get(keyInitialized)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// DefaultWorkspaceSlug is the slug of the workspace made on the first start.
const DefaultWorkspaceSlug = "default"

// Initialize runs the first start, after the bootstrap file (if any) is applied. When no admin API key exists it
// makes sure workspace "default" exists, creates one admin API key in it (an organisation admin too) and marks the store initialized, all in
// one synced batch, and returns the new key's secret, which is not stored and cannot be shown again. When an
// admin key exists already (a bootstrap file's), a new one would be a credential nobody asked for: it only marks
// the store initialized and returns "". On a store that is already initialized it returns "" and does nothing.
func (s *Store) Initialize() (secret string, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if done, err := s.Initialized(); err != nil || done {
		return "", err
	}
	b := s.db.NewBatch()
	if admin, err := s.APIKeys.anyAdmin(); err != nil || admin {
		if err == nil {
			err = b.Set(keyInitialized, []byte(s.now().Format(time.RFC3339Nano)), nil)
		}
		if err != nil {
			b.Close()
			return "", err
		}
		return "", s.commit(b)
	}
	ws, err := s.Workspaces.bySlug(DefaultWorkspaceSlug)
	if errors.Is(err, ErrNotFound) {
		ws = &Workspace{ID: NewUUID(), Slug: DefaultWorkspaceSlug, OrganisationID: NewUUID(), Name: "Default"}
		if _, err := s.Workspaces.stage(b, ws); err != nil {
			b.Close()
			return "", err
		}
	} else if err != nil {
		b.Close()
		return "", err
	}
	secret = NewAPIKeySecret()
	k, err := s.APIKeys.stage(b, secret, &APIKey{WorkspaceID: ws.ID, Name: "first-start admin key", Admin: true,
		OrganisationAdmin: true})
	if err != nil {
		b.Close()
		return "", err
	}
	if err := b.Set(keyInitialized, []byte(s.now().Format(time.RFC3339Nano)), nil); err != nil {
		b.Close()
		return "", err
	}
	err = s.commit(b)
	s.Workspaces.cache.forget(string(key(tableWorkspace, ws.ID)))
	if err != nil {
		return "", err
	}
	s.APIKeys.remember(s.keys.hashAPIKey(secret), k)
	return secret, nil
}

// pebbleLogger sends pebble's chatter to debug and its errors to error.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}
