// Recycled message bodies: the memory of the batches a query copies out as they arrive.

package flightsql

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"

	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// A DoGet stream's record batches are slices of their messages' bodies,
// each copied once out of the transport's buffers (decodeFlightData). A
// stream whose batches are copied out of as they arrive (the series
// formats: see Source.stream) gives each body back once its message and
// every array over it are released, and its next message's body is written
// into it: the bodies, half of what such a query allocates, no longer
// become garbage. The bodies are the stream's own: a few freed ones
// (bodyKeep) wait for its next messages and go with it when it ends, so
// no memory passes from one query, data source or user to another. The
// other formats keep referencing the received memory (a table's lent
// parts, which the budget counts at their bytes): their bodies are new
// memory of their length, as before, never recycled.
//
// A recycled body is used for a body of at least half its size, clipped
// to the new body's length and capacity, so that no byte of an earlier
// message is reachable through it (a batch whose buffers claim bytes past
// its body fails as it would in memory of its own); every byte of the
// clipped slice is the new message's. The memory keeps its full capacity
// from one use to the next.

// bodyKeep is how many freed bodies a stream keeps for its next messages:
// it has about four in flight (prefetchDepth read ahead, one being read,
// one being split).
const bodyKeep = 6

// streamBodies is one DoGet stream's bodies: its codec decodes each
// message's body into one of the stream's freed bodies once recycle is set,
// and its message reader then hands the body to arrow-go in a buffer that
// gives that memory back (bodyBuffer). The codec runs inside the stream's
// Recv, on the goroutine that reads the messages, so last is the body of
// the message Recv returns next; bodies come back on the goroutine that
// releases the batches (mu).
type streamBodies struct {
	recycle atomic.Bool // set before the first batch is read
	last    []byte      // the full memory of the body decoded last
	counts  *bodyCounts // the Source's

	mu   sync.Mutex
	free [][]byte // freed bodies, each its memory's full length
}

// bodyCounts count, over a Source's streams, the bodies given back and
// those written into a freed body (tests read them).
type bodyCounts struct{ recycled, reused atomic.Int64 }

// copy returns data's bytes [start, start+n) as a message body: in a
// freed body's memory when recycling and one at most twice as long is at
// hand, else in new memory (copyRange).
func (sb *streamBodies) copy(data mem.BufferSlice, start, n int) []byte {
	if n == 0 || !sb.recycle.Load() {
		return copyRange(data, start, n)
	}
	if full := sb.take(n); full != nil {
		b := full[:n:n]
		var scratch [32][]byte
		at := 0
		for _, piece := range rangePieces(scratch[:0], data, start, n) {
			at += copy(b[at:], piece)
		}
		if at == n { // always: n was checked against the message's length
			sb.last = full
			return b
		}
	}
	b := copyRange(data, start, n)
	sb.last = b
	return b
}

// take takes a freed body of at least n bytes and at most 2n (nil: none).
func (sb *streamBodies) take(n int) []byte {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for i, full := range sb.free {
		if len(full) >= n && len(full) <= 2*n {
			last := len(sb.free) - 1
			sb.free[i], sb.free[last] = sb.free[last], nil
			sb.free = sb.free[:last]
			sb.counts.reused.Add(1)
			return full
		}
	}
	return nil
}

// give takes a body back, kept while there is room.
func (sb *streamBodies) give(full []byte) {
	sb.counts.recycled.Add(1)
	series.Poison(full)
	sb.mu.Lock()
	if len(sb.free) < bodyKeep {
		sb.free = append(sb.free, full)
	}
	sb.mu.Unlock()
}

// buffer returns the buffer of body, the body of the message Recv just
// returned: one that gives its memory back once released when the codec
// decoded it into memory of its own (last), else a plain one (an empty
// body, a message the "proto" codec decoded, a stream not recycling).
func (sb *streamBodies) buffer(body []byte) (buf *memory.Buffer, recycled bool) {
	full := sb.last
	sb.last = nil
	if len(body) == 0 || len(full) == 0 || unsafe.SliceData(full) != unsafe.SliceData(body) {
		return memory.NewBufferBytes(body), false
	}
	return memory.NewBufferWithAllocator(body, &bodyBuffer{sb: sb, full: full}), true
}

// bodyBuffer is the allocator of one recycled body's buffer: Free gives
// its memory, at its full length, back to its stream. The buffer is made
// over the body (NewBufferWithAllocator), so nothing is allocated through
// it; Allocate and Reallocate are there for the interface.
type bodyBuffer struct {
	sb   *streamBodies
	full []byte
}

func (*bodyBuffer) Allocate(n int) []byte { return make([]byte, n) }

func (*bodyBuffer) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}

func (a *bodyBuffer) Free([]byte) {
	if a.full != nil {
		a.sb.give(a.full)
		a.full = nil
	}
}

// messages is the ipc.MessageReader of a DoGet stream: flight.NewRecordReader's,
// but for the bodies (streamBodies.buffer), and the message read before,
// which it releases when it reads the next (as ipc's own message reader
// does), so that a body's last references are its arrays'.
type messages struct {
	stream flight.DataStreamReader
	bodies *streamBodies
	peeked *flight.FlightData
	msg    *ipc.Message
	refs   atomic.Int64
}

// newStreamReader reads the record batches of stream, whose codec decodes
// into sb, with mem (the client's allocator), as flight.NewRecordReader
// does: the first message, the schema, is read now.
func newStreamReader(stream flight.DataStreamReader, sb *streamBodies, mem memory.Allocator) (*ipc.Reader, error) {
	fd, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	sb.last = nil // a schema has no body
	m := &messages{stream: stream, bodies: sb}
	m.refs.Add(1)
	if len(fd.DataHeader) > 0 {
		m.peeked = fd
	}
	rdr, err := ipc.NewReaderFromMessageReader(m, ipc.WithAllocator(mem))
	if err != nil {
		return nil, err // the reader released m
	}
	return rdr, nil
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
