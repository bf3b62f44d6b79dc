//go:build duckdb

package flightsql

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/tests/engine"
)

// fillGaps leaves out the 5m buckets whose index since the epoch is a
// multiple of 3 (00:00, 00:15, …, the range's first one included), so that
// every series has gaps to fill; the range's last point (01:00) has no row
// either.
const fillGaps = "epoch_ms(ts) // 300000 % 3 <> 0"

// fillRefSQL is the gap-filled series written by hand in DuckDB's SQL: the
// points of the range (integer epoch milliseconds, every 5m from 00:00 to
// 01:00 included) for every host, LEFT JOIN the buckets that have rows;
// {v} is the value expression over a.v (the fill).
const fillRefSQL = `WITH g AS (SELECT range AS ms FROM range(1767225600000, 1767229200000 + 1, 300000)),
	h AS (SELECT DISTINCT host FROM m),
	a AS (SELECT epoch_ms(ts) // 300000 * 300000 AS ms, host, avg(v) AS v FROM m
	      WHERE epoch_ms(ts) ` + refRange + ` AND ` + fillGaps + ` GROUP BY 1, 2)
	SELECT g.ms, h.host, {v} AS v FROM g CROSS JOIN h LEFT JOIN a ON a.ms = g.ms AND a.host = h.host ORDER BY 2, 1`

// nullablePoint is a point whose value may be null.
type nullablePoint struct {
	ms int64
	v  float64
	ok bool
}

// filledSeriesOf reads time_series frames (or the fields of a wide frame)
// as series keyed by their labels, nulls kept.
func filledSeriesOf(t testing.TB, times *data.Field, values []*data.Field) map[string][]nullablePoint {
	t.Helper()
	out := map[string][]nullablePoint{}
	for _, f := range values {
		key := f.Labels.String()
		for i := range f.Len() {
			tm, ok := times.ConcreteAt(i)
			if !ok {
				t.Fatalf("null time in %s", key)
			}
			p := nullablePoint{ms: tm.(time.Time).UnixMilli()}
			if v, ok := f.ConcreteAt(i); ok {
				p.v, p.ok = v.(float64), true
			}
			out[key] = append(out[key], p)
		}
	}
	return out
}

// TestEngineFill runs $__timeGroupAlias with each fill through the Source
// against DuckDB, in UTC and in America/New_York, in both series formats,
// and compares every point with the same gap-filled series written by hand
// in the engine's SQL (range + LEFT JOIN; last_value IGNORE NULLS for
// previous; coalesce for a value).
func TestEngineFill(t *testing.T) {
	cases := []struct{ fill, ref string }{
		{"NULL", "a.v"},
		{"previous", "last_value(a.v IGNORE NULLS) OVER (PARTITION BY h.host ORDER BY g.ms ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"},
		{"7.5", "coalesce(a.v, 7.5)"},
	}
	for _, tz := range []string{"UTC", "America/New_York"} {
		srv := engine.Start(t, tz)
		engineTable(t, srv)
		s := newTestSource(t, baseConfig(srv.Addr))
		for _, tc := range cases {
			want := map[string][]nullablePoint{}
			gaps := 0
			for _, r := range srv.Query(t, strings.Replace(fillRefSQL, "{v}", tc.ref, 1)) {
				key := data.Labels{"host": r[1].(string)}.String()
				p := nullablePoint{ms: r[0].(int64)}
				if r[2] != nil {
					p.v, p.ok = r[2].(float64), true
				} else {
					gaps++
				}
				want[key] = append(want[key], p)
			}
			if len(want) != 3 || len(want[data.Labels{"host": "h0"}.String()]) != 13 {
				t.Fatalf("%s: the reference has %d series, want 3 of 13 points", tc.fill, len(want))
			}
			if tc.fill == "NULL" && gaps != 3*5 {
				t.Fatalf("the reference has %d null points, want 15 (5 empty buckets × 3 hosts)", gaps)
			}
			sql := fmt.Sprintf("SELECT $__timeGroupAlias(ts, 5m, %s), host, avg(v) AS v FROM m WHERE $__timeFilter(ts) AND %s GROUP BY 1, 2 ORDER BY 1", tc.fill, fillGaps)

			frames := engineQuery(t, s, sql, FormatTimeSeries)
			got := map[string][]nullablePoint{}
			for _, f := range frames {
				for k, v := range filledSeriesOf(t, f.Fields[0], f.Fields[1:]) {
					got[k] = v
				}
			}
			if len(frames) != 3 || !equalSeries(got, want) {
				t.Errorf("%s %s time_series:\n got %v\nwant %v", tz, tc.fill, got, want)
			}

			frames = engineQuery(t, s, sql, FormatTimeSeriesWide)
			if len(frames) != 1 {
				t.Fatalf("%s %s wide: %d frames", tz, tc.fill, len(frames))
			}
			if got := filledSeriesOf(t, frames[0].Fields[0], frames[0].Fields[1:]); !equalSeries(got, want) {
				t.Errorf("%s %s time_series_wide:\n got %v\nwant %v", tz, tc.fill, got, want)
			}
		}
	}
}
