package arrowipc

import (
	flatbuffers "github.com/google/flatbuffers/go"
)

// This file holds the flatbuffer tables of the Arrow format this package
// writes, one builder per table, as arrow-go's arrow/ipc/metadata.go has
// them (intToFB, fieldToFB, …) over its generated flatbuf package. The slot
// constants are the fields of each table in the order Schema.fbs,
// Message.fbs and File.fbs declare them (a union takes two slots: its
// _type, then its value), so that no slot is a bare number.
//
// A builder prepends its slots in a fixed order; the order decides the
// bytes, which the golden files in testdata/golden pin.

// Enums of Schema.fbs and Message.fbs, as their values are on the wire.
const (
	// union Type
	fbTypeInt           byte = 2
	fbTypeFloatingPoint byte = 3
	fbTypeBinary        byte = 4
	fbTypeUtf8          byte = 5
	fbTypeBool          byte = 6
	fbTypeTimestamp     byte = 10

	// enum Precision
	fbPrecisionSingle int16 = 1
	fbPrecisionDouble int16 = 2

	// enum TimeUnit
	fbTimeUnitNanosecond int16 = 3

	// union MessageHeader
	fbHeaderSchema      byte = 1
	fbHeaderRecordBatch byte = 3

	// enum MetadataVersion
	fbMetadataV5 int16 = 4

	// enum CompressionType
	fbCompressionLZ4Frame int8 = 0
	fbCompressionZstd     int8 = 1

	// enum BodyCompressionMethod
	fbBodyCompressionBuffer int8 = 0
)

// Schema.fbs: table KeyValue { key: string; value: string; }
const (
	keyValueKey = iota
	keyValueValue
	keyValueSlots
)

func keyValueToFB(b *flatbuffers.Builder, key, value flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartObject(keyValueSlots)
	b.PrependUOffsetTSlot(keyValueValue, value, 0)
	b.PrependUOffsetTSlot(keyValueKey, key, 0)
	return b.EndObject()
}

// Schema.fbs: table Int { bitWidth: int; is_signed: bool; }
const (
	intBitWidth = iota
	intIsSigned
	intSlots
)

func intToFB(b *flatbuffers.Builder, bitWidth int32, signed bool) flatbuffers.UOffsetT {
	b.StartObject(intSlots)
	b.PrependInt32Slot(intBitWidth, bitWidth, 0)
	b.PrependBoolSlot(intIsSigned, signed, false)
	return b.EndObject()
}

// Schema.fbs: table FloatingPoint { precision: Precision; }
const (
	floatingPointPrecision = iota
	floatingPointSlots
)

func floatingPointToFB(b *flatbuffers.Builder, precision int16) flatbuffers.UOffsetT {
	b.StartObject(floatingPointSlots)
	b.PrependInt16Slot(floatingPointPrecision, precision, 0)
	return b.EndObject()
}

// Schema.fbs: table Timestamp { unit: TimeUnit; timezone: string; }
const (
	timestampUnit = iota
	timestampTimezone
	timestampSlots
)

// timestampToFB writes a Timestamp; timezone 0 leaves it out.
func timestampToFB(b *flatbuffers.Builder, unit int16, timezone flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartObject(timestampSlots)
	if timezone != 0 {
		b.PrependUOffsetTSlot(timestampTimezone, timezone, 0)
	}
	b.PrependInt16Slot(timestampUnit, unit, 0)
	return b.EndObject()
}

// emptyTypeToFB writes one of the tables without fields: Schema.fbs's
// Bool, Utf8 and Binary.
func emptyTypeToFB(b *flatbuffers.Builder) flatbuffers.UOffsetT {
	b.StartObject(0)
	return b.EndObject()
}

// Schema.fbs: table Field { name: string; nullable: bool; type: Type;
// dictionary: DictionaryEncoding; children: [Field];
// custom_metadata: [KeyValue]; }
const (
	fieldName = iota
	fieldNullable
	fieldTypeType
	fieldType
	fieldDictionary
	fieldChildren
	fieldCustomMetadata
	fieldSlots
)

// fieldTable is what a Field table holds, as offsets of what is already
// written; meta 0 leaves custom_metadata out.
type fieldTable struct {
	name, typ, children, meta flatbuffers.UOffsetT
	typeType                  byte
	nullable                  bool
}

func fieldToFB(b *flatbuffers.Builder, f fieldTable) flatbuffers.UOffsetT {
	b.StartObject(fieldSlots)
	if f.meta != 0 {
		b.PrependUOffsetTSlot(fieldCustomMetadata, f.meta, 0)
	}
	b.PrependUOffsetTSlot(fieldChildren, f.children, 0)
	b.PrependUOffsetTSlot(fieldType, f.typ, 0)
	b.PrependUOffsetTSlot(fieldName, f.name, 0)
	b.PrependByteSlot(fieldTypeType, f.typeType, 0)
	b.PrependBoolSlot(fieldNullable, f.nullable, false)
	return b.EndObject()
}

// Schema.fbs: table Schema { endianness: Endianness = Little;
// fields: [Field]; custom_metadata: [KeyValue]; features: [Feature]; }
const (
	schemaEndianness = iota
	schemaFields
	schemaCustomMetadata
	schemaFeatures
	schemaSlots
)

// schemaToFB writes a Schema; meta 0 leaves custom_metadata out.
// Endianness is Little, the default, so it is not written.
func schemaToFB(b *flatbuffers.Builder, fields, meta flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartObject(schemaSlots)
	if meta != 0 {
		b.PrependUOffsetTSlot(schemaCustomMetadata, meta, 0)
	}
	b.PrependUOffsetTSlot(schemaFields, fields, 0)
	return b.EndObject()
}

// offsetsToFB writes a vector of the tables at offs.
func offsetsToFB(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(flatbuffers.SizeUOffsetT, len(offs), flatbuffers.SizeUOffsetT)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// Message.fbs: struct FieldNode { length: long; null_count: long; }
const fieldNodeSize = 16

type fieldNode struct{ length, nulls int64 }

func fieldNodesToFB(b *flatbuffers.Builder, nodes []fieldNode) flatbuffers.UOffsetT {
	b.StartVector(fieldNodeSize, len(nodes), 8)
	for i := len(nodes) - 1; i >= 0; i-- {
		b.Prep(8, fieldNodeSize)
		b.PrependInt64(nodes[i].nulls)
		b.PrependInt64(nodes[i].length)
	}
	return b.EndVector(len(nodes))
}

// Schema.fbs: struct Buffer { offset: long; length: long; }, and where its
// members lie in it.
const (
	bufferSize   = 16
	bufferOffset = 0
	bufferLength = 8
)

// buffer is where one body buffer lies in the body.
type buffer struct{ offset, length int64 }

func buffersToFB(b *flatbuffers.Builder, bufs []buffer) flatbuffers.UOffsetT {
	b.StartVector(bufferSize, len(bufs), 8)
	for i := len(bufs) - 1; i >= 0; i-- {
		b.Prep(8, bufferSize)
		b.PrependInt64(bufs[i].length)
		b.PrependInt64(bufs[i].offset)
	}
	return b.EndVector(len(bufs))
}

// Message.fbs: table BodyCompression { codec: CompressionType = LZ4_FRAME;
// method: BodyCompressionMethod = BUFFER; }
const (
	bodyCompressionCodec = iota
	bodyCompressionMethod
	bodyCompressionSlots
)

// bodyCompressionToFB writes a BodyCompression. The codec is written even
// when it is LZ4_FRAME, the default, so that a reader sees it stated.
func bodyCompressionToFB(b *flatbuffers.Builder, codec int8) flatbuffers.UOffsetT {
	b.StartObject(bodyCompressionSlots)
	b.PrependInt8Slot(bodyCompressionMethod, fbBodyCompressionBuffer, fbBodyCompressionBuffer)
	b.PrependInt8Slot(bodyCompressionCodec, codec, -1)
	return b.EndObject()
}

// Message.fbs: table RecordBatch { length: long; nodes: [FieldNode];
// buffers: [Buffer]; compression: BodyCompression;
// variadicBufferCounts: [long]; }
const (
	recordBatchLength = iota
	recordBatchNodes
	recordBatchBuffers
	recordBatchCompression
	recordBatchVariadicBufferCounts
	recordBatchSlots
)

// recordBatchToFB writes a RecordBatch; compression 0 leaves it out (the
// body is stored raw).
func recordBatchToFB(b *flatbuffers.Builder, rows int64, nodes, buffers, compression flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartObject(recordBatchSlots)
	b.PrependInt64Slot(recordBatchLength, rows, 0)
	b.PrependUOffsetTSlot(recordBatchNodes, nodes, 0)
	b.PrependUOffsetTSlot(recordBatchBuffers, buffers, 0)
	if compression != 0 {
		b.PrependUOffsetTSlot(recordBatchCompression, compression, 0)
	}
	return b.EndObject()
}

// Message.fbs: table Message { version: MetadataVersion;
// header: MessageHeader; bodyLength: long; custom_metadata: [KeyValue]; }
const (
	messageVersion = iota
	messageHeaderType
	messageHeader
	messageBodyLength
	messageCustomMetadata
	messageSlots
)

func messageToFB(b *flatbuffers.Builder, headerType byte, header flatbuffers.UOffsetT, bodyLen int64) flatbuffers.UOffsetT {
	b.StartObject(messageSlots)
	b.PrependInt64Slot(messageBodyLength, bodyLen, 0)
	b.PrependUOffsetTSlot(messageHeader, header, 0)
	b.PrependInt16Slot(messageVersion, fbMetadataV5, 0)
	b.PrependByteSlot(messageHeaderType, headerType, 0)
	return b.EndObject()
}

// File.fbs: struct Block { offset: long; metaDataLength: int; bodyLength:
// long; } (4 bytes of padding after metaDataLength), and where its members
// lie in it.
const (
	blockSize           = 24
	blockOffset         = 0
	blockMetaDataLength = 8
	blockBodyLength     = 16
)

type block struct {
	offset     int64
	metaLength int32
	bodyLength int64
}

func blocksToFB(b *flatbuffers.Builder, blocks []block) flatbuffers.UOffsetT {
	b.StartVector(blockSize, len(blocks), 8)
	for i := len(blocks) - 1; i >= 0; i-- {
		blk := blocks[i]
		b.Prep(8, blockSize)
		b.PrependInt64(blk.bodyLength)
		b.Pad(4)
		b.PrependInt32(blk.metaLength)
		b.PrependInt64(blk.offset)
	}
	return b.EndVector(len(blocks))
}

// File.fbs: table Footer { version: MetadataVersion; schema: Schema;
// dictionaries: [Block]; recordBatches: [Block];
// custom_metadata: [KeyValue]; }
const (
	footerVersion = iota
	footerSchema
	footerDictionaries
	footerRecordBatches
	footerCustomMetadata
	footerSlots
)

func footerToFB(b *flatbuffers.Builder, schema, dictionaries, recordBatches flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartObject(footerSlots)
	b.PrependUOffsetTSlot(footerRecordBatches, recordBatches, 0)
	b.PrependUOffsetTSlot(footerDictionaries, dictionaries, 0)
	b.PrependUOffsetTSlot(footerSchema, schema, 0)
	b.PrependInt16Slot(footerVersion, fbMetadataV5, 0)
	return b.EndObject()
}
