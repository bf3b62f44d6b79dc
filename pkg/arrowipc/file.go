package arrowipc

import (
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// This file is phase two: the prepared batch written as a file, appended
// to the caller's buffer in one contiguous run.

const (
	alignment    = 8
	continuation = 0xFFFFFFFF
)

// appendFile appends the whole file of the prepared batch to dst.
func (e *Encoder) appendFile(dst []byte, meta []KeyValue) []byte {
	start := len(dst)
	fields, infos := e.batch.fields, e.batch.infos
	dst = e.appendHeader(dst, fields, infos, meta)
	var blocks [1]block
	dst, blocks[0] = e.appendBatch(dst, start)
	return e.appendFooter(dst, fields, infos, meta, blocks[:])
}

// appendHeader appends the magic, padded to 8 bytes, and the schema message
// of fields (whose types infos describes) with custom metadata meta.
func (e *Encoder) appendHeader(dst []byte, fields []Field, infos []typeInfo, meta []KeyValue) []byte {
	dst = append(dst, format.Magic...)
	dst = append(dst, 0, 0)
	e.b.Reset()
	schema := e.writeSchema(fields, infos, meta)
	dst, _ = e.appendMessage(dst, format.HeaderSchema, schema, 0)
	return dst
}

// appendBatch appends the prepared batch, its RecordBatch message then its
// body, and returns the batch's footer block; start is where the file
// starts in dst.
func (e *Encoder) appendBatch(dst []byte, start int) ([]byte, block) {
	blk := block{offset: int64(len(dst) - start), bodyLength: e.batch.length}
	rb := e.writeRecordBatch()
	dst, blk.metaLength = e.appendMessage(dst, format.HeaderRecordBatch, rb, e.batch.length)
	return e.appendBody(dst), blk
}

// writeRecordBatch writes the RecordBatch table of the prepared batch into
// e.b: row count, field nodes, the body layout and, when a buffer is
// stored compressed, the codec.
func (e *Encoder) writeRecordBatch() flatbuffers.UOffsetT {
	b, p := e.b, &e.batch
	b.Reset()
	var comp flatbuffers.UOffsetT
	if p.compressed {
		comp = bodyCompressionToFB(b, compressionTypes[p.kind])
	}
	bufs := buffersToFB(b, p.layout)
	nodes := fieldNodesToFB(b, p.nodes)
	return recordBatchToFB(b, p.rows, nodes, bufs, comp)
}

// appendBody appends the prepared batch's body as writeRecordBatch laid it
// out: each buffer (after its uncompressed length, or -1 for one stored
// raw, when the batch is compressed) padded to 8 bytes. It drops the
// batch's references to the caller's memory as it goes.
func (e *Encoder) appendBody(dst []byte) []byte {
	p := &e.batch
	need := len(dst) + int(p.length)
	if cap(dst) < need {
		grown := make([]byte, len(dst), need+need/4)
		copy(grown, dst)
		dst = grown
	}
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
			dst = binary.LittleEndian.AppendUint64(dst, uint64(prefix))
		}
		if r.packed {
			dst = append(dst, p.packed[r.start:r.end]...)
		} else {
			dst = append(dst, r.raw...)
		}
		n := int(p.layout[i].length)
		dst = appendZeros(dst, pad8(n)-n)
		r.raw = nil
	}
	return dst
}

// appendFooter appends the footer (the schema again, and the blocks of the
// batches) with its length and the closing magic. No end-of-stream marker
// precedes it: the marker is optional in the stream a file embeds, and file
// readers find the batches through the footer; eight bytes per frame add up
// over thousands of series.
func (e *Encoder) appendFooter(dst []byte, fields []Field, infos []typeInfo, meta []KeyValue, blocks []block) []byte {
	fb := e.writeFooter(fields, infos, meta, blocks)
	return appendFooterBytes(dst, fb)
}

// writeFooter finishes the Footer table (the schema of fields with custom
// metadata meta, and blocks) in e.b and returns its bytes, valid until e.b
// is next reset.
func (e *Encoder) writeFooter(fields []Field, infos []typeInfo, meta []KeyValue, blocks []block) []byte {
	b := e.b
	b.Reset()
	schema := e.writeSchema(fields, infos, meta)
	batches := blocksToFB(b, blocks)
	dicts := blocksToFB(b, nil)
	b.Finish(footerToFB(b, schema, dicts, batches))
	return b.FinishedBytes()
}

// footerTail is what follows the footer's flatbuffer: its length and the
// closing magic.
const footerTail = 4 + len(format.Magic)

// appendFooterBytes appends the footer flatbuffer fb, its length and the
// closing magic.
func appendFooterBytes(dst, fb []byte) []byte {
	dst = append(dst, fb...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(fb)))
	return append(dst, format.Magic...)
}

// appendMessage finishes a Message table around header in e.b and appends
// it framed as the IPC format wants: continuation marker, length,
// flatbuffer, padding to 8 bytes. It returns the framed length too.
func (e *Encoder) appendMessage(dst []byte, headerType byte, header flatbuffers.UOffsetT, bodyLen int64) ([]byte, int32) {
	return appendFramed(dst, e.finishMessage(headerType, header, bodyLen))
}

// finishMessage finishes a Message table around header in e.b and returns
// its bytes, valid until e.b is next reset.
func (e *Encoder) finishMessage(headerType byte, header flatbuffers.UOffsetT, bodyLen int64) []byte {
	b := e.b
	b.Finish(messageToFB(b, headerType, header, bodyLen))
	return b.FinishedBytes()
}

// appendFramed appends the message flatbuffer fb framed: continuation
// marker, length, fb, padding to 8 bytes; and returns the framed length.
func appendFramed(dst, fb []byte) ([]byte, int32) {
	framed := pad8(8 + len(fb))
	dst = binary.LittleEndian.AppendUint32(dst, continuation)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(framed-8))
	dst = append(dst, fb...)
	return appendZeros(dst, framed-8-len(fb)), int32(framed)
}

func pad8(n int) int { return (n + alignment - 1) &^ (alignment - 1) }

var zeros [alignment]byte

func appendZeros(dst []byte, n int) []byte { return append(dst, zeros[:n]...) }
