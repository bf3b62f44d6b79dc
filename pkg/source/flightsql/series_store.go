// Typed storage of the series' columns: each flush's rows grouped by series (segments), arrays built without boxing.
//
// This file is over 400 lines: the stores, their segments and the pooled
// memory those live in (scratchPool, recycler, lentMemory) are one
// mechanism, which docs/performance.md and docs/memory.md cite by this file.

package flightsql

import (
	"bytes"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
	array(runs []run, dt arrow.DataType, perm []int32, mem *recycler) arrow.Array
}

// run is where some rows of a series are: n values of segment seg from
// start on, and in the times' segment from tstart on (which differs when the
// flush's times are shared: see flushSharedTimes).
type run struct{ seg, start, tstart, n uint32 }

// numeric is what the series split does with one numeric value type (the
// numeric of its registration, types.go: numberType).
type numeric struct {
	// newStore returns an empty store whose segments and pending rows are
	// memory from segs and scratch.
	newStore func(segs, scratch *pooled) valueStore
	// spread returns an array of n slots holding a[k] at pos[k] (pos[k] < 0:
	// left out) and null elsewhere.
	spread func(a arrow.Array, pos []int32, n int) arrow.Array
	// fill fills a series' column of this type (fillArray).
	fill func(f *FillSpec, times []arrow.Timestamp, a arrow.Array, from, to time.Time, maxPoints int) ([]arrow.Timestamp, arrow.Array, error)
}

type number interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

func numericOf[T number]() *numeric {
	return &numeric{newStore: func(segs, scratch *pooled) valueStore {
		return &numStore[T]{vals: segments[T]{mem: segs, scratch: scratch}}
	}, spread: spread[T], fill: fillArray[T]}
}

// numStore holds a value column: its segments, with their validity (nil
// for a segment without nulls), and its pending values, with their
// validity when a pending row is null (pnulls).
type numStore[T number] struct {
	vals   segments[T]
	valid  [][]bool
	pvalid []bool
	pnulls bool
}

func (s *numStore[T]) take(a arrow.Array) {
	k := len(s.vals.pend)
	s.vals.pend = appendPending(s.vals.scratch, s.vals.pend, a.(interface{ Values() []T }).Values())
	if a.NullN() == 0 && !s.pnulls {
		return
	}
	if !s.pnulls {
		s.pvalid = grow(s.pvalid, k)
		for i := range s.pvalid {
			s.pvalid[i] = true
		}
		s.pnulls = true
	}
	s.pvalid = slices.Grow(s.pvalid, a.Len())
	for i := range a.Len() {
		s.pvalid = append(s.pvalid, a.IsValid(i))
	}
}

func (s *numStore[T]) flush(g *rowGroups) {
	s.vals.flush(g)
	var valid []bool
	if s.pnulls {
		valid = make([]bool, g.rows)
		gatherRows(g, valid, s.pvalid)
		s.pvalid, s.pnulls = s.pvalid[:0], false
	}
	s.valid = append(s.valid, valid)
}

func (s *numStore[T]) array(runs []run, dt arrow.DataType, perm []int32, mem *recycler) arrow.Array {
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
		vals = permute(vals, perm)
		if buf != nil {
			buf.Release()
			buf = nil
		}
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
	if size := g.rows * int(unsafe.Sizeof(zero)); size < 1<<scratchPool.minShift || size < tierOf(scratchPool, size)*3/4 {
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
	return bytes.Equal(timeBytes(a), timeBytes(b))
}

func timeBytes(t []arrow.Timestamp) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t))), len(t)*8)
}

// collect returns the values of runs as one slice: the segment's own memory
// when there is one run (buf nil), else a copy in a buffer from mem (buf,
// which the caller owns), or, when mem lends, from lentMemory.
func (s *segments[T]) collect(runs []run, mem *recycler) (vals []T, buf *memory.Buffer) {
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
	var alloc memory.Allocator = mem
	if mem.lend {
		alloc = lentMemory
	}
	b := alloc.Allocate(size)
	vals = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0]
	for _, r := range runs {
		vals = append(vals, s.of(r)...)
	}
	return vals, memory.NewBufferWithAllocator(b[:size], alloc)
}

// permute returns a new slice whose i-th value is vals[perm[i]].
func permute[T any](vals []T, perm []int32) []T {
	out := make([]T, len(perm))
	for i, p := range perm {
		out[i] = vals[p]
	}
	return out
}

// scratchPool keeps the series builders' own memory from one query to the
// next: the flushes' segments and the pending rows, which are written in
// full before they are read (a segment once, the pending rows as batches
// arrive) and which no frame references once the builder is released (see
// seriesBuilder.release). Memory a query takes from it is memory the
// runtime neither clears nor, freed by the collector and returned to the
// system meanwhile, faults in again. Tiers from 64 KiB (smaller buffers
// are allocated each time) to 4 MiB (larger ones too); what it holds is
// dropped over two garbage collections, as any sync.Pool's.
var scratchPool = newDirtyPool(16, 22)

// tierOf is the capacity of p's buffers for n bytes (n within its tiers).
func tierOf(p *dirtyPool, n int) int {
	t := p.tier(n)
	if t < 0 {
		return n
	}
	return 1 << (p.minShift + t)
}

// pooled is the memory one builder took from scratchPool.
type pooled struct{ bufs []*[]byte }

// pooledSlice returns a slice of length n and capacity at least c (n ≤ c)
// whose values are whatever the memory held: from p's pool when c values
// fill one of its tiers, else new memory. With p nil it is new memory. T
// must hold no pointers (numbers, times): the pool's memory is bytes.
func pooledSlice[T any](p *pooled, n, c int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	t := scratchPool.tier(c * size)
	if p == nil || c*size < 1<<scratchPool.minShift || t < 0 {
		return make([]T, n, c)
	}
	h := scratchPool.Get(c * size)
	p.bufs = append(p.bufs, h)
	b := (*h)[:cap(*h)]
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)[:n]
}

// appendPending appends src to the pending values dst: in memory from p
// of room for flushRows rows more than src when dst has none yet (the
// pending rows' usual size, allocated once), else as append grows it.
func appendPending[T any](p *pooled, dst, src []T) []T {
	if cap(dst) == 0 {
		dst = pooledSlice[T](p, 0, flushRows+len(src))
	}
	return append(dst, src...)
}

// giveBack returns p's memory to the pool; nothing may use it afterwards.
func (p *pooled) giveBack() {
	for i, h := range p.bufs {
		scratchPool.Put(h)
		p.bufs[i] = nil
	}
	p.bufs = p.bufs[:0]
}

// drop forgets p's memory, leaving it to the collector (a frame may still
// reference it).
func (p *pooled) drop() { p.bufs = nil }

// recycler is the memory of the series' arrays: a memory.Allocator that
// keeps a few freed buffers (recycleKeep) for the next series, so that the
// arrays of a series the sink has encoded and released hold the next one's
// instead of becoming garbage. Its memory is not zeroed: callers write all
// of it. With lend set (the sink lends) it keeps none, and collect takes
// lentMemory instead: a lent frame's arrays are read until it is sent,
// long after the next series is built (lend keeps a buffer that would
// still come through from being reused). Safe for concurrent use (the sink
// releases frames on its workers).
type recycler struct {
	mu   sync.Mutex
	free [][]byte
	out  int // buffers handed out and not yet freed
	lend bool
}

const recycleKeep = 8

func (r *recycler) Allocate(size int) []byte {
	r.mu.Lock()
	for i, b := range r.free {
		if cap(b) >= size {
			last := len(r.free) - 1
			r.free[i], r.free[last] = r.free[last], nil
			r.free = r.free[:last]
			r.out++
			r.mu.Unlock()
			return b[:size]
		}
	}
	r.out++
	r.mu.Unlock()
	return make([]byte, size)
}

func (r *recycler) Reallocate(size int, b []byte) []byte { return reallocate(r, size, b) }

// reallocate is a Reallocate of a's: b itself when it has the room, else
// size bytes from a holding b's, b freed.
func reallocate(a memory.Allocator, size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	r.mu.Lock()
	r.out--
	if !r.lend && len(r.free) < recycleKeep {
		r.free = append(r.free, b[:cap(b)])
	}
	r.mu.Unlock()
}

// lentMemory is the memory of the arrays a series builder lends to its
// sink (source.RecordLender): a memory.Allocator over lentPool, to which a
// buffer goes back when its last reference is released, which a lending
// sink does once the frame is sent or dropped. A query's lent arrays are
// then the sent arrays of an earlier one, memory the runtime neither
// clears nor faults in again. Not cleared: collect writes all of it.
var lentMemory memory.Allocator = lentAllocator{}

// lentPool holds lentMemory's buffers from 4 KiB (a 512-point series of
// float64; smaller ones are allocated each time) to 4 MiB.
var lentPool = newDirtyPool(12, 22)

type lentAllocator struct{}

func (lentAllocator) Allocate(size int) []byte {
	if size < 1<<lentPool.minShift || lentPool.tier(size) < 0 {
		return make([]byte, size)
	}
	return *lentPool.Get(size)
}

func (a lentAllocator) Reallocate(size int, b []byte) []byte { return reallocate(a, size, b) }

// Free keeps b when its capacity is one of lentPool's tiers (one
// Allocate took from it).
func (lentAllocator) Free(b []byte) { lentPool.Put(&b) }

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
