package flightsql

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/source"
)

// seriesRows is hosts × points rows, every host in every point, the two dc
// values alternating; dc is null for every third host.
func seriesRows(hosts, points int) []metricRow {
	eu, us := "eu", "us"
	var rows []metricRow
	for p := range points {
		for h := range hosts {
			var dc *string
			switch h % 3 {
			case 0:
				dc = &eu
			case 1:
				dc = &us
			}
			rows = append(rows, metricRow{ts: 1_700_000_000_000 + int64(p)*1000, host: fmt.Sprintf("h%03d", h), dc: dc,
				cpu: float64(h) + float64(p)/10, reqs: int64(h*100 + p)})
		}
	}
	return rows
}

// frameKey names a time-series frame by its value field and labels.
func frameKey(f *data.Frame) string {
	v := f.Fields[1]
	return v.Labels.String() + "|" + v.Name
}

// TestSeriesOrderIsDeterministic sends the same rows in several orders and
// batch sizes: the frames come out in the same order every time, sorted by
// label set (as Grafana prints labels), then by value column.
func TestSeriesOrderIsDeterministic(t *testing.T) {
	rows := seriesRows(50, 4)
	srv := newMemServer()
	var orders [][]string
	for seed := range uint64(4) {
		shuffled := slices.Clone(rows)
		rand.New(rand.NewPCG(seed, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		sql := fmt.Sprintf("m%d", seed)
		srv.set(sql, &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, shuffled, 7+int(seed)*13)}})
	}
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for seed := range 4 {
		sink, err := runQuery(t, s, fmt.Sprintf("m%d", seed), FormatTimeSeries, source.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, f := range sink.frames {
			keys = append(keys, frameKey(f))
		}
		orders = append(orders, keys)
	}
	for i := 1; i < len(orders); i++ {
		if !slices.Equal(orders[0], orders[i]) {
			t.Fatalf("order %d differs from order 0:\n%v\n%v", i, orders[i][:6], orders[0][:6])
		}
	}
	if len(orders[0]) != 100 {
		t.Fatalf("%d frames, want 100", len(orders[0]))
	}
	// Sorted by the labels' string, then cpu before reqs (their order in the result).
	want := slices.Clone(orders[0])
	slices.SortFunc(want, func(x, y string) int {
		lx, vx, _ := strings.Cut(x, "|")
		ly, vy, _ := strings.Cut(y, "|")
		if c := strings.Compare(lx, ly); c != 0 {
			return c
		}
		return strings.Compare(vx, vy) // cpu < reqs
	})
	if !slices.Equal(orders[0], want) {
		t.Errorf("frames not sorted by labels:\n%v", orders[0][:8])
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
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 2)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	sink, err := runQuery(t, s, "m", FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range sink.frames {
		if f.Fields[1].Name == "cpu" {
			got = append(got, fmt.Sprintf("%s:%d", f.Fields[1].Labels, f.Rows()))
		}
	}
	if want := []string{"dc=, host=a:2", "host=a:1"}; !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
}

// TestSeriesHashCollision forces every row to the same hash: rows are still
// told apart by their label values.
func TestSeriesHashCollision(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: timestampNS},
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
	b, err := newSeriesBuilder(frameInfo{refID: "A"}, false, schema)
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
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Second}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b1 := batch(schema, func(rb *array.RecordBuilder) {
		rb.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{5, 1}, nil)
		rb.Field(1).(*array.Int32Builder).AppendValues([]int32{50, 10}, nil)
	})
	b2 := batch(schema, func(rb *array.RecordBuilder) {
		rb.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{3, 4}, nil)
		rb.Field(1).(*array.Int32Builder).AppendValues([]int32{0, 40}, []bool{false, true})
	})
	srv := newMemServer()
	srv.set("q", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{b1, b2}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	sink, err := runQuery(t, s, "q", FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
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
	recs := metricBatches(t, rows, 2)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	plan, err := newPlan(metricsSchema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSeriesBuilder(frameInfo{refID: "A", sql: "q"}, false, plan.out)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	b.post = func(ss *sortedSeries) error {
		seen = append(seen, fmt.Sprintf("%s:%v", ss.Labels, ss.Times))
		// Add a point at the end (as fill would), in the allocator's memory.
		ss.Times = append(slices.Clone(ss.Times), ss.Times[len(ss.Times)-1]+1)
		appendOne(t, ss, mem, func(bld array.Builder, v arrow.Array) error { return bld.AppendValueFromString(v.ValueStr(0)) })
		return nil
	}
	for _, rec := range recs {
		norm, err := plan.apply(mem, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.add(norm); err != nil {
			t.Fatal(err)
		}
		norm.Release()
	}
	sink := &frameSink{t: t}
	if err := b.finish(sink, nil); err != nil {
		t.Fatal(err)
	}
	b.release()
	if want := []string{"host=a:[1000000000 3000000000]", "host=b:[2000000000]"}; !slices.Equal(seen, want) {
		t.Errorf("post saw %v, want %v", seen, want)
	}
	f := sink.frames[0] // cpu of host a
	if f.Rows() != 3 || f.Fields[1].At(2).(float64) != 1 || f.Fields[0].At(2).(time.Time).UnixNano() != 3000000001 {
		t.Errorf("frame after post: %v", f.Fields)
	}
}

// TestTimeSeriesWide checks the timeseries-wide frame: the union of the
// times, sorted, one field per series × value column in the order of the
// per-series frames, null where a series has no point.
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
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, kept, 4)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	multi, err := runQuery(t, s, "m", FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := runQuery(t, s, "m", FormatTimeSeriesWide, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
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
	for i, m := range multi.frames {
		w := f.Fields[i+1]
		if w.Name != m.Fields[1].Name || w.Labels.String() != m.Fields[1].Labels.String() {
			t.Fatalf("field %d is %s %s, frame %d is %s", i+1, w.Name, w.Labels, i, frameKey(m))
		}
		mi := 0
		for r := range 3 {
			v, ok := w.ConcreteAt(r)
			if mi < m.Rows() && m.Fields[0].At(mi).(time.Time).Equal(f.Fields[0].At(r).(time.Time)) {
				want, _ := m.Fields[1].ConcreteAt(mi)
				if v != want {
					t.Errorf("%s row %d: %v, want %v", frameKey(m), r, v, want)
				}
				mi++
				for mi < m.Rows() && m.Fields[0].At(mi).(time.Time).Equal(f.Fields[0].At(r).(time.Time)) {
					mi++ // the duplicate the wide frame leaves out
				}
				continue
			}
			if ok {
				t.Errorf("%s row %d: %v, want null", frameKey(m), r, v)
			}
		}
	}
	// Fields: dc=eu h000, h003; dc=us h001, h004; h002 (no dc); cpu, reqs each.
	if w := f.Fields[1+2*3]; w.Labels["host"] != "h004" || w.At(1).(*float64) != nil {
		t.Errorf("h004 misses the middle point: %v %v", w.Labels, w.At(1))
	}
	if w := f.Fields[1+2*1]; w.Labels["host"] != "h003" || w.Nullable() || w.At(1).(float64) != 3.1 {
		t.Errorf("h003 keeps its first point of the duplicated time: %v %v", w.Labels, w.At(1))
	}

	// Series that share no times are refused.
	var sparse []metricRow
	for h := range 50 {
		for p := range 40 {
			sparse = append(sparse, metricRow{ts: int64(h*1000 + p), host: fmt.Sprint(h), cpu: 1})
		}
	}
	srv.set("sparse", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, sparse, 100)}})
	_, err = runQuery(t, s, "sparse", FormatTimeSeriesWide, source.Limits{})
	mustKind(t, err, source.KindQuery, "time_series_wide", "share few timestamps", "format time_series")
}

// TestExecutedQueryStringOnEveryFrame: every frame of every format carries
// the SQL after macros.
func TestExecutedQueryStringOnEveryFrame(t *testing.T) {
	const sent = "SELECT * FROM m WHERE x > 60000"
	srv := newMemServer()
	srv.set(sent, &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, seriesRows(3, 2), 4)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, format := range []string{FormatTimeSeries, FormatTimeSeriesWide, FormatTable, FormatLogs} {
		sink, err := runQuery(t, s, "SELECT * FROM m WHERE x > $__interval_ms", format, source.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(sink.frames) == 0 {
			t.Fatalf("%s: no frames", format)
		}
		for i, f := range sink.frames {
			if f.Meta == nil || f.Meta.ExecutedQueryString != sent {
				t.Errorf("%s frame %d: meta %+v", format, i, f.Meta)
			}
		}
	}
}

// TestUpstreamErrorShowsShortenedSQL: the SQL sent is in the error, cut
// after 500 bytes.
func TestUpstreamErrorShowsShortenedSQL(t *testing.T) {
	srv := newMemServer()
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	long := "SELECT " + strings.Repeat("é", 400) + " FROM nowhere"
	sink := &frameSink{t: t}
	err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"rawSql":%q,"format":"table"}`, long))}, sink)
	mustKind(t, err, source.KindUpstream, "executing the query", "(SQL sent: SELECT ééé")
	msg := err.Error()
	if strings.Contains(msg, "FROM nowhere)") {
		t.Errorf("the whole SQL is in the error: %d bytes", len(msg))
	}
	_, shown, _ := strings.Cut(msg, "(SQL sent: ")
	if !strings.HasSuffix(shown, "…)") || len(shown) > sqlShown+len("…)") || len(shown) < sqlShown-1 {
		t.Errorf("shown SQL is %d bytes: %q", len(shown), shown)
	}
	if got := shortSQL("SELECT 1"); got != "SELECT 1" {
		t.Errorf("short SQL changed: %q", got)
	}
}

// TestNumericsCoverColumns: exactly the types Grafana reads as numbers
// have their typed gather.
func TestNumericsCoverColumns(t *testing.T) {
	for i, reg := range registry {
		number := reg.grafana != nil && reg.grafana.tstype == "number"
		if (reg.numeric != nil) != number {
			t.Errorf("%s: Grafana number %v but numeric entry %v", arrow.Type(i), number, reg.numeric != nil)
		}
	}
}

// TestSeriesSplitAllocations: taking a batch of known series allocates
// nothing per row: only a segment per column at each flush (every 64
// batches of 1000 rows here) and, now and then, a longer run list.
func TestSeriesSplitAllocations(t *testing.T) {
	rows := seriesRows(100, 40)
	recs := metricBatches(t, rows, 1000)
	plan, err := newPlan(metricsSchema)
	if err != nil {
		t.Fatal(err)
	}
	var norms []arrow.RecordBatch
	for _, r := range recs {
		n, err := plan.apply(memory.DefaultAllocator, r)
		if err != nil {
			t.Fatal(err)
		}
		norms = append(norms, n)
	}
	b, err := newSeriesBuilder(frameInfo{}, false, plan.out)
	if err != nil {
		t.Fatal(err)
	}
	const perFlush = flushRows / 1000
	// Warm up: every series exists, the scratch has its size.
	for i := range 17 * perFlush {
		if err := b.add(norms[i%len(norms)]); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	allocs := testing.AllocsPerRun(14*perFlush, func() {
		if err := b.add(norms[i%len(norms)]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	// 14 flushes of 3 segments; the 100 run lists stay within their
	// capacity (17 to 31 runs: 32).
	if want := 3.0 / perFlush; allocs > want*1.2 {
		t.Errorf("%.3f allocations per 1000-row batch, want ≤ %.3f", allocs, want*1.2)
	}
	b.release()
}

// TestSeriesAcrossFlushes sends more rows than one flush holds, shuffled,
// with nulls in a value column starting late: every series comes out
// complete, sorted, with its nulls where they were.
func TestSeriesAcrossFlushes(t *testing.T) {
	const hosts, points = 3, 3 * flushRows / 4 // 2.25 flushes
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: timestampNS},
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

// TestNormaliseKeepsBuffers: the types Grafana reads as they are (a
// timestamp[ns] with a zone and no infinity, utf8, float64, int64) pass
// normalisation without a copy: every buffer of the normalised batch is the
// received one.
func TestNormaliseKeepsBuffers(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rec := batch(schema, func(b *array.RecordBuilder) {
		for i := range 100 {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1e9))
			if i%7 == 0 {
				b.Field(1).AppendNull()
				b.Field(2).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("h%d", i%3))
				b.Field(2).(*array.Float64Builder).Append(float64(i))
			}
			b.Field(3).(*array.Int64Builder).Append(int64(i))
		}
	})
	defer rec.Release()
	plan, err := newPlan(schema)
	if err != nil {
		t.Fatal(err)
	}
	norm, err := plan.apply(memory.DefaultAllocator, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer norm.Release()
	for c := range schema.NumFields() {
		in, out := rec.Column(c).Data().Buffers(), norm.Column(c).Data().Buffers()
		if len(in) != len(out) {
			t.Fatalf("column %d: %d buffers, want %d", c, len(out), len(in))
		}
		for i := range in {
			if in[i] == nil || in[i].Len() == 0 {
				continue
			}
			if out[i] == nil || unsafe.SliceData(out[i].Bytes()) != unsafe.SliceData(in[i].Bytes()) {
				t.Errorf("column %s buffer %d was copied by normalisation", schema.Field(c).Name, i)
			}
		}
	}
	// A nanosecond column with an infinity is converted (the infinity
	// becomes null), so the check above can fail.
	inf := batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(math.MaxInt64))
		b.Field(1).(*array.StringBuilder).Append("h")
		b.Field(2).(*array.Float64Builder).Append(1)
		b.Field(3).(*array.Int64Builder).Append(1)
	})
	defer inf.Release()
	n2, err := plan.apply(memory.DefaultAllocator, inf)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Release()
	if !n2.Column(0).IsNull(0) {
		t.Errorf("infinity was not made null")
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
	b, err := newSeriesBuilder(frameInfo{refID: "A"}, false, schema)
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
		if err := b.add(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	sink := &frameSink{t: t}
	if err := b.finish(sink, nil); err != nil {
		t.Fatal(err)
	}
	b.release()
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

// holdSink keeps the records it is given, as the plugin's sink keeps the
// first frame of a query until the end.
type holdSink struct{ recs []arrow.RecordBatch }

func (s *holdSink) Frame(*data.Frame) error { return fmt.Errorf("unexpected data.Frame") }

func (s *holdSink) Record(rec arrow.RecordBatch) error {
	s.recs = append(s.recs, rec)
	return nil
}

// TestSeriesRecycledMemory: the arrays of a series live in memory that is
// handed to the next series once the sink releases them. A sink that holds
// every record sees every series intact; one that releases each record at
// once sees them intact too (and the memory reused); in both, every buffer
// comes back once the records are released.
func TestSeriesRecycledMemory(t *testing.T) {
	const hosts, points = 40, 5 * flushRows / 2 / 40 // 2.5 flushes: every series in 3 runs
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: timestampNS},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	isNull := func(h, p int) bool { return (h+p)%11 == 0 }
	var recs []arrow.RecordBatch
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for p := range points {
		for h := range hosts {
			rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(p))
			rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("h%02d", h))
			if isNull(h, p) {
				rb.Field(2).AppendNull()
			} else {
				rb.Field(2).(*array.Float64Builder).Append(float64(h*1_000_000 + p))
			}
			rb.Field(3).(*array.Int64Builder).Append(int64(p))
			if rb.Field(0).Len() == 8192 {
				recs = append(recs, rb.NewRecordBatch())
			}
		}
	}
	recs = append(recs, rb.NewRecordBatch())
	rb.Release()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	check := func(t *testing.T, f *data.Frame) {
		t.Helper()
		h := 0
		if _, err := fmt.Sscanf(f.Fields[1].Labels["host"], "h%02d", &h); err != nil || f.Rows() != points {
			t.Fatalf("frame %v with %d rows", f.Fields[1].Labels, f.Rows())
		}
		for p := range points {
			if got := f.Fields[0].At(p).(time.Time).UnixNano(); got != int64(p) {
				t.Fatalf("host %d point %d: time %d", h, p, got)
			}
			v, ok := f.Fields[1].ConcreteAt(p)
			if f.Fields[1].Name == "n" {
				if !ok || v.(int64) != int64(p) {
					t.Fatalf("host %d point %d: n %v", h, p, v)
				}
				continue
			}
			if ok == isNull(h, p) || (ok && v.(float64) != float64(h*1_000_000+p)) {
				t.Fatalf("host %d point %d: v %v (valid %v)", h, p, v, ok)
			}
		}
	}
	build := func(t *testing.T, sink source.Sink) *seriesBuilder { return splitInto(t, sink, schema, recs) }
	t.Run("held", func(t *testing.T) {
		sink := &holdSink{}
		b := build(t, sink)
		if len(sink.recs) != 2*hosts {
			t.Fatalf("%d frames", len(sink.recs))
		}
		read := &frameSink{t: t} // reads each record as Grafana does, and releases it
		for _, rec := range sink.recs {
			if err := read.Record(rec); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range read.frames {
			check(t, f)
		}
		if b.mem.out != 0 {
			t.Errorf("%d buffers not freed", b.mem.out)
		}
	})
	t.Run("released", func(t *testing.T) {
		sink := &frameSink{t: t}
		b := build(t, sink)
		if len(sink.frames) != 2*hosts {
			t.Fatalf("%d frames", len(sink.frames))
		}
		for _, f := range sink.frames {
			check(t, f)
		}
		if b.mem.out != 0 || len(b.mem.free) == 0 {
			t.Errorf("%d buffers not freed, %d kept for reuse", b.mem.out, len(b.mem.free))
		}
	})
	// A sink that lends: every frame lent (each series is in three runs,
	// its arrays its own), none of their memory reused once released, and
	// the series, which have the same times, sharing them.
	t.Run("lent", func(t *testing.T) {
		sink := newLendSink(t)
		build(t, sink)
		if sink.lent != 2*hosts || sink.copied != 0 {
			t.Fatalf("%d frames lent, %d copied; want %d lent", sink.lent, sink.copied, 2*hosts)
		}
		for _, f := range sink.read.frames {
			check(t, f)
		}
		if n := sink.overwritten(); n > 0 {
			t.Errorf("%d of %d lent buffers written over after they were lent", n, len(sink.bufs))
		}
		if len(sink.times) != 1 {
			t.Errorf("the %d frames' times, the same in all, lie in %d buffers", sink.lent, len(sink.times))
		}
	})
	// A post step (as fill) that replaces the times of series that share
	// them, each series' differently: every frame has its own new times,
	// neither the shared ones nor another series'.
	t.Run("lent, times replaced after", func(t *testing.T) {
		b, err := newSeriesBuilder(frameInfo{refID: "A"}, false, schema)
		if err != nil {
			t.Fatal(err)
		}
		nth := 0 // the series' place in the frames' order
		b.post = func(ss *sortedSeries) error {
			ss.Times = append(slices.Clone(ss.Times), ss.Times[len(ss.Times)-1]+1+arrow.Timestamp(nth))
			nth++
			appendOne(t, ss, memory.DefaultAllocator, func(bld array.Builder, _ arrow.Array) error { bld.AppendNull(); return nil })
			ss.inSegments = false
			return nil
		}
		for _, rec := range recs {
			if err := b.add(rec); err != nil {
				t.Fatal(err)
			}
		}
		sink := newLendSink(t)
		if err := b.finish(sink, nil); err != nil {
			t.Fatal(err)
		}
		b.release()
		if len(sink.read.frames) != 2*hosts {
			t.Fatalf("%d frames", len(sink.read.frames))
		}
		for i, f := range sink.read.frames {
			if f.Rows() != points+1 {
				t.Fatalf("%v: %d rows, want %d", f.Fields[1].Labels, f.Rows(), points+1)
			}
			if got, want := f.Fields[0].At(points).(time.Time).UnixNano(), int64(points+i/2); got != want {
				t.Fatalf("frame %d %v: last time %d, want %d", i, f.Fields[1].Labels, got, want)
			}
		}
	})
	// Once the sink releases the lent records, their memory goes back to
	// lentPool: the same query again writes its series into it. The
	// collector is off meanwhile: a collection empties a sync.Pool.
	t.Run("lent given back", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector makes sync.Pool drop items at random")
		}
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		first := newLendSink(t)
		build(t, first)
		lent := map[*byte]bool{}
		for _, b := range first.bufs {
			lent[unsafe.SliceData(b)] = true
		}
		first.release()
		again := newLendSink(t)
		build(t, again)
		for _, f := range again.read.frames {
			check(t, f)
		}
		reused := 0
		for _, b := range again.bufs {
			if lent[unsafe.SliceData(b)] {
				reused++
			}
		}
		if reused < len(again.bufs)/2 {
			t.Errorf("%d of the %d lent buffers are memory the first query lent", reused, len(again.bufs))
		}
	})
	// The wide frame of the same series: lent, and the frame a sink that
	// copies gets.
	t.Run("wide lent", func(t *testing.T) {
		lending, copying := newLendSink(t), &frameSink{t: t}
		splitAs(t, true, lending, schema, recs)
		splitAs(t, true, copying, schema, recs)
		if lending.lent != 1 || lending.copied != 0 || len(copying.frames) != 1 {
			t.Fatalf("%d frames lent, %d copied, %d frames copying", lending.lent, lending.copied, len(copying.frames))
		}
		if n := lending.overwritten(); n > 0 {
			t.Errorf("%d of %d lent buffers written over after they were lent", n, len(lending.bufs))
		}
		if err := frametest.Equal(copying.frames[0], lending.read.frames[0]); err != nil {
			t.Error(err)
		}
	})
	// A result of one flush: each series is one run of its segments, memory
	// shared with the other series, so nothing is lent.
	t.Run("one run", func(t *testing.T) {
		sink := newLendSink(t)
		splitInto(t, sink, schema, recs[:1])
		if sink.lent != 0 || sink.copied != 2*hosts {
			t.Fatalf("%d frames lent, %d copied; want %d copied", sink.lent, sink.copied, 2*hosts)
		}
	})
	// The same result to a sink that keeps its records: they reference the
	// builder's segments, which are then not given back to scratchPool, so
	// a query after it (the same sizes, other values) writes elsewhere.
	t.Run("one run held", func(t *testing.T) {
		sink := &holdSink{}
		b := splitInto(t, sink, schema, recs[:1])
		if !b.segmentsOut || len(b.segMem.bufs) != 0 {
			t.Fatalf("segments handed over %v, %d pooled buffers still held", b.segmentsOut, len(b.segMem.bufs))
		}
		negated := negateValues(t, recs[0])
		defer negated.Release()
		splitInto(t, newLendSink(t), schema, []arrow.RecordBatch{negated})
		read := &frameSink{t: t}
		for _, rec := range sink.recs {
			if err := read.Record(rec); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range read.frames {
			h := 0
			if _, err := fmt.Sscanf(f.Fields[1].Labels["host"], "h%02d", &h); err != nil {
				t.Fatal(err)
			}
			for p := range f.Rows() {
				v, ok := f.Fields[1].ConcreteAt(p)
				want := any(int64(p))
				if f.Fields[1].Name == "v" {
					want = float64(h*1_000_000 + p)
				}
				if ok == (f.Fields[1].Name == "v" && isNull(h, p)) || (ok && v != want) {
					t.Fatalf("host %d point %d: %s %v (valid %v), want %v", h, p, f.Fields[1].Name, v, ok, want)
				}
			}
		}
	})
	// Lent frames reference none of the builder's own memory: it all goes
	// back to scratchPool, and the same query again takes its segments and
	// pending rows from there, allocating little more than the lent values
	// (segs bytes, as much as the segments hold). The collector is off
	// meanwhile: a collection empties a sync.Pool.
	t.Run("given back", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector makes sync.Pool drop items at random")
		}
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		b := splitInto(t, &lendingDiscard{}, schema, recs)
		if b.segmentsOut || len(b.segMem.bufs) != 0 || len(b.scratchMem.bufs) != 0 {
			t.Fatalf("segments handed over %v, %d + %d pooled buffers still held", b.segmentsOut, len(b.segMem.bufs), len(b.scratchMem.bufs))
		}
		segs := 0
		for _, r := range recs {
			segs += 2 * 8 * int(r.NumRows()) // v and n
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		splitInto(t, &lendingDiscard{}, schema, recs)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(segs)*3/2 {
			t.Errorf("the query again allocated %d bytes; its lent values are %d", got, segs)
		}
	})
}

// negateValues returns rec (time, host, v float64, n int64) with v and n
// negated.
func negateValues(t *testing.T, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	vb, nb := array.NewFloat64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	defer vb.Release()
	defer nb.Release()
	v, n := rec.Column(2).(*array.Float64), rec.Column(3).(*array.Int64)
	for i := range v.Len() {
		if v.IsNull(i) {
			vb.AppendNull()
		} else {
			vb.Append(-v.Value(i))
		}
		nb.Append(-n.Value(i))
	}
	cols := []arrow.Array{rec.Column(0), rec.Column(1), vb.NewArray(), nb.NewArray()}
	defer cols[2].Release()
	defer cols[3].Release()
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// lendSink is a sink that lends (source.RecordLender), as the plugin's
// does: it reads each record as Grafana does, holds a lent one until
// release (the test's end), as the plugin's sink holds it until its frame
// is sent, and keeps its buffers with a copy of their bytes to tell later
// whether anything wrote over them meanwhile.
type lendSink struct {
	read         frameSink
	lent, copied int
	bufs, copies [][]byte
	times        map[*byte]bool // the lent records' time buffers
	held         []arrow.RecordBatch
}

func newLendSink(t *testing.T) *lendSink {
	s := &lendSink{read: frameSink{t: t}, times: map[*byte]bool{}}
	t.Cleanup(s.release)
	return s
}

// release releases the lent records, as the plugin's sink does once their
// frames are sent.
func (s *lendSink) release() {
	for _, rec := range s.held {
		rec.Release()
	}
	s.held = nil
}

func (s *lendSink) Frame(f *data.Frame) error { return s.read.Frame(f) }

func (s *lendSink) Record(rec arrow.RecordBatch) error {
	s.copied++
	return s.read.Record(rec)
}

func (s *lendSink) LendRecord(rec arrow.RecordBatch) error {
	s.lent++
	for c, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil && b.Len() > 0 {
				s.bufs = append(s.bufs, b.Bytes())
				s.copies = append(s.copies, bytes.Clone(b.Bytes()))
			}
		}
		if c == 0 {
			s.times[unsafe.SliceData(col.Data().Buffers()[1].Bytes())] = true
		}
	}
	rec.Retain() // held until release; Record releases its own reference
	s.held = append(s.held, rec)
	return s.read.Record(rec)
}

// overwritten counts the lent buffers whose bytes changed after they were
// lent.
func (s *lendSink) overwritten() int {
	n := 0
	for i, b := range s.bufs {
		if !bytes.Equal(b, s.copies[i]) {
			n++
		}
	}
	return n
}

// ts is the timestamps v.
func ts(v ...int64) []arrow.Timestamp {
	out := make([]arrow.Timestamp, len(v))
	for i, x := range v {
		out[i] = arrow.Timestamp(x)
	}
	return out
}

// flushSharedTimes takes the times of series cycling in time order, a flush
// beginning in the middle of a time included, and nothing else.
func TestFlushSharedTimes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pend   []arrow.Timestamp
		k      int
		seg    []arrow.Timestamp // nil: not shared
		starts []uint32
	}{
		{"from a time's first series", ts(5, 5, 5, 6, 6, 6, 7), 3, ts(5, 6, 7), []uint32{0, 0, 0}},
		{"from the middle of a time", ts(5, 6, 6, 6, 7, 7, 7, 8), 3, ts(5, 6, 7, 8), []uint32{0, 1, 1}},
		{"descending", ts(9, 9, 4, 4, 1, 1), 2, ts(9, 4, 1), []uint32{0, 0}},
		{"one series", ts(1, 2, 3), 1, ts(1, 2, 3), []uint32{0}},
		{"one time", ts(5, 5, 5), 3, ts(5), []uint32{0, 0, 0}},
		{"a time back again", ts(1, 2, 2, 1), 2, ts(1, 2, 1), []uint32{0, 1}},
		{"a cycle of two times", ts(5, 5, 6, 6, 6, 6), 3, nil, nil},
		{"a series a time behind", ts(5, 5, 4, 6, 6, 5, 7, 7, 6), 3, nil, nil},
		{"a time repeated in the next cycle", ts(5, 5, 5, 5), 2, nil, nil},
		{"fewer rows than series", ts(5), 2, nil, nil},
		{"a run broken at its end", ts(1, 1, 1, 2, 2, 3, 4, 4, 4), 3, nil, nil},
		{"a run broken at its start", ts(1, 1, 1, 2, 3, 3, 4, 4, 4), 3, nil, nil},
		{"the last run broken", ts(1, 1, 1, 2, 2, 2, 3, 4), 3, nil, nil},
		{"a short first run, then a whole one", ts(1, 1, 2, 2, 2), 3, ts(1, 2), []uint32{0, 0, 1}},
	} {
		// A flush before, shared, so that the scratch is reused.
		s := segments[arrow.Timestamp]{times: true, pend: ts(7, 7, 8, 8, 9, 9, 10, 10)}
		if _, ok := flushSharedTimes(&s, 2, nil); !ok {
			t.Fatal("the first flush is not shared")
		}
		first := s.segs[0]
		s.segs = nil
		s.pend = slices.Clone(tc.pend)
		starts, ok := flushSharedTimes(&s, tc.k, nil)
		if !slices.Equal(first, ts(7, 8, 9, 10)) {
			t.Errorf("%s: the flush before's segment became %v", tc.name, first)
		}
		if ok != (tc.seg != nil) {
			t.Errorf("%s: shared %v", tc.name, ok)
			continue
		}
		if !ok {
			if len(s.segs) != 0 || !slices.Equal(s.pend, tc.pend) {
				t.Errorf("%s: not shared, yet the pending times were moved", tc.name)
			}
			continue
		}
		if len(s.segs) != 1 || !slices.Equal(s.segs[0], tc.seg) || !slices.Equal(starts[:tc.k], tc.starts) || len(s.pend) != 0 {
			t.Errorf("%s: segment %v, starts %v", tc.name, s.segs, starts)
		}
		// Every series reads its own times back.
		for j := range tc.k {
			for i, x := 0, j; x < len(tc.pend); i, x = i+1, x+tc.k {
				if got := s.of(run{tstart: starts[j] + uint32(i), n: 1})[0]; got != tc.pend[x] {
					t.Errorf("%s: series %d row %d: time %d, want %d", tc.name, j, i, got, tc.pend[x])
				}
			}
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

// Series of one flush are lent when their arrays are memory of their own:
// sorted (their rows arrived out of time order) or filled; a series of one
// run in time order is copied. The frames read as the copied ones.
func TestSeriesLendsItsOwnMemory(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: timestampNS},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	const points = 600
	mk := func(descending bool) []arrow.RecordBatch {
		return []arrow.RecordBatch{batch(schema, func(b *array.RecordBuilder) {
			for i := range points {
				p := i
				if descending {
					p = points - 1 - i
				}
				for _, h := range []string{"a", "b"} {
					b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(p) * 1e9))
					b.Field(1).(*array.StringBuilder).Append(h)
					b.Field(2).(*array.Float64Builder).Append(float64(p) / 2)
				}
			}
		})}
	}
	fill := fillStep(&FillSpec{Mode: FillNull, Interval: time.Second}, time.Unix(0, 0), time.Unix(points-1, 0), source.Limit{Max: 1e6, Unit: "points", Setting: "maxPoints"})
	for _, tc := range []struct {
		name       string
		descending bool
		post       seriesPost
		lent       int
	}{
		{"in time order", false, nil, 0},
		{"sorted", true, nil, 2},
		{"filled", false, fill, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := mk(tc.descending)
			defer recs[0].Release()
			run := func(sink source.Sink) {
				b, err := newSeriesBuilder(frameInfo{refID: "A"}, false, schema)
				if err != nil {
					t.Fatal(err)
				}
				b.post = tc.post
				if err := b.add(recs[0]); err != nil {
					t.Fatal(err)
				}
				if err := b.finish(sink, nil); err != nil {
					t.Fatal(err)
				}
				b.release()
			}
			lending, copying := newLendSink(t), &frameSink{t: t}
			run(lending)
			run(copying)
			if lending.lent != tc.lent || lending.lent+lending.copied != 2 {
				t.Fatalf("%d frames lent, %d copied; want %d lent of 2", lending.lent, lending.copied, tc.lent)
			}
			if n := lending.overwritten(); n > 0 {
				t.Errorf("%d lent buffers written over", n)
			}
			for i, f := range copying.frames {
				if f.Rows() != points {
					t.Fatalf("frame %d: %d rows", i, f.Rows())
				}
				if err := frametest.Equal(f, lending.read.frames[i]); err != nil {
					t.Errorf("frame %d: %v", i, err)
				}
			}
		})
	}
}

// sameTimes finds a series' times equal to the last series' wherever its
// runs cut them, takes a run reading the same segment place at the same
// position as the same, and no other.
func TestSameTimes(t *testing.T) {
	b := &seriesBuilder{}
	b.times = segments[arrow.Timestamp]{times: true, segs: [][]arrow.Timestamp{ts(1, 2, 3, 4), ts(5, 6, 7, 8), ts(6, 9)}}
	b.lastRuns = []run{{seg: 0, tstart: 0, n: 2}, {seg: 1, tstart: 0, n: 2}}
	b.lastTimes = ts(1, 2, 5, 6)
	for _, tc := range []struct {
		name string
		runs []run
		want bool
	}{
		{"the same runs", []run{{seg: 0, n: 2}, {seg: 1, n: 2}}, true},
		{"cut elsewhere", []run{{seg: 0, n: 1}, {seg: 0, tstart: 1, n: 1}, {seg: 1, n: 2}}, true},
		// Run 1 reads the place of the last series' run 1, from another
		// position: [1 5 6 6] is not [1 2 5 6].
		{"a same run elsewhere", []run{{seg: 0, n: 1}, {seg: 1, n: 2}, {seg: 2, n: 1}}, false},
		{"shorter", []run{{seg: 0, n: 2}, {seg: 1, n: 1}}, false},
		{"longer", []run{{seg: 0, n: 2}, {seg: 1, n: 2}, {seg: 2, n: 1}}, false},
		{"other times", []run{{seg: 0, n: 2}, {seg: 1, tstart: 1, n: 2}}, false},
	} {
		if got := b.sameTimes(tc.runs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// appendOne replaces each value array of ss by itself and one more value,
// which add appends to a builder of its type, in mem (as a post step such
// as fill would).
func appendOne(t *testing.T, ss *sortedSeries, mem memory.Allocator, add func(array.Builder, arrow.Array) error) {
	t.Helper()
	for j, v := range ss.Values {
		bld := array.NewBuilder(mem, v.DataType())
		if err := add(bld, v); err != nil {
			t.Fatal(err)
		}
		tail := bld.NewArray()
		joined, err := array.Concatenate([]arrow.Array{v, tail}, mem)
		if err != nil {
			t.Fatal(err)
		}
		tail.Release()
		bld.Release()
		v.Release()
		ss.Values[j] = joined
	}
}
