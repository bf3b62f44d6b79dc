package flightsql

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// sameAnswers checks that s answers sql over [from, to] as full (the same
// server, incremental queries off) does, and returns s's answer.
func sameAnswers(t *testing.T, what string, s, full *Source, sql string, from, to time.Time, lim source.Limits) answer {
	t.Helper()
	got, want := answerOf(t, s, sql, from, to, lim), answerOf(t, full, sql, from, to, lim)
	if !slices.Equal(got.rows, want.rows) || !slices.Equal(got.notices, want.notices) {
		t.Errorf("%s: %d rows, notices %q (stats %v); the full query's: %d rows, notices %q", what, len(got.rows), got.notices, got.stats, len(want.rows), want.notices)
	}
	return got
}

// incrementalAndFull returns two sources of the server at addr: one with
// incremental queries (edit changes its settings), one without.
func incrementalAndFull(t *testing.T, addr string, edit func(cfg *settings.FlightSQL)) (inc, full *Source) {
	cfg := baseConfig(addr)
	if edit != nil {
		edit(&cfg)
	}
	inc = newTestSource(t, cfg)
	cfg.IncrementalQueries = false
	return inc, newTestSource(t, cfg)
}

// A range that ends in the future ("Today", "now+1h"), asked again: the
// rows that arrived since are read, not only those near the range's end.
func TestRefreshOfARangeEndingInTheFuture(t *testing.T) {
	db, addr := startSQLiteDB(t)
	if _, err := db.Exec(`CREATE TABLE live (time INTEGER, host TEXT, value REAL)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for m := 30; m > 0; m-- {
		if _, err := db.Exec(`INSERT INTO live VALUES (?, 'h', ?)`, now.Add(-time.Duration(m)*time.Minute).UnixMilli(), float64(m)); err != nil {
			t.Fatal(err)
		}
	}
	inc, full := incrementalAndFull(t, addr, nil)
	sql := "SELECT time, host, value FROM live WHERE $__unixEpochMsFilter(time)"
	from, to := now.Add(-time.Hour), now.Add(10*time.Hour)
	sameAnswers(t, "first", inc, full, sql, from, to, source.Limits{})
	for i := range 3 {
		// A row of the time it arrives: after the kept answer was asked.
		if _, err := db.Exec(`INSERT INTO live VALUES (?, 'h', ?)`, time.Now().UnixMilli(), float64(100+i)); err != nil {
			t.Fatal(err)
		}
		a := sameAnswers(t, fmt.Sprintf("refresh %d", i), inc, full, sql, from, to, source.Limits{})
		if a.stats["Incremental query"] != 1 {
			t.Errorf("refresh %d: stats %v, want an incremental query", i, a.stats)
		}
	}
}

// A delta's answer, kept rows and new, is held to rowLimit and byteLimit
// as the full query's reads are: past them, the query runs in full and is
// cut with its notice.
func TestRefreshKeepsToTheReadLimits(t *testing.T) {
	db, addr := startSQLiteDB(t)
	if _, err := db.Exec(`CREATE TABLE secs (time INTEGER, host TEXT, value REAL)`); err != nil {
		t.Fatal(err)
	}
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 600 { // a row a second for ten minutes
		if _, err := db.Exec(`INSERT INTO secs VALUES (?, 'h', ?)`, base.Add(time.Duration(i)*time.Second).UnixMilli(), float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	sql := "SELECT time, host, value FROM secs WHERE $__unixEpochMsFilter(time)"
	for _, lim := range []struct {
		name string
		edit func(cfg *settings.FlightSQL)
	}{
		{"rowLimit", func(cfg *settings.FlightSQL) { cfg.RowLimit = 250 }},
		{"byteLimit", func(cfg *settings.FlightSQL) { cfg.ByteLimit = 5000 }}, // a row reads about 21 bytes
	} {
		t.Run(lim.name, func(t *testing.T) {
			inc, full := incrementalAndFull(t, addr, func(cfg *settings.FlightSQL) {
				cfg.IncrementalOverlap = 60
				lim.edit(cfg)
			})
			// Deltas until the answer passes the limit; then one delta given
			// up, whose kept answer goes with it, and full queries after.
			var whys []string
			for to := 100; to <= 400; to += 50 {
				a := sameAnswers(t, fmt.Sprintf("[0, %d s]", to), inc, full, sql, base, base.Add(time.Duration(to)*time.Second), source.Limits{})
				why := fullWhy(a.stats)
				if len(a.notices) > 0 && why != whyLimit && why != whyNoEntry {
					t.Errorf("[0, %d s]: cut, with stats %v: want a full query because of %s", to, a.stats, lim.name)
				}
				if len(whys) == 0 || whys[len(whys)-1] != why {
					whys = append(whys, why)
				}
			}
			if want := []string{whyNoEntry, "", whyLimit, whyNoEntry}; !slices.Equal(whys, want) {
				t.Errorf("the refreshes' reasons to run in full, in turn: %q, want %q", whys, want)
			}
		})
	}
}

// recordingStore is a Store without a cap of its own (as Redis is) that
// records what it is given.
type recordingStore struct {
	m    map[string][]byte
	puts []int
}

func (s *recordingStore) Get(k string) ([]byte, error) { return s.m[k], nil }
func (s *recordingStore) Put(k string, b []byte) error {
	s.m[k] = b
	s.puts = append(s.puts, len(b))
	return nil
}
func (s *recordingStore) Delete(k string) error { delete(s.m, k); return nil }

// A refreshed answer is kept only up to resultCacheBytes/4, as a full
// one is: a range widened step by step would grow one entry without end.
func TestRefreshedEntryKeepsToItsLimit(t *testing.T) {
	db, addr := startSQLiteDB(t)
	if _, err := db.Exec(`CREATE TABLE big (time INTEGER, host TEXT, value REAL)`); err != nil {
		t.Fatal(err)
	}
	base := int64(1_700_000_000_000)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30_000 {
		if _, err := tx.Exec(`INSERT INTO big VALUES (?, 'h', ?)`, base+int64(i)*60, float64(i)*1.000123457); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(addr)
	cfg.IncrementalOverlap = 60
	cfg.ResultCacheBytes = 1 << 20 // an entry of at most 256 KiB
	s := newTestSource(t, cfg)
	st := &recordingStore{m: map[string][]byte{}}
	s.cache = st
	sql := "SELECT time, host, value FROM big WHERE $__unixEpochMsFilter(time)"
	m := func(n int) time.Time { return time.UnixMilli(base).Add(time.Duration(n) * time.Minute) }
	deltas := 0
	for to := 5; to <= 30; to += 5 {
		if answerOf(t, s, sql, m(0), m(to), source.Limits{}).stats["Incremental query"] == 1 {
			deltas++
		}
	}
	if deltas == 0 || len(st.puts) == 0 {
		t.Fatalf("%d deltas, puts %v: the test does not refresh", deltas, st.puts)
	}
	for _, n := range st.puts {
		if n > int(cfg.ResultCacheBytes/4) {
			t.Errorf("an entry of %d bytes was stored (puts %v), above %d", n, st.puts, cfg.ResultCacheBytes/4)
		}
	}
	if len(st.m) != 0 {
		t.Errorf("the entry past the limit is still kept")
	}
}

// What the memory store counts for an entry is about what it holds: a
// Viewer's many small answers cannot hold more than the cap says.
func TestMemoryStoreCountsWhatHoldsAnEntry(t *testing.T) {
	const n = 100_000
	m := newMemoryStore(1<<40, nopObserver{})
	e := &entry{from: time.Unix(0, 0), to: time.Unix(1, 0)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		_ = m.Put(fmt.Sprintf("%064x", i), e.marshal())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grew > m.bytes()*5/4 {
		t.Errorf("%d entries: the heap grew %d bytes, the store counts %d", n, grew, m.bytes())
	}
	runtime.KeepAlive(m)
}

// A store's failure is counted as such, whatever its error says.
func TestReasonOfAStoreFailure(t *testing.T) {
	in := &incremental{why: whyStore + ": Redis at 127.0.0.1:6379: connection refused"}
	if r := in.reason(); r != "store_error" {
		t.Errorf("reason %q, want store_error", r)
	}
}

// An epoch filter in whole seconds selects from the start's second: a
// refresh whose range starts within a second keeps the row at its start,
// as the full query has it.
func TestRefreshFromWithinASecond(t *testing.T) {
	db, addr := startSQLiteDB(t)
	if _, err := db.Exec(`CREATE TABLE tens (time INTEGER, host TEXT, value REAL)`); err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0)
	for i := range 120 { // a row every ten seconds, in seconds
		if _, err := db.Exec(`INSERT INTO tens VALUES (?, 'h', ?)`, base.Unix()+int64(i)*10, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	inc, full := incrementalAndFull(t, addr, func(cfg *settings.FlightSQL) { cfg.IncrementalOverlap = 60 })
	sql := "SELECT time, host, value FROM tens WHERE $__unixEpochFilter(time)"
	sameAnswers(t, "first", inc, full, sql, base, base.Add(10*time.Minute), source.Limits{})
	for i, from := range []time.Duration{100500 * time.Millisecond, 110999 * time.Millisecond, 120 * time.Second} {
		a := sameAnswers(t, fmt.Sprintf("from %s", from), inc, full, sql, base.Add(from), base.Add(10*time.Minute+time.Duration(i+1)*time.Second), source.Limits{})
		if a.stats["Incremental query"] != 1 {
			t.Errorf("from %s: stats %v, want an incremental query", from, a.stats)
		}
	}
}

// creditSink is a frameSink that counts what is reserved on it and not
// given back (source.Reserver, source.Unreserver), as the plugin's sink
// holds it until the query ends.
type creditSink struct {
	frameSink
	held int64
}

func (s *creditSink) Reserve(_ context.Context, n int64) error {
	s.held += n
	return nil
}

func (s *creditSink) Unreserve() { s.held = 0 }

// A delta given up at rowLimit gives back what it reserved before the query
// runs in full: the query then holds what the full query alone does, not
// both.
func TestRefreshGivenUpHoldsItsMemoryOnce(t *testing.T) {
	_, addr := startSQLiteDB(t) // rows at minutes 0–29
	inc, full := incrementalAndFull(t, addr, func(cfg *settings.FlightSQL) {
		cfg.IncrementalOverlap = 60
		cfg.RowLimit = 20
	})
	base := time.UnixMilli(1_700_000_000_000)
	run := func(s *Source, to int) (*creditSink, map[string]float64) {
		sink := &creditSink{frameSink: frameSink{t: t}}
		js := `{"rawSql":"SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time)","format":"time_series"}`
		if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(js), From: base, To: base.Add(time.Duration(to) * time.Minute),
			Interval: time.Minute, MaxDataPoints: 1000, Scope: "tenant"}, sink); err != nil {
			t.Fatal(err)
		}
		return sink, statsOf(sink.frames)
	}
	run(inc, 15)
	got, stats := run(inc, 25) // past rowLimit: the delta is given up
	if why := fullWhy(stats); why != whyLimit {
		t.Fatalf("stats %v, want a delta given up because of rowLimit", stats)
	}
	want, _ := run(full, 25)
	if got.held > want.held {
		t.Errorf("the query holds %d bytes, the full query alone %d", got.held, want.held)
	}
}
