package flightsql

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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

// parseFill reads the fill argument: NULL, previous (either in any case) or
// a finite number.
func parseFill(s string, interval time.Duration) (*FillSpec, error) {
	f := &FillSpec{Interval: interval}
	switch t := strings.TrimSpace(s); {
	case strings.EqualFold(t, "null"):
		f.Mode = FillNull
	case strings.EqualFold(t, "previous"):
		f.Mode = FillPrevious
	default:
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("fill %s is not NULL, previous or a number", s)
		}
		f.Mode, f.Value = FillValue, v
	}
	return f, nil
}

// fillable are the value types a fill works on.
type fillable interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// errFillUnsorted is returned when the times given to fillSeries are not in
// ascending order.
var errFillUnsorted = errors.New("flightsql: fill: the times are not in ascending order")

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
// arrays are new. More than maxPoints points (which must be positive: a
// query's point or row limit) is an error, so a tiny interval over a long
// range cannot exhaust memory. Wiring: series.go calls it per series frame
// of a time_series result when the expansion has a Fill.
func fillSeries[T fillable](f *FillSpec, times []int64, values []T, valid []bool, from, to time.Time, maxPoints int) (outTimes []int64, outValues []T, outValid []bool, err error) {
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
	start, end := floorDiv(from.UnixNano(), step)*step, to.UnixNano()
	if end < start {
		return []int64{}, []T{}, []bool{}, nil
	}
	n := (end-start)/step + 1
	if n > int64(maxPoints) || n < 0 {
		return nil, nil, nil, fmt.Errorf("flightsql: fill: the range %s – %s at an interval of %s has %d points, more than the limit of %d: widen the interval",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), formatInterval(f.Interval), n, maxPoints)
	}
	isValid := func(i int) bool { return valid == nil || valid[i] }
	outTimes, outValues, outValid = make([]int64, n), make([]T, n), make([]bool, n)
	fillValue := T(f.Value)
	j, last := 0, -1 // next input row; last input row at or before the point
	for k := range outTimes {
		g := start + int64(k)*step
		hit := -1
		for j < len(times) && times[j] <= g {
			if times[j] > g-step {
				hit = j
			}
			last = j
			j++
		}
		outTimes[k] = g
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
