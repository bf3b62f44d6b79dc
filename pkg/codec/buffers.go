package codec

import (
	"sync"
	"time"
)

// BufferPool keeps byte buffers for encoded frames: at most keep of them,
// each of at most maxCap bytes of capacity, and none once the pool has been
// idle for a while. A buffer that grew above the ceiling is dropped on Put,
// so one huge frame cannot pin its memory, and a burst of concurrent
// encodes leaves no more than keep buffers behind (a sync.Pool would keep
// every buffer of the burst through the next collection, and its victim
// cache through the one after).
type BufferPool struct {
	initCap, maxCap, keep int
	idle                  time.Duration

	mu       sync.Mutex
	free     []*[]byte
	lastUse  time.Time
	trimming bool
}

// DefaultBufferIdle is how long a BufferPool keeps buffers nobody asks for.
const DefaultBufferIdle = 10 * time.Second

// NewBufferPool returns a pool that keeps up to keep buffers of at most
// maxCap bytes of capacity, dropped after DefaultBufferIdle without use.
// New buffers start with initCap bytes of capacity.
func NewBufferPool(initCap, maxCap, keep int) *BufferPool {
	return &BufferPool{initCap: initCap, maxCap: maxCap, keep: max(keep, 1), idle: DefaultBufferIdle}
}

// Get returns an empty buffer.
func (p *BufferPool) Get() *[]byte {
	p.mu.Lock()
	p.lastUse = time.Now()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	b := make([]byte, 0, p.initCap)
	return &b
}

// Put returns b to the pool, or drops it when its capacity is above the
// ceiling or the pool is full. The caller must not use b afterwards.
func (p *BufferPool) Put(b *[]byte) {
	if b == nil || cap(*b) > p.maxCap {
		return
	}
	*b = (*b)[:0]
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastUse = time.Now()
	if len(p.free) >= p.keep {
		return
	}
	p.free = append(p.free, b)
	if !p.trimming {
		p.trimming = true
		time.AfterFunc(p.idle, p.trim)
	}
}

// trim drops every pooled buffer once the pool has been idle for p.idle,
// and checks again later otherwise.
func (p *BufferPool) trim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wait := p.idle - time.Since(p.lastUse); wait > 0 && len(p.free) > 0 {
		time.AfterFunc(wait, p.trim)
		return
	}
	clear(p.free)
	p.free = p.free[:0]
	p.trimming = false
}

// Len reports how many buffers the pool keeps now.
func (p *BufferPool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}
