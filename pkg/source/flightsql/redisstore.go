// The result cache in Redis (or Valkey): shared by every Grafana replica.

package flightsql

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quiverdata/quiver/pkg/settings"
)

// Redis is asked with a short deadline: a query never waits long on the
// cache, whose worst case is the full query it would have run anyway. A
// failed call makes the store skip Redis for redisRetry (every query is
// full meanwhile, its stats saying why), then try again.
const (
	redisTimeout = 500 * time.Millisecond
	redisRetry   = 10 * time.Second
)

// errRedisSkipped is a call not made while Redis is skipped after a failure.
var errRedisSkipped = errors.New("Redis failed less than 10 s ago; not asked")

// redisStore is a Store in Redis: keys are the prefix and the entry's key,
// values the entries, each with a time to live.
type redisStore struct {
	client *redis.Client
	prefix string
	ttl    time.Duration

	mu     sync.Mutex
	failed time.Time // the last failure; zero: none since the last success
	now    func() time.Time
}

func newRedisStore(cfg settings.FlightSQL) *redisStore {
	opts := &redis.Options{
		Addr: cfg.RedisAddress, Username: cfg.RedisUsername, Password: cfg.RedisPassword.Reveal(),
		DialTimeout: redisTimeout, ReadTimeout: redisTimeout, WriteTimeout: redisTimeout, PoolTimeout: redisTimeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, // a failure is skipped, not retried in the query
		DisableIdentity:          true, // no CLIENT SETINFO, which Valkey and older Redis refuse
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if cfg.RedisTLS {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return &redisStore{client: redis.NewClient(opts), prefix: cfg.RedisKeyPrefix, ttl: time.Duration(cfg.RedisTTL) * time.Second, now: time.Now}
}

// call runs fn with a deadline, unless Redis failed less than redisRetry
// ago, and notes how it went.
func (r *redisStore) call(fn func(ctx context.Context) error) error {
	r.mu.Lock()
	skip := !r.failed.IsZero() && r.now().Sub(r.failed) < redisRetry
	r.mu.Unlock()
	if skip {
		return errRedisSkipped
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	err := fn(ctx)
	if errors.Is(err, redis.Nil) {
		err = nil // no such key: a success
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = time.Time{}
	if err != nil {
		r.failed = r.now()
		return fmt.Errorf("Redis at %s: %w", r.client.Options().Addr, err)
	}
	return nil
}

func (r *redisStore) Get(key string) (b []byte, err error) {
	err = r.call(func(ctx context.Context) (err error) {
		b, err = r.client.Get(ctx, r.prefix+key).Bytes()
		return err
	})
	return b, err
}

func (r *redisStore) Put(key string, b []byte) error {
	return r.call(func(ctx context.Context) error { return r.client.Set(ctx, r.prefix+key, b, r.ttl).Err() })
}

func (r *redisStore) Delete(key string) error {
	return r.call(func(ctx context.Context) error { return r.client.Del(ctx, r.prefix+key).Err() })
}

func (r *redisStore) Close() error { return r.client.Close() }
