//go:build duckdb && sqlengines

package flightsql

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/engine"
	"github.com/quiverdata/quiver/tests/redisserver"
)

// redisSources starts DuckDB with the engine table and a Redis server, and
// returns n Sources (as n Grafana replicas would have) keeping their
// answers in it, with a clock each test may move (the retry after a
// failure).
func redisSources(t *testing.T, n int) (*redisserver.Server, []*Source, *fakeClock) {
	t.Helper()
	srv := engine.Start(t, "UTC")
	engineTable(t, srv)
	rs := redisserver.Start(t)
	cfg := baseConfig(srv.Addr)
	cfg.RedisAddress = rs.Addr
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	var out []*Source
	for range n {
		s := newTestSource(t, cfg)
		s.cache.(*redisStore).now = clock.now
		out = append(out, s)
	}
	return rs, out, clock
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestRedisSharedByReplicas: an answer one Source (one replica) kept in
// Redis is served to another for the same tenant, data source and user,
// and to no other tenant or user.
func TestRedisSharedByReplicas(t *testing.T) {
	_, ss, _ := redisSources(t, 2)
	a, b := ss[0], ss[1]
	alice := source.WithForwarded(context.Background(), "Bearer alice", "")
	bob := source.WithForwarded(context.Background(), "Bearer bob", "")
	if _, st := scopedRun(t, alice, a, "t1/1/ds/v1", 0); fullWhy(st) != whyNoEntry {
		t.Fatalf("first query on replica a: %v", st)
	}
	got, st := scopedRun(t, alice, b, "t1/1/ds/v1", time.Minute)
	if st["Incremental query"] != 1 {
		t.Fatalf("replica b did not use replica a's answer: %v", st)
	}
	want, _ := scopedRun(t, context.Background(), a, "reference/1/ds/v1", time.Minute)
	if !equalSeries(got, want) {
		t.Errorf("replica b's incremental answer differs from the full query's")
	}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		scope string
	}{{"another tenant", alice, "t2/1/ds/v1"}, {"another user", bob, "t1/1/ds/v1"}, {"no user", context.Background(), "t1/1/ds/v1"}, {"saved settings", alice, "t1/1/ds/v2"}} {
		if _, st := scopedRun(t, c.ctx, b, c.scope, 2*time.Minute); fullWhy(st) != whyNoEntry {
			t.Errorf("%s got a kept answer: %v", c.name, st)
		}
	}
}

// TestRedisFailuresNeverFailAQuery: Redis stopped, restarted empty, full
// (maxmemory), paused (slow) or holding a corrupted entry: every query
// answers, equal to the full query, and its stats say when the cache was
// not used.
func TestRedisFailuresNeverFailAQuery(t *testing.T) {
	rs, ss, clock := redisSources(t, 1)
	s := ss[0]
	ctx := context.Background()
	want := map[time.Duration]map[string][]nullablePoint{}
	check := func(what string, shift time.Duration, wantWhy string) {
		t.Helper()
		if want[shift] == nil {
			cfg := s.cfg
			cfg.RedisAddress, cfg.IncrementalQueries = "", false
			ref := newTestSource(t, cfg)
			want[shift], _ = scopedRun(t, ctx, ref, "ref", shift)
		}
		got, st := scopedRun(t, ctx, s, "t", shift)
		if !equalSeries(got, want[shift]) {
			t.Errorf("%s: the answer differs from the full query's", what)
		}
		if why := fullWhy(st); !strings.Contains(why, wantWhy) || wantWhy == "" && st["Incremental query"] != 1 {
			t.Errorf("%s: stats %v, want %q", what, st, wantWhy)
		}
	}
	check("first", 0, whyNoEntry)
	check("kept", time.Second, "")

	rs.Stop()
	check("Redis stopped", 2*time.Second, whyStore)
	check("Redis skipped after a failure", 3*time.Second, "not asked")
	rs.Restart()
	check("Redis back, within the retry delay", 4*time.Second, "not asked")
	clock.advance(redisRetry)
	check("Redis back, empty", 5*time.Second, whyNoEntry)
	check("kept again", 6*time.Second, "")

	// Full: no answer is written (the query still answers), the last one
	// kept stays readable.
	rs.Do("config", "set", "maxmemory-policy", "noeviction")
	rs.Do("config", "set", "maxmemory", "1")
	check("Redis full", 7*time.Second, "")
	clock.advance(redisRetry)
	rs.Do("config", "set", "maxmemory", "0")
	check("Redis after the failed write", 8*time.Second, "")

	// Slow: every client paused for longer than the store waits.
	rs.Do("client", "pause", "2000", "all")
	check("Redis paused", 9*time.Second, whyStore)
	time.Sleep(2 * time.Second)
	clock.advance(redisRetry)

	// Corrupted: a byte of every kept entry flipped, in its segments or in
	// the key it was stored under.
	c := rs.Client()
	defer c.Close()
	keys, err := c.Keys(ctx, "quiver:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	corrupt := func(at func(n int) int) {
		t.Helper()
		for _, k := range keys {
			b, err := c.Get(ctx, k).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			b[at(len(b))] ^= 0xff
			if err := c.Set(ctx, k, b, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	corrupt(func(n int) int { return n - 100 }) // in the last segment
	check("a corrupted segment", 10*time.Second, whyNoEntry)
	check("kept after the corrupted one", 11*time.Second, "")
	corrupt(func(int) int { return 10 }) // in the key
	check("an entry of another key", 12*time.Second, whyNoEntry)
	check("kept after the foreign one", 13*time.Second, "")
	if ttl, err := c.TTL(ctx, keys[0]).Result(); err != nil || ttl <= time.Minute {
		t.Errorf("an entry's time to live is %v (%v), want about redisTTL", ttl, err)
	}
}

// killedAfterGet is a Store whose server is killed once a query has read
// its kept answer, before the query stores its new one.
type killedAfterGet struct {
	Store
	kill func()
}

func (k killedAfterGet) Get(key string) ([]byte, error) {
	b, err := k.Store.Get(key)
	k.kill()
	return b, err
}

// TestRedisKilledMidQuery: Redis killed (SIGKILL) while a query runs, after
// it read its kept answer: the query still answers incrementally and
// correctly, its attempt to store the new answer fails without failing it
// (counted as a failed put), the next queries skip Redis and answer in
// full, and once Redis is back they are kept and incremental again.
func TestRedisKilledMidQuery(t *testing.T) {
	rs, ss, clock := redisSources(t, 1)
	s := ss[0]
	ctx := context.Background()
	cfg := s.cfg
	cfg.RedisAddress, cfg.IncrementalQueries = "", false
	ref := newTestSource(t, cfg)
	check := func(what string, shift time.Duration, wantWhy string) {
		t.Helper()
		want, _ := scopedRun(t, ctx, ref, "ref", shift)
		got, st := scopedRun(t, ctx, s, "t", shift)
		if !equalSeries(got, want) {
			t.Errorf("%s: the answer differs from the full query's", what)
		}
		if why := fullWhy(st); !strings.Contains(why, wantWhy) || wantWhy == "" && st["Incremental query"] != 1 {
			t.Errorf("%s: stats %v, want %q", what, st, wantWhy)
		}
	}
	check("first", 0, whyNoEntry)
	redis := s.cache
	o := &recordingObserver{}
	s.cache, s.observer = killedAfterGet{Store: redis, kill: rs.Stop}, o
	check("Redis killed mid-query", time.Second, "")
	if o.failed["put"] != 1 {
		t.Errorf("failed store operations %v, want the one put of the killed query", o.failed)
	}
	s.cache = redis
	check("Redis down, skipped", 2*time.Second, "not asked")
	rs.Restart()
	clock.advance(redisRetry)
	check("Redis back, empty", 3*time.Second, whyNoEntry)
	check("kept again", 4*time.Second, "")
}
