// Recycled message bodies: the memory of the batches a query copies out as they arrive.

package flightsql

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"
)

// A DoGet stream's record batches are slices of their messages' bodies,
// each copied once out of the transport's buffers (decodeFlightData). A
// query whose builder copies out what it keeps of each batch (the series
// formats: recycleBodies) gives each body back once its message and every
// array over it are released, and the next message's body, of any query,
// is written into it: the bodies, half of what such a query allocates, no
// longer become garbage. The other formats keep referencing the received
// memory (a table's lent parts) and give nothing back.
//
// A recycled body is used for a body at most twice shorter, clipped to the
// new length and capacity, so that no byte of an earlier message is
// reachable through it (a batch whose buffers claim bytes past its body
// fails as with memory of its own); the bytes it holds are all the new
// message's.
var bodies sync.Pool // of *[]byte

// bodiesRecycled counts the bodies given back (tests read it).
var bodiesRecycled atomic.Int64

// bodyCopy returns data's bytes [start, start+n) as a message body: in a
// recycled body's memory when one long enough is at hand, else in new
// memory of exactly n bytes (copyRange).
func bodyCopy(data mem.BufferSlice, start, n int) []byte {
	if n == 0 {
		return nil
	}
	if p, _ := bodies.Get().(*[]byte); p != nil {
		if b := *p; cap(b) >= n && cap(b) <= 2*n {
			b = b[:0:n]
			var scratch [32][]byte
			for _, piece := range rangePieces(scratch[:0], data, start, n) {
				b = append(b, piece...)
			}
			return b
		}
		bodies.Put(p) // for a longer or shorter body
	}
	return copyRange(data, start, n)
}

// bodyAllocator is the allocator of a recycled body's buffer: Free gives
// the memory back to bodies. The buffer is made over the body
// (NewBufferWithAllocator), so nothing is allocated through it; Allocate
// and Reallocate are there for the interface.
type bodyAllocator struct{}

func (bodyAllocator) Allocate(n int) []byte { return make([]byte, n) }

func (bodyAllocator) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}

func (bodyAllocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	bodiesRecycled.Add(1)
	b = b[:cap(b)]
	bodies.Put(&b)
}

// messages is the ipc.MessageReader of a DoGet stream: flight.NewRecordReader's,
// but for the bodies, which, once recycle is set, are buffers that give their
// memory back to bodies (bodyAllocator), and the message read before, which
// it releases when it reads the next (as ipc's own message reader does), so
// that a body's last reference is its arrays'.
type messages struct {
	stream  flight.DataStreamReader
	peeked  *flight.FlightData
	msg     *ipc.Message
	refs    atomic.Int64
	recycle bool // set before the first batch is read
}

// newStreamReader reads the record batches of stream with mem (the
// client's allocator), as flight.NewRecordReader does: the first message,
// the schema, is read now. It returns the reader and its messages (for
// recycleBodies).
func newStreamReader(stream flight.DataStreamReader, mem memory.Allocator) (*ipc.Reader, *messages, error) {
	fd, err := stream.Recv()
	if err != nil {
		return nil, nil, err
	}
	m := &messages{stream: stream}
	m.refs.Add(1)
	if len(fd.DataHeader) > 0 {
		m.peeked = fd
	}
	rdr, err := ipc.NewReaderFromMessageReader(m, ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, err // the reader released m
	}
	return rdr, m, nil
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
	body := memory.NewBufferBytes(fd.DataBody)
	if m.recycle && len(fd.DataBody) > 0 {
		body = memory.NewBufferWithAllocator(fd.DataBody, bodyAllocator{})
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
