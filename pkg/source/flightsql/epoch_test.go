package flightsql

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// TestEpochNSBounds: each unit's largest and smallest value that fits in
// int64 nanoseconds converts exactly; one past it is out of range, never a
// wrapped time.
func TestEpochNSBounds(t *testing.T) {
	for _, c := range []struct {
		v, ns int64
		ok    bool
	}{
		{0, 0, true},
		{1, 1e9, true},
		{-1, -1e9, true},
		// seconds: 2262-04-11T23:47:16Z is the last whole second.
		{9_223_372_036, 9_223_372_036_000_000_000, true},
		{9_223_372_037, 0, false},
		{-9_223_372_036, -9_223_372_036_000_000_000, true},
		{-9_223_372_037, 0, false},
		{99_999_999_999, 0, false}, // the largest read as seconds
		{-99_999_999_999, 0, false},
		// milliseconds
		{100_000_000_000, 100_000_000_000_000_000, true}, // the smallest read as ms
		{9_223_372_036_854, 9_223_372_036_854_000_000, true},
		{9_223_372_036_855, 0, false},
		{-9_223_372_036_854, -9_223_372_036_854_000_000, true},
		{-9_223_372_036_855, 0, false},
		// microseconds
		{100_000_000_000_000, 100_000_000_000_000_000, true},
		{9_223_372_036_854_775, 9_223_372_036_854_775_000, true},
		{9_223_372_036_854_776, 0, false},
		{-9_223_372_036_854_775, -9_223_372_036_854_775_000, true},
		{-9_223_372_036_854_776, 0, false},
		{99_999_999_999_999_999, 0, false},
		// nanoseconds: every value fits
		{100_000_000_000_000_000, 100_000_000_000_000_000, true},
		{math.MaxInt64, math.MaxInt64, true},
		{math.MinInt64, math.MinInt64, true},
	} {
		ns, ok := epochNS(c.v)
		if ok != c.ok || (ok && ns != c.ns) {
			t.Errorf("epochNS(%d) = %d, %v; want %d, %v", c.v, ns, ok, c.ns, c.ok)
		}
	}
	if got := time.Unix(9_223_372_036, 0).UTC().Format(time.RFC3339); got != "2262-04-11T23:47:16Z" {
		t.Errorf("last second: %s", got)
	}
}

// epochBatch is a batch of integer Unix times in seconds (two out of range,
// one null) with a value and a log line, sliced so that its columns start at
// an offset.
func epochBatch(t *testing.T) (arrow.RecordBatch, *arrow.Schema) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "line", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	times := []int64{5, 1, 9_223_372_037, 0, -9_223_372_037, 2, 9_223_372_036}
	valid := []bool{true, true, true, false, true, true, true}
	rec := batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).AppendValues(times, valid)
		for i := range times {
			b.Field(1).(*array.StringBuilder).Append("x") // one series
			b.Field(2).(*array.Float64Builder).Append(float64(i))
		}
	})
	defer rec.Release()
	return rec.NewSlice(1, int64(len(times))), schema // from the row at 1 s
}

// wantEpochNotices checks the notices of epochBatch's rows left out.
func wantEpochNotices(t *testing.T, notices []data.Notice) {
	t.Helper()
	var text []string
	for _, n := range notices {
		text = append(text, n.Text)
	}
	if len(text) != 2 || !strings.Contains(text[0], "1 rows with a null time") ||
		!strings.Contains(text[1], `Column "time" (int64) has 2 integer Unix times outside`) {
		t.Errorf("notices %q", text)
	}
}

// TestEpochOutOfRangeIsNull: through the series and logs builders, a row
// whose integer time is out of range is left out with a notice naming the
// column; the others keep their exact times.
func TestEpochOutOfRangeIsNull(t *testing.T) {
	rec, schema := epochBatch(t)
	defer rec.Release()
	wantTimes := []int64{1e9, 2e9, 9_223_372_036e9}

	sink := &frameSink{t: t}
	splitInto(t, sink, schema, []arrow.RecordBatch{rec})
	if len(sink.frames) != 1 || sink.frames[0].Rows() != len(wantTimes) {
		t.Fatalf("series frames %v", sink.frames)
	}
	f := sink.frames[0]
	for i, want := range wantTimes {
		if got := f.Fields[0].At(i).(time.Time).UnixNano(); got != want {
			t.Errorf("series row %d: time %d, want %d", i, got, want)
		}
	}
	wantEpochNotices(t, f.Meta.Notices)

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	lb, err := newLogsBuilder(mem, frameInfo{refID: "A"}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.add(rec); err != nil {
		t.Fatal(err)
	}
	sink = &frameSink{t: t}
	if err := lb.finish(sink, nil); err != nil {
		t.Fatal(err)
	}
	lb.release()
	if len(sink.frames) != 1 || sink.frames[0].Rows() != len(wantTimes) {
		t.Fatalf("logs frames %v", sink.frames)
	}
	f = sink.frames[0]
	for i, want := range wantTimes {
		if got := f.Fields[0].At(i).(time.Time).UnixNano(); got != want {
			t.Errorf("logs row %d: time %d, want %d", i, got, want)
		}
	}
	wantEpochNotices(t, f.Meta.Notices)
}
