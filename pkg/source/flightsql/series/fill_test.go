package series

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

const fillMinute = int64(time.Minute)

func TestFillSeries(t *testing.T) {
	from, to := time.Unix(0, 10*fillMinute+5), time.Unix(0, 15*fillMinute) // from is aligned down to 10m
	times := []int64{8 * fillMinute, 11 * fillMinute, 11*fillMinute + 30, 14*fillMinute - 1, 15 * fillMinute, 16 * fillMinute}
	values := []float64{8, 11, 11.5, 14, 15, 16}
	valid := []bool{true, true, true, false, true, true}
	wantTimes := []int64{10 * fillMinute, 11 * fillMinute, 12 * fillMinute, 13 * fillMinute, 14 * fillMinute, 15 * fillMinute}
	for _, tc := range []struct {
		fill      FillSpec
		values    []float64
		valid     []bool
		wantTimes []int64
	}{
		// 10: nothing in (9m, 10m]; 11: the 11m row; 12: the 11m30 row;
		// 13: nothing; 14: the null row at 14m-1ns; 15: the 15m row;
		// 16m is after to.
		{FillSpec{Mode: FillNull, Interval: time.Minute}, []float64{0, 11, 11.5, 0, 0, 15}, []bool{false, true, true, false, false, true}, wantTimes},
		{FillSpec{Mode: FillValue, Value: -1, Interval: time.Minute}, []float64{-1, 11, 11.5, -1, 0, 15}, []bool{true, true, true, true, false, true}, wantTimes},
		// previous: the 8m row (before the range) fills 10m; 13m repeats 11m30.
		{FillSpec{Mode: FillPrevious, Interval: time.Minute}, []float64{8, 11, 11.5, 11.5, 0, 15}, []bool{true, true, true, true, false, true}, wantTimes},
		{FillSpec{Mode: FillNull, Interval: 2 * time.Minute}, []float64{0, 11.5, 0}, []bool{false, true, false}, []int64{10 * fillMinute, 12 * fillMinute, 14 * fillMinute}},
	} {
		gotTimes, gotValues, gotValid, err := fillSeries(&tc.fill, times, values, valid, from, to, 100)
		if err != nil {
			t.Fatalf("%s: %v", tc.fill, err)
		}
		if !slices.Equal(gotTimes, tc.wantTimes) || !slices.Equal(gotValues, tc.values) || !slices.Equal(gotValid, tc.valid) {
			t.Errorf("%s %s:\n got %v %v %v\nwant %v %v %v", tc.fill, tc.fill.Interval, gotTimes, gotValues, gotValid, tc.wantTimes, tc.values, tc.valid)
		}
	}
}

func TestFillSeriesEdges(t *testing.T) {
	f := &FillSpec{Mode: FillValue, Value: 7.9, Interval: time.Minute}
	// No rows at all: every point filled; integer values take the value
	// converted as Go converts (towards zero).
	ts, vs, ok, err := fillSeries(f, []int64(nil), []int64(nil), nil, time.Unix(0, -2*fillMinute), time.Unix(0, 0), 10)
	if err != nil || !slices.Equal(ts, []int64{-2 * fillMinute, -fillMinute, 0}) || !slices.Equal(vs, []int64{7, 7, 7}) || !slices.Equal(ok, []bool{true, true, true}) {
		t.Fatalf("got %v %v %v %v", ts, vs, ok, err)
	}
	// Before 1970 the start is aligned down, not towards zero.
	ts, _, _, err = fillSeries(f, []int64(nil), []float64(nil), nil, time.Unix(0, -fillMinute-1), time.Unix(0, -fillMinute), 10)
	if err != nil || !slices.Equal(ts, []int64{-2 * fillMinute, -fillMinute}) {
		t.Fatalf("got %v %v", ts, err)
	}
	// An empty range.
	ts, _, _, err = fillSeries(f, []int64(nil), []float64(nil), nil, time.Unix(0, 3*fillMinute), time.Unix(0, fillMinute), 10)
	if err != nil || len(ts) != 0 {
		t.Fatalf("got %v %v", ts, err)
	}
	for _, tc := range []struct {
		f          *FillSpec
		times      []int64
		values     []float64
		valid      []bool
		from, to   int64
		max        int
		wantErrSub string
	}{
		{f, []int64{2, 1}, []float64{1, 2}, nil, 0, 10, 10, "not in ascending order"},
		{f, []int64{1}, []float64{1, 2}, nil, 0, 10, 10, "1 times, 2 values"},
		{f, []int64{1}, []float64{1}, []bool{true, true}, 0, 10, 10, "2 validity flags"},
		{&FillSpec{Mode: FillNull}, nil, nil, nil, 0, 10, 10, "interval 0s is not positive"},
		{f, nil, nil, nil, 0, 10 * fillMinute, 10, "has 11 points, more than the limit of 10: widen the interval"},
		{f, nil, nil, nil, 0, 10 * fillMinute, 0, "no point limit"},
		{&FillSpec{Mode: FillNull, Interval: time.Millisecond}, nil, nil, nil, 0, int64(365 * 24 * time.Hour), 1 << 20, "more than the limit"},
	} {
		_, _, _, err := fillSeries(tc.f, tc.times, tc.values, tc.valid, time.Unix(0, tc.from), time.Unix(0, tc.to), tc.max)
		if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) || !strings.HasPrefix(err.Error(), "flightsql: fill: ") {
			t.Errorf("got %v, want %q", err, tc.wantErrSub)
		}
	}
}

// TestFillValueTheColumnCannotHold: a fill value outside an integer
// column's range is refused, naming the value and the column's type, not
// wrapped (1000 in an int8 was -24, -1 in a uint8 255); its fraction is
// dropped as Go converts (2.5 gives 2). A float column takes any value it
// does not overflow.
func TestFillValueTheColumnCannotHold(t *testing.T) {
	from := time.Unix(0, 0)
	fill := func(v float64) *FillSpec { return &FillSpec{Mode: FillValue, Value: v, Interval: time.Minute} }
	refused := func(what string, err error, value, typ string) {
		t.Helper()
		want := "flightsql: fill: the value " + value + " is outside the range of the query's " + typ + " value column"
		if err == nil || !strings.HasPrefix(err.Error(), want) || source.KindOf(err) != source.KindQuery {
			t.Errorf("%s: got %v, want %q", what, err, want)
		}
	}
	for _, v := range []float64{1000, -129, 128, 1e20} {
		_, _, _, err := fillSeries(fill(v), []int64{0}, []int8{1}, nil, from, from.Add(2*time.Minute), 10)
		refused(fmt.Sprint("int8 ", v), err, fmt.Sprint(v), "int8")
	}
	for _, v := range []float64{-1, 256} {
		_, _, _, err := fillSeries(fill(v), []int64{0}, []uint8{1}, nil, from, from.Add(2*time.Minute), 10)
		refused(fmt.Sprint("uint8 ", v), err, fmt.Sprint(v), "uint8")
	}
	_, _, _, err := fillSeries(fill(1e19), []int64{0}, []int64{1}, nil, from, from.Add(2*time.Minute), 10)
	refused("int64 1e19", err, "1e+19", "int64")
	_, _, _, err = fillSeries(fill(1e300), []int64{0}, []float32{1}, nil, from, from.Add(2*time.Minute), 10)
	refused("float32 1e300", err, "1e+300", "float32")

	// What the columns hold is written as they hold it.
	at := from.Add(time.Minute)
	if _, v, _, err := fillSeries(fill(-128.7), []int64{0}, []int8{1}, nil, from, at, 10); err != nil || !slices.Equal(v, []int8{1, -128}) {
		t.Errorf("int8 -128.7: got %v, %v", v, err)
	}
	if _, v, _, err := fillSeries(fill(255.5), []int64{0}, []uint8{1}, nil, from, at, 10); err != nil || !slices.Equal(v, []uint8{1, 255}) {
		t.Errorf("uint8 255.5: got %v, %v", v, err)
	}
	if _, v, _, err := fillSeries(fill(-1e18), []int64{0}, []int64{1}, nil, from, at, 10); err != nil || !slices.Equal(v, []int64{1, -1e18}) {
		t.Errorf("int64 -1e18: got %v, %v", v, err)
	}
	if _, v, _, err := fillSeries(fill(0.1), []int64{0}, []float32{1}, nil, from, at, 10); err != nil || !slices.Equal(v, []float32{1, 0.1}) {
		t.Errorf("float32 0.1: got %v, %v", v, err)
	}
}

// TestFillSeriesOracle compares fillSeries with a direct reading of the
// rule on random series: for each point, the last row in (point − interval,
// point], else the fill.
func TestFillSeriesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		step := int64(1+r.IntN(5)) * int64(time.Second)
		n := r.IntN(30)
		times := make([]int64, n)
		values := make([]float64, n)
		valid := make([]bool, n)
		for i := range times {
			times[i] = int64(r.IntN(60)-20) * int64(time.Second) / int64(1+r.IntN(3))
			values[i] = float64(i)
			valid[i] = r.IntN(5) > 0
		}
		slices.Sort(times)
		from := time.Unix(0, int64(r.IntN(20)-10)*int64(time.Second))
		to := from.Add(time.Duration(r.IntN(40)) * time.Second)
		f := &FillSpec{Mode: FillMode(1 + r.IntN(3)), Value: 99, Interval: time.Duration(step)}
		gt, gv, gok, err := fillSeries(f, times, values, valid, from, to, 1000)
		if err != nil {
			t.Fatal(err)
		}
		start := FloorDiv(from.UnixNano(), step) * step
		k := 0
		for g := start; g <= to.UnixNano(); g += step {
			wantV, wantOK := 0.0, false
			last, hit := -1, -1
			for i, tm := range times {
				if tm <= g {
					last = i
					if tm > g-step {
						hit = i
					}
				}
			}
			switch {
			case hit >= 0:
				wantV, wantOK = values[hit], valid[hit]
			case f.Mode == FillValue:
				wantV, wantOK = 99, true
			case f.Mode == FillPrevious && last >= 0:
				wantV, wantOK = values[last], valid[last]
			}
			if !wantOK {
				wantV = 0
			}
			if k >= len(gt) || gt[k] != g || gv[k] != wantV || gok[k] != wantOK {
				t.Fatalf("iter %d %s point %d (%d): got %v, want %d %v %v", iter, f, k, g, describe(gt, gv, gok, k), g, wantV, wantOK)
			}
			k++
		}
		if k != len(gt) {
			t.Fatalf("iter %d: %d points, want %d", iter, len(gt), k)
		}
	}
}

func describe(ts []int64, vs []float64, ok []bool, k int) string {
	if k >= len(ts) {
		return "nothing"
	}
	return fmt.Sprint(ts[k], vs[k], ok[k])
}

// TestFillSeriesAllocs: one allocation per output array, whatever the input.
func TestFillSeriesAllocs(t *testing.T) {
	times := make([]int64, 1000)
	values := make([]float64, 1000)
	for i := range times {
		times[i] = int64(i) * 2 * fillMinute
	}
	f := &FillSpec{Mode: FillPrevious, Interval: time.Minute}
	allocs := testing.AllocsPerRun(10, func() {
		_, _, _, _ = fillSeries(f, times, values, nil, time.Unix(0, 0), time.Unix(0, 2000*fillMinute), 10_000)
	})
	if allocs > 3 {
		t.Fatalf("%.0f allocations, want 3", allocs)
	}
}

// A fill's first point is the multiple of its interval at or before the
// range's start; near the earliest time Grafana reads that multiple is
// not a time, and the points start at the next one. A range over every
// time has its points counted without overflow.
func TestFillPointsAtTheTimeBounds(t *testing.T) {
	earliest := time.Unix(0, math.MinInt64/int64(time.Millisecond)*int64(time.Millisecond))
	latest := time.Unix(0, math.MaxInt64)
	for _, tc := range []struct {
		iv       time.Duration
		from, to time.Time
	}{
		{24 * time.Hour, earliest, time.Unix(0, 0)},
		{365 * 24 * time.Hour, earliest, time.Unix(0, 0)},
		{365 * 24 * time.Hour, earliest, latest},
		{time.Hour, earliest, earliest.Add(time.Hour)},
	} {
		step := int64(tc.iv)
		start, n := fillPoints(&FillSpec{Interval: tc.iv}, tc.from, tc.to)
		// The first point is a multiple of the interval no earlier than
		// the earliest, within one interval of from; the last is at or
		// before to, and the next would be after it.
		// (n-1) intervals, added in two halves that a Duration holds.
		last := time.Unix(0, start).Add(time.Duration((n-1)/2) * tc.iv).Add(time.Duration(n-1-(n-1)/2) * tc.iv)
		if start%step != 0 || start < tc.from.UnixNano() || start-tc.from.UnixNano() >= step || n <= 0 ||
			last.After(tc.to) || !last.Add(tc.iv).After(tc.to) {
			t.Errorf("%s over %s – %s: start %d, %d points", tc.iv, tc.from.UTC(), tc.to.UTC(), start, n)
		}
	}
}

// reservingSink is discardSink counting what is reserved on it
// (source.Reserver).
type reservingSink struct {
	discardSink
	reserved int64
}

func (s *reservingSink) Reserve(_ context.Context, n int64) error {
	s.reserved += n
	return nil
}

// The arrays a fill makes are reserved in the query's memory, as the rows
// it read are: a few rows filled over a long range make millions of points.
func TestFillReservesWhatItMakes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "time", Type: frame.Timestamp, Nullable: true}, {Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v1", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "v2", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	const hosts, points = 100, 5000
	rec := batch(schema, func(b *array.RecordBuilder) {
		for h := range hosts {
			b.Field(0).(*array.TimestampBuilder).Append(0)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint(h))
			b.Field(2).(*array.Float64Builder).Append(1)
			b.Field(3).(*array.Float64Builder).Append(2)
		}
	})
	defer rec.Release()
	for _, wide := range []bool{false, true} {
		cfg := testConfig(wide)
		cfg.Fill = &Fill{Spec: &FillSpec{Mode: FillValue, Interval: time.Minute}, From: time.Unix(0, 0), To: time.Unix((points-1)*60, 0),
			Limit: source.Limit{Max: 10_000_000, Unit: "points", Setting: "maxPoints"}}
		b, err := New(cfg, schema)
		if err != nil {
			t.Fatal(err)
		}
		sink := &reservingSink{}
		if err := b.Add(rec); err != nil {
			t.Fatal(err)
		}
		if err := b.Finish(t.Context(), sink, nil); err != nil {
			t.Fatal(err)
		}
		if want := int64(hosts * points * 2 * 16); sink.reserved < want {
			t.Errorf("wide %v: %d bytes reserved for %d filled points, want at least %d", wide, sink.reserved, hosts*points*2, want)
		}
	}
}
