package series

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// TestTimeSeriesWide checks the timeseries-wide frame: the union of the
// times, sorted, one field per series × value column, by value column
// first and then in the order of the per-series frames (as Grafana orders
// a wide frame's fields), null where a series has no point.
func TestTimeSeriesWide(t *testing.T) {
	rows := seriesRows(5, 3)
	// host h004 misses the middle point; h003 has it twice.
	var kept []metricRow
	for _, r := range rows {
		if r.host == "h004" && r.ts == 1_700_000_001_000 {
			continue
		}
		kept = append(kept, r)
		if r.host == "h003" && r.ts == 1_700_000_001_000 {
			dup := r
			dup.cpu = -1
			kept = append(kept, dup)
		}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(kept), func(i, j int) { kept[i], kept[j] = kept[j], kept[i] })
	recs := metricBatches(kept, 4)
	defer releaseAll(recs)

	multi, wide := &frameSink{t: t}, &frameSink{t: t}
	splitWith(t, Config{RefID: "A", SQL: "m", Types: testTypes}, multi, metricsSchema, recs)
	splitWith(t, Config{RefID: "A", SQL: "m", Wide: true, Types: testTypes}, wide, metricsSchema, recs)
	if len(wide.frames) != 1 {
		t.Fatalf("%d wide frames", len(wide.frames))
	}
	f := wide.frames[0]
	if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesWide || f.Meta.TypeVersion != (data.FrameTypeVersion{0, 1}) || f.Meta.ExecutedQueryString != "m" {
		t.Fatalf("meta %+v", f.Meta)
	}
	if len(f.Fields) != 1+len(multi.frames) || f.Rows() != 3 || f.Fields[0].Name != "ts" || f.Fields[0].Nullable() {
		t.Fatalf("%d fields, %d rows", len(f.Fields), f.Rows())
	}
	for i := range 3 {
		if got := f.Fields[0].At(i).(time.Time).UnixMilli(); got != 1_700_000_000_000+int64(i)*1000 {
			t.Fatalf("time %d: %d", i, got)
		}
	}
	if len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, "1 points were left out") {
		t.Errorf("notices %+v", f.Meta.Notices)
	}
	const series, values = 5, 2 // the per-series frames: each series' cpu, then its reqs
	for i, m := range multi.frames {
		w := f.Fields[1+i%values*series+i/values]
		if w.Name != m.Fields[1].Name || w.Labels.String() != m.Fields[1].Labels.String() {
			t.Fatalf("field %d is %s %s, frame %d is %s", i+1, w.Name, w.Labels, i, frameKey(m))
		}
		mi := 0
		for r := range 3 {
			v, ok := w.ConcreteAt(r)
			at := func(i int) bool {
				return i < m.Rows() && m.Fields[0].At(i).(time.Time).Equal(f.Fields[0].At(r).(time.Time))
			}
			if at(mi) {
				for at(mi + 1) {
					mi++ // a point the wide frame leaves out: it keeps a time's last
				}
				want, _ := m.Fields[1].ConcreteAt(mi)
				if v != want {
					t.Errorf("%s row %d: %v, want %v", frameKey(m), r, v, want)
				}
				mi++
				continue
			}
			if ok {
				t.Errorf("%s row %d: %v, want null", frameKey(m), r, v)
			}
		}
	}
	// Fields: cpu of h000 … h004, then reqs of each.
	if w := f.Fields[1+4]; w.Labels["host"] != "h004" || w.At(1).(*float64) != nil {
		t.Errorf("h004 misses the middle point: %v %v", w.Labels, w.At(1))
	}
	if w := f.Fields[1+3]; w.Labels["host"] != "h003" || w.Nullable() || w.At(1).(float64) != -1 {
		t.Errorf("h003 keeps the last point of the duplicated time, as Grafana's LongToWide does: %v %v", w.Labels, w.At(1))
	}

}

// TestTimeSeriesWideRefusesSparse: series that share no times are refused
// in one wide frame, naming the format to choose instead.
func TestTimeSeriesWideRefusesSparse(t *testing.T) {
	var sparse []metricRow
	for h := range 50 {
		for p := range 40 {
			sparse = append(sparse, metricRow{ts: int64(h*1000 + p), host: fmt.Sprint(h), cpu: 1})
		}
	}
	recs := metricBatches(sparse, 100)
	defer releaseAll(recs)
	b, err := New(testConfig(true), metricsSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	for _, rec := range recs {
		if err := b.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	err = b.Finish(t.Context(), &discardSink{}, nil)
	if source.KindOf(err) != source.KindQuery {
		t.Fatalf("error %v, want a query error", err)
	}
	for _, want := range []string{"time_series_wide", "share few timestamps", "format time_series"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// unionTimes is the sorted union of the series' times, in memory of
// exactly its size (a lent wide frame references it, and the budget counts
// its length): when the series share their times, when one lacks a time,
// and when one has a time twice.
func TestUnionTimesExactSize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series [][]arrow.Timestamp
		want   []arrow.Timestamp
		same   bool
	}{
		{"shared", [][]arrow.Timestamp{ts(1, 2, 3), ts(1, 2, 3)}, ts(1, 2, 3), true},
		{"one lacks a time", [][]arrow.Timestamp{ts(1, 2, 3), ts(1, 3)}, ts(1, 2, 3), false},
		{"a time twice", [][]arrow.Timestamp{ts(1, 2, 2, 3), ts(1, 2, 2, 3)}, ts(1, 2, 3), true},
		{"disjoint", [][]arrow.Timestamp{ts(5, 6), ts(1, 2)}, ts(1, 2, 5, 6), false},
	} {
		var all []*sortedSeries
		for _, s := range tc.series {
			all = append(all, &sortedSeries{Times: s})
		}
		got, same := unionTimes(all)
		if !slices.Equal(got, tc.want) || same != tc.same || cap(got) != len(got) {
			t.Errorf("%s: %v (capacity %d), same %v; want %v, same %v", tc.name, got, cap(got), same, tc.want, tc.same)
		}
		if unsafe.SliceData(got) == unsafe.SliceData(tc.series[0]) {
			t.Errorf("%s: the union is the first series' memory", tc.name)
		}
	}
}

// A wide frame's value fields come in the order Grafana's own conversion of
// a long SQL result gives them (data.LongToWide, as its SQL data sources
// run it): by value column name, then by the label values in the result's
// column order (region before host here, though host sorts first by name),
// a missing one as empty; the per-series frames in that order of series.
// (Grafana gives a null label the value ""; Quiver leaves it out, so that
// null and empty label different series: the keys compared leave out
// empty labels.)
func TestWideFieldsInGrafanasOrder(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: frame.Timestamp},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "zeta", Type: arrow.PrimitiveTypes.Float64},
		{Name: "alpha", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	type row struct {
		t            int64
		region, host string // region "": null
	}
	rows := []row{{1, "us", "a"}, {1, "eu", "b"}, {1, "", "c"}, {1, "eu", "a"}, {2, "us", "a"}, {2, "eu", "b"}, {2, "", "c"}, {2, "eu", "a"}}
	rec := batch(schema, func(b *array.RecordBuilder) {
		for i, r := range rows {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t * 1e9))
			if r.region == "" {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(r.region)
			}
			b.Field(2).(*array.StringBuilder).Append(r.host)
			b.Field(3).(*array.Float64Builder).Append(float64(i))
			b.Field(4).(*array.Float64Builder).Append(float64(-i))
		}
	})
	defer rec.Release()

	// Grafana's: the long frame as its SQL data sources build it.
	long := data.NewFrame("",
		data.NewField("ts", nil, []time.Time{}), data.NewField("region", nil, []*string{}), data.NewField("host", nil, []string{}),
		data.NewField("zeta", nil, []float64{}), data.NewField("alpha", nil, []float64{}))
	for i, r := range rows {
		var region *string
		if r.region != "" {
			region = &r.region
		}
		long.AppendRow(time.Unix(r.t, 0), region, r.host, float64(i), float64(-i))
	}
	want, err := data.LongToWide(long, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := func(f *data.Field) string {
		l := data.Labels{}
		for k, v := range f.Labels {
			if v != "" {
				l[k] = v
			}
		}
		return f.Name + " " + l.String()
	}
	var wantKeys []string
	for _, f := range want.Fields[1:] {
		wantKeys = append(wantKeys, key(f))
	}

	wide, multi := &frameSink{t: t}, &frameSink{t: t}
	splitAs(t, true, wide, schema, []arrow.RecordBatch{rec})
	splitAs(t, false, multi, schema, []arrow.RecordBatch{rec})
	var got, gotMulti []string
	for _, f := range wide.frames[0].Fields[1:] {
		got = append(got, key(f))
	}
	for _, f := range multi.frames {
		if f.Fields[1].Name == "alpha" {
			gotMulti = append(gotMulti, key(f.Fields[1]))
		}
	}
	if !slices.Equal(got, wantKeys) {
		t.Errorf("wide fields:\n got %q\nwant %q (data.LongToWide)", got, wantKeys)
	}
	if !slices.Equal(gotMulti, wantKeys[:len(gotMulti)]) || len(gotMulti) != 4 {
		t.Errorf("per-series frames of alpha: %q, want %q", gotMulti, wantKeys[:4])
	}
}
