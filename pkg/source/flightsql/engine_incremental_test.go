//go:build duckdb

package flightsql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/engine"
)

// incQuery runs sql for [from, to] through s and returns its frames and
// its stats by name.
func incQuery(t testing.TB, s *Source, sql, format string, from, to time.Time) ([]*data.Frame, map[string]float64) {
	t.Helper()
	js, err := json.Marshal(map[string]string{"rawSql": sql, "format": format})
	if err != nil {
		t.Fatal(err)
	}
	sink := &frameSink{t: t}
	if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: js, From: from, To: to,
		Interval: 30 * time.Second, MaxDataPoints: 1000, Scope: "tenant/1/ds"}, sink); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return sink.frames, statsOf(sink.frames)
}

// scopedRun runs the engine table's time series for the engine range
// shifted by shift on s, as scope and ctx's user, and returns its series
// and stats.
func scopedRun(t testing.TB, ctx context.Context, s *Source, scope string, shift time.Duration) (map[string][]nullablePoint, map[string]float64) {
	t.Helper()
	js := []byte(`{"rawSql":"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)","format":"time_series"}`)
	sink := &frameSink{t: t}
	if err := s.Query(ctx, source.Query{RefID: "A", JSON: js, From: engineFrom.Add(shift), To: engineTo.Add(shift),
		Interval: time.Minute, MaxDataPoints: 1000, Scope: scope}, sink); err != nil {
		t.Fatal(err)
	}
	return seriesOfFrames(t, sink.frames), statsOf(sink.frames)
}

// seriesOfFrames reads time_series frames or a wide frame as series keyed
// by their labels, nulls kept.
func seriesOfFrames(t testing.TB, frames []*data.Frame) map[string][]nullablePoint {
	t.Helper()
	got := map[string][]nullablePoint{}
	for _, f := range frames {
		for k, v := range filledSeriesOf(t, f.Fields[0], f.Fields[1:]) {
			got[k] = v
		}
	}
	return got
}

// logRowsOf reads a logs frame's rows as text, in order, or sorted when
// the query does not order them.
func logRowsOf(t testing.TB, frames []*data.Frame, sorted bool) []string {
	t.Helper()
	if len(frames) != 1 {
		t.Fatalf("%d logs frames, want 1", len(frames))
	}
	f := frames[0]
	rows := make([]string, f.Rows())
	for i := range rows {
		var row strings.Builder
		for _, fd := range f.Fields {
			v, _ := fd.ConcreteAt(i)
			if b, ok := v.(json.RawMessage); ok {
				v = string(b)
			}
			fmt.Fprintf(&row, "%v|", v)
		}
		rows[i] = row.String()
	}
	if sorted {
		slices.Sort(rows)
	}
	return rows
}

// TestEngineIncrementalEqualsFull refreshes a one-hour dashboard range 30
// times while rows keep arriving in DuckDB (each refresh 10.007 s later,
// so that the range's start is never on a time group; some rows arrive
// late, inside the overlap), and compares every incremental answer, value
// by value, with the full query of the same range at the same moment, for
// raw rows, time groups with and without fill, and an epoch filter, in both
// series formats and as logs (newest first, oldest first, by position, in
// no order, and by time group), in UTC and America/New_York.
func TestEngineIncrementalEqualsFull(t *testing.T) {
	series := []string{FormatTimeSeries, FormatTimeSeriesWide}
	logs := []string{FormatLogs}
	queries := []struct {
		name, sql string
		formats   []string
	}{
		{"raw", "SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) ORDER BY 1", series},
		{"group", "SELECT $__timeGroupAlias(ts, 30s), host, avg(v) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1", series},
		{"fill", "SELECT $__timeGroupAlias(ts, 30s, 0), host, sum(v) AS v FROM m WHERE $__timeFilter(ts) AND host <> 'h2' GROUP BY 1, 2 ORDER BY 1", series},
		// The query builder's SQL: the group written in SELECT and GROUP BY.
		{"builder", `SELECT $__timeGroup("ts", 30s) AS "time", "host", avg("v") AS "v"
FROM "m"
WHERE $__timeFilter("ts")
GROUP BY $__timeGroup("ts", 30s), "host"
ORDER BY "time"`, series},
		{"epoch", "SELECT em AS time, host, v FROM m WHERE $__unixEpochMsFilter(em)", series},
		// Buckets longer than half the overlap: two are read again.
		{"long group", "SELECT $__timeGroupAlias(ts, 2m), host, max(v) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2", series},
		{"logs newest first", "SELECT ts AS time, host AS level, 'line ' || v::VARCHAR AS message, v FROM m WHERE $__timeFilter(ts) ORDER BY ts DESC, host", logs},
		{"logs oldest first", "SELECT ts, 'line ' || v::VARCHAR AS body, host FROM m WHERE $__timeFilter(ts) ORDER BY 1, host", logs},
		{"logs unordered", "SELECT ts, 'line ' || v::VARCHAR AS body, host FROM m WHERE $__timeFilter(ts)", logs},
		{"logs epoch", "SELECT em AS time, 'line ' || v::VARCHAR AS body, host FROM m WHERE $__unixEpochMsFilter(em) ORDER BY time DESC, host", logs},
		{"logs group", "SELECT $__timeGroupAlias(ts, 1m), host, count(*)::VARCHAR || ' lines' AS body FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY time DESC, host", logs},
	}
	for _, tz := range []string{"UTC", "America/New_York"} {
		srv := engine.Start(t, tz)
		start := time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)
		srv.Exec(t, `CREATE TABLE m (ts TIMESTAMPTZ, em BIGINT, host VARCHAR, v DOUBLE)`)
		insert := func(from, to time.Time, step time.Duration, salt int) {
			// Each time has a row of every host: logs with equal times.
			srv.Exec(t, fmt.Sprintf(`INSERT INTO m SELECT t, epoch_ms(t), 'h' || (i %% 3)::VARCHAR, ((i * 7 + %d) %% 50)::DOUBLE
				FROM (SELECT make_timestamptz(%d::BIGINT) + (i // 3) * INTERVAL '%d milliseconds' AS t, i FROM range(0, %d) r(i))`,
				salt, from.UnixMicro(), step.Milliseconds(), 3*int(to.Sub(from)/step)))
		}
		insert(start.Add(-2*time.Hour), start, 3*time.Second, 0)

		cfg := baseConfig(srv.Addr)
		cfg.IncrementalOverlap = 120
		inc := newTestSource(t, cfg)
		cfg.IncrementalQueries = false
		full := newTestSource(t, cfg)

		now := start
		for refresh := range 30 {
			next := now.Add(10007 * time.Millisecond)
			insert(now, next, 3*time.Second, refresh+1)
			if refresh%5 == 4 { // a late row, 80 s back: inside the overlap
				insert(now.Add(-80*time.Second), now.Add(-80*time.Second+time.Millisecond), time.Millisecond, 1000+refresh)
			}
			now = next
			from, to := now.Add(-time.Hour), now
			for _, q := range queries {
				for _, format := range q.formats {
					what := fmt.Sprintf("%s %s %s refresh %d", tz, q.name, format, refresh)
					gotFrames, stats := incQuery(t, inc, q.sql, format, from, to)
					wantFrames, _ := incQuery(t, full, q.sql, format, from, to)
					if format == FormatLogs {
						unordered := !strings.Contains(q.sql, "ORDER BY")
						got, want := logRowsOf(t, gotFrames, unordered), logRowsOf(t, wantFrames, unordered)
						if len(want) == 0 || !slices.Equal(got, want) {
							t.Fatalf("%s: the incremental answer differs from the full query's:\n got %d rows %.300v\nwant %d rows %.300v", what, len(got), got, len(want), want)
						}
					} else {
						got, want := seriesOfFrames(t, gotFrames), seriesOfFrames(t, wantFrames)
						if len(want) == 0 {
							t.Fatalf("%s: the full query has no series", what)
						}
						if !equalSeries(got, want) {
							t.Fatalf("%s: the incremental answer differs from the full query's:\n got %v\nwant %v", what, got, want)
						}
					}
					if refresh == 0 {
						continue // the first one is full: nothing kept yet
					}
					if stats["Incremental query"] != 1 {
						t.Fatalf("%s: not incremental: stats %v", what, stats)
					}
					read, kept := stats["Rows read from the server"], stats["Rows served from the cache"]
					if kept == 0 || read > kept/5 {
						t.Errorf("%s: %v rows read from the server and %v from the cache: the delta is not small", what, read, kept)
					}
				}
			}
		}
	}
}

// TestEngineIncrementalFallsBack checks that queries whose answer is not
// the union of its parts are answered in full, with the reason in their
// stats, and still equal the full query.
func TestEngineIncrementalFallsBack(t *testing.T) {
	srv := engine.Start(t, "UTC")
	engineTable(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	cases := []struct{ sql, why string }{
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) ORDER BY v DESC LIMIT 10", "LIMIT"},
		{"SELECT max(ts) AS time, host, count(*) AS v FROM m WHERE $__timeFilter(ts) GROUP BY host", "calls max() without a time group"},
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) AND host IN (SELECT host FROM m)", "more than one SELECT"},
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) GROUP BY ts, host, v", "GROUP BY without a time group"},
		{"SELECT ts AS time, host, v - lag(v) OVER (ORDER BY ts) AS v FROM m WHERE $__timeFilter(ts)", "calls lag()"},
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) QUALIFY row_number() OVER (PARTITION BY host ORDER BY ts) > 1", "QUALIFY"},
		{"SELECT ts AS time, host, v FROM m WHERE NOT $__timeFilter(ts)", whyOutside},
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) OR host = 'h1'", whyOutside},
		{"SELECT ts AS time, host, v FROM m WHERE ts BETWEEN $__timeFrom AND $__timeTo", "0 time filter"},
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) AND v > (SELECT avg(v) FROM m WHERE $__timeFilter(ts))", "2 time filter"},
		{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) AND ts > $__timeFrom", "$__timeFrom"},
		{"SELECT tsn AS time, host, v FROM m WHERE $__timeFilter(ts)", "not the column"},
	}
	logsCases := []struct{ sql, why string }{
		{"SELECT ts AS time, host, 'x' AS body FROM m WHERE $__timeFilter(ts) ORDER BY host, ts", whyOrder},
		{"SELECT ts AS time, host, 'x' AS body FROM m WHERE $__timeFilter(ts) ORDER BY 2", whyOrder},
		{"SELECT ts AS time, host, 'x' AS body FROM m WHERE $__timeFilter(ts) ORDER BY ts + INTERVAL 1 HOUR", whyOrder},
		{"SELECT ts AS time, host, 'x' AS body FROM m WHERE $__timeFilter(ts) ORDER BY ts DESC LIMIT 100", "LIMIT"},
		// The engine sorts by the result's ts, which is not the filtered one.
		{"SELECT ts AS time, 'x' AS body, ts - to_minutes(v::BIGINT) AS ts FROM m WHERE $__timeFilter(ts) ORDER BY ts DESC", whyOrder},
	}
	check := func(sql, why, format string) {
		t.Helper()
		for i := range 2 { // the second run would be incremental if it could be
			from := engineFrom.Add(time.Duration(i) * 10 * time.Second)
			frames, stats := incQuery(t, s, sql, format, from, from.Add(time.Hour))
			if len(frames) == 0 {
				t.Fatalf("%s: no frames", sql)
			}
			if !strings.Contains(fullWhy(stats), why) || stats["Incremental query"] != 0 {
				t.Errorf("%s: run %d: stats %v, want a full query because of %q", sql, i, stats, why)
			}
		}
	}
	for _, tc := range cases {
		check(tc.sql, tc.why, FormatTimeSeries)
	}
	for _, tc := range logsCases {
		check(tc.sql, tc.why, FormatLogs)
	}
}

// TestEngineIncrementalKeptApart checks that a kept answer is served only
// to the query it was kept for: another tenant's, another forwarded user's
// and a query without that user's identity are full queries with the same
// SQL and range; a corrupted or foreign entry is deleted and the query
// answered in full, correctly.
func TestEngineIncrementalKeptApart(t *testing.T) {
	srv := engine.Start(t, "UTC")
	engineTable(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	run := func(ctx context.Context, scope string, shift time.Duration) (map[string][]nullablePoint, map[string]float64) {
		t.Helper()
		return scopedRun(t, ctx, s, scope, shift)
	}
	alice := source.WithForwarded(context.Background(), "Bearer alice", "")
	bob := source.WithForwarded(context.Background(), "Bearer bob", "")
	if _, st := run(alice, "t1/1/ds", 0); st["Full query: "+whyNoEntry] != 1 {
		t.Fatalf("first query: %v", st)
	}
	if _, st := run(alice, "t1/1/ds", time.Minute); st["Incremental query"] != 1 {
		t.Fatalf("the same user and tenant again: %v", st)
	}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		scope string
	}{{"another tenant", alice, "t2/1/ds"}, {"another user", bob, "t1/1/ds"}, {"no user", context.Background(), "t1/1/ds"}} {
		if _, st := run(c.ctx, c.scope, 2*time.Minute); st["Full query: "+whyNoEntry] != 1 {
			t.Errorf("%s got a kept answer: %v", c.name, st)
		}
	}

	// Every key now holds an entry: corrupt one, and store another key's
	// valid entry under a second.
	ms := s.cache.(*memoryStore)
	ms.mu.Lock()
	var keys []string
	for k := range ms.items {
		keys = append(keys, k)
	}
	ms.mu.Unlock()
	if len(keys) != 4 {
		t.Fatalf("%d entries kept, want 4", len(keys))
	}
	for i, k := range keys {
		b, _ := ms.Get(k)
		c := append([]byte(nil), b...)
		if i == 0 {
			c[len(c)/2] ^= 0xff // inside a segment
			c = c[:len(c)-7]
		} else {
			other, _ := ms.Get(keys[(i+1)%len(keys)])
			c = append([]byte(nil), other...)
		}
		if err := ms.Put(k, c); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := run(context.Background(), "fresh/1/ds", 3*time.Minute)
	got, st := run(alice, "t1/1/ds", 3*time.Minute)
	if st["Incremental query"] == 1 || !equalSeries(got, want) {
		t.Errorf("a corrupted or foreign entry was used: stats %v", st)
	}
	if _, st := run(alice, "t1/1/ds", 3*time.Minute+time.Second); st["Incremental query"] != 1 {
		t.Errorf("the entry written after the bad one is not used: %v", st)
	}
}

// TestEngineIncrementalTooBigNotKept: an answer above a quarter of the
// result cache is not kept, and the next run is full, and correct.
func TestEngineIncrementalTooBigNotKept(t *testing.T) {
	srv := engine.Start(t, "UTC")
	srv.Exec(t, `CREATE TABLE m AS SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL '100 milliseconds' AS ts,
		'h' || (i % 3)::VARCHAR AS host, random() AS v FROM range(0, 36000) r(i)`)
	cfg := baseConfig(srv.Addr)
	cfg.ResultCacheBytes = 1 << 20 // 256 KiB an entry: less than 36 000 random doubles compress to
	s := newTestSource(t, cfg)
	sql := "SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)"
	for i := range 2 {
		from := engineFrom.Add(time.Duration(i) * time.Second)
		frames, stats := incQuery(t, s, sql, FormatTimeSeries, from, from.Add(time.Hour))
		if len(frames) != 3 || stats["Full query: "+whyNoEntry] != 1 {
			t.Fatalf("run %d: %d frames, stats %v", i, len(frames), stats)
		}
	}
	if n := s.cache.(*memoryStore).bytes(); n != 0 {
		t.Errorf("the store holds %d bytes", n)
	}
}

// recordingObserver records what a Source tells its CacheObserver.
type recordingObserver struct {
	mu      sync.Mutex
	reasons map[string]int
	rows    [2]int64 // from the server, from the cache
	bytes   int64
	failed  map[string]int // store operations that failed
}

func (o *recordingObserver) Answered(reason string, fromServer, fromCache int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.reasons == nil {
		o.reasons = map[string]int{}
	}
	o.reasons[reason]++
	o.rows[0] += fromServer
	o.rows[1] += fromCache
}

func (o *recordingObserver) Stored(delta int64, _ int) {
	o.mu.Lock()
	o.bytes += delta
	o.mu.Unlock()
}

func (o *recordingObserver) StoreFailed(op string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed == nil {
		o.failed = map[string]int{}
	}
	o.failed[op]++
}

// TestEngineIncrementalObserved: the observer (the plugin's metrics) sees
// each query's result and reason, the rows by origin, and the bytes the
// memory store holds.
func TestEngineIncrementalObserved(t *testing.T) {
	srv := engine.Start(t, "UTC")
	engineTable(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	o := &recordingObserver{}
	s.observer, s.cache.(*memoryStore).observer = o, o
	sql := "SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)"
	for i := range 3 {
		from := engineFrom.Add(time.Duration(i) * 10 * time.Second)
		incQuery(t, s, sql, FormatTimeSeries, from, from.Add(time.Hour))
	}
	incQuery(t, s, sql+" LIMIT 5", FormatTimeSeries, engineFrom, engineTo)
	if o.reasons["no_entry"] != 1 || o.reasons[""] != 2 || o.reasons["sql"] != 1 {
		t.Errorf("reasons %v, want one no_entry, two incremental, one sql", o.reasons)
	}
	if o.rows[1] == 0 || o.rows[0] == 0 {
		t.Errorf("rows from the server and the cache: %v", o.rows)
	}
	if held := s.cache.(*memoryStore).bytes(); held == 0 || o.bytes != held {
		t.Errorf("observed %d bytes stored, the store holds %d", o.bytes, held)
	}
}

// TestEngineIncrementalOffForAQuery: "incremental": false in a query's JSON
// (the query editor's switch) makes it full every time.
func TestEngineIncrementalOffForAQuery(t *testing.T) {
	srv := engine.Start(t, "UTC")
	engineTable(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	js := []byte(`{"rawSql":"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)","format":"time_series","incremental":false}`)
	for i := range 2 {
		from := engineFrom.Add(time.Duration(i) * time.Second)
		sink := &frameSink{t: t}
		if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: js, From: from, To: from.Add(time.Hour), Interval: time.Minute}, sink); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, st := range sink.frames[0].Meta.Stats {
			found = found || st.DisplayName == "Full query: "+whyQueryOff
		}
		if !found {
			t.Errorf("run %d: stats %v", i, sink.frames[0].Meta.Stats)
		}
	}
}

// TestEngineIncrementalNotice: with the incrementalNotice setting, a series
// or logs query's first frame carries its stats as an info notice that
// opens Inspect → Stats (the panel header's icon); the answer is still
// kept. Without it, no notice.
func TestEngineIncrementalNotice(t *testing.T) {
	srv := engine.Start(t, "UTC")
	engineTable(t, srv)
	for _, on := range []bool{true, false} {
		cfg := baseConfig(srv.Addr)
		cfg.IncrementalNotice = on
		s := newTestSource(t, cfg)
		for _, q := range []struct{ sql, format string }{
			{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)", FormatTimeSeries},
			{"SELECT ts AS time, host AS body FROM m WHERE $__timeFilter(ts) ORDER BY ts DESC", FormatLogs},
		} {
			for i, want := range []string{"Full query (" + whyNoEntry + "): ", "Incremental query: "} {
				from := engineFrom.Add(time.Duration(i) * time.Second)
				frames, stats := incQuery(t, s, q.sql, q.format, from, from.Add(time.Hour))
				var notices []data.Notice
				for _, n := range frames[0].Meta.Notices {
					if n.Severity == data.NoticeSeverityInfo {
						notices = append(notices, n)
					}
				}
				switch {
				case !on && len(notices) != 0:
					t.Errorf("%s run %d: notices %v with the setting off", q.format, i, notices)
				case on && (len(notices) != 1 || !strings.HasPrefix(notices[0].Text, want) || notices[0].Inspect != data.InspectTypeStats):
					t.Errorf("%s run %d: notices %v, want one that opens the stats, starting %q", q.format, i, notices, want)
				case on && !strings.Contains(notices[0].Text, fmt.Sprintf("%v rows read from the server", stats["Rows read from the server"])):
					t.Errorf("%s run %d: notice %q, stats %v", q.format, i, notices[0].Text, stats)
				}
			}
		}
	}
}
