package flightsql

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

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
		if _, ok := timeValues[s.Field(named).Type.ID()]; ok {
			return named, true, true
		}
	}
	return 0, false, false
}

// epochNS reads an integer Unix time by its magnitude, as Grafana's SQL data
// sources do: up to 1e11 seconds, up to 1e14 milliseconds, up to 1e17
// microseconds, nanoseconds beyond.
func epochNS(v int64) int64 {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a < 1e11:
		return v * 1e9
	case a < 1e14:
		return v * 1e6
	case a < 1e17:
		return v * 1e3
	}
	return v
}

// timeValues reads a whole time column as nanoseconds: a timestamp[ns]
// column's own values, or integer Unix times converted into dst. Null slots
// hold any value; check the column's validity.
var timeValues = map[arrow.Type]func(a arrow.Array, dst []arrow.Timestamp) []arrow.Timestamp{
	arrow.TIMESTAMP: func(a arrow.Array, _ []arrow.Timestamp) []arrow.Timestamp { return a.(*array.Timestamp).Values() },
	arrow.INT64:     epochValues[int64],
	arrow.INT32:     epochValues[int32],
}

func epochValues[T int32 | int64](a arrow.Array, dst []arrow.Timestamp) []arrow.Timestamp {
	dst = dst[:0]
	for _, v := range a.(interface{ Values() []T }).Values() {
		dst = append(dst, arrow.Timestamp(epochNS(int64(v))))
	}
	return dst
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
// sorted by time, before its frames are built: the place for $__timeGroup
// fill. It may replace s.Times and s.Values (keeping them aligned); a value
// array it replaces it must release.
type seriesPost func(s *sortedSeries) error

// sortedSeries is one series as a seriesPost step sees it.
type sortedSeries struct {
	Labels data.Labels
	Times  []arrow.Timestamp // ascending; no nulls
	Values []arrow.Array     // one per value column, aligned with Times
}

// seriesBuilder splits rows into series (one per label set) while the batches
// stream, column-wise: once per batch it hashes the label columns row by row
// (no strings built), finds each row's series in an open-addressing table,
// groups the batch's row indices by series, and then appends each series'
// rows of every column with typed gathers. At the end the series are sorted
// by time and by label set, and become one frame per (series × value column)
// (format time_series), or one wide frame (format time_series_wide).
type seriesBuilder struct {
	frameInfo
	wide bool
	post seriesPost // nil: none

	schema   *arrow.Schema
	timeIdx  int
	valueIdx []int
	labelIdx []int
	numerics []*numeric // of each value column

	series []*series
	slots  []int32 // open addressing: index into series + 1; 0 is empty
	points int64
	nulls  int64 // rows dropped for a null time

	// per-batch scratch
	hashes  []uint64
	ids     []int32 // series of each row; -1 for a null time
	order   []int32 // row indices grouped by series
	touched []int32
	epoch   []arrow.Timestamp
	text    []byte
}

type series struct {
	hash    uint64
	keys    []string // label column values (as text); "" when null
	present []bool   // label column is not null
	labels  data.Labels
	sortKey string // labels.String(): the order of the frames

	times  []arrow.Timestamp
	sorted bool
	values []valueVec // one per value column

	count, next int32 // rows in the current batch, and where the next goes in order
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
	b := &seriesBuilder{frameInfo: fi, wide: wide, schema: s, timeIdx: ti, slots: make([]int32, 64)}
	for i, f := range s.Fields() {
		if i == ti {
			continue
		}
		if columns[f.Type.ID()].numeric {
			b.valueIdx = append(b.valueIdx, i)
			b.numerics = append(b.numerics, numerics[f.Type.ID()])
		} else {
			b.labelIdx = append(b.labelIdx, i)
		}
	}
	if len(b.valueIdx) == 0 {
		return nil, source.BadQuery("flightsql: format %s needs at least one numeric value column; the result has %s. Choose format table, or select a number", format, describeColumns(s))
	}
	return b, nil
}

func (b *seriesBuilder) add(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	tcol := rec.Column(b.timeIdx)
	times := timeValues[tcol.DataType().ID()](tcol, b.epoch)
	if tcol.DataType().ID() != arrow.TIMESTAMP {
		b.epoch = times
	}

	// 1. The series of every row.
	b.hashRows(rec, n)
	ids := grow(b.ids, n)
	b.ids = ids
	for i := range n {
		if tcol.IsNull(i) {
			ids[i] = -1
			b.nulls++
			continue
		}
		id, err := b.lookup(rec, i, b.hashes[i])
		if err != nil {
			return err
		}
		ids[i] = id
	}

	// 2. Row indices grouped by series (a counting sort).
	touched := b.touched[:0]
	for _, id := range ids {
		if id < 0 {
			continue
		}
		s := b.series[id]
		if s.count == 0 {
			touched = append(touched, id)
		}
		s.count++
	}
	b.touched = touched
	pos := int32(0)
	for _, id := range touched {
		s := b.series[id]
		s.next = pos
		pos += s.count
	}
	order := grow(b.order, int(pos))
	b.order = order
	for i, id := range ids {
		if id < 0 {
			continue
		}
		s := b.series[id]
		order[s.next] = int32(i)
		s.next++
	}

	// 3. Typed gathers of every column, series by series.
	valueCols := make([]arrow.Array, len(b.valueIdx))
	for j, vi := range b.valueIdx {
		valueCols[j] = rec.Column(vi)
	}
	for _, id := range touched {
		s := b.series[id]
		rows := order[s.next-s.count : s.next]
		s.times = slices.Grow(s.times, len(rows))
		last := arrow.Timestamp(-1 << 63)
		if k := len(s.times); k > 0 {
			last = s.times[k-1]
		}
		for _, r := range rows {
			t := times[r]
			if t < last {
				s.sorted = false
			}
			last = t
			s.times = append(s.times, t)
		}
		for j, v := range s.values {
			v.gather(valueCols[j], rows)
		}
		s.count = 0
	}
	b.points += int64(pos) * int64(len(b.valueIdx))
	if b.limits.MaxPoints > 0 && b.points > b.limits.MaxPoints {
		return source.LimitExceeded("flightsql: the query returns more than %d points (maxPoints setting); narrow the time range or aggregate, or raise maxPoints", b.limits.MaxPoints)
	}
	return nil
}

// grow returns s resliced to n elements, reallocated when too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

const nullHash = 0x9e3779b97f4a7c15

// mixHash folds the hash of one more label value into h.
func mixHash(h, v uint64) uint64 { return (bits.RotateLeft64(h, 27) ^ v) * 0xff51afd7ed558ccd }

// hashRows sets b.hashes[i] to the hash of row i's label values, one label
// column at a time. Text columns hash their bytes in place; other label
// types (bool, timestamp, JSON) hash their label text.
func (b *seriesBuilder) hashRows(rec arrow.RecordBatch, n int) {
	h := grow(b.hashes, n)
	b.hashes = h
	clear(h)
	for _, li := range b.labelIdx {
		a := rec.Column(li)
		str, isStr := a.(*array.String)
		nulls := a.NullN() > 0
		for i := range n {
			var v uint64
			switch {
			case nulls && a.IsNull(i):
				v = nullHash
			case isStr:
				v = maphash.String(labelSeed, str.Value(i))
			default:
				b.text = columns[a.DataType().ID()].text(b.text[:0], a, i)
				v = maphash.Bytes(labelSeed, b.text)
			}
			h[i] = mixHash(h[i], v)
		}
	}
}

// lookup returns the series of row i (whose labels hash to h), creating it
// when new.
func (b *seriesBuilder) lookup(rec arrow.RecordBatch, i int, h uint64) (int32, error) {
	mask := uint64(len(b.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		sid := b.slots[p]
		if sid == 0 {
			return b.create(rec, i, h, p)
		}
		if s := b.series[sid-1]; s.hash == h && b.sameLabels(rec, i, s) {
			return sid - 1, nil
		}
	}
}

// sameLabels reports whether row i has the labels of s.
func (b *seriesBuilder) sameLabels(rec arrow.RecordBatch, i int, s *series) bool {
	for k, li := range b.labelIdx {
		a := rec.Column(li)
		if a.IsNull(i) {
			if s.present[k] {
				return false
			}
			continue
		}
		if !s.present[k] {
			return false
		}
		if str, ok := a.(*array.String); ok {
			if str.Value(i) != s.keys[k] {
				return false
			}
			continue
		}
		b.text = columns[a.DataType().ID()].text(b.text[:0], a, i)
		if string(b.text) != s.keys[k] {
			return false
		}
	}
	return true
}

func (b *seriesBuilder) create(rec arrow.RecordBatch, i int, h uint64, slot uint64) (int32, error) {
	if max := b.limits.MaxSeries; max > 0 && (len(b.series)+1)*len(b.valueIdx) > max {
		return 0, source.LimitExceeded("flightsql: the query returns more than %d series (maxSeries setting); filter or group by fewer labels, or raise maxSeries", max)
	}
	s := &series{hash: h, sorted: true, keys: make([]string, len(b.labelIdx)), present: make([]bool, len(b.labelIdx)),
		values: make([]valueVec, len(b.valueIdx))}
	if len(b.labelIdx) > 0 {
		s.labels = data.Labels{}
		for k, li := range b.labelIdx {
			a := rec.Column(li)
			if a.IsNull(i) {
				continue
			}
			text := string(columns[a.DataType().ID()].text(nil, a, i))
			s.keys[k], s.present[k] = text, true
			s.labels[b.schema.Field(li).Name] = text
		}
		s.sortKey = s.labels.String()
	}
	for j, nk := range b.numerics {
		s.values[j] = nk.newVec()
	}
	b.series = append(b.series, s)
	id := int32(len(b.series))
	b.slots[slot] = id
	if 2*len(b.series) > len(b.slots) {
		b.rehash()
	}
	return id - 1, nil
}

// rehash doubles the slot table.
func (b *seriesBuilder) rehash() {
	b.slots = make([]int32, 2*len(b.slots))
	mask := uint64(len(b.slots) - 1)
	for id, s := range b.series {
		p := s.hash & mask
		for b.slots[p] != 0 {
			p = (p + 1) & mask
		}
		b.slots[p] = int32(id + 1)
	}
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
	if b.nulls > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d rows with a null time were left out.", b.nulls)})
	}
	all := b.series
	b.series, b.slots = nil, nil
	slices.SortFunc(all, compareSeries)
	sorted := make([]*sortedSeries, 0, len(all))
	defer func() {
		for _, ss := range sorted {
			releaseArrays(ss.Values)
		}
	}()
	for i, s := range all {
		ss, err := b.sortSeries(s)
		if err != nil {
			return err
		}
		all[i] = nil // its Go memory now belongs to ss
		if !b.wide {
			if err := b.emit(sink, ss, &notices); err != nil {
				return err
			}
			continue
		}
		sorted = append(sorted, ss)
	}
	if b.wide {
		return b.emitWide(sink, sorted, notices)
	}
	return nil
}

// sortSeries sorts s by time (stable: rows of one time keep their order) and
// runs the post-processing step on it.
func (b *seriesBuilder) sortSeries(s *series) (*sortedSeries, error) {
	if !s.sorted {
		perm := make([]int32, len(s.times))
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortStableFunc(perm, func(x, y int32) int { return cmp.Compare(s.times[x], s.times[y]) })
		times := make([]arrow.Timestamp, len(perm))
		for i, p := range perm {
			times[i] = s.times[p]
		}
		s.times = times
		for _, v := range s.values {
			v.permute(perm)
		}
	}
	ss := &sortedSeries{Labels: s.labels, Times: s.times, Values: make([]arrow.Array, len(s.values))}
	for j, v := range s.values {
		ss.Values[j] = v.array(b.schema.Field(b.valueIdx[j]).Type)
	}
	if b.post != nil {
		if err := b.post(ss); err != nil {
			releaseArrays(ss.Values)
			return nil, err
		}
	}
	return ss, nil
}

// emit hands one frame per value column of ss to sink.
func (b *seriesBuilder) emit(sink source.Sink, ss *sortedSeries, notices *[]data.Notice) error {
	tarr := timesArray(ss.Times)
	defer tarr.Release()
	tname := b.schema.Field(b.timeIdx).Name
	for j, varr := range ss.Values {
		ss.Values[j] = nil
		vf := b.schema.Field(b.valueIdx[j])
		meta := b.meta(data.FrameTypeTimeSeriesMulti, data.FrameTypeVersion{0, 1}, *notices)
		*notices = nil
		config, _ := vf.Metadata.GetValue(mdConfig)
		tarr.Retain()
		rec, err := newFrameRecord("", b.refID, meta, []outField{
			{name: tname, arr: tarr},
			{name: vf.Name, arr: varr, labels: ss.Labels, config: config},
		})
		if err != nil {
			releaseArrays(ss.Values)
			return err
		}
		if err := sink.Record(rec); err != nil {
			releaseArrays(ss.Values)
			return err
		}
	}
	return nil
}

// wideFill is how empty a wide frame may be: it is refused when it would
// hold more than wideFill cells per point of the result.
const wideFill = 4

// emitWide hands one timeseries-wide frame to sink: the union of the series'
// times, and every (series × value column) as a field with its labels, null
// where the series has no point. A series with several points at one time
// keeps the first.
func (b *seriesBuilder) emitWide(sink source.Sink, all []*sortedSeries, notices []data.Notice) error {
	var times []arrow.Timestamp
	same := len(all) > 0
	for _, ss := range all {
		if !slices.Equal(ss.Times, all[0].Times) {
			same = false
			break
		}
	}
	if same {
		times = slices.Clone(all[0].Times)
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
	var points int64
	for _, ss := range all {
		points += int64(len(ss.Times))
	}
	if cells := int64(len(times)) * int64(len(all)); cells > wideFill*points+1024 {
		return source.BadQuery("flightsql: format time_series_wide: the %d series share few timestamps (%d distinct times for %d points): one frame would be mostly empty. Choose format time_series, or align the times with $__timeGroup", len(all), len(times), points)
	}

	fields := []outField{{name: b.schema.Field(b.timeIdx).Name, arr: timesArray(times)}}
	var dropped int64
	pos := make([]int32, 0, len(times))
	for _, ss := range all {
		pos = pos[:0]
		aligned := len(ss.Times) == len(times)
		k := 0
		for i, t := range ss.Times {
			for times[k] < t {
				k++
			}
			if i > 0 && ss.Times[i-1] == t {
				pos = append(pos, -1)
				dropped++
				aligned = false
				continue
			}
			pos = append(pos, int32(k))
		}
		for j, varr := range ss.Values {
			vf := b.schema.Field(b.valueIdx[j])
			config, _ := vf.Metadata.GetValue(mdConfig)
			out := varr
			if aligned {
				varr.Retain()
			} else {
				out = b.numerics[j].spread(varr, pos, len(times))
			}
			fields = append(fields, outField{name: vf.Name, arr: out, labels: ss.Labels, config: config})
		}
	}
	if dropped > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d points were left out of the wide frame: their series has another point at the same time. Choose format time_series to see them.", dropped)})
	}
	rec, err := newFrameRecord("", b.refID, b.meta(data.FrameTypeTimeSeriesWide, data.FrameTypeVersion{0, 1}, notices), fields)
	if err != nil {
		return err
	}
	return sink.Record(rec)
}

func (b *seriesBuilder) release() { b.series, b.slots = nil, nil }

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

// valueVec accumulates one value column of one series.
type valueVec interface {
	// gather appends a[rows[0]], a[rows[1]], …
	gather(a arrow.Array, rows []int32)
	// permute reorders the values: the i-th becomes the perm[i]-th.
	permute(perm []int32)
	// array hands the values over as an array of type dt (no copy).
	array(dt arrow.DataType) arrow.Array
}

// numeric is what the series split does with one numeric value type.
type numeric struct {
	newVec func() valueVec
	// spread returns an array of n slots holding a[k] at pos[k] (pos[k] < 0:
	// left out) and null elsewhere.
	spread func(a arrow.Array, pos []int32, n int) arrow.Array
}

// numerics holds every type whose columns entry is numeric (a test checks).
var numerics = map[arrow.Type]*numeric{
	arrow.INT8:    numericOf[int8](),
	arrow.INT16:   numericOf[int16](),
	arrow.INT32:   numericOf[int32](),
	arrow.INT64:   numericOf[int64](),
	arrow.UINT8:   numericOf[uint8](),
	arrow.UINT16:  numericOf[uint16](),
	arrow.UINT32:  numericOf[uint32](),
	arrow.UINT64:  numericOf[uint64](),
	arrow.FLOAT32: numericOf[float32](),
	arrow.FLOAT64: numericOf[float64](),
}

type number interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

func numericOf[T number]() *numeric {
	return &numeric{newVec: func() valueVec { return &numVec[T]{} }, spread: spread[T]}
}

// numVec holds values and, once a null was seen, their validity.
type numVec[T number] struct {
	vals  []T
	valid []bool // nil: all valid
	nulls int
}

func (v *numVec[T]) gather(a arrow.Array, rows []int32) {
	src := a.(interface{ Values() []T }).Values()
	v.vals = slices.Grow(v.vals, len(rows))
	if a.NullN() == 0 {
		for _, r := range rows {
			v.vals = append(v.vals, src[r])
		}
		if v.valid != nil {
			for range rows {
				v.valid = append(v.valid, true)
			}
		}
		return
	}
	if v.valid == nil {
		v.valid = make([]bool, len(v.vals), cap(v.vals))
		for i := range v.valid {
			v.valid[i] = true
		}
	}
	for _, r := range rows {
		ok := a.IsValid(int(r))
		v.vals = append(v.vals, src[r])
		v.valid = append(v.valid, ok)
		if !ok {
			v.nulls++
		}
	}
}

func (v *numVec[T]) permute(perm []int32) {
	vals := make([]T, len(perm))
	for i, p := range perm {
		vals[i] = v.vals[p]
	}
	v.vals = vals
	if v.valid != nil {
		valid := make([]bool, len(perm))
		for i, p := range perm {
			valid[i] = v.valid[p]
		}
		v.valid = valid
	}
}

func (v *numVec[T]) array(dt arrow.DataType) arrow.Array {
	var bm []byte
	if v.nulls > 0 {
		bm = make([]byte, bitutil.BytesForBits(int64(len(v.vals))))
		for i, ok := range v.valid {
			if ok {
				bitutil.SetBit(bm, i)
			}
		}
	}
	a := arrayOver(dt, v.vals, bm, v.nulls)
	v.vals, v.valid = nil, nil
	return a
}

func spread[T number](a arrow.Array, pos []int32, n int) arrow.Array {
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
