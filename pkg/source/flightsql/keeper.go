// The rows of an incremental query: the kept ones and the new ones fed to
// its builder, and written into its new cache entry.

package flightsql

import (
	"cmp"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// keeper feeds a query's rows to its builder and writes those the answer
// is made of into the segments of its new entry; for a delta, it feeds the
// kept rows first and takes the new ones from cut on.
type keeper struct {
	inc    *incremental
	schema *arrow.Schema
	mem    memory.Allocator
	clock  series.TimeReader
	time   int
	feed   func(arrow.RecordBatch) error

	segs    []segment      // kept whole
	cut     *segmentWriter // the kept rows of segments that held some from cut on
	fresh   *segmentWriter // the rows read
	off     bool           // the answer is not to be kept (a null time, too big)
	keptFed bool           // a delta's kept rows were fed (feedKept)
	limit   int            // most bytes of an entry: the store keeps no more

	// A delta's answer, kept and read rows, is held to the limits the full
	// query's reads are cut at (Source.take): rows and bytes fed so far.
	rows, bytes         int64
	rowLimit, byteLimit int64
}

// newKeeper makes the keeper of a query whose result has schema (nil when
// the result's time column is not the filtered one, or logs are sorted by
// something else: the answer is not kept, and a delta falls back).
func newKeeper(inc *incremental, schema *arrow.Schema, mem memory.Allocator, cfg settings.FlightSQL, feed func(arrow.RecordBatch) error) (*keeper, error) {
	ti, ok := series.TimeColumn(schema, seriesType)
	why := ""
	switch {
	case !ok || !timeColumnFiltered(schema.Field(ti).Name, inc.sql, inc.u):
		why = whyTimeColumn
	case !inc.order.byTime(schema.Field(ti).Name, ti, inc.u, inc.sql):
		why = whyOrder
	}
	if why != "" {
		if inc.prev != nil {
			return nil, fallback{why}
		}
		inc.keep, inc.why = false, why
		return nil, nil
	}
	return &keeper{inc: inc, schema: schema, mem: mem, clock: series.NewTimeReader(schema.Field(ti), seriesType), time: ti, feed: feed,
		fresh: newSegmentWriter(schema, mem), limit: int(cfg.ResultCacheBytes / 4), rowLimit: cfg.RowLimit, byteLimit: cfg.ByteLimit}, nil
}

// feedKept feeds a delta's kept rows, once: after the first time group's
// rows and before the new ones.
func (k *keeper) feedKept() error {
	if k.inc.prev == nil || k.keptFed {
		return nil
	}
	k.keptFed = true
	from, cut, fed := k.inc.start().UnixNano(), k.inc.cut.UnixNano(), k.rows
	for _, sg := range k.inc.prev.segs {
		if sg.hi < from || sg.lo >= cut {
			continue // before the new start, or all in the rows read again
		}
		if err := k.readKept(sg, from, cut); err != nil {
			return err
		}
	}
	k.inc.fromCache = k.rows - fed // feedRun counts every row a delta feeds
	return nil
}

// readKept feeds the rows of kept segment sg from from up to cut. A
// segment that ends before cut is kept as it is, its rows before from
// skipped when read, until they are half of it (by time); one that holds
// rows from cut on, which the delta reads again, or mostly expired rows is
// written again with its rows from from up to cut only.
func (k *keeper) readKept(sg segment, from, cut int64) error {
	var w *segmentWriter
	if sg.hi >= cut || sg.lo < from && from-sg.lo > (sg.hi-sg.lo)/2 {
		if k.cut == nil {
			k.cut = newSegmentWriter(k.schema, k.mem)
		}
		w = k.cut
	} else {
		k.segs = append(k.segs, sg)
	}
	return readSegment(sg, k.schema, k.mem, func(rec arrow.RecordBatch) error {
		if sg.lo >= from && sg.hi < cut {
			return k.feedRun(rec, nil, recordBytes(rec), nil)
		}
		times, err := k.timesOf(rec)
		if err != nil {
			return err
		}
		return k.keepRows(rec, times, func(t int64) bool { return t >= from && t < cut }, w)
	})
}

// addRead takes a batch the server sent: every row of a full query, the
// rows from cut on of a delta (those before are partial time groups).
func (k *keeper) addRead(rec arrow.RecordBatch) error {
	k.inc.fromServer += rec.NumRows()
	if k.inc.prev == nil {
		if col, times := k.clock.Read(rec.Column(k.time)); !k.off {
			if col.NullN() == 0 && !k.inc.within(times, k.inc.from, k.inc.to) {
				k.inc.why = whyOutside
			}
			if col.NullN() > 0 || k.inc.why == whyOutside || k.fresh.buf.Len() > k.limit {
				k.off, k.fresh = true, nil // what was written goes with the keeper
			} else if err := k.fresh.write(rec, times); err != nil {
				return err
			}
		}
		return k.feed(rec)
	}
	cut := k.inc.cut.UnixNano()
	return k.readPart(rec, k.inc.cut, k.inc.to, func(t int64) bool { return t >= cut }, k.fresh)
}

// addHead takes a batch of the first time group's query: its rows
// labelled before the start.
func (k *keeper) addHead(rec arrow.RecordBatch) error {
	k.inc.fromServer += rec.NumRows()
	from := k.inc.start().UnixNano()
	return k.readPart(rec, k.inc.from, k.inc.from.Add(k.inc.u.width), func(t int64) bool { return t < from }, nil)
}

// readPart takes a batch of a delta's query for lo – hi (within): the
// rows keep admits, written to w when set.
func (k *keeper) readPart(rec arrow.RecordBatch, lo, hi time.Time, keep func(int64) bool, w *segmentWriter) error {
	times, err := k.timesOf(rec)
	if err != nil {
		return err
	}
	if !k.inc.within(times, lo, hi) {
		return fallback{whyOutside}
	}
	return k.keepRows(rec, times, keep, w)
}

// timesOf reads the times of rec (valid until the next read). A null time
// gives up the delta: the full query words its notice.
func (k *keeper) timesOf(rec arrow.RecordBatch) ([]arrow.Timestamp, error) {
	col, times := k.clock.Read(rec.Column(k.time))
	if col.NullN() > 0 {
		return nil, fallback{"a row has a null time"}
	}
	return times, nil
}

// keepRows feeds the rows of rec, whose times are times, that keep
// admits, in runs, writing them to w when set.
func (k *keeper) keepRows(rec arrow.RecordBatch, times []arrow.Timestamp, keep func(int64) bool, w *segmentWriter) error {
	size := recordBytes(rec)
	for i := 0; i < len(times); {
		if !keep(int64(times[i])) {
			i++
			continue
		}
		j := i + 1
		for j < len(times) && keep(int64(times[j])) {
			j++
		}
		part := rec
		if i > 0 || j < len(times) {
			part = rec.NewSlice(int64(i), int64(j))
		}
		err := k.feedRun(part, times[i:j], mulDiv(size, int64(j-i), int64(len(times))), w)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// feedRun feeds rows of a delta's answer, of about size bytes, writing
// them to w when set. The rows that pass rowLimit or byteLimit give the
// delta up: the full query's answer is the one cut at them, with its
// notice.
func (k *keeper) feedRun(rec arrow.RecordBatch, times []arrow.Timestamp, size int64, w *segmentWriter) error {
	k.rows, k.bytes = k.rows+rec.NumRows(), k.bytes+size
	if k.rows > k.rowLimit || k.bytes > k.byteLimit {
		return fallback{whyLimit}
	}
	if w != nil {
		if err := w.write(rec, times); err != nil {
			return err
		}
	}
	return k.feed(rec)
}

// store puts the answer's entry, not off (finish), in store: the kept
// segments and the new ones. Its end is the query's, or the time it was
// asked when that is earlier (a range that ends in the future, "Today"):
// the next delta reads again from before what the server could have had.
// An entry past the limit is deleted rather than kept: a refresh's entry
// is the kept one and its new rows, so a widening range would grow it
// without end. A failure only costs the next refresh a full query.
func (k *keeper) store(st Store) error {
	e := &entry{key: k.inc.key, from: k.inc.from, to: k.inc.to, segs: k.segs}
	if k.inc.asOf.Before(e.to) {
		e.to = k.inc.asOf
	}
	for _, w := range []*segmentWriter{k.cut, k.fresh} {
		if w == nil {
			continue
		}
		sg, err := w.finish()
		if err != nil {
			return nil // an IPC writer's failure is not the store's
		}
		if sg.rows > 0 {
			e.segs = append(e.segs, sg)
		}
	}
	// By their first time, so that the next delta feeds the rows about in
	// time order (the split takes any order; a sorted one costs it less).
	slices.SortFunc(e.segs, func(a, b segment) int { return cmp.Compare(a.lo, b.lo) })
	if e.size() > k.limit {
		return st.Delete(k.inc.storeKey())
	}
	return st.Put(k.inc.storeKey(), e.marshal())
}
