// This file is over 400 lines: the series builder's split (time columns,
// pending rows, flush, sort, emit) in one place; lookup, storage and the
// wide frame are in series_*.go.

package flightsql

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// frameBuilder turns the normalised batches of one query into frames.
type frameBuilder interface {
	// add routes the rows of one batch; rec is not kept unless retained.
	add(rec arrow.RecordBatch) error
	// finish hands the frames to sink, the notices on the first one.
	finish(sink source.Sink, notices []data.Notice) error
	// release frees what finish did not hand over.
	release()
}

// frameInfo is what every frame of one query carries.
type frameInfo struct {
	refID  string
	sql    string // the SQL sent, after macros: meta.executedQueryString
	limits source.Limits
}

// meta is the FrameMeta of one frame of the query.
func (fi *frameInfo) meta(typ data.FrameType, version data.FrameTypeVersion, notices []data.Notice) *data.FrameMeta {
	return &data.FrameMeta{Type: typ, TypeVersion: version, ExecutedQueryString: fi.sql, Notices: notices}
}

// timeColumn finds the time column of a normalised schema: the column named
// "time" if it is a timestamp, else the first timestamp column, else an
// integer column named "time" read as Unix epoch (see epochNS). ok is false
// when there is none.
func timeColumn(s *arrow.Schema) (idx int, epoch, ok bool) {
	named := -1
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, "time") {
			named = i
			break
		}
	}
	if named >= 0 && s.Field(named).Type.ID() == arrow.TIMESTAMP {
		return named, false, true
	}
	for i, f := range s.Fields() {
		if f.Type.ID() == arrow.TIMESTAMP {
			return i, false, true
		}
	}
	if named >= 0 {
		if typeOf(s.Field(named).Type.ID()).times != nil {
			return named, true, true
		}
	}
	return 0, false, false
}

// epochNS reads an integer Unix time by its magnitude, as Grafana's SQL data
// sources do: below 1e11 seconds, below 1e14 milliseconds, below 1e17
// microseconds, nanoseconds beyond (the same bounds negated before 1970).
// ok is false when the time is outside what int64 nanoseconds hold
// (1677-09-21 to 2262-04-11; past 9223372036 seconds, say): the product
// would wrap to a wrong time.
func epochNS(v int64) (ns int64, ok bool) {
	var mul int64
	switch {
	case -1e11 < v && v < 1e11:
		mul = 1e9
	case -1e14 < v && v < 1e14:
		mul = 1e6
	case -1e17 < v && v < 1e17:
		mul = 1e3
	default:
		return v, true
	}
	if v > math.MaxInt64/mul || v < math.MinInt64/mul {
		return 0, false
	}
	return v * mul, true
}

// timeValues reads a whole time column as nanoseconds: a timestamp[ns]
// column's own values (timestampValues), or integer Unix times converted
// into dst (epochValues). bad counts the integer times out of range (see
// epochNS); when it is not 0, valid is the column's validity (in the memory
// of valid) with those rows cleared. Null slots hold any value; check the
// column's validity. The types that may be a time column say so in their
// registration (types.go).
type timeValues func(a arrow.Array, dst []arrow.Timestamp, valid []byte) (times []arrow.Timestamp, _ []byte, bad int)

func timestampValues(a arrow.Array, _ []arrow.Timestamp, valid []byte) ([]arrow.Timestamp, []byte, int) {
	return a.(*array.Timestamp).Values(), valid, 0
}

func epochValues[T int32 | int64](a arrow.Array, dst []arrow.Timestamp, valid []byte) ([]arrow.Timestamp, []byte, int) {
	src := a.(interface{ Values() []T }).Values()
	dst = grow(dst, len(src))
	bad := 0
	for i, v := range src {
		ns, ok := epochNS(int64(v))
		dst[i] = arrow.Timestamp(ns)
		if ok || a.IsNull(i) {
			continue
		}
		if bad == 0 {
			valid = validityOf(a, valid)
		}
		bitutil.ClearBit(valid, i)
		bad++
	}
	return dst, valid, bad
}

// validityOf returns the validity bitmap of a from bit 0, in the memory of
// dst: a's own (at its offset), or every bit set when a has no nulls.
func validityOf(a arrow.Array, dst []byte) []byte {
	n := a.Len()
	dst = grow(dst, int(bitutil.BytesForBits(int64(n))))
	if a.NullN() == 0 {
		for i := range dst {
			dst[i] = 0xff
		}
		return dst
	}
	bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, dst, 0)
	return dst
}

// timeReader reads the time column of each batch as nanoseconds, for the
// builders that take one time per row (series, logs), and counts the
// integer Unix times it could not read.
type timeReader struct {
	field      arrow.Field // the time column, named in the notice
	epoch      []arrow.Timestamp
	valid      []byte
	outOfRange int64 // integer Unix times outside int64 nanoseconds, made null
}

func newTimeReader(f arrow.Field) timeReader { return timeReader{field: f} }

// read returns the time column a of a batch as a column whose nulls are the
// rows without a time, and its values as nanoseconds (a null slot holds any
// value). A timestamp[ns] column, and integer Unix times all in range, keep
// a's validity (col is a); an integer Unix time out of range is null in col
// (Go memory, valid until the next read), never a wrapped time.
func (r *timeReader) read(a arrow.Array) (col arrow.Array, times []arrow.Timestamp) {
	times, valid, bad := typeOf(a.DataType().ID()).times(a, r.epoch, r.valid)
	if a.DataType().ID() == arrow.TIMESTAMP {
		return a, times
	}
	r.epoch, r.valid = times, valid
	if bad == 0 {
		return a, times
	}
	r.outOfRange += int64(bad)
	return arrayOver(timestampNS, times, valid, a.NullN()+bad), times
}

// notices appends the notices of the rows left out for their time: leftOut
// rows had a null time in the columns read returned, r.outOfRange of them
// for an integer Unix time out of range.
func (r *timeReader) notices(notices []data.Notice, leftOut int64) []data.Notice {
	if n := leftOut - r.outOfRange; n > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d rows with a null time were left out.", n)})
	}
	if r.outOfRange > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("Column %q (%s) has %d integer Unix times outside the timestamps Grafana reads (1677-09-21 to 2262-04-11 in nanoseconds): their rows were left out.", r.field.Name, r.field.Type, r.outOfRange)})
	}
	return notices
}

func describeColumns(s *arrow.Schema) string {
	if s.NumFields() == 0 {
		return "no columns"
	}
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
	}
	return "columns " + strings.Join(parts, ", ")
}

// seriesPost is a per-series step that runs on every series once it is
// sorted by time, in the order of the frames, before its frames are built:
// $__timeGroup fill (fillStep). It may replace s.Times and s.Values (keeping them aligned); a value
// array it replaces it must release. What it sets must be memory of its own
// (Go memory, not changed afterwards); when it replaces Times and every
// value array, it clears s.inSegments.
type seriesPost func(s *sortedSeries) error

// sortedSeries is one series as a seriesPost step sees it.
type sortedSeries struct {
	Labels data.Labels
	Times  []arrow.Timestamp // ascending; no nulls
	Values []arrow.Array     // one per value column, aligned with Times

	timesBuf *memory.Buffer // Times' buffer when collected (a recycler's or, lending, lentMemory's); nil when Times lies elsewhere

	// inSegments: Times or a value array is a slice of the builder's
	// segments (a series of one run), memory it shares with other series,
	// so its frames are not lent (see source.RecordLender).
	inSegments bool
}

// timesArray is Times as a timestamp[ns] array (no copy).
func (ss *sortedSeries) timesArray() arrow.Array {
	if ss.timesBuf == nil || unsafe.SliceData(ss.Times) != (*arrow.Timestamp)(unsafe.Pointer(unsafe.SliceData(ss.timesBuf.Bytes()))) {
		return timesArray(ss.Times)
	}
	ss.timesBuf.Retain()
	return arrayOn(timestampNS, ss.timesBuf, len(ss.Times), nil, 0)
}

// release drops the series' arrays.
func (ss *sortedSeries) release() {
	releaseArrays(ss.Values)
	if ss.timesBuf != nil {
		ss.timesBuf.Release()
		ss.timesBuf = nil
	}
}

// seriesBuilder splits rows into series (one per label set) while the batches
// stream, column-wise: for each batch it finds every row's series (guesses
// first, then label values hashed where they lie, no strings built; an
// open-addressing table; the values compared to confirm), groups the rows
// by series (a counting sort), then appends each column's values to every
// series at once, in chunks that never move (see chunks). The batch is not
// kept. At the end the series are sorted by time and by label set, and
// become one frame per (series × value column) (format time_series), or one
// wide frame (format time_series_wide).
type seriesBuilder struct {
	frameInfo
	wide bool
	post seriesPost // nil: none

	plainMD *arrow.Metadata // frameMD without notices, once built

	schema   *arrow.Schema
	timeIdx  int
	valueIdx []int
	labelIdx []int
	numerics []*numeric // of each value column

	series []*series
	points int64
	nulls  int64 // rows dropped for a null time

	// The points: by series index, where its rows are (runs); the time
	// column and one store per value column, each by flush (segments).
	runs    [][]run
	times   segments[arrow.Timestamp]
	tstarts []uint32 // flushSharedTimes' scratch
	stores  []valueStore

	// The lookup table, flat for the row loop: slots (open addressing) hold
	// a series index + 1 (0 is empty); per series index, its hash and, per
	// label column, its value and whether it is present (not null).
	slots       []int32
	hashOf      []uint64
	periodFirst bool // lookupText tries the row one period back first
	keys        []string
	present     []bool
	words       []keyWords // with one label column: its label by series

	// The rows not yet flushed: their series (-1 for a null time) from
	// ids[pend] on, after up to one period of rows of earlier flushes
	// (which lookupText's guesses look back at); times and the stores hold
	// their values.
	ids    []int32
	pend   int
	cyclic bool // every pending row has the series of the row one period (every series) back

	// The memory of the series' arrays, recycled once the sink releases
	// them, unless the sink lends (lender set, at finish): then every
	// array's memory is lentMemory's, back in its pool once the frame is
	// sent (but a one-run series', inSegments), and a series whose times
	// are the previous one's shares them (lastTimes: the last times
	// collected, sorted).
	mem          recycler
	lender       source.RecordLender
	lastTimes    []arrow.Timestamp
	lastRuns     []run           // where lastTimes were collected from
	lastTimesBuf *memory.Buffer  // lastTimes' memory, a reference the builder holds
	lastTimesArr arrow.Array     // lastTimes as an array, once a frame needs it (timesArrayOf)
	timeMD       *arrow.Metadata // the time field's metadata, once built

	// The builder's own memory, from scratchPool: the segments (segMem)
	// and the pending rows (scratchMem), given back at release; the
	// segments only when no frame handed over references them
	// (segmentsOut: a series of one run, inSegments, was).
	segMem, scratchMem pooled
	segmentsOut        bool

	// scratch
	groups rowGroups
	labels []labelAccess
	hashes []uint64
	clock  timeReader
	text   []byte
}

// labelAccess reads one label column of the current batch.
type labelAccess struct {
	a     arrow.Array
	str   *array.String // the column when it is text (no copies, no text building)
	nulls bool
	text  func(dst []byte, a arrow.Array, i int) []byte
}

type series struct {
	id      int32    // index of its points in the builder
	keys    []string // label column values (as text); "" when null
	present []bool   // label column is not null
	labels  data.Labels
	sortKey string // labels.String(): the order of the frames
}

var labelSeed = maphash.MakeSeed()

func newSeriesBuilder(fi frameInfo, wide bool, s *arrow.Schema) (*seriesBuilder, error) {
	format := FormatTimeSeries
	if wide {
		format = FormatTimeSeriesWide
	}
	ti, _, ok := timeColumn(s)
	if !ok {
		return nil, source.BadQuery("flightsql: format %s needs a timestamp column, or an integer Unix-time column named time; the result has %s. Choose format table, or select a time column", format, describeColumns(s))
	}
	b := &seriesBuilder{frameInfo: fi, wide: wide, schema: s, timeIdx: ti, slots: make([]int32, 64), clock: newTimeReader(s.Field(ti)), cyclic: true}
	b.times = segments[arrow.Timestamp]{times: true, mem: &b.segMem, scratch: &b.scratchMem}
	for i, f := range s.Fields() {
		if i == ti {
			continue
		}
		if n := typeOf(f.Type.ID()).numeric; n != nil {
			b.valueIdx = append(b.valueIdx, i)
			b.numerics = append(b.numerics, n)
			b.stores = append(b.stores, n.newStore(&b.segMem, &b.scratchMem))
		} else {
			b.labelIdx = append(b.labelIdx, i)
		}
	}
	if len(b.valueIdx) == 0 {
		return nil, source.BadQuery("flightsql: format %s needs at least one numeric value column; the result has %s. Choose format table, or select a number", format, describeColumns(s))
	}
	b.labels = make([]labelAccess, len(b.labelIdx))
	return b, nil
}

// flushRows is how many rows the builder collects (from one batch or
// several) before it moves them into their series: with ~64 rows per series
// and column at a time, the writes to each series are runs of whole cache
// lines rather than a line or two per batch.
const flushRows = 1 << 16

// lookBack is how many rows of earlier flushes the series guesses may look
// back at: a period of up to that many series is guessed from the first row
// of a flush on.
const lookBack = 1 << 14

func (b *seriesBuilder) add(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	b.points += int64(n) * int64(len(b.valueIdx))
	if b.limits.MaxPoints > 0 && b.points > b.limits.MaxPoints {
		return source.Limit{Max: b.limits.MaxPoints, Unit: "points", Setting: "maxPoints"}.Exceeded("flightsql: the query returns", "narrow the time range or aggregate")
	}
	tcol, times := b.clock.read(rec.Column(b.timeIdx))
	b.bind(rec)

	// The series of every row.
	k := len(b.ids)
	if cap(b.ids) == 0 {
		b.ids = pooledSlice[int32](&b.scratchMem, 0, lookBack+flushRows+n)
	}
	b.ids = slices.Grow(b.ids, n)[:k+n]
	timeNulls := tcol.NullN() > 0
	if len(b.labels) == 1 && b.labels[0].str != nil && !b.labels[0].nulls && !timeNulls {
		cyclic, err := b.lookupText(b.labels[0].str, b.ids, k)
		if err != nil {
			return err
		}
		b.cyclic = b.cyclic && cyclic
	} else {
		b.cyclic = false
		if err := b.lookupRows(tcol, timeNulls, b.ids[k:]); err != nil {
			return err
		}
	}
	b.times.pend = appendPending(&b.scratchMem, b.times.pend, times)
	for j, vi := range b.valueIdx {
		b.stores[j].take(rec.Column(vi))
	}
	if len(b.times.pend) >= flushRows {
		b.flush()
	}
	return nil
}

// flush moves the pending rows into segments: the rows grouped by series (a
// counting sort), then each column gathered in that order into a new
// segment, every series noting its run in it.
func (b *seriesBuilder) flush() {
	g := &b.groups
	ids := b.ids[b.pend:]
	cyclic := b.cyclic && g.cycle(ids, len(b.series))
	if !cyclic {
		g.group(ids, len(b.series))
	}
	b.cyclic = true
	seg := uint32(len(b.times.segs))
	shared := false
	if cyclic {
		b.tstarts, shared = flushSharedTimes(&b.times, len(b.series), b.tstarts)
	}
	for j, id := range g.touch { // for a cycle, j is the series' position in it
		n := g.counts[id]
		r := run{seg: seg, start: uint32(g.ends[id] - n), n: uint32(n)}
		r.tstart = r.start
		if shared {
			r.tstart = b.tstarts[j]
		}
		b.runs[id] = append(b.runs[id], r)
	}
	if !shared {
		b.times.flush(g)
	}
	for _, st := range b.stores {
		st.flush(g)
	}
	keep := min(len(b.ids), len(b.series), lookBack)
	copy(b.ids, b.ids[len(b.ids)-keep:])
	b.ids, b.pend = b.ids[:keep], keep
}

// compareSeries orders series by their label set as Grafana prints it, then
// by the label values column by column (which tells apart the rare label
// sets that print alike).
func compareSeries(x, y *series) int {
	if c := strings.Compare(x.sortKey, y.sortKey); c != 0 {
		return c
	}
	for k := range x.keys {
		if c := cmp.Compare(b2i(x.present[k]), b2i(y.present[k])); c != 0 {
			return c
		}
		if c := strings.Compare(x.keys[k], y.keys[k]); c != 0 {
			return c
		}
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (b *seriesBuilder) finish(sink source.Sink, notices []data.Notice) error {
	notices = b.clock.notices(notices, b.nulls)
	b.flush()
	b.lender, _ = sink.(source.RecordLender)
	b.mem.lend = b.lender != nil
	all := slices.Clone(b.series)
	defer b.release()
	slices.SortFunc(all, compareSeries)
	sorted := make([]*sortedSeries, 0, len(all))
	defer func() {
		for _, ss := range sorted {
			ss.release()
		}
	}()
	for i, s := range all {
		ss, err := b.sortSeries(s)
		if err != nil {
			return err
		}
		all[i] = nil // its points now belong to ss
		if !b.wide {
			err := b.emit(sink, ss, &notices)
			ss.release()
			if err != nil {
				return err
			}
			continue
		}
		if len(sorted) > 0 && equalTimes(ss.Times, sorted[0].Times) {
			// The same times as the first series (a wide frame's usual
			// case): share them, and give the memory to the next series.
			if ss.timesBuf != nil {
				ss.timesBuf.Release()
				ss.timesBuf = nil
			}
			ss.Times = sorted[0].Times
		}
		sorted = append(sorted, ss)
	}
	if b.wide {
		return b.emitWide(sink, sorted, notices)
	}
	return nil
}

// sortSeries gathers the points of s, sorted by time (stable: rows of one
// time keep their order), and runs the post-processing step on it.
func (b *seriesBuilder) sortSeries(s *series) (*sortedSeries, error) {
	runs := b.runs[s.id]
	b.runs[s.id] = nil
	var times []arrow.Timestamp
	var tbuf *memory.Buffer
	shared := b.lender != nil && b.sameTimes(runs)
	if shared {
		times, tbuf = b.lastTimes, b.lastTimesBuf // sorted: kept only when it needed no sort
		tbuf.Retain()
	} else {
		times, tbuf = b.times.collect(runs, &b.mem)
	}
	var perm []int32
	if !shared && !slices.IsSorted(times) {
		perm = make([]int32, len(times))
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortStableFunc(perm, func(x, y int32) int { return cmp.Compare(times[x], times[y]) })
		times = permute(times, perm)
		if tbuf != nil {
			tbuf.Release()
			tbuf = nil
		}
	}
	ss := &sortedSeries{Labels: s.labels, Times: times, Values: make([]arrow.Array, len(b.stores)), timesBuf: tbuf,
		inSegments: len(runs) == 1 && perm == nil}
	if b.lender != nil && !shared && perm == nil && !ss.inSegments && tbuf != nil {
		b.setLastTimes(times, runs, tbuf)
	}
	for j, st := range b.stores {
		ss.Values[j] = st.array(runs, b.schema.Field(b.valueIdx[j]).Type, perm, &b.mem)
	}
	if b.post != nil {
		if err := b.post(ss); err != nil {
			ss.release()
			return nil, err
		}
	}
	return ss, nil
}

// emit hands one frame per value column of ss to sink.
func (b *seriesBuilder) emit(sink source.Sink, ss *sortedSeries, notices *[]data.Notice) error {
	tarr := b.timesArrayOf(ss)
	defer tarr.Release()
	tname := b.schema.Field(b.timeIdx).Name
	if b.timeMD == nil {
		md, err := fieldMetadata(timestampNS, nil, "")
		if err != nil {
			return fmt.Errorf("flightsql: metadata of %q: %w", tname, err)
		}
		b.timeMD = &md
	}
	for j, varr := range ss.Values {
		ss.Values[j] = nil
		vf := b.schema.Field(b.valueIdx[j])
		md, err := b.frameMD(*notices)
		if err != nil {
			releaseArrays(ss.Values)
			varr.Release()
			return err
		}
		*notices = nil
		config, _ := vf.Metadata.GetValue(mdConfig)
		tarr.Retain()
		rec, err := newFrameRecordMD(md, []outField{
			{name: tname, arr: tarr, md: b.timeMD},
			{name: vf.Name, arr: varr, labels: ss.Labels, config: config},
		})
		if err != nil {
			releaseArrays(ss.Values)
			return err
		}
		b.segmentsOut = b.segmentsOut || ss.inSegments
		if err := b.hand(sink, rec, !ss.inSegments); err != nil {
			releaseArrays(ss.Values)
			return err
		}
	}
	return nil
}

// timesArrayOf is ss.timesArray, the same array for every series whose
// times are still lastTimes (built for the first; a post step may have
// replaced a series' times since).
func (b *seriesBuilder) timesArrayOf(ss *sortedSeries) arrow.Array {
	if ss.timesBuf == nil || ss.timesBuf != b.lastTimesBuf ||
		len(ss.Times) != len(b.lastTimes) || unsafe.SliceData(ss.Times) != unsafe.SliceData(b.lastTimes) {
		return ss.timesArray()
	}
	if b.lastTimesArr == nil {
		b.lastTimesArr = ss.timesArray()
	}
	b.lastTimesArr.Retain()
	return b.lastTimesArr
}

// setLastTimes makes times, collected from runs into tbuf, the times the
// next series may share, holding a reference to tbuf (and dropping the one
// to the previous times').
func (b *seriesBuilder) setLastTimes(times []arrow.Timestamp, runs []run, tbuf *memory.Buffer) {
	tbuf.Retain()
	b.dropLastTimes()
	b.lastTimes, b.lastRuns, b.lastTimesBuf = times, runs, tbuf
}

// dropLastTimes drops the builder's references to lastTimes.
func (b *seriesBuilder) dropLastTimes() {
	if b.lastTimesArr != nil {
		b.lastTimesArr.Release()
	}
	if b.lastTimesBuf != nil {
		b.lastTimesBuf.Release()
	}
	b.lastTimes, b.lastRuns, b.lastTimesBuf, b.lastTimesArr = nil, nil, nil, nil
}

// hand hands rec to sink: lent when the sink lends and rec's memory is its
// own (lendable), else as a record to copy.
func (b *seriesBuilder) hand(sink source.Sink, rec arrow.RecordBatch, lendable bool) error {
	if b.lender != nil && lendable {
		return b.lender.LendRecord(rec)
	}
	return sink.Record(rec)
}

// sameTimes says whether runs hold the times b.lastTimes holds, compared
// where they lie (not collected first); a run that reads the same times'
// segment place as the last series' run at its position is the same.
func (b *seriesBuilder) sameTimes(runs []run) bool {
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

// frameMD is the schema metadata of a timeseries-multi frame. Without
// notices it is the same for every frame of the query, so it is built
// (its meta marshalled to JSON) once.
func (b *seriesBuilder) frameMD(notices []data.Notice) (arrow.Metadata, error) {
	if len(notices) == 0 && b.plainMD != nil {
		return *b.plainMD, nil
	}
	md, err := frame.SchemaMetadata("", b.refID, b.meta(data.FrameTypeTimeSeriesMulti, data.FrameTypeVersion{0, 1}, notices))
	if err != nil {
		return arrow.Metadata{}, fmt.Errorf("flightsql: %w", err)
	}
	if len(notices) == 0 {
		b.plainMD = &md
	}
	return md, nil
}

func (b *seriesBuilder) release() {
	b.scratchMem.giveBack()
	if b.segmentsOut {
		b.segMem.drop()
	} else {
		b.segMem.giveBack()
	}
	b.series, b.slots, b.hashOf, b.keys, b.present, b.words = nil, nil, nil, nil, nil, nil
	b.runs, b.times, b.tstarts, b.stores, b.ids = nil, segments[arrow.Timestamp]{times: true}, nil, nil, nil
	b.dropLastTimes()
	b.groups = rowGroups{}
}

func releaseArrays(as []arrow.Array) {
	for i, a := range as {
		if a != nil {
			a.Release()
			as[i] = nil
		}
	}
}

// timesArray is a timestamp[ns] array over times (no copy).
func timesArray(times []arrow.Timestamp) arrow.Array {
	return arrayOver(timestampNS, times, nil, 0)
}

// arrayOver returns an array of type dt over the memory of vals (no copy),
// with a validity bitmap when nulls > 0. Its buffers are Go memory, freed
// by the garbage collector once the array is released and dropped.
func arrayOver[T any](dt arrow.DataType, vals []T, validity []byte, nulls int) arrow.Array {
	var zero T
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), len(vals)*int(unsafe.Sizeof(zero)))
	var bm *memory.Buffer
	if nulls > 0 {
		bm = memory.NewBufferBytes(validity)
	}
	d := array.NewData(dt, len(vals), []*memory.Buffer{bm, memory.NewBufferBytes(raw)}, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}
