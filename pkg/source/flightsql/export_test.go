package flightsql

import "github.com/apache/arrow-go/v18/arrow/memory"

// Test-support functions: only tests call them.

// WithAllocator sets the allocator of the Arrow buffers the Source makes
// while reading and normalising, and of table and logs frames (default: a
// memory.GoAllocator, whatever memory.DefaultAllocator is built as). A
// table's parts are lent to a sink that takes them (source.PartLender),
// which releases them once their frame is written out. The arrays of
// time-series frames are the series split's own memory (package series).
func WithAllocator(mem memory.Allocator) Option { return func(o *options) { o.mem = mem } }

// bytes returns the bytes the store holds.
func (m *memoryStore) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}
