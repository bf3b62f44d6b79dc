// Recycled message bodies: the memory of the batches a query copies out as they arrive.

package flightsql

import (
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"

	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// A DoGet stream's record batches are slices of their messages' bodies, each
// copied once out of the transport's buffers (decodeFlightData). A stream
// whose batches are copied out of as they arrive (the series formats: see
// Source.stream) writes each body into memory of the source's series pool
// (series.Memory.Pool), the pool the series' arrays come from, and gives it
// back once its message and every array over it are released: the bodies do
// not become garbage, and a query's received and sent memory are one
// allocator's (docs/performance.md, "received-body recycler"). The other
// formats keep referencing the received memory (a table's lent parts, which
// the budget counts at their bytes): their bodies are new memory of their
// length, never the pool's, so that a lent part pins no more than its bytes.
//
// The pool's memory passes between the source's queries as the arrays'
// does: a body is clipped to the new body's length and capacity, so that no
// byte of an earlier use is reachable through it (a batch whose buffers
// claim bytes past its body fails as it would in memory of its own), and
// every byte of the clipped slice is the new message's. A body outside the
// pool's tiers (series.DirtyPool.Holds) is new memory of its length.

// streamBodies is one DoGet stream's bodies: its codec decodes each
// message's body into the pool's memory once recycle is set, and its
// message reader then hands the body to arrow-go in a buffer that gives
// that memory back (bodyBuffer). The codec runs inside the stream's Recv,
// on the goroutine that reads the messages, so last is the body of the
// message Recv returns next.
type streamBodies struct {
	recycle atomic.Bool       // set before the first batch is read
	last    *[]byte           // the pool's memory of the body decoded last
	pool    *series.DirtyPool // the source's series pool
	counts  *bodyCounts       // the source's
}

// bodyCounts count, over a Source's streams, the bodies given back and
// those written into memory given back before (tests read them).
type bodyCounts struct{ recycled, reused atomic.Int64 }

// copy returns data's bytes [start, start+n) as a message body: in the
// pool's memory when recycling and the pool holds bodies of n bytes, else
// in new memory (copyRange).
func (sb *streamBodies) copy(data mem.BufferSlice, start, n int) []byte {
	if n == 0 || !sb.recycle.Load() || !sb.pool.Holds(n) {
		return copyRange(data, start, n)
	}
	h, reused := sb.pool.Take(n)
	if reused {
		sb.counts.reused.Add(1)
	}
	b := (*h)[:n:n]
	readRange(b, data, start) // all n: decodeFlightData checked n against the message's length
	sb.last = h
	return b
}

// buffer returns the buffer of body, the body of the message Recv just
// returned: one that gives its memory back once released when the codec
// decoded it into the pool's memory (last), else a plain one (an empty
// body, a message the "proto" codec decoded, a stream not recycling).
func (sb *streamBodies) buffer(body []byte) (buf *memory.Buffer, recycled bool) {
	h := sb.last
	sb.last = nil
	if len(body) == 0 || h == nil || unsafe.SliceData(*h) != unsafe.SliceData(body) {
		return memory.NewBufferBytes(body), false
	}
	return memory.NewBufferWithAllocator(body, &bodyBuffer{sb: sb, mem: h}), true
}

// bodyBuffer is the allocator of one recycled body's buffer: Free gives
// its memory back to the pool. The buffer is made over the body
// (NewBufferWithAllocator), so nothing is allocated through it; the Go
// allocator's Allocate and Reallocate are there for the interface.
type bodyBuffer struct {
	memory.GoAllocator
	sb  *streamBodies
	mem *[]byte
}

func (a *bodyBuffer) Free([]byte) {
	if a.mem != nil {
		a.sb.counts.recycled.Add(1)
		a.sb.pool.Put(a.mem)
		a.mem = nil
	}
}

// messages is the ipc.MessageReader of a DoGet stream: flight.NewRecordReader's,
// but for the bodies (streamBodies.buffer), and the message read before,
// which it releases when it reads the next (as ipc's own message reader
// does), so that a body's last references are its arrays'.
type messages struct {
	stream flight.DataStreamReader
	bodies *streamBodies
	guard  *streamGuard
	peeked *flight.FlightData
	msg    *ipc.Message
	refs   atomic.Int64
}

// newStreamReader reads the record batches of stream, whose codec decodes
// into sb, with mem (the client's allocator), as flight.NewRecordReader
// does: the first message, the schema, is read now. A message may make it
// allocate at most most bytes (streamGuard).
func newStreamReader(stream flight.DataStreamReader, sb *streamBodies, mem memory.Allocator, most int64) (*ipc.Reader, error) {
	fd, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	sb.last = nil // a schema has no body
	m := &messages{stream: stream, bodies: sb, guard: &streamGuard{Allocator: mem, most: most}}
	m.refs.Add(1)
	if len(fd.DataHeader) > 0 {
		m.peeked = fd
	}
	return ipc.NewReaderFromMessageReader(m, ipc.WithAllocator(m.guard)) // on error, the reader released m
}

func (m *messages) Message() (*ipc.Message, error) {
	fd := m.peeked
	m.peeked = nil
	if fd == nil {
		var err error
		if fd, err = m.stream.Recv(); err != nil {
			m.drop()
			return nil, err
		}
	}
	m.drop()
	body, recycled := m.bodies.buffer(fd.DataBody)
	if recycled {
		defer body.Release() // the message holds it
	}
	m.msg = ipc.NewMessage(memory.NewBufferBytes(fd.DataHeader), body)
	if err := m.guard.begin(m.msg.Type(), fd.DataHeader, len(fd.DataBody)); err != nil {
		return nil, err
	}
	return m.msg, nil
}

// drop releases the message read before.
func (m *messages) drop() {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

func (m *messages) Retain() { m.refs.Add(1) }

func (m *messages) Release() {
	if m.refs.Add(-1) == 0 {
		m.drop()
	}
}
