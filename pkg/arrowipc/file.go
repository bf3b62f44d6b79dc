package arrowipc

import (
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// This file is phase two: the prepared batch written as a file. Every
// flatbuffer of the file (schema message, RecordBatch message, footer) is
// built in encoder scratch first (metadata.go), so that the file's size is
// known before a byte of it is written: the file is then put together from
// its pieces (joiner) into a buffer of exactly that size, and each body
// byte is copied once, from the caller's (or the compressed) memory into
// the file; or it is handed over in pieces, the caller's larger buffers
// referenced (AppendFilePieces).

const (
	alignment    = 8
	continuation = 0xFFFFFFFF
)

// header is a file's schema message as buildHeader leaves it in e.b: msg
// is the Message flatbuffer, whose last schemaLen bytes are the Schema
// table and everything it references (names, types, metadata and their
// vtables), schema the Schema table's offset from the flatbuffer's end.
type header struct {
	msg       []byte
	schema    flatbuffers.UOffsetT
	schemaLen int
}

// size is the header's size in the file: the magic padded to 8 bytes and
// the framed schema message.
func (h *header) size() int { return len(format.Magic) + 2 + pad8(8+len(h.msg)) }

// addTo adds the header to j.
func (h *header) addTo(j *joiner) {
	j.scratch = append(append(j.scratch, format.Magic...), 0, 0)
	j.framed(h.msg)
}

// assembleFile lays the whole file of the prepared batch out in e.join,
// for the caller to join or split (see addBatch for borrow); the batch is
// then no longer prepared.
func (e *Encoder) assembleFile(meta []KeyValue, borrow bool) *joiner {
	e.buildHeader(e.batch.fields, e.batch.infos, meta)
	j := &e.join
	j.begin()
	e.hdr.addTo(j)
	blk, _ := e.addBatch(j, int64(e.hdr.size()), borrow)
	addFooter(j, e.buildFooter([]block{blk}))
	e.batch.drop()
	return j
}

// addBatch adds the prepared batch to j, its RecordBatch message framed and
// then its body, and returns its block, the batch lying at offset in the
// file. The body is laid out as buffersToFB says: each buffer (after its
// uncompressed length, or -1 for one stored raw, when the batch is
// compressed) padded to 8 bytes. The batch drops its references to the
// caller's memory (j holds them until it joins) and its compressed buffers
// stay referenced until then: j must join (or split) before the encoder
// prepares again. With borrow set, the caller's buffers of at least
// MinBorrow bytes are borrowed (see joiner.split) when the batch stores
// none compressed, and reports whether it borrowed any: a borrowed buffer
// keeps the memory it lies in alive, a received message's whole body, the
// raw bytes of its compressed buffers included, which would then be held
// twice (raw and compressed).
func (e *Encoder) addBatch(j *joiner, offset int64, borrow bool) (blk block, borrowed bool) {
	p := &e.batch
	blk = block{offset: offset, metaLength: j.framed(e.recordBatchMessage()), bodyLength: p.length}
	borrow = borrow && !p.compressed
	for i := range p.refs {
		r := &p.refs[i]
		if r.rawLen == 0 {
			continue
		}
		if p.compressed {
			prefix := int64(-1)
			if r.packed {
				prefix = int64(r.rawLen)
			}
			j.scratch = binary.LittleEndian.AppendUint64(j.scratch, uint64(prefix))
		}
		switch {
		case r.packed:
			j.ref(p.packed[r.start:r.end])
		case borrow && len(r.raw) >= MinBorrow && !e.rec.holds(r.raw):
			j.borrow(r.raw[:len(r.raw):len(r.raw)]) // nothing appends past it
			borrowed = true
		default:
			j.ref(r.raw)
		}
		n := r.stored(p.compressed)
		j.pad(pad8(n) - n)
		r.raw = nil
	}
	return blk, borrowed
}

// MinBorrow is the smallest buffer a File that borrows references rather
// than copies: below it, a piece of its own costs the writer more than the
// copy. The plugin's wire codec relies on gRPC counting the references of
// every borrowed piece, which it does for buffers of 1 KiB and more: that
// order is asserted where the codec is (TestLentPiecesArePooledByGRPC).
const MinBorrow = 4 << 10

// addFooter adds the footer flatbuffer fb (referenced), its length and
// the closing magic to j. No end-of-stream marker precedes the footer: the
// marker is optional in the stream a file embeds, and file readers find
// the batches through the footer; eight bytes per frame add up over
// thousands of series.
func addFooter(j *joiner, fb []byte) {
	j.ref(fb)
	j.scratch = binary.LittleEndian.AppendUint32(j.scratch, uint32(len(fb)))
	j.scratch = append(j.scratch, format.Magic...)
}

func pad8(n int) int { return (n + alignment - 1) &^ (alignment - 1) }

var zeros [alignment]byte
