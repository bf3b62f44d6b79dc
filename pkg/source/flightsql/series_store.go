// Typed per-series storage of value columns: scatter, permute and build arrays without boxing.

package flightsql

import (
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// valueStore holds one value column of every series, by series index, and
// the rows not yet moved into their series (pending).
type valueStore interface {
	// addSeries adds an empty series.
	addSeries()
	// take appends the values of a to the pending rows.
	take(a arrow.Array)
	// gather moves the pending rows into their series, grouped by g (whose
	// row indices count the pending rows).
	gather(g *rowGroups)
	// array hands the values of series id over as an array of type dt (the
	// i-th value being the perm[i]-th stored; perm nil: as stored) and
	// forgets them.
	array(id int32, dt arrow.DataType, perm []int32) arrow.Array
}

// numeric is what the series split does with one numeric value type.
type numeric struct {
	newStore func() valueStore
	// spread returns an array of n slots holding a[k] at pos[k] (pos[k] < 0:
	// left out) and null elsewhere.
	spread func(a arrow.Array, pos []int32, n int) arrow.Array
	// fill fills a series' column of this type (fillArray).
	fill func(f *FillSpec, times []arrow.Timestamp, a arrow.Array, from, to time.Time, maxPoints int) ([]arrow.Timestamp, arrow.Array, error)
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
	return &numeric{newStore: func() valueStore { return &numStore[T]{} }, spread: spread[T], fill: fillArray[T]}
}

// numStore holds the values of each series and, once a series had a null,
// its validity; and the pending values, with their validity once a pending
// row had a null.
type numStore[T number] struct {
	vals  []chunks[T]
	valid []chunks[bool] // no chunk for a series: all valid
	nulls []int

	pend   []T
	pvalid []bool // nil: every pending value is valid
}

func (s *numStore[T]) addSeries() {
	s.vals = append(s.vals, chunks[T]{})
	s.valid = append(s.valid, chunks[bool]{})
	s.nulls = append(s.nulls, 0)
}

func (s *numStore[T]) take(a arrow.Array) {
	k := len(s.pend)
	s.pend = append(s.pend, a.(interface{ Values() []T }).Values()...)
	if a.NullN() == 0 {
		if s.pvalid != nil {
			s.pvalid = slices.Grow(s.pvalid, a.Len())
			for range a.Len() {
				s.pvalid = append(s.pvalid, true)
			}
		}
		return
	}
	if s.pvalid == nil {
		s.pvalid = make([]bool, k, cap(s.pend))
		for i := range s.pvalid {
			s.pvalid[i] = true
		}
	}
	for i := range a.Len() {
		s.pvalid = append(s.pvalid, a.IsValid(i))
	}
}

func (s *numStore[T]) gather(g *rowGroups) {
	src, valid := s.pend, s.pvalid
	for _, id := range g.touch {
		run := g.rows(id)
		c := &s.vals[id]
		before := c.n
		c.gather(run, src)
		if v := &s.valid[id]; valid != nil || v.cur != nil {
			s.nulls[id] += gatherValid(v, before, run, valid)
		}
	}
	s.pend = s.pend[:0]
	if valid != nil {
		s.pvalid = s.pvalid[:0]
	}
}

// gatherValid appends the validity of the pending rows run (valid; nil:
// all valid) to v, which holds that of the series' first before values, or
// nothing (no chunk) while they were all valid: it is started at the first
// null. It returns the nulls found.
func gatherValid(v *chunks[bool], before int, run []int32, valid []bool) int {
	if valid == nil {
		v.fill(true, len(run))
		return 0
	}
	found := 0
	for x, r := range run {
		ok := valid[r]
		if !ok {
			if v.cur == nil {
				v.fill(true, before+x)
				v.room()
			}
			found++
		}
		if v.cur != nil {
			v.fill(ok, 1)
		}
	}
	return found
}

func (s *numStore[T]) array(id int32, dt arrow.DataType, perm []int32) arrow.Array {
	vals, nulls := s.vals[id].flatten(perm), s.nulls[id]
	var bm []byte
	if nulls > 0 {
		bm = make([]byte, bitutil.BytesForBits(int64(len(vals))))
		for i, ok := range s.valid[id].flatten(perm) {
			if ok {
				bitutil.SetBit(bm, i)
			}
		}
	}
	s.vals[id], s.valid[id] = chunks[T]{}, chunks[bool]{}
	return arrayOver(dt, vals, bm, nulls)
}

// rowGroups is one batch's rows grouped by series (a counting sort): the
// series it touches in first-seen order and, for each, its rows in order.
type rowGroups struct {
	touch  []int32 // series with rows in the batch
	counts []int32 // by series: its rows in the batch (0 for the others)
	ends   []int32 // by series: where its rows end in order
	order  []int32 // row indices, series by series
}

// group sets g to the rows of ids (ids[i] is the series of row i; -1: none)
// grouped by series, among series series.
func (g *rowGroups) group(ids []int32, series int) {
	if len(g.counts) < series {
		g.counts = append(g.counts, make([]int32, series-len(g.counts))...)
		g.ends = append(g.ends, make([]int32, series-len(g.ends))...)
	}
	for _, id := range g.touch {
		g.counts[id] = 0
	}
	counts, touch := g.counts, g.touch[:0]
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
	g.touch, g.order = touch, order
}

// rows are the row indices of series id in the batch, in order.
func (g *rowGroups) rows(id int32) []int32 {
	e := g.ends[id]
	return g.order[e-g.counts[id] : e]
}

// chunks holds the values of one series column in chunks that never move,
// so that appending never copies what is stored: each chunk twice the
// size of the one before, from minChunk up to maxChunk values (so the room
// left unused is under half the values, and under maxChunk).
type chunks[T any] struct {
	full [][]T // filled chunks
	cur  []T   // the chunk being filled (len: the values in it)
	n    int   // values in all
}

const (
	minChunk = 16
	maxChunk = 4096
)

// room returns c's current chunk with room for at least one more value.
func (c *chunks[T]) room() []T {
	if len(c.cur) < cap(c.cur) {
		return c.cur
	}
	size := minChunk
	if c.cur != nil {
		c.full = append(c.full, c.cur)
		size = min(2*cap(c.cur), maxChunk)
	}
	c.cur = make([]T, 0, size)
	return c.cur
}

// gather appends src[r] for every r of run.
func (c *chunks[T]) gather(run []int32, src []T) {
	c.n += len(run)
	for len(run) > 0 {
		cur := c.room()
		k := len(cur)
		m := min(len(run), cap(cur)-k)
		dst := cur[k : k+m]
		for x, r := range run[:m] {
			dst[x] = src[r]
		}
		c.cur = cur[:k+m]
		run = run[m:]
	}
}

// fill appends v n times.
func (c *chunks[T]) fill(v T, n int) {
	c.n += n
	for n > 0 {
		cur := c.room()
		k := len(cur)
		m := min(n, cap(cur)-k)
		dst := cur[k : k+m]
		for x := range dst {
			dst[x] = v
		}
		c.cur = cur[:k+m]
		n -= m
	}
}

// flatten returns the values as one slice (the i-th being the perm[i]-th
// stored; perm nil: as stored): the chunk itself when there is one and no
// perm, else a copy.
func (c *chunks[T]) flatten(perm []int32) []T {
	if perm == nil && len(c.full) == 0 {
		return c.cur
	}
	out := make([]T, 0, c.n)
	for _, ch := range c.full {
		out = append(out, ch...)
	}
	out = append(out, c.cur...)
	if perm != nil {
		sorted := make([]T, len(perm))
		for i, p := range perm {
			sorted[i] = out[p]
		}
		out = sorted
	}
	return out
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
