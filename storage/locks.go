package storage

import (
	"errors"
	"sync"
	"time"
)

// sharedEngine is an engine that other gateway processes write to as well (PostgreSQL). What one process
// serialises with a mutex, replicas serialise through it.
type sharedEngine interface {
	kvEngine
	// lock returns a lock on name held across every process of the engine; Lock blocks until it is held.
	lock(name string) sync.Locker
	// tryLease takes or renews the lease on name for owner until ttl from now, and reports whether owner holds
	// it: a lease held by another owner is taken only once it expired.
	tryLease(name, owner string, ttl time.Duration) (bool, error)
	// releaseLease ends owner's lease on name; a lease owner does not hold is left alone.
	releaseLease(name, owner string) error
}

// Shared reports whether other gateway processes use this store too (PostgreSQL): what they write reaches this
// one's caches through the change feed (OnChange).
func (s *Store) Shared() bool {
	_, ok := s.db.(sharedEngine)
	return ok
}

// Mutex returns the lock named name: within this process on the embedded engine, across every replica on a
// shared one. Control-plane writes that check before they write (an ID is free, a record exists) hold it.
func (s *Store) Mutex(name string) sync.Locker {
	if se, ok := s.db.(sharedEngine); ok {
		return se.lock(name)
	}
	s.localLocks.mu.Lock()
	defer s.localLocks.mu.Unlock()
	if s.localLocks.m == nil {
		s.localLocks.m = map[string]*sync.Mutex{}
	}
	m, ok := s.localLocks.m[name]
	if !ok {
		m = new(sync.Mutex)
		s.localLocks.m[name] = m
	}
	return m
}

type localLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// ErrLeaseName is returned for a lease name that is empty or longer than MaxLeaseName.
var ErrLeaseName = errors.New("storage: lease name and owner must be 1 to 200 bytes")

// MaxLeaseName bounds lease names and owners.
const MaxLeaseName = 200

// TryLease takes or renews the lease on name for owner until ttl from now, and reports whether owner holds it.
// A lease another owner holds is taken only after it expired, so a replica that died leaves its work to the
// others once its leases run out. On the embedded engine leases are this process's alone.
func (s *Store) TryLease(name, owner string, ttl time.Duration) (bool, error) {
	if name == "" || owner == "" || len(name) > MaxLeaseName || len(owner) > MaxLeaseName {
		return false, ErrLeaseName
	}
	if se, ok := s.db.(sharedEngine); ok {
		return se.tryLease(name, owner, ttl)
	}
	l := &s.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if cur, ok := l.m[name]; ok && cur.owner != owner && now.Before(cur.until) {
		return false, nil
	}
	if l.m == nil {
		l.m = map[string]localLease{}
	}
	l.m[name] = localLease{owner: owner, until: now.Add(ttl)}
	return true, nil
}

// ReleaseLease ends owner's lease on name, so that another owner may take it at once.
func (s *Store) ReleaseLease(name, owner string) error {
	if name == "" || owner == "" || len(name) > MaxLeaseName || len(owner) > MaxLeaseName {
		return ErrLeaseName
	}
	if se, ok := s.db.(sharedEngine); ok {
		return se.releaseLease(name, owner)
	}
	l := &s.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.m[name]; ok && cur.owner == owner {
		delete(l.m, name)
	}
	return nil
}

type localLeases struct {
	mu sync.Mutex
	m  map[string]localLease
}

type localLease struct {
	owner string
	until time.Time
}
