// Package format holds the facts of the Arrow IPC format that package
// arrowipc writes and its test helpers read back: the file magic, the enum
// values it uses, and the slot of every field of the flatbuffer tables
// (numbered in the order Schema.fbs, Message.fbs and File.fbs declare them;
// a union takes two slots, its _type then its value). One home, so that no
// slot is a bare number anywhere. It imports nothing.
package format

// Magic opens and closes an Arrow IPC file.
const Magic = "ARROW1"

// Enums of Schema.fbs and Message.fbs, as their values are on the wire.
const (
	// union Type
	TypeInt           byte = 2
	TypeFloatingPoint byte = 3
	TypeBinary        byte = 4
	TypeUtf8          byte = 5
	TypeBool          byte = 6
	TypeTimestamp     byte = 10

	// enum Precision
	PrecisionSingle int16 = 1
	PrecisionDouble int16 = 2

	// enum TimeUnit
	TimeUnitNanosecond int16 = 3

	// union MessageHeader
	HeaderSchema      byte = 1
	HeaderRecordBatch byte = 3

	// enum MetadataVersion
	MetadataV5 int16 = 4

	// enum CompressionType
	CompressionLZ4Frame int8 = 0
	CompressionZstd     int8 = 1

	// enum BodyCompressionMethod
	BodyCompressionBuffer int8 = 0
)

// Schema.fbs: table KeyValue { key: string; value: string; }
const (
	KeyValueKey = iota
	KeyValueValue
	KeyValueSlots
)

// Schema.fbs: table Int { bitWidth: int; is_signed: bool; }
const (
	IntBitWidth = iota
	IntIsSigned
	IntSlots
)

// Schema.fbs: table FloatingPoint { precision: Precision; }
const (
	FloatingPointPrecision = iota
	FloatingPointSlots
)

// Schema.fbs: table Timestamp { unit: TimeUnit; timezone: string; }
const (
	TimestampUnit = iota
	TimestampTimezone
	TimestampSlots
)

// Schema.fbs: table Field { name: string; nullable: bool; type: Type;
// dictionary: DictionaryEncoding; children: [Field];
// custom_metadata: [KeyValue]; }
const (
	FieldName = iota
	FieldNullable
	FieldTypeType
	FieldType
	FieldDictionary
	FieldChildren
	FieldCustomMetadata
	FieldSlots
)

// Schema.fbs: table Schema { endianness: Endianness = Little;
// fields: [Field]; custom_metadata: [KeyValue]; features: [Feature]; }
const (
	SchemaEndianness = iota
	SchemaFields
	SchemaCustomMetadata
	SchemaFeatures
	SchemaSlots
)

// Message.fbs: struct FieldNode { length: long; null_count: long; }
const FieldNodeSize = 16

// Schema.fbs: struct Buffer { offset: long; length: long; }, and where its
// members lie in it.
const (
	BufferSize   = 16
	BufferOffset = 0
	BufferLength = 8
)

// Message.fbs: table BodyCompression { codec: CompressionType = LZ4_FRAME;
// method: BodyCompressionMethod = BUFFER; }
const (
	BodyCompressionCodec = iota
	BodyCompressionMethod
	BodyCompressionSlots
)

// Message.fbs: table RecordBatch { length: long; nodes: [FieldNode];
// buffers: [Buffer]; compression: BodyCompression;
// variadicBufferCounts: [long]; }
const (
	RecordBatchLength = iota
	RecordBatchNodes
	RecordBatchBuffers
	RecordBatchCompression
	RecordBatchVariadicBufferCounts
	RecordBatchSlots
)

// Message.fbs: table Message { version: MetadataVersion;
// header: MessageHeader; bodyLength: long; custom_metadata: [KeyValue]; }
const (
	MessageVersion = iota
	MessageHeaderType
	MessageHeader
	MessageBodyLength
	MessageCustomMetadata
	MessageSlots
)

// File.fbs: struct Block { offset: long; metaDataLength: int; bodyLength:
// long; } (4 bytes of padding after metaDataLength), and where its members
// lie in it.
const (
	BlockSize           = 24
	BlockOffset         = 0
	BlockMetaDataLength = 8
	BlockBodyLength     = 16
)

// File.fbs: table Footer { version: MetadataVersion; schema: Schema;
// dictionaries: [Block]; recordBatches: [Block];
// custom_metadata: [KeyValue]; }
const (
	FooterVersion = iota
	FooterSchema
	FooterDictionaries
	FooterRecordBatches
	FooterCustomMetadata
	FooterSlots
)
