//go:build duckdb || sqlengines

package flightsql

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// Helpers of the real-engine tests, DuckDB's (build tag duckdb) and
// PostgreSQL's and MariaDB's (build tag sqlengines).

// The dashboard range of the engine tests: 2026-01-01 00:00–01:00 UTC.
var (
	engineFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	engineTo   = engineFrom.Add(time.Hour)
)

// point is one point of a series: milliseconds since the epoch, value.
type point struct {
	ms int64
	v  float64
}

// seriesOf reads time_series frames as series keyed by their labels.
func seriesOf(t *testing.T, frames []*data.Frame) map[string][]point {
	t.Helper()
	out := map[string][]point{}
	for _, f := range frames {
		if len(f.Fields) != 2 {
			t.Fatalf("frame with %d fields, want time and one value", len(f.Fields))
		}
		key := f.Fields[1].Labels.String()
		for i := range f.Rows() {
			tm, ok := f.Fields[0].ConcreteAt(i)
			if !ok {
				t.Fatalf("null time in %s", key)
			}
			v, ok := f.Fields[1].ConcreteAt(i)
			if !ok {
				t.Fatalf("null value in %s at %v", key, tm)
			}
			fv, ok := v.(float64)
			if !ok {
				t.Fatalf("value %v is %T, want float64", v, v)
			}
			out[key] = append(out[key], point{tm.(time.Time).UnixMilli(), fv})
		}
	}
	return out
}

// engineQuery runs sql through the Source as Grafana would for the
// dashboard range, with a 1m interval.
func engineQuery(t *testing.T, s *Source, sql, format string) []*data.Frame {
	t.Helper()
	js, err := json.Marshal(map[string]string{"rawSql": sql, "format": format})
	if err != nil {
		t.Fatal(err)
	}
	sink := &frameSink{t: t}
	if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: js, From: engineFrom, To: engineTo,
		Interval: time.Minute, MaxDataPoints: 1000}, sink); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return sink.frames
}

// The reference bounds, written by hand: epoch milliseconds of the range.
const refRange = "BETWEEN 1767225600000 AND 1767229200000"

// equalSeries says whether a and b hold the same series, point by point.
func equalSeries[P comparable](a, b map[string][]P) bool {
	if len(a) != len(b) {
		return false
	}
	for k, pa := range a {
		if !slices.Equal(pa, b[k]) {
			return false
		}
	}
	return true
}

// distinctTimes is how many distinct times the series hold.
func distinctTimes(series map[string][]point) int {
	times := map[int64]bool{}
	for _, pts := range series {
		for _, p := range pts {
			times[p.ms] = true
		}
	}
	return len(times)
}

func head(ms []int64) []string {
	var out []string
	for i, m := range ms {
		if i == 3 {
			break
		}
		out = append(out, time.UnixMilli(m).UTC().Format(time.RFC3339))
	}
	return out
}

// frameTimes is the first field of a one-frame result, in milliseconds.
func frameTimes(t *testing.T, frames []*data.Frame) []int64 {
	t.Helper()
	if len(frames) != 1 || len(frames[0].Fields) == 0 {
		t.Fatalf("%d frames, want one", len(frames))
	}
	var out []int64
	for i := range frames[0].Rows() {
		tm, ok := frames[0].Fields[0].ConcreteAt(i)
		if !ok {
			t.Fatalf("null time in row %d", i)
		}
		out = append(out, tm.(time.Time).UnixMilli())
	}
	return out
}
