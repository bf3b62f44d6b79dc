// The time_series_wide format: the series of one query as one frame with a shared time column.

package series

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// wideFill is how empty a wide frame may be: it is refused when it would
// hold more than wideFill cells per point of the result.
const wideFill = 4

// unionTimes returns the union of the series' times, sorted, in memory of
// exactly its size (a lent frame references it), and whether every series
// has the first one's times.
func unionTimes(all []*sortedSeries) (times []arrow.Timestamp, same bool) {
	same = len(all) > 0 && !slices.ContainsFunc(all, func(ss *sortedSeries) bool { return !equalTimes(ss.Times, all[0].Times) })
	if same {
		times = make([]arrow.Timestamp, len(all[0].Times))
		copy(times, all[0].Times)
	} else {
		n := 0
		for _, ss := range all {
			n += len(ss.Times)
		}
		times = make([]arrow.Timestamp, 0, n)
		for _, ss := range all {
			times = append(times, ss.Times...)
		}
		slices.Sort(times)
	}
	times = slices.Compact(times)
	if cap(times) != len(times) {
		times = append(make([]arrow.Timestamp, 0, len(times)), times...)
	}
	return times, same
}

// emitWide hands one timeseries-wide frame to sink: the union of the series'
// times, and every (series × value column) as a field with its labels, null
// where the series has no point. A series with several points at one time
// keeps the last (the one a fill takes too).
func (b *Builder) emitWide(ctx context.Context, sink source.Sink, all []*sortedSeries, notices []data.Notice) error {
	times, same := unionTimes(all)
	var points int64
	for _, ss := range all {
		points += int64(len(ss.Times))
	}
	if cells := int64(len(times)) * int64(len(all)); cells > wideFill*points+1024 {
		return source.BadQuery("flightsql: format time_series_wide: the %d series share few timestamps (%d distinct times for %d points): one frame would be mostly empty. Choose format time_series, or align the times with $__timeGroup", len(all), len(times), points)
	}

	// By value column first, as Grafana orders a wide frame's fields.
	byValue := make([][]frame.Column, len(b.valueIdx))
	var dropped int64
	pos := make([]int32, 0, len(times))
	// Every series has the union's times, none twice: no positions to find.
	allAligned := same && len(times) == len(all[0].Times)
	for _, ss := range all {
		aligned := allAligned
		if !allAligned {
			pos = pos[:0]
			aligned = len(ss.Times) == len(times)
			k := 0
			for i, t := range ss.Times {
				for times[k] < t {
					k++
				}
				if i+1 < len(ss.Times) && ss.Times[i+1] == t {
					pos = append(pos, -1) // a time's last point is kept, as Grafana's LongToWide keeps it
					dropped++
					aligned = false
					continue
				}
				pos = append(pos, int32(k))
			}
		}
		for j, varr := range ss.Values {
			out := varr
			if aligned {
				varr.Retain()
			} else {
				out = b.numerics[j].spread(varr, pos, len(times))
			}
			byValue[j] = append(byValue[j], b.valueField(j, out, ss.Labels))
		}
	}
	fields := []frame.Column{{Name: b.schema.Field(b.timeIdx).Name, Array: timesArray(times), TSType: frame.TSTime}}
	for _, j := range b.valueOrder {
		fields = append(fields, byValue[j]...)
	}
	if dropped > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d points were left out of the wide frame: their series has another point at the same time. Choose format time_series to see them.", dropped)})
	}
	return b.emitFrame(ctx, sink, notices, fields, !slices.ContainsFunc(all, func(ss *sortedSeries) bool { return ss.inSegments }))
}

// spread is the Numeric spread of T (see Numeric).
func spread[T Number](a arrow.Array, pos []int32, n int) arrow.Array {
	src := a.(interface{ Values() []T }).Values()
	vals := make([]T, n)
	bm := make([]byte, bitutil.BytesForBits(int64(n)))
	valid := 0
	for k, p := range pos {
		if p < 0 || a.IsNull(k) {
			continue
		}
		vals[p] = src[k]
		bitutil.SetBit(bm, int(p))
		valid++
	}
	return arrayOver(a.DataType(), vals, bm, n-valid)
}
