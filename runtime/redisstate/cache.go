package redisstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxCacheValue bounds an answer kept in Redis (encoded, so compressed). Every call shares Timeout (250 ms by
// default), and a read that outlasts it marks Redis down for every user; a larger answer is not shared.
const MaxCacheValue = 4 << 20

// Cache keeps the response cache's answers in Redis, shared by every replica: storage.CacheRemote (the caller
// hands it to storage.CacheStore.UseRemote). Keys are the prefix followed by the store's key; each answer
// expires with its TTL, so Redis needs no sweeping. While Redis is down Get is a miss and Set and Delete do
// nothing, without a call.
type Cache struct{ c *Client }

// Cache returns the response cache over c.
func (c *Client) Cache() *Cache { return &Cache{c: c} }

// Get returns the value under key. A missing key is ok=false with no error.
func (r *Cache) Get(key string) ([]byte, bool, error) {
	if !r.c.Available() {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.c.Timeout())
	defer cancel()
	v, err := r.c.rdb.Get(ctx, r.c.Key(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		r.c.Failed("cache", err)
		return nil, false, err
	}
	return v, true, nil
}

// Set keeps value under key for ttl (at least a millisecond: SET PX).
func (r *Cache) Set(key string, value []byte, ttl time.Duration) error {
	if len(value) > MaxCacheValue {
		return fmt.Errorf("cached answer of %d bytes exceeds the shared cache's %d", len(value), MaxCacheValue)
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("cached answer TTL %v is below a millisecond", ttl)
	}
	if !r.c.Available() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.c.Timeout())
	defer cancel()
	// go-redis sends EX for whole seconds and PX otherwise: the TTL is kept to the millisecond either way.
	err := r.c.rdb.Set(ctx, r.c.Key(key), value, ttl).Err()
	r.c.Failed("cache", err)
	return err
}

// Delete removes the value under key, if any.
func (r *Cache) Delete(key string) error {
	if !r.c.Available() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.c.Timeout())
	defer cancel()
	err := r.c.rdb.Del(ctx, r.c.Key(key)).Err()
	r.c.Failed("cache", err)
	return err
}
