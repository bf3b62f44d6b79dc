package pipeline

import (
	"bytes"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// Frame is one encoded frame as a query hands it over: its bytes, or its
// first piece (B) and the pieces that follow it (Rest); Lent is set when
// some of those reference a lent record's memory (source.RecordLender),
// which whoever takes the frame releases once nothing reads the pieces.
// Budget is what the frame holds of the memory budget (its Memory), which
// whoever takes the frame gives back once it is written out or dropped.
type Frame struct {
	B      []byte
	Rest   [][]byte
	Lent   *Lent
	Budget Held
	// spare is what the lent record's buffers hold beyond their bytes
	// (the capacity a pooling allocator rounded them up to, which the
	// pieces keep alive): counted in Memory.
	spare int64
}

// Memory is the budget the frame calls for: the memory of its bytes, their
// spare capacity included (the encoder and the JSON path write frames into
// buffers of exactly their size), or of its pieces, their lengths (a piece
// after the first may be a lent record's buffer: how it counts is the
// lending contract's, in package source, beside source.PartLender).
func (f Frame) Memory() int64 { return int64(cap(f.B)) + f.spare + int64(f.Size()-len(f.B)) }

// Size is the frame's length in bytes.
func (f Frame) Size() int {
	n := len(f.B)
	for _, p := range f.Rest {
		n += len(p)
	}
	return n
}

// Joined is the frame as one buffer (B itself when it has no pieces after
// it).
func (f Frame) Joined() []byte {
	if len(f.Rest) == 0 {
		return f.B
	}
	return bytes.Join(append([][]byte{f.B}, f.Rest...), nil)
}

// Lent is the lent records whose buffers a frame's pieces reference (a lent
// series record, or a table's lent parts): released once, when nothing reads
// the pieces any more, as the lending contract in package source asks
// (source.PartLender). Nil releases nothing.
type Lent struct {
	once sync.Once
	recs []arrow.RecordBatch
}

// Release releases the records, once.
func (l *Lent) Release() {
	if l != nil {
		l.once.Do(func() {
			for _, r := range l.recs {
				r.Release()
			}
		})
	}
}

// NewLent is the Lent of recs, which its Release releases; nil for none.
func NewLent(recs ...arrow.RecordBatch) *Lent {
	if len(recs) == 0 {
		return nil
	}
	return &Lent{recs: recs}
}

// spareOf is what rec's buffers hold beyond their lengths: memory a lent
// record's pieces keep alive that its bytes do not count (the capacity a
// pooling allocator rounded them up to).
func spareOf(rec arrow.RecordBatch) int64 {
	var spare int64
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil {
				spare += int64(cap(b.Buf()) - b.Len())
			}
		}
	}
	return spare
}
