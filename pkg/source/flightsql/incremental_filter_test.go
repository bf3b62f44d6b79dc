package flightsql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// statsOf is the stats of a query's first frame, by name.
func statsOf(frames []*data.Frame) map[string]float64 {
	stats := map[string]float64{}
	if len(frames) > 0 && frames[0].Meta != nil {
		for _, st := range frames[0].Meta.Stats {
			stats[st.DisplayName] = st.Value
		}
	}
	return stats
}

// fullWhy returns the reason in a full query's stats ("" for none).
func fullWhy(stats map[string]float64) string {
	for name := range stats {
		if after, ok := strings.CutPrefix(name, "Full query: "); ok {
			return after
		}
	}
	return ""
}

// answer is what a time_series query answered, to compare an incremental
// answer with a full one's.
type answer struct {
	rows    []string // each row's time (Unix ms), values and labels, sorted
	stats   map[string]float64
	notices []string // the warnings' texts
}

// answerOf runs sql over [from, to] on s as a time_series query of scope
// "tenant".
func answerOf(t *testing.T, s *Source, sql string, from, to time.Time, lim source.Limits) answer {
	t.Helper()
	js, err := json.Marshal(map[string]string{"rawSql": sql, "format": FormatTimeSeries})
	if err != nil {
		t.Fatal(err)
	}
	sink := &frameSink{t: t}
	if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: js, From: from, To: to,
		Interval: time.Minute, MaxDataPoints: 1000, Limits: lim, Scope: "tenant"}, sink); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	a := answer{stats: statsOf(sink.frames)}
	for _, f := range sink.frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				if n.Severity == data.NoticeSeverityWarning {
					a.notices = append(a.notices, n.Text)
				}
			}
		}
		for i := range f.Rows() {
			row := fmt.Sprint(f.Fields[0].At(i).(time.Time).UnixMilli())
			for _, v := range f.Fields[1:] {
				x, _ := v.ConcreteAt(i)
				row += fmt.Sprintf(" %v%v", x, v.Labels)
			}
			a.rows = append(a.rows, row)
		}
	}
	slices.Sort(a.rows)
	return a
}

// TestIncrementalOnlyWhereTheFilterSelects: a query whose rows something
// other than its time filter selects (the filter negated, in an OR, on
// another table's time) or whose SQL calls a function that may aggregate
// the range (SQLite's total()) is answered in full, says why, and answers
// as the full query does. An answer kept while its OR selected nothing
// outside the range falls back once it does, and is not kept again.
func TestIncrementalOnlyWhereTheFilterSelects(t *testing.T) {
	db, addr := startSQLiteDB(t)
	inc := newTestSource(t, baseConfig(addr))
	cfg := baseConfig(addr)
	cfg.IncrementalQueries = false
	full := newTestSource(t, cfg)
	base := time.UnixMilli(1_700_000_000_000) // the table's minute 0; it has minutes 0–29
	// run returns the rows of sql over minutes [from, to] on s, sorted, and
	// its stats.
	run := func(s *Source, sql string, from, to int) ([]string, map[string]float64) {
		t.Helper()
		a := answerOf(t, s, sql, base.Add(time.Duration(from)*time.Minute), base.Add(time.Duration(to)*time.Minute), source.Limits{})
		return a.rows, a.stats
	}
	check := func(what, sql, why string, from, to int) {
		t.Helper()
		got, stats := run(inc, sql, from, to)
		want, _ := run(full, sql, from, to)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %s:\n got %v\nwant %v", what, sql, got, want)
		}
		if w := fullWhy(stats); !strings.Contains(w, why) || stats["Incremental query"] != 0 {
			t.Errorf("%s: %s: stats %v, want a full query because %q", what, sql, stats, why)
		}
	}
	for _, tc := range []struct{ sql, why string }{
		{"SELECT time, host, value FROM metrics WHERE NOT $__unixEpochMsFilter(time)", whyOutside},
		{"SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time) OR host = 'h1'", whyOutside},
		{"SELECT time, total(value) AS v FROM metrics WHERE $__unixEpochMsFilter(time)", "calls total()"},
		{"SELECT b.time, b.host, b.value FROM metrics a JOIN metrics b ON b.time = a.time + 300000 WHERE $__unixEpochMsFilter(a.time)", whyTimeColumn},
	} {
		check("first run", tc.sql, tc.why, 10, 20)
		check("refresh", tc.sql, tc.why, 11, 21) // incremental if it could be
	}

	// Kept while the OR selects nothing outside the range; then it does.
	sql := "SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time) OR host = 'h9'"
	run(inc, sql, 10, 20)
	if _, stats := run(inc, sql, 11, 21); stats["Incremental query"] != 1 {
		t.Fatalf("before the h9 row: stats %v, want an incremental query", stats)
	}
	if _, err := db.Exec(`INSERT INTO metrics VALUES (?, 'h9', 99, 'n')`, base.Add(2*time.Minute).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	check("a row outside the range arrived", sql, whyOutside, 12, 22)
	check("the next refresh", sql, whyOutside, 13, 23) // the kept answer was deleted: no delta to fall back from
}
