// The fill of $__timeGroup: every series resampled at the query's interval
// after the query, as Grafana's SQL data sources do.

package series

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/quiverdata/quiver/pkg/source"
)

// FillMode says what a fill puts in a time bucket that has no row.
type FillMode uint8

const (
	// FillNull leaves a null.
	FillNull FillMode = iota + 1
	// FillPrevious repeats the value of the last row before the bucket
	// (null, or the row's null, when there is none).
	FillPrevious
	// FillValue puts FillSpec.Value.
	FillValue
)

// FillSpec is the fill of $__timeGroup(col, interval, fill): the third
// argument NULL, previous or a number, as in Grafana's SQL data sources.
type FillSpec struct {
	Mode     FillMode
	Value    float64 // FillValue only
	Interval time.Duration
}

// String writes the fill as it is written in the macro.
func (f FillSpec) String() string {
	switch f.Mode {
	case FillNull:
		return "NULL"
	case FillPrevious:
		return "previous"
	}
	return strconv.FormatFloat(f.Value, 'g', -1, 64)
}

// ParseFill reads the fill argument of $__timeGroup: NULL, previous (either
// in any case) or a finite number; interval is the macro's.
func ParseFill(s string, interval time.Duration) (*FillSpec, error) {
	f := &FillSpec{Interval: interval}
	switch t := strings.TrimSpace(s); {
	case strings.EqualFold(t, "null"):
		f.Mode = FillNull
	case strings.EqualFold(t, "previous"):
		f.Mode = FillPrevious
	default:
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("fill %s is not NULL, previous or a number", source.Quote(s))
		}
		f.Mode, f.Value = FillValue, v
	}
	return f, nil
}

// Fill is a $__timeGroup fill of every series of a query over its range
// (Config.Fill); fillSeries says which points each series gets.
type Fill struct {
	Spec     *FillSpec
	From, To time.Time
	// Limit bounds the points of all series and value columns together
	// (maxPoints, or rowLimit when maxPoints is not set): past it the query
	// fails with an error naming the setting.
	Limit source.Limit
}

// errFillUnsorted is returned when the times given to fillSeries are not in
// ascending order.
var errFillUnsorted = errors.New("flightsql: fill: the times are not in ascending order")

// fillPoints returns the first point of a fill over from – to (the
// multiple of the interval at or before from) and how many points it has;
// n is 0 for an empty range.
func fillPoints(f *FillSpec, from, to time.Time) (start, n int64) {
	step := int64(f.Interval)
	q, end := FloorDiv(from.UnixNano(), step), to.UnixNano()
	if q < math.MinInt64/step {
		q++ // that multiple is before the earliest time: the next one
	}
	start = q * step
	if end < start {
		return start, 0
	}
	// end - start may pass MaxInt64 (1677 to 2262); as unsigned it does not.
	return start, int64(min(uint64(end-start)/uint64(step)+1, math.MaxInt64))
}

// fillSeries fills one series the way Grafana's SQL data sources resample a
// time series with a fill (SDK data/sqlutil ResampleWideFrame, with the
// start aligned to the interval as grafana's sqleng does): the output has
// one point per multiple of f.Interval (counted from the Unix epoch) from
// the one at or before from up to to included. A point takes the value of
// the last input row in (point − interval, point], so a $__timeGroup bucket
// start keeps its own row; a point without such a row gets null, the fill
// value, or (previous) the last row at or before it. Rows after to are left
// out, as are rows before the first point (they still count as previous).
//
// times are nanoseconds since the Unix epoch, ascending; values holds the
// value of each row and valid its validity (nil: all valid). The output
// arrays are new. More than maxPoints points (which must be positive) is an
// error, so a tiny interval over a long range cannot exhaust memory; the
// builder checks the query's limit first (fillStep), with the setting's
// name.
func fillSeries[TS ~int64, T Number](f *FillSpec, times []TS, values []T, valid []bool, from, to time.Time, maxPoints int) (outTimes []TS, outValues []T, outValid []bool, err error) {
	if len(values) != len(times) || valid != nil && len(valid) != len(times) {
		return nil, nil, nil, fmt.Errorf("flightsql: fill: %d times, %d values, %d validity flags", len(times), len(values), len(valid))
	}
	step := int64(f.Interval)
	if step <= 0 {
		return nil, nil, nil, fmt.Errorf("flightsql: fill: interval %s is not positive", f.Interval)
	}
	if maxPoints <= 0 {
		return nil, nil, nil, errors.New("flightsql: fill: no point limit")
	}
	for i := 1; i < len(times); i++ {
		if times[i] < times[i-1] {
			return nil, nil, nil, errFillUnsorted
		}
	}
	start, n := fillPoints(f, from, to)
	if n > int64(maxPoints) || n < 0 {
		return nil, nil, nil, fmt.Errorf("flightsql: fill: the range %s – %s at an interval of %s has %d points, more than the limit of %d: widen the interval",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), FormatInterval(f.Interval), n, maxPoints)
	}
	fillValue := T(f.Value)
	if f.Mode == FillValue && !holds(fillValue, f.Value) {
		return nil, nil, nil, source.BadQuery("flightsql: fill: the value %s is outside the range of the query's %T value column: give a value it holds, or cast the column", f, fillValue)
	}
	isValid := func(i int) bool { return valid == nil || valid[i] }
	outTimes, outValues, outValid = make([]TS, n), make([]T, n), make([]bool, n)
	j, last := 0, -1 // next input row; last input row at or before the point
	for k := range outTimes {
		g := start + int64(k)*step
		hit := -1
		for j < len(times) && int64(times[j]) <= g {
			if int64(times[j]) > g-step {
				hit = j
			}
			last = j
			j++
		}
		outTimes[k] = TS(g)
		switch {
		case hit >= 0:
			outValues[k], outValid[k] = values[hit], isValid(hit)
		case f.Mode == FillValue:
			outValues[k], outValid[k] = fillValue, true
		case f.Mode == FillPrevious && last >= 0:
			outValues[k], outValid[k] = values[last], isValid(last)
		}
		if !outValid[k] {
			outValues[k] = 0
		}
	}
	return outTimes, outValues, outValid, nil
}

// holds says whether converted, v converted to T, is v as the column can
// hold it: an integer column's value is v's integer part (7.9 gives 7), not
// wrapped or clamped (1000 in an int8, -1 in a uint8); a float column's is v
// rounded, not infinite (1e300 in a float32).
func holds[T Number](converted T, v float64) bool {
	half := 0.5
	if T(half) == 0 { // integers truncate it
		return float64(converted) == math.Trunc(v)
	}
	return !math.IsInf(float64(converted), 0)
}

// fillStep returns the step that fills every series of a query with f over
// from – to (Builder.post), numerics being those of its value columns.
// Every series gets the same points, one per interval; their sum over all
// series and value columns is held to limit (Fill.Limit), so a fine
// interval over a long range is refused before it is built.
func fillStep(f *FillSpec, from, to time.Time, limit source.Limit, numerics []*Numeric) seriesPost {
	_, n := fillPoints(f, from, to)
	var used, count int64
	return func(ss *sortedSeries, reserve func(int64) error) error {
		count++
		used += n * int64(len(ss.Values))
		if used > limit.Max {
			return limit.Exceeded(fmt.Sprintf("flightsql: $__timeGroup fill %s: %s – %s at an interval of %s is %d points per series; the first %d series make",
				f, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), FormatInterval(f.Interval), n, count), "widen the interval, narrow the time range")
		}
		// The filled arrays are the query's memory, as what it read is.
		if err := reserve(n * int64(len(ss.Values)) * filledPointBytes); err != nil {
			return err
		}
		var times []arrow.Timestamp
		for j, v := range ss.Values {
			t, out, err := numerics[j].fill(f, ss.Times, v, from, to, int(max(n, 1)))
			if err != nil {
				return err
			}
			v.Release()
			ss.Values[j], times = out, t
		}
		ss.Times, ss.inSegments = times, false
		return nil
	}
}

// filledPointBytes is what fillArray allocates a point: its time, its
// value, its validity as a bool and as a bit.
const filledPointBytes = 8 + 8 + 1 + 1

// fillArray fills one value column of a series (see fillSeries): new times
// and a new array, in Go memory.
func fillArray[T Number](f *FillSpec, times []arrow.Timestamp, a arrow.Array, from, to time.Time, maxPoints int) ([]arrow.Timestamp, arrow.Array, error) {
	var valid []bool
	if a.NullN() > 0 {
		valid = make([]bool, a.Len())
		for i := range valid {
			valid[i] = a.IsValid(i)
		}
	}
	ts, vals, ok, err := fillSeries(f, times, a.(interface{ Values() []T }).Values(), valid, from, to, maxPoints)
	if err != nil {
		return nil, nil, err
	}
	bm := make([]byte, bitutil.BytesForBits(int64(len(ok))))
	nulls := 0
	for i, v := range ok {
		if v {
			bitutil.SetBit(bm, i)
		} else {
			nulls++
		}
	}
	return ts, arrayOver(a.DataType(), vals, bm, nulls), nil
}

// FloorDiv is a / b rounded towards minus infinity.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// FormatInterval writes d the way Grafana writes $__interval (1m, 30s,
// 500ms): the fill's messages, and the macros', name an interval as the
// macro shows it.
func FormatInterval(d time.Duration) string {
	for _, u := range []struct {
		d time.Duration
		s string
	}{{7 * 24 * time.Hour, "w"}, {24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d >= u.d && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.s
		}
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
