// The series sorted by time, and their frames: one per series and value
// column, handed to the sink lent or copied, and the records they are.

package series

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// seriesPost is a per-series step that runs on every series once it is
// sorted by time, in the order of the frames, before its frames are built:
// $__timeGroup fill (fillStep). It may replace s.Times and s.Values (keeping them aligned); a value
// array it replaces it must release. What it sets must be memory of its own
// (Go memory, not changed afterwards); when it replaces Times and every
// value array, it clears s.inSegments.
type seriesPost func(s *sortedSeries, reserve func(bytes int64) error) error

// sortedSeries is one series as a seriesPost step sees it.
type sortedSeries struct {
	Labels data.Labels
	Times  []arrow.Timestamp // ascending; no nulls
	Values []arrow.Array     // one per value column, aligned with Times

	timesBuf *memory.Buffer // Times' buffer when collected (from the arrays' pool); nil when Times lies elsewhere

	// inSegments: Times or a value array is a slice of the builder's
	// segments (a series of one run), memory it shares with other series,
	// so its frames are not lent (see source.RecordLender).
	inSegments bool
}

// release drops the series' arrays.
func (ss *sortedSeries) release() {
	ReleaseArrays(ss.Values)
	if ss.timesBuf != nil {
		ss.timesBuf.Release()
		ss.timesBuf = nil
	}
}

// emit hands the frame of value column j of ss to sink, which takes the
// column's array from ss.
func (b *Builder) emit(ctx context.Context, sink source.Sink, ss *sortedSeries, j int, notices *[]data.Notice) error {
	varr := ss.Values[j]
	ss.Values[j] = nil
	if b.timeMD == nil {
		md := frame.ColumnMetadata(frame.TSTime, nil, "")
		b.timeMD = &md
	}
	cols := []frame.Column{
		{Name: b.schema.Field(b.timeIdx).Name, Array: b.timesArrayOf(ss), Metadata: b.timeMD},
		b.valueField(j, varr, ss.Labels),
	}
	n := *notices
	*notices = nil
	return b.emitFrame(ctx, sink, n, cols, !ss.inSegments)
}

// emitFrame hands sink the frame of cols (taking their arrays) with the
// query's frame meta and notices: lent when the sink lends and the frame's
// memory is its own (lendable), else as a record to copy.
func (b *Builder) emitFrame(ctx context.Context, sink source.Sink, notices []data.Notice, cols []frame.Column, lendable bool) error {
	md, err := b.frameMD(notices)
	if err != nil {
		frame.ReleaseColumns(cols)
		return err
	}
	rec, err := frame.NewRecordMD(md, cols)
	if err != nil {
		return fmt.Errorf("flightsql: %w", err)
	}
	b.segmentsOut = b.segmentsOut || !lendable
	if b.lender != nil && lendable {
		return b.lender.LendRecord(ctx, rec)
	}
	return sink.Record(ctx, rec)
}

// metricColumn names the text column whose value names its series.
const metricColumn = "metric"

// valueField is the field of a series' values of value column j: named
// after it, with its config and the series' labels; or, as Grafana's SQL
// data sources do for a query of a time, a text column named metric and one
// value (SELECT … AS time, host AS metric, avg(v) AS value), named by the
// metric's value, without labels, so that the legend reads "a", not "value a".
func (b *Builder) valueField(j int, values arrow.Array, labels data.Labels) frame.Column {
	vf := b.schema.Field(b.valueIdx[j])
	name := vf.Name
	config, _ := vf.Metadata.GetValue(frame.KeyConfig)
	if b.metricNamed && len(labels) == 1 {
		if m, ok := labels[metricColumn]; ok {
			name, labels = m, nil
		}
	}
	return frame.Column{Name: name, Array: values, TSType: frame.TSNumber, Labels: labels, Config: config}
}

// sortSeries gathers the points of s, sorted by time (stable: rows of one
// time keep their order), and runs the post-processing step on it, which
// reserves what it makes with reserve.
func (b *Builder) sortSeries(s *series, reserve func(int64) error) (*sortedSeries, error) {
	runs := b.runs[s.id]
	b.runs[s.id] = nil
	var times []arrow.Timestamp
	var tbuf *memory.Buffer
	shared := b.lender != nil && b.sameTimes(runs)
	if shared {
		times, tbuf = b.lastTimes, b.lastTimesBuf // sorted: kept only when it needed no sort
		tbuf.Retain()
	} else {
		times, tbuf = b.times.collect(runs, b.mem)
	}
	var perm []int32
	if !shared && !slices.IsSorted(times) {
		perm = make([]int32, len(times))
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortStableFunc(perm, func(x, y int32) int { return cmp.Compare(times[x], times[y]) })
		times, tbuf = permute(times, perm, tbuf), nil
	}
	ss := &sortedSeries{Labels: s.labels, Times: times, Values: make([]arrow.Array, len(b.stores)), timesBuf: tbuf,
		inSegments: len(runs) == 1 && perm == nil}
	if b.lender != nil && !shared && perm == nil && !ss.inSegments && tbuf != nil {
		// The times the next series may share: the builder holds a
		// reference to tbuf, and drops the one to the previous times'.
		tbuf.Retain()
		b.dropLastTimes()
		b.lastTimes, b.lastRuns, b.lastTimesBuf = times, runs, tbuf
	}
	for j, st := range b.stores {
		ss.Values[j] = st.array(runs, b.schema.Field(b.valueIdx[j]).Type, perm, b.mem)
	}
	if b.post != nil {
		if err := b.post(ss, reserve); err != nil {
			ss.release()
			return nil, err
		}
	}
	return ss, nil
}

// timesArrayOf is ss.Times as a timestamp[ns] array (no copy): over
// ss.timesBuf when they lie there, and the same array for every series
// whose times are still lastTimes (built for the first; a post step may
// have replaced a series' times since).
func (b *Builder) timesArrayOf(ss *sortedSeries) arrow.Array {
	buf := ss.timesBuf
	if buf == nil || unsafe.SliceData(ss.Times) != (*arrow.Timestamp)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))) {
		return timesArray(ss.Times)
	}
	last := buf == b.lastTimesBuf && len(ss.Times) == len(b.lastTimes) // lastTimes lie from lastTimesBuf's start
	if last && b.lastTimesArr != nil {
		b.lastTimesArr.Retain()
		return b.lastTimesArr
	}
	buf.Retain()
	arr := arrayOn(frame.Timestamp, buf, len(ss.Times), nil, 0)
	if last {
		arr.Retain()
		b.lastTimesArr = arr
	}
	return arr
}

// dropLastTimes drops the builder's references to lastTimes.
func (b *Builder) dropLastTimes() {
	if b.lastTimesArr != nil {
		b.lastTimesArr.Release()
	}
	if b.lastTimesBuf != nil {
		b.lastTimesBuf.Release()
	}
	b.lastTimes, b.lastRuns, b.lastTimesBuf, b.lastTimesArr = nil, nil, nil, nil
}

// sameTimes says whether runs hold the times b.lastTimes holds, compared
// where they lie (not collected first); a run that reads the same times'
// segment place as the last series' run at its position is the same.
func (b *Builder) sameTimes(runs []run) bool {
	last := b.lastTimes
	if last == nil {
		return false
	}
	pos, lpos := 0, 0 // where run i's times begin in these times, and the last series' run i's
	for i, r := range runs {
		if i < len(b.lastRuns) {
			l := b.lastRuns[i]
			same := pos == lpos && l.seg == r.seg && l.tstart == r.tstart && l.n == r.n
			lpos += int(l.n)
			if same { // the very times lastTimes holds from pos
				pos += int(r.n)
				continue
			}
		}
		ts := b.times.of(r)
		if len(ts) > len(last)-pos || !equalTimes(ts, last[pos:pos+len(ts)]) {
			return false
		}
		pos += len(ts)
	}
	return pos == len(last)
}

// frameMD is the schema metadata of a frame of the query: timeseries-multi
// or timeseries-wide, as the format is. Without notices and stats it is the
// same for every frame of the query, so it is built (its meta marshalled to
// JSON) once.
func (b *Builder) frameMD(notices []data.Notice) (arrow.Metadata, error) {
	stats := b.cfg.Stats
	b.cfg.Stats = nil // the first frame's only
	if len(notices) == 0 && len(stats) == 0 && b.plainMD.Len() > 0 {
		return b.plainMD, nil
	}
	typ := data.FrameTypeTimeSeriesMulti
	if b.cfg.Wide {
		typ = data.FrameTypeTimeSeriesWide
	}
	md, err := frame.SchemaMetadata("", b.cfg.RefID, &data.FrameMeta{Type: typ, TypeVersion: data.FrameTypeVersion{0, 1},
		ExecutedQueryString: b.cfg.SQL, Notices: notices, Stats: stats})
	if err != nil {
		return arrow.Metadata{}, fmt.Errorf("flightsql: %w", err)
	}
	if len(notices) == 0 && len(stats) == 0 {
		b.plainMD = md
	}
	return md, nil
}

// ReleaseArrays releases the arrays of as and clears them.
func ReleaseArrays(as []arrow.Array) {
	for i, a := range as {
		if a != nil {
			a.Release()
			as[i] = nil
		}
	}
}

// timesArray is a timestamp[ns] array over times (no copy).
func timesArray(times []arrow.Timestamp) arrow.Array {
	return arrayOver(frame.Timestamp, times, nil, 0)
}

// arrayOver returns an array of type dt over the memory of vals (no copy),
// with a validity bitmap when nulls > 0. Its buffers are Go memory, freed
// by the garbage collector once the array is released and dropped.
func arrayOver[T any](dt arrow.DataType, vals []T, validity []byte, nulls int) arrow.Array {
	var zero T
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), len(vals)*int(unsafe.Sizeof(zero)))
	return arrayOn(dt, memory.NewBufferBytes(raw), len(vals), validity, nulls)
}

// arrayOn returns an array of type dt and n values over buf (which it takes
// over), with a validity bitmap (Go memory) when nulls > 0.
func arrayOn(dt arrow.DataType, buf *memory.Buffer, n int, validity []byte, nulls int) arrow.Array {
	var bm *memory.Buffer
	if nulls > 0 {
		bm = memory.NewBufferBytes(validity)
	}
	d := array.NewData(dt, n, []*memory.Buffer{bm, buf}, nil, nulls, 0)
	buf.Release() // d holds it
	defer d.Release()
	return array.MakeFromData(d)
}
