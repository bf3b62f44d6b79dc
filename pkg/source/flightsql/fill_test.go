package flightsql

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// fillSent is what the postgres dialect sends for the fill tests' query.
const (
	fillQuery = "SELECT $__timeGroup(ts, 10m, %s) AS ts, host, cpu, reqs FROM m GROUP BY 1, 2"
	fillSent  = "SELECT to_timestamp(floor(extract(epoch from ts) / 600) * 600) AS ts, host, cpu, reqs FROM m GROUP BY 1, 2"
)

// fillServer serves the fill tests' rows (runQuery's range is
// 1_700_000_000 – 1_700_003_600 s, so the 10m points are 1_699_999_800 +
// k×600 s, k = 0…6): host a at k = 1 and 3 and after the range, host b
// before the first point and at k = 4, in two batches out of time order.
func fillServer(t *testing.T, rowLimit int64) *Source {
	const p0 = 1_699_999_800_000 // ms
	rows := []metricRow{
		{ts: p0 + 3*600_000, host: "a", cpu: 3, reqs: 30},
		{ts: p0 + 4*600_000, host: "b", cpu: 14, reqs: 140},
		{ts: p0 + 600_000, host: "a", cpu: 1, reqs: 10},
		{ts: p0 - 600_000, host: "b", cpu: 9, reqs: 90},
		{ts: p0 + 7*600_000, host: "a", cpu: 7, reqs: 70},
	}
	srv := newMemServer()
	srv.set(fillSent, &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 3)}})
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.Dialect = settings.DialectPostgres
	if rowLimit > 0 {
		cfg.RowLimit = rowLimit
	}
	return newTestSource(t, cfg)
}

// fillValues reads a field's values, nil for null.
func fillValues(t *testing.T, f *data.Field) []any {
	t.Helper()
	out := make([]any, f.Len())
	for i := range out {
		if v, ok := f.ConcreteAt(i); ok {
			out[i] = v
		}
	}
	return out
}

// TestFillThroughSource runs a $__timeGroup fill query through the Source:
// every series and value column has one point per 10m from the aligned
// start to the end of the range, filled as the mode says, in both series
// formats.
func TestFillThroughSource(t *testing.T) {
	s := fillServer(t, 0)
	wantTimes := make([]time.Time, 7)
	for k := range wantTimes {
		wantTimes[k] = time.Unix(1_699_999_800+int64(k)*600, 0)
	}
	for _, tc := range []struct {
		fill string
		// want: host a cpu, host a reqs, host b cpu, host b reqs
		want [4][]any
	}{
		{"NULL", [4][]any{
			{nil, 1.0, nil, 3.0, nil, nil, nil}, {nil, int64(10), nil, int64(30), nil, nil, nil},
			{nil, nil, nil, nil, 14.0, nil, nil}, {nil, nil, nil, nil, int64(140), nil, nil}}},
		{"previous", [4][]any{
			{nil, 1.0, 1.0, 3.0, 3.0, 3.0, 3.0}, {nil, int64(10), int64(10), int64(30), int64(30), int64(30), int64(30)},
			{9.0, 9.0, 9.0, 9.0, 14.0, 14.0, 14.0}, {int64(90), int64(90), int64(90), int64(90), int64(140), int64(140), int64(140)}}},
		{"-2.5", [4][]any{
			{-2.5, 1.0, -2.5, 3.0, -2.5, -2.5, -2.5}, {int64(-2), int64(10), int64(-2), int64(30), int64(-2), int64(-2), int64(-2)},
			{-2.5, -2.5, -2.5, -2.5, 14.0, -2.5, -2.5}, {int64(-2), int64(-2), int64(-2), int64(-2), int64(140), int64(-2), int64(-2)}}},
	} {
		sql := fmt.Sprintf(fillQuery, tc.fill)
		sink, err := runQuery(t, s, sql, FormatTimeSeries, source.Limits{MaxPoints: 28})
		if err != nil {
			t.Fatalf("%s: %v", tc.fill, err)
		}
		if len(sink.frames) != 4 {
			t.Fatalf("%s: %d frames, want 4", tc.fill, len(sink.frames))
		}
		for i, f := range sink.frames {
			if got := fillValues(t, f.Fields[0]); !slices.EqualFunc(got, wantTimes, func(g any, w time.Time) bool { return g.(time.Time).Equal(w) }) {
				t.Errorf("%s frame %d: times %v", tc.fill, i, got)
			}
			if got := fillValues(t, f.Fields[1]); !slices.Equal(got, tc.want[i]) {
				t.Errorf("%s frame %d (%s %s): got %v, want %v", tc.fill, i, f.Fields[1].Name, f.Fields[1].Labels, got, tc.want[i])
			}
			if f.Meta == nil || f.Meta.ExecutedQueryString != fillSent {
				t.Errorf("%s frame %d: meta %+v", tc.fill, i, f.Meta)
			}
		}
		// The wide frame: the same columns side by side over the shared
		// times, by value column first (cpu of a and b, then reqs).
		sink, err = runQuery(t, s, sql, FormatTimeSeriesWide, source.Limits{MaxPoints: 28})
		if err != nil {
			t.Fatalf("%s wide: %v", tc.fill, err)
		}
		if len(sink.frames) != 1 || len(sink.frames[0].Fields) != 5 {
			t.Fatalf("%s wide: %d frames", tc.fill, len(sink.frames))
		}
		w := sink.frames[0]
		if got := fillValues(t, w.Fields[0]); len(got) != 7 || !got[6].(time.Time).Equal(wantTimes[6]) {
			t.Errorf("%s wide: times %v", tc.fill, got)
		}
		for i, want := range [][]any{tc.want[0], tc.want[2], tc.want[1], tc.want[3]} {
			if got := fillValues(t, w.Fields[1+i]); !slices.Equal(got, want) {
				t.Errorf("%s wide field %d: got %v, want %v", tc.fill, i, got, want)
			}
		}
	}
}

// TestFillLimit: a fill that would make more points than the query may
// have is refused, naming maxPoints, or rowLimit when maxPoints is not set.
func TestFillLimit(t *testing.T) {
	sql := fmt.Sprintf(fillQuery, "NULL")
	s := fillServer(t, 0)
	_, err := runQuery(t, s, sql, FormatTimeSeries, source.Limits{MaxPoints: 27}) // 2 series × 2 columns × 7 points = 28
	mustKind(t, err, source.KindLimit, "$__timeGroup fill NULL", "7 points per series", "more than 27 points, this data source's limit per query (setting maxPoints)", "raise maxPoints")
	_, err = runQuery(t, s, sql, FormatTimeSeriesWide, source.Limits{MaxPoints: 27})
	mustKind(t, err, source.KindLimit, "more than 27 points, this data source's limit per query (setting maxPoints)")

	s = fillServer(t, 20)
	_, err = runQuery(t, s, sql, FormatTimeSeries, source.Limits{})
	mustKind(t, err, source.KindLimit, "more than 20 points, this data source's limit per query (setting rowLimit)", "raise rowLimit")
	if _, err := runQuery(t, s, sql, FormatTable, source.Limits{}); err != nil {
		t.Fatalf("table format (not filled): %v", err)
	}
}
