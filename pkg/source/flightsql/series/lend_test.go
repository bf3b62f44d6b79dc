package series

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/source"
)

// Series of one flush are lent when their arrays are memory of their own:
// sorted (their rows arrived out of time order) or filled; a series of one
// run in time order is copied. The frames read as the copied ones.
func TestSeriesLendsItsOwnMemory(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: frame.Timestamp},
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
	fill := fillStep(&FillSpec{Mode: FillNull, Interval: time.Second}, time.Unix(0, 0), time.Unix(points-1, 0), source.Limit{Max: 1e6, Unit: "points", Setting: "maxPoints"}, []*Numeric{testTypes(arrow.FLOAT64).Numeric})
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
				b, err := New(testConfig(false), schema)
				if err != nil {
					t.Fatal(err)
				}
				b.post = tc.post
				if err := b.Add(recs[0]); err != nil {
					t.Fatal(err)
				}
				if err := b.Finish(t.Context(), sink, nil); err != nil {
					t.Fatal(err)
				}
				b.Release()
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
