package flightsql

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

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
	sb, err := series.New(series.Config{RefID: "A", Types: seriesType}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Add(rec); err != nil {
		t.Fatal(err)
	}
	if err := sb.Finish(t.Context(), sink, nil); err != nil {
		t.Fatal(err)
	}
	sb.Release()
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
	lb, err := newLogsBuilder(mem, frameInfo{refID: "A"}, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.Add(rec); err != nil {
		t.Fatal(err)
	}
	sink = &frameSink{t: t}
	if err := lb.Finish(t.Context(), sink, nil); err != nil {
		t.Fatal(err)
	}
	lb.Release()
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
