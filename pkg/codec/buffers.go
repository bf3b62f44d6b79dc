package codec

import "sync"

// BufferPool keeps byte buffers for encoded frames. Buffers whose capacity
// grew above the pool's ceiling are dropped on Put, so one huge frame cannot
// pin its memory for the life of the process.
type BufferPool struct {
	max  int
	pool sync.Pool
}

// NewBufferPool returns a pool that keeps buffers of at most maxCap bytes of
// capacity. New buffers start with initCap bytes of capacity.
func NewBufferPool(initCap, maxCap int) *BufferPool {
	p := &BufferPool{max: maxCap}
	p.pool.New = func() any {
		b := make([]byte, 0, initCap)
		return &b
	}
	return p
}

// Get returns an empty buffer.
func (p *BufferPool) Get() *[]byte {
	b := p.pool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// Put returns b to the pool, or drops it when its capacity is above the
// ceiling. The caller must not use b afterwards.
func (p *BufferPool) Put(b *[]byte) {
	if b == nil || cap(*b) > p.max {
		return
	}
	*b = (*b)[:0]
	p.pool.Put(b)
}
