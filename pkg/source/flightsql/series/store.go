// Typed storage of the series' columns: each flush's rows grouped by series (segments), arrays built without boxing.

package series

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// valueStore holds one value column of the result: the rows of each flush
// grouped by series (one segment per flush), and the rows not yet flushed
// (pending).
type valueStore interface {
	// take appends the values of a to the pending rows.
	take(a arrow.Array)
	// flush makes the pending rows, in g's order (see rowGroups.gather),
	// the next segment and empties the pending rows.
	flush(g *rowGroups)
	// array returns the values of one series, whose rows are runs, as an
	// array of type dt (the i-th value being the perm[i]-th of the runs;
	// perm nil: in their order), its values in memory from mem.
	array(runs []run, dt arrow.DataType, perm []int32, mem *DirtyPool) arrow.Array
}

// run is where some rows of a series are: n values of segment seg from
// start on, and in the times' segment from tstart on (which differs when the
// flush's times are shared: see flushSharedTimes).
type run struct{ seg, start, tstart, n uint32 }

// numStore holds a value column: its segments, with their validity (nil
// for a segment without nulls), and its pending values, with their
// validity once a pending row is null (pvalid; empty while none is).
type numStore[T Number] struct {
	vals   segments[T]
	valid  [][]bool
	pvalid []bool
}

func (s *numStore[T]) take(a arrow.Array) {
	k := len(s.vals.pend)
	s.vals.pend = appendPending(s.vals.scratch, s.vals.pend, a.(interface{ Values() []T }).Values())
	if len(s.pvalid) == 0 {
		if a.NullN() == 0 {
			return
		}
		s.pvalid = grow(s.pvalid, k)
		for i := range s.pvalid {
			s.pvalid[i] = true
		}
	}
	s.pvalid = slices.Grow(s.pvalid, a.Len())
	for i := range a.Len() {
		s.pvalid = append(s.pvalid, a.IsValid(i))
	}
}

func (s *numStore[T]) flush(g *rowGroups) {
	s.vals.flush(g)
	var valid []bool
	if len(s.pvalid) > 0 {
		valid = make([]bool, g.rows)
		gatherRows(g, valid, s.pvalid)
		s.pvalid = s.pvalid[:0]
	}
	s.valid = append(s.valid, valid)
}

func (s *numStore[T]) array(runs []run, dt arrow.DataType, perm []int32, mem *DirtyPool) arrow.Array {
	vals, buf := s.vals.collect(runs, mem)
	var bm []byte
	nulls, pos := 0, 0
	for _, r := range runs {
		if v := s.valid[r.seg]; v != nil {
			for x, ok := range v[r.start : r.start+r.n] {
				if ok {
					continue
				}
				if bm == nil {
					bm = make([]byte, bitutil.BytesForBits(int64(len(vals))))
					bitutil.SetBitsTo(bm, 0, int64(len(vals)), true)
				}
				bitutil.ClearBit(bm, pos+x)
				nulls++
			}
		}
		pos += int(r.n)
	}
	if perm != nil {
		vals, buf = permute(vals, perm, buf), nil
		if bm != nil {
			pbm := make([]byte, len(bm))
			for i, p := range perm {
				if bitutil.BitIsSet(bm, int(p)) {
					bitutil.SetBit(pbm, i)
				}
			}
			bm = pbm
		}
	}
	if buf == nil {
		return arrayOver(dt, vals, bm, nulls)
	}
	return arrayOn(dt, buf, len(vals), bm, nulls)
}

// rowGroups is the pending rows grouped by series (a counting sort): the
// series they belong to in first-seen order and, for each, its rows.
type rowGroups struct {
	touch  []int32 // series with pending rows
	counts []int32 // by series: its pending rows (0 for the others)
	ends   []int32 // by series: where its rows end in order
	rows   int     // the pending rows grouped
	// The pending row indices, series by series, each in row order: order,
	// or, when the rows cycle through period series (cycle), every
	// period-th row from each of the first period rows on (order unused).
	order  []int32
	period int
}

// gatherRows sets dst[x] to src at the x-th grouped row (len(dst) =
// g.rows): through order, or for a cycle every period-th row from each of
// the first period rows on, with no index to read.
func gatherRows[T any](g *rowGroups, dst, src []T) {
	if k := g.period; k > 0 {
		x := 0
		for j := range k {
			for r := j; r < len(src); r += k {
				dst[x] = src[r]
				x++
			}
		}
		return
	}
	for x, r := range g.order[:len(dst)] {
		dst[x] = src[r]
	}
}

// reset readies g for rows of series series: counts and ends long enough,
// the counts of the previous rows' series cleared, no series touched.
func (g *rowGroups) reset(series int) {
	if len(g.counts) < series {
		g.counts = append(g.counts, make([]int32, series-len(g.counts))...)
		g.ends = append(g.ends, make([]int32, series-len(g.ends))...)
	}
	for _, id := range g.touch {
		g.counts[id] = 0
	}
	g.touch = g.touch[:0]
}

// group sets g to the rows of ids (ids[i] is the series of row i; -1: none)
// grouped by series, among series series.
func (g *rowGroups) group(ids []int32, series int) {
	g.reset(series)
	counts, touch := g.counts, g.touch
	for _, id := range ids {
		if id < 0 {
			continue
		}
		if counts[id] == 0 {
			touch = append(touch, id)
		}
		counts[id]++
	}
	ends, pos := g.ends, int32(0)
	for _, id := range touch {
		ends[id] = pos
		pos += counts[id]
	}
	order := grow(g.order, int(pos))
	for i, id := range ids {
		if id >= 0 {
			order[ends[id]] = int32(i)
			ends[id]++
		}
	}
	g.touch, g.order, g.rows, g.period = touch, order, int(pos), 0
}

// cycle is group for rows that cycle through k series (ids[i] = ids[i-k]
// for every i ≥ k; no -1): the rows of each series are every k-th from its
// first, so the histogram, the scatter and the order are not needed
// (gatherRows strides). It reports false (g then being ready for group)
// when the first k rows are not k different series.
func (g *rowGroups) cycle(ids []int32, k int) bool {
	if k == 0 || len(ids) < k {
		return false
	}
	g.reset(k)
	for _, id := range ids[:k] {
		if g.counts[id] != 0 {
			for _, id := range ids[:k] {
				g.counts[id] = 0
			}
			return false
		}
		g.counts[id] = 1
	}
	x := int32(0)
	for j, id := range ids[:k] {
		n := int32((len(ids) - j + k - 1) / k)
		g.counts[id] = n
		x += n
		g.ends[id] = x
	}
	g.touch = append(g.touch, ids[:k]...)
	g.rows, g.period = len(ids), k
	return true
}

// segments holds one column of the series: a segment per flush, holding
// that flush's rows grouped by series, and the pending values. A segment is
// exactly as long as its rows (no room left unused) and never moves; a
// series' values are copied together once, at the end (collect). The
// times' segments (times set) are read from each run's tstart; a flush's
// times shared by its series (flushSharedTimes) are one segment of its runs
// of one time, a time each.
type segments[T any] struct {
	segs     [][]T
	pend     []T
	times    bool
	distinct []T // flushSharedTimes'

	// Where the segments' and the pending values' memory comes from (nil:
	// new memory).
	mem, scratch *pooled
}

// flush makes the pending values, in g's order, the next segment: in
// pooled memory when its size is most of a pool tier (a flush of batches
// that divide flushRows fills one), else in memory of exactly its size.
func (s *segments[T]) flush(g *rowGroups) {
	var zero T
	mem := s.mem
	if size := g.rows * int(unsafe.Sizeof(zero)); mem == nil || !mem.pool.Holds(size) || size < (1<<(mem.pool.minShift+mem.pool.tier(size)))*3/4 {
		mem = nil
	}
	seg := pooledSlice[T](mem, g.rows, g.rows)
	gatherRows(g, seg, s.pend)
	s.segs = append(s.segs, seg)
	s.pend = s.pend[:0]
}

// of returns the values of run r.
func (s *segments[T]) of(r run) []T {
	start := r.start
	if s.times {
		start = r.tstart
	}
	return s.segs[r.seg][start : start+r.n : start+r.n]
}

// flushSharedTimes makes the pending times the next segment, shared by the
// series, when they cycle through k series (rowGroups.cycle took them) one
// time per cycle, as a GROUP BY time, host result sorted by time (or by
// time descending) has them: the flush's runs of one time are stored once,
// in order, and the series at position j of the cycle has its i-th time at
// starts[j] + i, starts[j] being 0 or 1 (1 for the series of a flush
// beginning in the middle of a time that come after it; starts is reused).
// Every row is compared before the segment is kept. It reports false, and
// does nothing, when the times are not so (a series without a row at some
// time, a cycle of two times).
func flushSharedTimes(s *segments[arrow.Timestamp], k int, starts []uint32) ([]uint32, bool) {
	pend := s.pend
	if k == 0 || len(pend) < k {
		return starts, false
	}
	// The pending times must be runs of one time each: the first of m ≤ k
	// rows, the next ones of exactly k, the last of at most k. Then row
	// c*k + j is in run c (j < m) or c + 1 (j ≥ m): the series at position
	// j has its i-th time at run starts[j] + i. The first run is found
	// row by row; the others lie where they must, each checked whole (all
	// one time: the run equals itself one row on, compared as bytes) and
	// against the run before it (another time).
	m := 1
	for m < len(pend) && m <= k && pend[m] == pend[0] {
		m++
	}
	if m > k {
		return starts, false
	}
	d := append(s.distinct[:0], pend[0])
	defer func() { s.distinct = d[:0] }()
	for at := m; at < len(pend); at += k {
		run := pend[at:min(at+k, len(pend))]
		if run[0] == pend[at-1] || !equalTimes(run[1:], run[:len(run)-1]) {
			return starts, false
		}
		d = append(d, run[0])
	}
	starts = grow(starts, k)
	for j := range starts[:k] {
		starts[j] = 0
		if j >= m {
			starts[j] = 1
		}
	}
	s.segs = append(s.segs, slices.Clone(d))
	s.pend = s.pend[:0]
	return starts, true
}

// equalTimes says whether a and b hold the same times, compared as bytes
// (the runtime's vectorised comparison rather than a loop).
func equalTimes(a, b []arrow.Timestamp) bool {
	if len(a) != len(b) {
		return false
	}
	return bytes.Equal(arrow.GetBytes(a), arrow.GetBytes(b))
}

// collect returns the values of runs as one slice: the segment's own memory
// when there is one run (buf nil), else a copy in a buffer from mem (buf,
// which the caller owns).
func (s *segments[T]) collect(runs []run, mem *DirtyPool) (vals []T, buf *memory.Buffer) {
	if len(runs) == 1 {
		return s.of(runs[0]), nil
	}
	n := 0
	for _, r := range runs {
		n += int(r.n)
	}
	if n == 0 {
		return nil, nil
	}
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	b := mem.Allocate(size)
	vals = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0]
	for _, r := range runs {
		vals = append(vals, s.of(r)...)
	}
	return vals, memory.NewBufferWithAllocator(b[:size], mem)
}

// permute returns a new slice whose i-th value is vals[perm[i]], and then
// releases buf, the memory of vals (nil: none to release).
func permute[T any](vals []T, perm []int32, buf *memory.Buffer) []T {
	out := make([]T, len(perm))
	for i, p := range perm {
		out[i] = vals[p]
	}
	if buf != nil {
		buf.Release()
	}
	return out
}
