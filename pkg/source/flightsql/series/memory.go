// The pooled memory of the split: its scratch (Memory.scratch), the memory
// of the series' arrays (Memory.arrays, an allocator) and the pool type
// both are (DirtyPool).

package series

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Memory is the pooled memory series builders share from one query to the
// next (Config.Memory): one per Flight SQL source, for its queries.
//
// scratch keeps the builders' own memory: the flushes' segments and the
// pending rows, which are written in full before they are read (a segment
// once, the pending rows as batches arrive) and which no frame references
// once the builder is released (see Builder.Release). Memory a query takes
// from it is memory the runtime neither clears nor, freed by the collector
// and returned to the system meanwhile, faults in again. Tiers from 64 KiB
// (smaller buffers are allocated each time) to 4 MiB (larger ones too).
//
// arrays holds the memory of the series' arrays (its Allocate) and of
// the source's received series bodies (Pool), from 4 KiB (a 512-point
// series of float64; smaller ones are allocated each time) to 64 MiB (a
// server's batch of a few hundred thousand rows).
//
// What either holds is dropped over two garbage collections, as any
// sync.Pool's. Safe for concurrent use.
type Memory struct {
	scratch, arrays *DirtyPool
}

// NewMemory returns the pooled memory of a source's series builders.
func NewMemory() *Memory {
	return &Memory{scratch: NewDirtyPool(16, 22), arrays: NewDirtyPool(12, 26)}
}

// Pool is the pool the series' arrays come from, for the source's other
// memory that is written in full before it is read and whose last
// reference decides when it returns: the message bodies of its series
// streams.
func (m *Memory) Pool() *DirtyPool { return m.arrays }

// pooled is the memory one builder took from its scratch pool.
type pooled struct {
	pool *DirtyPool
	bufs []*[]byte
}

// pooledSlice returns a slice of length n and capacity at least c (n ≤ c)
// whose values are whatever the memory held: from p's pool when c values
// fill one of its tiers, else new memory. With p nil it is new memory. T
// must hold no pointers (numbers, times): the pool's memory is bytes.
func pooledSlice[T any](p *pooled, n, c int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if p == nil || !p.pool.Holds(c*size) {
		return make([]T, n, c)
	}
	h, _ := p.pool.Take(c * size)
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
		p.pool.Put(h)
		p.bufs[i] = nil
	}
	p.bufs = p.bufs[:0]
}

// drop forgets p's memory, leaving it to the collector (a frame may still
// reference it).
func (p *pooled) drop() { p.bufs = nil }

// DirtyPool is a pool of byte buffers that are not cleared: one sync.Pool
// per power of two from 1 << minShift to 1 << maxShift bytes, larger
// buffers allocated each time. Its users write every byte they read: the
// split's scratch and its arrays (Memory). Safe for concurrent use.
type DirtyPool struct {
	minShift, maxShift int
	tiers              []sync.Pool // tiers[i] holds buffers of capacity 1 << (minShift+i)
}

// NewDirtyPool returns a pool of tiers from 1 << minShift to 1 << maxShift
// bytes.
func NewDirtyPool(minShift, maxShift int) *DirtyPool {
	return &DirtyPool{minShift: minShift, maxShift: maxShift, tiers: make([]sync.Pool, maxShift-minShift+1)}
}

// tier is the index of the smallest tier that holds n bytes, -1 above the
// largest.
func (p *DirtyPool) tier(n int) int {
	shift := p.minShift
	if n > 1 {
		shift = max(bits.Len(uint(n-1)), p.minShift)
	}
	if shift > p.maxShift {
		return -1
	}
	return shift - p.minShift
}

// Holds says whether n bytes fill one of p's tiers: at least its smallest
// (a smaller buffer is cheaper allocated than rounded up) and at most its
// largest.
func (p *DirtyPool) Holds(n int) bool { return n >= 1<<p.minShift && p.tier(n) >= 0 }

// Take returns a buffer of length n whose bytes are whatever it held, and
// says whether it was in the pool (given back by Put) rather than new.
func (p *DirtyPool) Take(n int) (*[]byte, bool) {
	t := p.tier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b, false
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b, true
	}
	b := make([]byte, n, 1<<(p.minShift+t))
	return &b, false
}

// Allocate, Reallocate and Free make p the memory.Allocator of the series'
// arrays (Memory.arrays), to which a buffer goes back when its last
// reference is released: once the sink has encoded the frame (copied it),
// or, a sink that lends (source.RecordLender), once the frame is sent or
// dropped. A series' arrays are then those of a series sent before, in this
// query or an earlier one, memory the runtime neither clears nor faults in
// again. Not cleared: collect writes all of it. A size p does not hold is
// new memory.
func (p *DirtyPool) Allocate(size int) []byte {
	if !p.Holds(size) {
		return make([]byte, size)
	}
	b, _ := p.Take(size)
	return *b
}

// Reallocate returns b itself when it has the room, else size bytes
// holding b's, b freed.
func (p *DirtyPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps b when its capacity is one of the tiers (one Allocate took
// from it).
func (p *DirtyPool) Free(b []byte) { p.Put(&b) }

// Put keeps a buffer whose capacity is one of the tiers and drops any
// other (a large one, or one not from Get).
func (p *DirtyPool) Put(b *[]byte) {
	c := cap(*b)
	t := p.tier(c)
	if t < 0 || 1<<(p.minShift+t) != c {
		return
	}
	Poison((*b)[:c])
	*b = (*b)[:0]
	p.tiers[t].Put(b)
}
