package series

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
)

// TestSeriesOrderIsDeterministic sends the same rows in several orders and
// batch sizes: the frames come out in the same order every time, as
// Grafana orders a wide frame's fields by label (data.SortWideFrameFields):
// by the label values in the result's column order (host, then dc; a null
// one as empty, before an empty one), then by value column name.
func TestSeriesOrderIsDeterministic(t *testing.T) {
	rows := seriesRows(50, 4)
	var orders [][]string
	var frames []*data.Frame
	for seed := range uint64(4) {
		shuffled := slices.Clone(rows)
		rand.New(rand.NewPCG(seed, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		recs := metricBatches(shuffled, 7+int(seed)*13)
		sink := &frameSink{t: t}
		splitInto(t, sink, metricsSchema, recs)
		releaseAll(recs)
		var keys []string
		for _, f := range sink.frames {
			keys = append(keys, frameKey(f))
		}
		orders = append(orders, keys)
		frames = sink.frames
	}
	for i := 1; i < len(orders); i++ {
		if !slices.Equal(orders[0], orders[i]) {
			t.Fatalf("order %d differs from order 0:\n%v\n%v", i, orders[i][:6], orders[0][:6])
		}
	}
	if len(orders[0]) != 100 {
		t.Fatalf("%d frames, want 100", len(orders[0]))
	}
	key := func(f *data.Frame) []string {
		v := f.Fields[1]
		_, dcSet := v.Labels["dc"]
		return []string{v.Labels["host"], v.Labels["dc"], fmt.Sprint(dcSet), v.Name}
	}
	if !slices.IsSortedFunc(frames, func(x, y *data.Frame) int { return slices.Compare(key(x), key(y)) }) {
		t.Errorf("frames not sorted by host, dc, then value name:\n%v", orders[0][:8])
	}
	if orders[0][0] != "dc=eu, host=h000|cpu" || orders[0][1] != "dc=eu, host=h000|reqs" {
		t.Errorf("first frames %v", orders[0][:2])
	}
}

// TestSeriesLabelsNullAndEmptyDiffer: a null label is left out, an empty one
// is kept, and they are different series.
func TestSeriesLabelsNullAndEmptyDiffer(t *testing.T) {
	empty := ""
	rows := []metricRow{{ts: 1000, host: "a", dc: &empty, cpu: 1}, {ts: 1000, host: "a", cpu: 2}, {ts: 2000, host: "a", dc: &empty, cpu: 3}}
	recs := metricBatches(rows, 2)
	defer releaseAll(recs)
	sink := &frameSink{t: t}
	splitInto(t, sink, metricsSchema, recs)
	var got []string
	for _, f := range sink.frames {
		if f.Fields[1].Name == "cpu" {
			got = append(got, fmt.Sprintf("%s:%d", f.Fields[1].Labels, f.Rows()))
		}
	}
	if want := []string{"host=a:1", "dc=, host=a:2"}; !slices.Equal(got, want) { // a null label before an empty one
		t.Errorf("series %v, want %v", got, want)
	}
}

// TestSeriesHashCollision forces every row to the same hash: rows are still
// told apart by their label values.
func TestSeriesHashCollision(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: frame.Timestamp},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rec := batch(schema, func(rb *array.RecordBuilder) {
		rb.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2, 3, 4, 5}, nil)
		rb.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b", "a", "", "a"}, []bool{true, true, true, false, true})
		rb.Field(2).(*array.BooleanBuilder).AppendValues([]bool{true, true, true, true, false}, nil)
		rb.Field(3).(*array.Float64Builder).AppendValues([]float64{1, 2, 3, 4, 5}, nil)
	})
	defer rec.Release()
	b, err := New(testConfig(false), schema)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	b.bind(rec)
	for i := range int(rec.NumRows()) {
		id, err := b.lookup(i, 42)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if want := []int32{0, 1, 0, 2, 3}; !slices.Equal(ids, want) {
		t.Errorf("series ids %v, want %v", ids, want)
	}
}

// TestSeriesNullValuesAcrossBatches: a value column whose nulls start in a
// later batch keeps the earlier values valid; unsorted rows are sorted with
// their nulls.
func TestSeriesNullValuesAcrossBatches(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: frame.Timestamp},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b1 := batch(schema, func(rb *array.RecordBuilder) {
		rb.Field(0).(*array.TimestampBuilder).AppendValues(ts(5e9, 1e9), nil)
		rb.Field(1).(*array.Int32Builder).AppendValues([]int32{50, 10}, nil)
	})
	b2 := batch(schema, func(rb *array.RecordBuilder) {
		rb.Field(0).(*array.TimestampBuilder).AppendValues(ts(3e9, 4e9), nil)
		rb.Field(1).(*array.Int32Builder).AppendValues([]int32{0, 40}, []bool{false, true})
	})
	recs := []arrow.RecordBatch{b1, b2}
	defer releaseAll(recs)
	sink := &frameSink{t: t}
	splitInto(t, sink, schema, recs)
	f := sink.frames[0]
	var got []string
	for i := range f.Rows() {
		v := "null"
		if p := f.Fields[1].At(i).(*int32); p != nil {
			v = fmt.Sprint(*p)
		}
		got = append(got, fmt.Sprintf("%d:%s", f.Fields[0].At(i).(time.Time).Unix(), v))
	}
	if want := []string{"1:10", "3:null", "4:40", "5:50"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// TestSeriesPostHook: the post-processing step sees each series sorted by
// time, and what it returns is what the frame holds.
func TestSeriesPostHook(t *testing.T) {
	rows := []metricRow{{ts: 3000, host: "a", cpu: 3}, {ts: 1000, host: "a", cpu: 1}, {ts: 2000, host: "b", cpu: 2}}
	recs := metricBatches(rows, 2)
	defer releaseAll(recs)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b, err := New(Config{RefID: "A", SQL: "q", Types: testTypes}, metricsSchema)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	b.post = func(ss *sortedSeries, _ func(int64) error) error {
		seen = append(seen, fmt.Sprintf("%s:%v", ss.Labels, ss.Times))
		// Add a point at the end (as fill would), in the allocator's memory.
		ss.Times = append(slices.Clone(ss.Times), ss.Times[len(ss.Times)-1]+1)
		appendOne(t, ss, mem, func(bld array.Builder, v arrow.Array) error { return bld.AppendValueFromString(v.ValueStr(0)) })
		return nil
	}
	for _, rec := range recs {
		if err := b.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	sink := &frameSink{t: t}
	if err := b.Finish(t.Context(), sink, nil); err != nil {
		t.Fatal(err)
	}
	b.Release()
	if want := []string{"host=a:[1000000000 3000000000]", "host=b:[2000000000]"}; !slices.Equal(seen, want) {
		t.Errorf("post saw %v, want %v", seen, want)
	}
	f := sink.frames[0] // cpu of host a
	if f.Rows() != 3 || f.Fields[1].At(2).(float64) != 1 || f.Fields[0].At(2).(time.Time).UnixNano() != 3000000001 {
		t.Errorf("frame after post: %v", f.Fields)
	}
}

// TestSeriesSplitAllocations: taking a batch of known series allocates
// nothing per row: only a segment per column at each flush (every 64
// batches of 1000 rows here) and, now and then, a longer run list.
func TestSeriesSplitAllocations(t *testing.T) {
	rows := seriesRows(100, 40)
	norms := metricBatches(rows, 1000)
	defer releaseAll(norms)
	b, err := New(Config{Types: testTypes}, metricsSchema)
	if err != nil {
		t.Fatal(err)
	}
	const perFlush = flushRows / 1000
	// Warm up: every series exists, the scratch has its size.
	for i := range 17 * perFlush {
		if err := b.Add(norms[i%len(norms)]); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	allocs := testing.AllocsPerRun(14*perFlush, func() {
		if err := b.Add(norms[i%len(norms)]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	// 14 flushes of 3 segments; the 100 run lists stay within their
	// capacity (17 to 31 runs: 32).
	if want := 3.0 / perFlush; allocs > want*1.2 {
		t.Errorf("%.3f allocations per 1000-row batch, want ≤ %.3f", allocs, want*1.2)
	}
	b.Release()
}

// TestSeriesAcrossFlushes sends more rows than one flush holds, shuffled,
// with nulls in a value column starting late: every series comes out
// complete, sorted, with its nulls where they were.
func TestSeriesAcrossFlushes(t *testing.T) {
	const hosts, points = 3, 3 * flushRows / 4 // 2.25 flushes
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: frame.Timestamp},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	type row struct {
		t, v int64
		h    int
	}
	var rows []row
	for p := range points {
		for h := range hosts {
			rows = append(rows, row{t: int64(p), v: int64(h*1_000_000 + p), h: h})
		}
	}
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	isNull := func(r row) bool { return r.h == 1 && r.t%7 == 0 && r.t > points/2 }
	var recs []arrow.RecordBatch
	for len(rows) > 0 {
		chunk := rows[:min(5000, len(rows))]
		rows = rows[len(chunk):]
		recs = append(recs, batch(schema, func(b *array.RecordBuilder) {
			for _, r := range chunk {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t))
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprint(r.h))
				if isNull(r) {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.Int64Builder).Append(r.v)
				}
			}
		}))
	}
	sink := &frameSink{t: t}
	splitInto(t, sink, schema, recs)
	for _, rec := range recs {
		rec.Release()
	}
	if len(sink.frames) != hosts {
		t.Fatalf("%d frames", len(sink.frames))
	}
	for h, f := range sink.frames {
		if f.Rows() != points || f.Fields[1].Labels["host"] != fmt.Sprint(h) {
			t.Fatalf("frame %d: %d rows, labels %v", h, f.Rows(), f.Fields[1].Labels)
		}
		for p := range points {
			if got := f.Fields[0].At(p).(time.Time).UnixNano(); got != int64(p) {
				t.Fatalf("host %d row %d: time %d", h, p, got)
			}
			v, ok := f.Fields[1].ConcreteAt(p)
			r := row{t: int64(p), h: h}
			if ok == isNull(r) || (ok && v.(int64) != int64(h*1_000_000+p)) {
				t.Fatalf("host %d row %d: %v (valid %v)", h, p, v, ok)
			}
		}
	}
}

// TestSeriesGuessAcrossBatches: the series guesses of one text label look
// back into earlier pending batches, whose rows may have a null time (no
// series): the result is as without guesses.
func TestSeriesGuessAcrossBatches(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	// Batch 1 (a null time at its end, so the lookup without guesses),
	// then batches of one row each and of three rows, interleaved hosts.
	rows := [][]struct {
		t    int64 // -1: null
		host string
	}{
		{{1, "a"}, {1, "b"}, {1, "c"}, {-1, "a"}},
		{{2, "a"}},
		{{2, "b"}, {2, "c"}, {3, "a"}},
		{{3, "b"}, {3, "c"}},
	}
	b, err := New(testConfig(false), schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range rows {
		rec := batch(schema, func(rb *array.RecordBuilder) {
			for _, r := range chunk {
				if r.t < 0 {
					rb.Field(0).AppendNull()
				} else {
					rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t))
				}
				rb.Field(1).(*array.StringBuilder).Append(r.host)
				rb.Field(2).(*array.Float64Builder).Append(float64(r.t))
			}
		})
		if err := b.Add(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	sink := &frameSink{t: t}
	if err := b.Finish(t.Context(), sink, nil); err != nil {
		t.Fatal(err)
	}
	b.Release()
	if len(sink.frames) != 3 {
		t.Fatalf("%d frames, want 3", len(sink.frames))
	}
	for i, f := range sink.frames {
		if want := string(rune('a' + i)); f.Fields[1].Labels["host"] != want || f.Rows() != 3 {
			t.Fatalf("frame %d: %v with %d rows, want host %s with 3", i, f.Fields[1].Labels, f.Rows(), want)
		}
		for p := range 3 {
			if got := f.Fields[1].At(p).(float64); got != float64(p+1) {
				t.Errorf("host %s point %d: %v", f.Fields[1].Labels["host"], p, got)
			}
		}
	}
}

// Label columns that share a name keep their own labels: the later ones
// are renamed, avoiding the names other columns have, and a notice says so.
func TestUniqueLabels(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
		notice   string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, ""},
		{[]string{"x", "x"}, []string{"x", "x_2"}, `the later ones are labelled "x" as "x_2".`},
		{[]string{"x", "x", "x_2", "x"}, []string{"x", "x_3", "x_2", "x_4"}, `"x" as "x_3", "x" as "x_4".`},
	} {
		got, notice := UniqueLabels(tc.in)
		if !slices.Equal(got, tc.want) || !strings.HasSuffix(notice, tc.notice) || (tc.notice == "") != (notice == "") {
			t.Errorf("%q: %q, %q; want %q, …%q", tc.in, got, notice, tc.want, tc.notice)
		}
	}
}

// An answer without series is one frame without rows that carries the
// frame meta: its notices (rows left out for a null time), the SQL sent;
// without it, the panel said "No data" and nothing more.
func TestAnswerWithoutSeriesKeepsItsMeta(t *testing.T) {
	allNull := batch(metricsSchema, func(b *array.RecordBuilder) {
		for i := range 3 {
			b.Field(0).AppendNull()
			b.Field(1).(*array.StringBuilder).Append("h")
			b.Field(2).AppendNull()
			b.Field(3).(*array.Float64Builder).Append(float64(i))
			b.Field(4).(*array.Int64Builder).Append(int64(i))
		}
	})
	defer allNull.Release()
	for _, tc := range []struct {
		name   string
		recs   []arrow.RecordBatch
		notice string
	}{{"rows with a null time", []arrow.RecordBatch{allNull}, "3 rows"}, {"no rows", nil, ""}} {
		for _, wide := range []bool{false, true} {
			sink := &frameSink{t: t}
			cfg := testConfig(wide)
			cfg.SQL = "SELECT ts, host, dc, cpu, reqs FROM m"
			splitWith(t, cfg, sink, metricsSchema, tc.recs)
			if len(sink.frames) != 1 {
				t.Fatalf("%s, wide %v: %d frames, want one", tc.name, wide, len(sink.frames))
			}
			f := sink.frames[0]
			if f.Rows() != 0 || f.Meta == nil || f.Meta.ExecutedQueryString != cfg.SQL || f.RefID != "A" {
				t.Errorf("%s, wide %v: %d rows, meta %+v", tc.name, wide, f.Rows(), f.Meta)
			}
			if tc.notice != "" && (len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, tc.notice)) {
				t.Errorf("%s, wide %v: notices %+v, want one saying %q", tc.name, wide, f.Meta.Notices, tc.notice)
			}
		}
	}
}

// A query of a time, a text column named metric and one value names each
// series by its metric, without labels, as Grafana's SQL data sources do
// (and so dashboards written for them keep their legends); any other
// shape keeps the value column's name and the labels.
func TestMetricColumnNamesTheSeries(t *testing.T) {
	schemaOf := func(names ...string) *arrow.Schema {
		fields := []arrow.Field{{Name: "time", Type: frame.Timestamp}}
		for _, n := range names {
			fields = append(fields, arrow.Field{Name: n, Type: arrow.BinaryTypes.String})
		}
		return arrow.NewSchema(append(fields, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Float64}), nil)
	}
	rows := func(s *arrow.Schema) arrow.RecordBatch {
		return batch(s, func(b *array.RecordBuilder) {
			for i, m := range []string{"a", "b", "a", "b"} {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i / 2 * 1e9))
				for c := 1; c < s.NumFields()-1; c++ {
					b.Field(c).(*array.StringBuilder).Append(m)
				}
				b.Field(s.NumFields() - 1).(*array.Float64Builder).Append(float64(i))
			}
		})
	}
	for _, tc := range []struct {
		labels []string
		names  []string // of the value fields, in order
		keeps  bool     // the fields keep their labels
	}{
		{[]string{"metric"}, []string{"a", "b"}, false},
		{[]string{"host"}, []string{"value", "value"}, true},
		{[]string{"metric", "host"}, []string{"value", "value"}, true},
	} {
		s := schemaOf(tc.labels...)
		rec := rows(s)
		for _, wide := range []bool{false, true} {
			sink := &frameSink{t: t}
			splitWith(t, testConfig(wide), sink, s, []arrow.RecordBatch{rec})
			var fields []*data.Field
			for _, f := range sink.frames {
				fields = append(fields, f.Fields[1:]...)
			}
			for i, f := range fields {
				if i >= len(tc.names) || f.Name != tc.names[i] || (len(f.Labels) > 0) != tc.keeps {
					t.Errorf("%v, wide %v: field %d named %q with labels %v; want the names %q, labels kept %v", tc.labels, wide, i, f.Name, f.Labels, tc.names, tc.keeps)
				}
			}
			if len(fields) != len(tc.names) {
				t.Errorf("%v, wide %v: %d value fields, want %d", tc.labels, wide, len(fields), len(tc.names))
			}
		}
		rec.Release()
	}
}
