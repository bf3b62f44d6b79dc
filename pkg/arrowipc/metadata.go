package arrowipc

import (
	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// This file holds every flatbuffer this package writes: a file's three
// messages (the schema message, a RecordBatch message, the footer), each
// built by one method the layout calls (file.go, multi.go), and the
// schema's fields, types and metadata, each table written where it is
// needed. The slot of every field and the enum values are in package format
// (internal/format), shared with the reader in arrowipctest, so that no
// slot is a bare number.
//
// A table's slots are prepended in a fixed order; the order decides the
// bytes, which the golden files in testdata/golden pin.

// buildHeader builds the schema message of fields (whose types infos
// describes) with custom metadata meta in e.b, as e.hdr.
func (e *Encoder) buildHeader(fields []Field, infos []typeInfo, meta []KeyValue) {
	e.b.Reset()
	schema := e.writeSchema(fields, infos, meta)
	n := int(e.b.Offset())
	e.hdr = header{msg: finishMessage(e.b, format.HeaderSchema, schema, 0), schema: schema, schemaLen: n}
}

// buildFooter finishes the Footer table (the schema of e.hdr, and blocks)
// in e.fb and returns its bytes, valid until e.fb is next reset.
//
// The footer's schema is the header's, copied rather than written again:
// a flatbuffer is built from its end, so the Schema subtree written first
// into a reset builder is the last schemaLen bytes of the buffer, with
// offsets relative to its own bytes only (uoffsets forward to what it
// references, soffsets to vtables it wrote itself), and with its
// alignment counted from the buffer's end. The footer leaves those
// schemaLen bytes at its end and the schema is copied there: the very bytes
// writing it again would give, the one difference in the builder being
// that the Footer table's vtable is not compared with the schema's for
// sharing, and none could be shared (a Footer's vtable has its 4 slots set,
// a Schema's, Field's, KeyValue's or type's never exactly 4: Field has 6 or
// 7, the others at most 3). The golden files pin the bytes.
func (e *Encoder) buildFooter(blocks []block) []byte {
	b := e.fb
	b.Reset()
	n := e.hdr.schemaLen
	b.Prep(1, n) // room for the schema, without alignment
	for ; n >= 8; n -= 8 {
		b.PlaceUint64(0)
	}
	for ; n > 0; n-- {
		b.PlaceByte(0)
	}
	batches := blocksToFB(b, blocks)
	dicts := blocksToFB(b, nil)
	b.Finish(footerToFB(b, e.hdr.schema, dicts, batches))
	fb := b.FinishedBytes()
	copy(fb[len(fb)-e.hdr.schemaLen:], e.hdr.msg[len(e.hdr.msg)-e.hdr.schemaLen:])
	return fb
}

// recordBatchMessage builds the RecordBatch message of the prepared batch
// in e.rb and returns its bytes, valid until e.rb is next reset: row count,
// field nodes, the body layout and, when a buffer is stored compressed, the
// codec.
func (e *Encoder) recordBatchMessage() []byte {
	b, p := e.rb, &e.batch
	b.Reset()
	var comp flatbuffers.UOffsetT
	if p.compressed {
		// The codec is written even when it is LZ4_FRAME, the default, so
		// that a reader sees it stated.
		b.StartObject(format.BodyCompressionSlots)
		b.PrependInt8Slot(format.BodyCompressionMethod, format.BodyCompressionBuffer, format.BodyCompressionBuffer)
		b.PrependInt8Slot(format.BodyCompressionCodec, compressionTypes[p.kind], -1)
		comp = b.EndObject()
	}
	bufs := buffersToFB(b, p)
	nodes := fieldNodesToFB(b, p.rows, p.nulls)
	b.StartObject(format.RecordBatchSlots)
	b.PrependInt64Slot(format.RecordBatchLength, p.rows, 0)
	b.PrependUOffsetTSlot(format.RecordBatchNodes, nodes, 0)
	b.PrependUOffsetTSlot(format.RecordBatchBuffers, bufs, 0)
	if comp != 0 {
		b.PrependUOffsetTSlot(format.RecordBatchCompression, comp, 0)
	}
	return finishMessage(b, format.HeaderRecordBatch, b.EndObject(), p.length)
}

// finishMessage finishes a Message table around header in b and returns
// its bytes, valid until b is next reset.
func finishMessage(b *flatbuffers.Builder, headerType byte, header flatbuffers.UOffsetT, bodyLen int64) []byte {
	b.StartObject(format.MessageSlots)
	b.PrependInt64Slot(format.MessageBodyLength, bodyLen, 0)
	b.PrependUOffsetTSlot(format.MessageHeader, header, 0)
	b.PrependInt16Slot(format.MessageVersion, format.MetadataV5, 0)
	b.PrependByteSlot(format.MessageHeaderType, headerType, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// writeSchema writes the Schema table of fields (whose types infos
// describes) with custom metadata meta into e.b and returns its offset.
func (e *Encoder) writeSchema(fields []Field, infos []typeInfo, meta []KeyValue) flatbuffers.UOffsetT {
	b := e.b
	offs := e.offs[:0]
	for i := range fields {
		offs = append(offs, e.writeField(&fields[i], infos[i]))
	}
	fieldsVec := offsetsToFB(b, offs)
	e.offs = offs
	kvs := e.writeKeyValues(meta)
	// Endianness is Little, the default, so it is not written.
	b.StartObject(format.SchemaSlots)
	if kvs != 0 {
		b.PrependUOffsetTSlot(format.SchemaCustomMetadata, kvs, 0)
	}
	b.PrependUOffsetTSlot(format.SchemaFields, fieldsVec, 0)
	return b.EndObject()
}

func (e *Encoder) writeField(f *Field, info typeInfo) flatbuffers.UOffsetT {
	b := e.b
	name := b.CreateString(f.Name)
	typ := e.writeType(f.Type, info)
	meta := e.writeKeyValues(f.Metadata)
	children := offsetsToFB(b, nil)
	b.StartObject(format.FieldSlots)
	if meta != 0 {
		b.PrependUOffsetTSlot(format.FieldCustomMetadata, meta, 0)
	}
	b.PrependUOffsetTSlot(format.FieldChildren, children, 0)
	b.PrependUOffsetTSlot(format.FieldType, typ, 0)
	b.PrependUOffsetTSlot(format.FieldName, name, 0)
	b.PrependByteSlot(format.FieldTypeType, info.fbType, 0)
	b.PrependBoolSlot(format.FieldNullable, f.Nullable, false)
	return b.EndObject()
}

// writeType writes the type table of a field: Int, FloatingPoint,
// Timestamp, or the empty Bool, Utf8 and Binary.
func (e *Encoder) writeType(t arrow.DataType, info typeInfo) flatbuffers.UOffsetT {
	b := e.b
	switch info.fbType {
	case format.TypeInt:
		b.StartObject(format.IntSlots)
		b.PrependInt32Slot(format.IntBitWidth, int32(8*info.width), 0)
		b.PrependBoolSlot(format.IntIsSigned, info.signed, false)
	case format.TypeFloatingPoint:
		b.StartObject(format.FloatingPointSlots)
		b.PrependInt16Slot(format.FloatingPointPrecision, info.prec, 0)
	case format.TypeTimestamp:
		var tz flatbuffers.UOffsetT
		if zone := t.(*arrow.TimestampType).TimeZone; zone != "" {
			tz = b.CreateString(zone)
		}
		b.StartObject(format.TimestampSlots)
		if tz != 0 {
			b.PrependUOffsetTSlot(format.TimestampTimezone, tz, 0)
		}
		b.PrependInt16Slot(format.TimestampUnit, format.TimeUnitNanosecond, 0)
	default:
		b.StartObject(0)
	}
	return b.EndObject()
}

// writeKeyValues writes a vector of KeyValue tables, or nothing (0) for none.
func (e *Encoder) writeKeyValues(kv []KeyValue) flatbuffers.UOffsetT {
	if len(kv) == 0 {
		return 0
	}
	b := e.b
	base := len(e.kvs)
	for _, p := range kv {
		k := b.CreateString(p.Key)
		v := b.CreateString(p.Value)
		b.StartObject(format.KeyValueSlots)
		b.PrependUOffsetTSlot(format.KeyValueValue, v, 0)
		b.PrependUOffsetTSlot(format.KeyValueKey, k, 0)
		e.kvs = append(e.kvs, b.EndObject())
	}
	vec := offsetsToFB(b, e.kvs[base:])
	e.kvs = e.kvs[:base]
	return vec
}

// offsetsToFB writes a vector of the tables at offs.
func offsetsToFB(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(flatbuffers.SizeUOffsetT, len(offs), flatbuffers.SizeUOffsetT)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// fieldNodesToFB writes the FieldNode vector: rows, and each field's nulls.
func fieldNodesToFB(b *flatbuffers.Builder, rows int64, nulls []int64) flatbuffers.UOffsetT {
	b.StartVector(format.FieldNodeSize, len(nulls), 8)
	for i := len(nulls) - 1; i >= 0; i-- {
		b.Prep(8, format.FieldNodeSize)
		b.PrependInt64(nulls[i])
		b.PrependInt64(rows)
	}
	return b.EndVector(len(nulls))
}

// buffersToFB writes where each buffer of p lies in its body: the buffers
// back to back, each stored (bufRef.stored) and padded to 8 bytes.
func buffersToFB(b *flatbuffers.Builder, p *batch) flatbuffers.UOffsetT {
	b.StartVector(format.BufferSize, len(p.refs), 8)
	off := p.length
	for i := len(p.refs) - 1; i >= 0; i-- {
		n := p.refs[i].stored(p.compressed)
		off -= int64(pad8(n))
		b.Prep(8, format.BufferSize)
		b.PrependInt64(int64(n))
		b.PrependInt64(off)
	}
	return b.EndVector(len(p.refs))
}

type block struct {
	offset     int64
	metaLength int32
	bodyLength int64
}

func blocksToFB(b *flatbuffers.Builder, blocks []block) flatbuffers.UOffsetT {
	b.StartVector(format.BlockSize, len(blocks), 8)
	for i := len(blocks) - 1; i >= 0; i-- {
		blk := blocks[i]
		b.Prep(8, format.BlockSize)
		b.PrependInt64(blk.bodyLength)
		b.Pad(4)
		b.PrependInt32(blk.metaLength)
		b.PrependInt64(blk.offset)
	}
	return b.EndVector(len(blocks))
}

func footerToFB(b *flatbuffers.Builder, schema, dictionaries, recordBatches flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartObject(format.FooterSlots)
	b.PrependUOffsetTSlot(format.FooterRecordBatches, recordBatches, 0)
	b.PrependUOffsetTSlot(format.FooterDictionaries, dictionaries, 0)
	b.PrependUOffsetTSlot(format.FooterSchema, schema, 0)
	b.PrependInt16Slot(format.FooterVersion, format.MetadataV5, 0)
	return b.EndObject()
}
