// The series builder: batches in (Add), series out (Finish).

package series

import (
	"context"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// Builder splits rows into series (one per label set) while the batches
// stream, column-wise, as the package doc's "Splitting" says. At the end
// the series are sorted by time and by label set, and become one frame per
// (series × value column) (format time_series), or one wide frame (format
// time_series_wide). Made by New, fed by Add, ended by Finish; one query's,
// used by one goroutine.
type Builder struct {
	cfg  Config
	post seriesPost // nil: none

	plainMD arrow.Metadata // frameMD without notices or stats, once built (empty until then)

	schema   *arrow.Schema
	timeIdx  int
	valueIdx []int
	// valueOrder is the order of the value columns' fields: by name, as
	// Grafana orders a wide frame's fields (data.SortWideFrameFields), a
	// name twice in the result's order.
	valueOrder []int
	labelIdx   []int
	// labelNames are the label columns' names as labels, unique
	// (UniqueLabels); renamed says which were renamed, for a notice.
	labelNames []string
	renamed    string
	// metricNamed: the query selects a time, a text column named metric
	// and one value (valueField).
	metricNamed bool
	numerics    []*Numeric // of each value column

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
	// label column, its value as text ("" when null) and whether it is
	// present (not null).
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

	// The memory of the series' arrays (Memory.arrays; when it goes back:
	// DirtyPool.Allocate); lender is set at finish. A series whose times
	// are the previous one's shares them (lastTimes: the last times
	// collected, sorted).
	mem          *DirtyPool
	lender       source.RecordLender
	lastTimes    []arrow.Timestamp
	lastRuns     []run           // where lastTimes were collected from
	lastTimesBuf *memory.Buffer  // lastTimes' memory, a reference the builder holds
	lastTimesArr arrow.Array     // lastTimes as an array, once a frame needs it (timesArrayOf)
	timeMD       *arrow.Metadata // the time field's metadata, once built

	// The builder's own memory, from Memory.scratch: the segments (segMem)
	// and the pending rows (scratchMem), given back at release; the
	// segments only when no frame handed over references them
	// (segmentsOut: a series of one run, inSegments, was).
	segMem, scratchMem pooled
	segmentsOut        bool

	// scratch
	groups rowGroups
	labels []labelAccess
	hashes []uint64
	clock  TimeReader
	text   []byte
}

// labelAccess reads one label column of the current batch (text, its
// type's, is set once, by New).
type labelAccess struct {
	a     arrow.Array
	str   *array.String // the column when it is text (no copies, no text building)
	nulls bool
	text  func(dst []byte, a arrow.Array, i int) []byte
}

type series struct {
	id     int32 // index of its points, and of its label values (keys, present), in the builder
	labels data.Labels
}

var labelSeed = maphash.MakeSeed()

// New returns the builder of a query whose batches have the normalised
// schema s: its time column (TimeColumn), its numeric columns as values and
// every other column as a label. It fails, naming the columns, when s has
// no time column or no value column.
func New(cfg Config, s *arrow.Schema) (*Builder, error) {
	ti, ok := TimeColumn(s, cfg.Types)
	if !ok {
		return nil, source.BadQuery("flightsql: format %s needs a timestamp column, or an integer Unix-time column named time; the result has %s. Choose format table, or select a time column", cfg.format(), source.DescribeColumns(s))
	}
	b := &Builder{cfg: cfg, schema: s, timeIdx: ti, slots: make([]int32, 64), clock: NewTimeReader(s.Field(ti), cfg.Types), cyclic: true}
	mem := cfg.Memory
	if mem == nil {
		mem = NewMemory()
	}
	b.segMem.pool, b.scratchMem.pool, b.mem = mem.scratch, mem.scratch, mem.arrays
	b.times = segments[arrow.Timestamp]{times: true, mem: &b.segMem, scratch: &b.scratchMem}
	for i, f := range s.Fields() {
		if i == ti {
			continue
		}
		if n := cfg.Types(f.Type.ID()).Numeric; n != nil {
			b.valueOrder = append(b.valueOrder, len(b.valueIdx))
			b.valueIdx = append(b.valueIdx, i)
			b.numerics = append(b.numerics, n)
			b.stores = append(b.stores, n.newStore(&b.segMem, &b.scratchMem))
		} else {
			b.labelIdx = append(b.labelIdx, i)
		}
	}
	if len(b.valueIdx) == 0 {
		return nil, source.BadQuery("flightsql: format %s needs at least one numeric value column; the result has %s. Choose format table, or select a number", cfg.format(), source.DescribeColumns(s))
	}
	slices.SortStableFunc(b.valueOrder, func(x, y int) int { return strings.Compare(s.Field(b.valueIdx[x]).Name, s.Field(b.valueIdx[y]).Name) })
	b.labels = make([]labelAccess, len(b.labelIdx))
	for k, li := range b.labelIdx {
		b.labels[k].text = cfg.Types(s.Field(li).Type.ID()).Text
		b.labelNames = append(b.labelNames, s.Field(li).Name)
	}
	b.labelNames, b.renamed = UniqueLabels(b.labelNames)
	b.metricNamed = s.NumFields() == 3 && len(b.labelIdx) == 1 && s.Field(b.labelIdx[0]).Name == metricColumn
	if f := cfg.Fill; f != nil {
		b.post = fillStep(f.Spec, f.From, f.To, f.Limit, b.numerics)
	}
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

// Add routes the rows of one batch of the builder's schema to their series.
// The builder copies out what it keeps: rec is not retained, and its
// memory may be reused once Add returns. It fails when the rows or series
// pass the limits of the query (Config.Limits).
func (b *Builder) Add(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	b.points += int64(n) * int64(len(b.valueIdx))
	if b.cfg.Limits.MaxPoints > 0 && b.points > b.cfg.Limits.MaxPoints {
		return b.cfg.Limits.Points("points").Exceeded("flightsql: the query returns", "narrow the time range or aggregate")
	}
	tcol, times := b.clock.Read(rec.Column(b.timeIdx))
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
func (b *Builder) flush() {
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

// compareSeries orders series as Grafana orders a wide frame's fields of
// one value column (data.SortWideFrameFields, keyed by the label columns):
// by their label values column by column, in the result's column order, a
// null one as empty, and a null before an empty one.
func (b *Builder) compareSeries(x, y *series) int {
	n := len(b.labels)
	xs, ys := int(x.id)*n, int(y.id)*n
	if c := slices.Compare(b.keys[xs:xs+n], b.keys[ys:ys+n]); c != 0 {
		return c
	}
	return slices.CompareFunc(b.present[xs:xs+n], b.present[ys:ys+n], func(a, b bool) int { return b2i(a) - b2i(b) })
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// LabelColumns are the indexes of the schema's columns that label series.
func (b *Builder) LabelColumns() []int { return b.labelIdx }

// SetStats sets the stats of the query's first frame (Config.Stats).
func (b *Builder) SetStats(stats []data.QueryStat) { b.cfg.Stats = stats }

// Finish hands the frames to sink (waiting with ctx), notices (and the
// builder's own: rows left out for their time, points left out of a wide
// frame) on the first one, lending their records when sink is a
// source.RecordLender, and releases the builder.
func (b *Builder) Finish(ctx context.Context, sink source.Sink, notices []data.Notice) error {
	notices = b.clock.Notices(notices, b.nulls)
	if b.renamed != "" {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: b.renamed})
	}
	b.flush()
	b.lender, _ = sink.(source.RecordLender)
	all := slices.Clone(b.series)
	defer b.Release()
	slices.SortFunc(all, b.compareSeries)
	sorted := make([]*sortedSeries, 0, len(all))
	defer func() {
		for _, ss := range sorted {
			ss.release()
		}
	}()
	reserve := func(n int64) error { return source.Reserve(ctx, sink, n) }
	for i, s := range all {
		ss, err := b.sortSeries(s, reserve)
		if err != nil {
			return err
		}
		all[i] = nil // its points now belong to ss
		if !b.cfg.Wide {
			// Handed as it is sorted, its memory reused by the next: with
			// several value columns, a series' frames are together (a wide
			// frame orders them by value column first).
			for _, j := range b.valueOrder {
				if err = b.emit(ctx, sink, ss, j, &notices); err != nil {
					break
				}
			}
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
	if len(all) == 0 {
		// The one frame of an answer without series: a frame of the
		// query's type without fields, carrying the frame meta (the
		// notices, such as rows left out for their time, the stats, the
		// SQL sent). Grafana's SQL data sources answer a query without
		// rows so, and it is the data-plane contract's "no data": alert
		// and recording rules read it as NoData, where a typed frame with
		// a time field and no value field is an error (grafana/dataplane,
		// sdata/timeseries multi.go and wide.go).
		return b.emitFrame(ctx, sink, notices, nil, true)
	}
	if b.cfg.Wide {
		return b.emitWide(ctx, sink, sorted, notices)
	}
	return nil
}

// Release frees what Finish did not hand over; it is safe to call more than
// once, and after Finish.
func (b *Builder) Release() {
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
