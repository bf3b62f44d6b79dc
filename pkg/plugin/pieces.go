package plugin

import (
	"bytes"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

// A frame finished from parts (a table read batch by batch) is its header,
// its parts and its footer, each in memory of its own. Joining them into
// one []byte for the response would copy the whole table once more, and
// hold it twice while doing so, only for gRPC to copy it again into its
// transport. So the frame stays in pieces: the protobuf message carries its
// first piece where the frame goes, and the reply or chunk that carries the
// message (dataservice.go) carries the pieces after it, which the wire codec
// (wire.go) writes after the first as the one bytes field they are. A
// caller that is not the gRPC server gets the frames joined (joinPieced).

// encodedFrame is one encoded frame as the sink hands it over: its bytes,
// or its first piece (b) and the pieces that follow it (rest); lent is set
// when some of those reference a lent record's memory (LendRecord), which
// whoever takes the frame gives back once nothing reads the pieces.
type encodedFrame struct {
	b    []byte
	rest [][]byte
	lent *lentFrame
	// spare is what the lent record's buffers hold beyond their bytes
	// (the capacity a pooling allocator rounded them up to, which the
	// pieces keep alive): counted in held.
	spare int64
}

// lentFrame is the lent record whose buffers a frame's pieces reference:
// released once, when nothing reads the pieces any more (the frame written
// out by gRPC's transport, joined into a copy, or dropped), so that the
// source may put its memory back in a pool (source.RecordLender). Nil
// releases nothing.
//
// It is also the mem.BufferPool of the buffer the wire codec wraps the
// frame's last large piece in (wireWriter.frame): the transport frees each
// buffer of a message once it has copied it out, in order, and then
// Puts it back here, which releases the record.
type lentFrame struct {
	once sync.Once
	rec  arrow.RecordBatch
}

func (l *lentFrame) release() {
	if l != nil {
		l.once.Do(l.rec.Release)
	}
}

// spareOf is what rec's buffers hold beyond their lengths.
func spareOf(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil {
				n += int64(cap(b.Buf()) - b.Len())
			}
		}
	}
	return n
}

// Get is not used: a buffer's pool only takes it back.
func (l *lentFrame) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put releases the record: the buffer wrapping the frame's last large
// piece, and so every piece before it, has been written out.
func (l *lentFrame) Put(*[]byte) { l.release() }

// held is the budget the frame holds: the memory of its bytes, their
// spare capacity included, or of its pieces, their lengths (a piece after
// the first may be a lent part's buffer, a slice of a received record's
// memory, which that record's bytes count, or of a lent record, whose
// buffer shared with other frames each counts: see source.PartLender,
// source.RecordLender and arrowipc's AppendBatchBorrowing).
func (f encodedFrame) held() int64 {
	n := heldBytes(f.b) + f.spare
	for _, p := range f.rest {
		n += int64(len(p))
	}
	return n
}

// size is the frame's length in bytes.
func (f encodedFrame) size() int { return int(frameLen(f.b, f.rest)) }

// joined is the frame as one buffer (f.b itself when it has no pieces
// after it).
func (f encodedFrame) joined() []byte {
	if len(f.rest) == 0 {
		return f.b
	}
	return bytes.Join(append([][]byte{f.b}, f.rest...), nil)
}

// piecedFrames is one response's frames kept in pieces: by the first byte
// of a frame's first piece (the slice in DataResponse.Frames, whose memory
// is the frame's own), the pieces after it and the lent record they
// reference.
type piecedFrames map[*byte]piecedFrame

type piecedFrame struct {
	rest [][]byte
	lent *lentFrame
}

// rest returns the pieces after f when f is the first piece of one of the
// frames (nil otherwise).
func (p piecedFrames) rest(f []byte) [][]byte { return p.of(f).rest }

// of returns the pieces after f and their lent record (zero when f is not
// the first piece of one of the frames).
func (p piecedFrames) of(f []byte) piecedFrame {
	if len(p) == 0 || len(f) == 0 {
		return piecedFrame{}
	}
	return p[&f[0]]
}

// release releases the lent records of the frames, for frames that will
// not be written in pieces (joined, or dropped).
func (p piecedFrames) release() {
	for _, f := range p {
		f.lent.release()
	}
}

// joinPieced replaces in resp every frame of frames by the frame joined,
// for a response that no wire codec will write, releases their lent
// records, and returns the bytes it allocated (the copies, alive beside the
// pieces until the response is dropped), for the caller to count.
func joinPieced(resp *pluginv2.QueryDataResponse, frames piecedFrames) int64 {
	defer frames.release()
	var n int64
	for _, dr := range resp.Responses {
		if dr == nil {
			continue
		}
		for i, f := range dr.Frames {
			if rest := frames.rest(f); rest != nil {
				dr.Frames[i] = encodedFrame{b: f, rest: rest}.joined()
				n += heldBytes(dr.Frames[i])
			}
		}
	}
	return n
}
