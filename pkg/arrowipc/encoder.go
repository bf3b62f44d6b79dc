package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/codec"
)

// KeyValue is one entry of schema or field custom metadata.
type KeyValue struct {
	Key, Value string
}

// Field describes one column of the schema.
type Field struct {
	Name     string
	Type     arrow.DataType
	Nullable bool
	Metadata []KeyValue // written in this order
}

// Column is one column of a record batch, in Arrow's physical layout with no
// offset: bit 0 of a bitmap is row 0 and offsets start at 0. The encoder
// reads the slices during WriteBatch and keeps no reference after it returns.
type Column struct {
	// NullCount is the number of null rows; 0 means Validity is ignored.
	NullCount int
	// Validity is the validity bitmap, at least ceil(rows/8) bytes when
	// NullCount > 0. Bits past the last row must be zero.
	Validity []byte
	// Offsets holds rows+1 little-endian int32 offsets into Values, the first
	// of them 0, for utf8 and binary columns.
	Offsets []byte
	// Values holds rows fixed-width values, the values bitmap of a bool
	// column (ceil(rows/8) bytes, bits past the last row zero), or the bytes
	// of a utf8/binary column.
	Values []byte
}

// Options configure an Encoder. They are checked once, by NewEncoder.
type Options struct {
	// Codec compresses body buffers; the zero Codec stores them raw.
	Codec codec.Codec
	// MinSavings is the fraction of a buffer's size that compression must
	// save for the buffer to be stored compressed; otherwise it is stored raw
	// (length prefix -1), which spares the reader a decompression. 0 keeps
	// every buffer that compression made smaller. Range 0 ≤ MinSavings < 1.
	MinSavings float64
}

// minCompressLen: buffers shorter than this are stored raw without trying;
// a zstd or lz4 frame's own header and trailer would eat any gain.
const minCompressLen = 64

const (
	alignment     = 8
	continuation  = 0xFFFFFFFF
	magic         = "ARROW1"
	schemaNumSlot = 4
)

var (
	// ErrState is returned when Begin, WriteBatch and Finish are called out
	// of order.
	ErrState = errors.New("arrowipc: calls out of order")
	// ErrBatch is wrapped by errors about a batch that does not match its
	// schema.
	ErrBatch = errors.New("arrowipc: batch does not match schema")
)

// bufRef is one body buffer of the batch being written: either a slice of
// the caller's memory stored raw, or a range of e.packed.
type bufRef struct {
	raw        []byte // stored raw when packed is false
	start, end int    // e.packed[start:end] when packed is true
	rawLen     int    // uncompressed length
	packed     bool
}

type fieldNode struct{ length, nulls int64 }

type block struct {
	offset     int64
	metaLength int32
	bodyLength int64
}

// Encoder appends Arrow IPC files to byte slices. It is not safe for
// concurrent use; keep one per goroutine (or pool them) and reuse it: its
// scratch memory is kept from one file to the next, so that encoding a frame
// of a size seen before allocates nothing.
//
// A file is written by Begin, one or more WriteBatch, then Finish. The first
// error sticks: later calls return it until the next Begin.
type Encoder struct {
	codec      codec.Codec
	minSavings float64

	b *flatbuffers.Builder

	// the file being written
	dst    []byte
	start  int // where the file starts in dst
	fields []Field
	meta   []KeyValue
	infos  []typeInfo
	blocks []block
	err    error
	state  uint8

	// per batch scratch
	nodes  []fieldNode
	bufs   []bufRef
	packed []byte
	kvs    []flatbuffers.UOffsetT
	offs   []flatbuffers.UOffsetT
	total  BodyStats

	// AppendRecords scratch
	recFields []Field
	recKVs    []KeyValue
	recCols   []Column
	scratch   [][]byte
}

const (
	stateIdle uint8 = iota
	stateOpen
)

// NewEncoder returns an Encoder configured by o.
func NewEncoder(o Options) (*Encoder, error) {
	if math.IsNaN(o.MinSavings) || o.MinSavings < 0 || o.MinSavings >= 1 {
		return nil, fmt.Errorf("arrowipc: MinSavings %v is not within [0, 1)", o.MinSavings)
	}
	return &Encoder{
		codec:      o.Codec,
		minSavings: o.MinSavings,
		b:          flatbuffers.NewBuilder(2048),
	}, nil
}

// Codec returns the codec the encoder compresses with.
func (e *Encoder) Codec() codec.Codec { return e.codec }

// Begin starts a file appended to dst: the magic and the schema message.
// fields and meta must stay unchanged until Finish returns, which writes the
// schema again into the footer. A field whose type Grafana cannot read makes
// Begin fail with an *UnsupportedTypeError.
func (e *Encoder) Begin(dst []byte, fields []Field, meta []KeyValue) error {
	if err := e.open(dst, fields); err != nil {
		return err
	}
	e.writeHeader(meta)
	return nil
}

// AppendFile appends a whole file of one record batch to dst and returns
// the extended slice (dst unextended on error). The batch's body is
// compressed before the schema is written, and meta, called in between
// with what compression did, returns the schema metadata: so a frame can
// carry its own encoding statistics. An error from meta aborts the file.
// Columns are as for WriteBatch.
func (e *Encoder) AppendFile(dst []byte, fields []Field, rows int, cols []Column, meta func(BodyStats) ([]KeyValue, error)) ([]byte, error) {
	if err := e.open(dst, fields); err != nil {
		return e.reset(), err
	}
	compressed, err := e.prepare(rows, cols)
	var kvs []KeyValue
	if err == nil {
		kvs, err = meta(e.total)
	}
	if err != nil {
		e.fail(err)
		return e.reset(), err
	}
	e.writeHeader(kvs)
	e.writeBatch(int64(rows), compressed)
	return e.Finish()
}

// open starts a file: it checks the field types and resets the state.
func (e *Encoder) open(dst []byte, fields []Field) error {
	e.dst, e.start, e.fields, e.meta = dst, len(dst), fields, nil
	e.blocks = e.blocks[:0]
	e.infos = e.infos[:0]
	e.total = BodyStats{}
	e.err = nil
	e.state = stateOpen
	for _, f := range fields {
		info, err := lookupType(f.Name, f.Type)
		if err != nil {
			return e.fail(err)
		}
		e.infos = append(e.infos, info)
	}
	return nil
}

// writeHeader writes the magic and the schema message.
func (e *Encoder) writeHeader(meta []KeyValue) {
	e.meta = meta
	e.dst = append(e.dst, magic...)
	e.dst = append(e.dst, 0, 0) // pad the magic to 8 bytes
	e.b.Reset()
	schema := e.writeSchema()
	e.writeMessage(fbHeaderSchema, schema, 0)
}

// Stats returns what compression did to the bodies of the file being
// written, or of the last file written, summed over its batches.
func (e *Encoder) Stats() BodyStats { return e.total }

func (e *Encoder) fail(err error) error {
	if e.err == nil {
		e.err = err
	}
	e.state = stateIdle
	return e.err
}

// pos is the current position relative to the start of the file.
func (e *Encoder) pos() int64 { return int64(len(e.dst) - e.start) }

// WriteBatch appends one record batch of rows rows. cols holds one Column
// per field of the schema, laid out as Column describes.
func (e *Encoder) WriteBatch(rows int, cols []Column) error {
	if e.state != stateOpen {
		if e.err != nil {
			return e.err
		}
		return ErrState
	}
	compressed, err := e.prepare(rows, cols)
	if err != nil {
		return e.fail(err)
	}
	e.writeBatch(int64(rows), compressed)
	return nil
}

// BodyStats says what compression did to record-batch bodies.
type BodyStats struct {
	Rows int64
	// RawBytes is the size of the body buffers before compression,
	// WireBytes as stored (with length prefixes), both without padding.
	RawBytes, WireBytes int64
	// Buffers counts the non-empty body buffers, Compressed those stored
	// compressed.
	Buffers, Compressed int
	// Elapsed is the time spent checking and compressing the buffers.
	Elapsed time.Duration
}

// prepare checks cols and lays out (compressing) the batch's buffers into
// e.nodes, e.bufs and e.packed. It reports whether any buffer was kept
// compressed.
func (e *Encoder) prepare(rows int, cols []Column) (bool, error) {
	start := time.Now()
	if len(cols) != len(e.fields) {
		return false, fmt.Errorf("%w: %d columns for %d fields", ErrBatch, len(cols), len(e.fields))
	}
	if rows < 0 {
		return false, fmt.Errorf("%w: negative row count %d", ErrBatch, rows)
	}
	e.nodes = e.nodes[:0]
	e.bufs = e.bufs[:0]
	e.packed = e.packed[:0]
	enc := e.codec.Encoder()
	defer enc.Close()
	compressed := false
	for i := range cols {
		c := &cols[i]
		info := e.infos[i]
		if err := checkColumn(e.fields[i].Name, info, rows, c); err != nil {
			return false, err
		}
		nulls := c.NullCount
		if nulls > 0 {
			compressed = e.addBuffer(enc, c.Validity[:bitmapLen(rows)], false) || compressed
		} else {
			e.bufs = append(e.bufs, bufRef{})
		}
		switch info.layout {
		case layoutFixed:
			compressed = e.addBuffer(enc, c.Values[:rows*info.width], true) || compressed
		case layoutBitmap:
			compressed = e.addBuffer(enc, c.Values[:bitmapLen(rows)], false) || compressed
		case layoutVar:
			compressed = e.addBuffer(enc, c.Offsets[:4*(rows+1)], false) || compressed
			end := int(binary.LittleEndian.Uint32(c.Offsets[4*rows:]))
			compressed = e.addBuffer(enc, c.Values[:end], false) || compressed
		}
		e.nodes = append(e.nodes, fieldNode{length: int64(rows), nulls: int64(nulls)})
	}
	t := &e.total
	t.Rows += int64(rows)
	for i := range e.bufs {
		r := &e.bufs[i]
		if r.rawLen == 0 {
			continue
		}
		t.Buffers++
		t.RawBytes += int64(r.rawLen)
		t.WireBytes += int64(r.stored(compressed))
		if r.packed {
			t.Compressed++
		}
	}
	t.Elapsed += time.Since(start)
	return compressed, nil
}

// checkColumn checks that c holds what the schema and row count promise, so
// that a wrong column is an error and never a panic or a corrupt frame.
func checkColumn(name string, info typeInfo, rows int, c *Column) error {
	if c.NullCount < 0 || c.NullCount > rows {
		return fmt.Errorf("%w: field %q: null count %d for %d rows", ErrBatch, name, c.NullCount, rows)
	}
	if c.NullCount > 0 && len(c.Validity) < bitmapLen(rows) {
		return fmt.Errorf("%w: field %q: validity bitmap of %d bytes for %d rows", ErrBatch, name, len(c.Validity), rows)
	}
	switch info.layout {
	case layoutFixed:
		if len(c.Values) < rows*info.width {
			return fmt.Errorf("%w: field %q: %d value bytes for %d rows of %d bytes", ErrBatch, name, len(c.Values), rows, info.width)
		}
	case layoutBitmap:
		if len(c.Values) < bitmapLen(rows) {
			return fmt.Errorf("%w: field %q: values bitmap of %d bytes for %d rows", ErrBatch, name, len(c.Values), rows)
		}
	case layoutVar:
		if len(c.Offsets) < 4*(rows+1) {
			return fmt.Errorf("%w: field %q: %d offset bytes for %d rows", ErrBatch, name, len(c.Offsets), rows)
		}
		prev := binary.LittleEndian.Uint32(c.Offsets)
		if prev != 0 {
			return fmt.Errorf("%w: field %q: offsets start at %d, not 0", ErrBatch, name, prev)
		}
		for r := 1; r <= rows; r++ {
			o := binary.LittleEndian.Uint32(c.Offsets[4*r:])
			if o < prev || int32(o) < 0 {
				return fmt.Errorf("%w: field %q: offsets decrease at row %d", ErrBatch, name, r)
			}
			prev = o
		}
		if int(prev) > len(c.Values) {
			return fmt.Errorf("%w: field %q: offsets reach %d past %d value bytes", ErrBatch, name, prev, len(c.Values))
		}
	}
	return nil
}

func bitmapLen(rows int) int { return (rows + 7) / 8 }

// probeLen is how much of a long fixed-width values buffer (probeMin bytes
// or more) is compressed first: numbers such as random-walk floats or
// irregular timestamps often do not compress, and a column of numbers is
// alike from end to end, so a prefix that does not save minSavings stores
// the whole buffer raw without compressing the rest. Below probeMin the
// probe costs more than it saves: compressing a short buffer is mostly the
// codec's fixed cost of building its tables, paid again for the whole
// buffer when the prefix does compress (see docs/benchmarks.md).
const (
	probeLen = 1 << 10
	probeMin = 8 << 10
)

// addBuffer compresses b into e.packed and keeps the result when it saves at
// least minSavings of b; otherwise it keeps a reference to b, stored raw.
// With probe set (fixed-width values), a long buffer's prefix decides first
// whether compressing the whole is worth trying. It reports whether b was
// kept compressed.
func (e *Encoder) addBuffer(enc *codec.Encoder, b []byte, probe bool) bool {
	if e.codec.Kind() == codec.None || len(b) < minCompressLen {
		e.bufs = append(e.bufs, bufRef{raw: b, rawLen: len(b)})
		return false
	}
	start := len(e.packed)
	if probe && len(b) >= probeMin {
		e.packed = enc.Encode(e.packed, b[:probeLen])
		n := len(e.packed) - start
		e.packed = e.packed[:start]
		if float64(n) > probeLen*(1-e.minSavings) {
			e.bufs = append(e.bufs, bufRef{raw: b, rawLen: len(b)})
			return false
		}
	}
	e.packed = enc.Encode(e.packed, b)
	n := len(e.packed) - start
	if float64(n) > float64(len(b))*(1-e.minSavings) {
		e.packed = e.packed[:start]
		e.bufs = append(e.bufs, bufRef{raw: b, rawLen: len(b)})
		return false
	}
	e.bufs = append(e.bufs, bufRef{start: start, end: len(e.packed), rawLen: len(b), packed: true})
	return true
}

func pad8(n int) int { return (n + alignment - 1) &^ (alignment - 1) }

// stored returns how many body bytes buffer r occupies before padding.
func (r *bufRef) stored(compressed bool) int {
	if r.rawLen == 0 {
		return 0
	}
	n := r.rawLen
	if r.packed {
		n = r.end - r.start
	}
	if compressed {
		n += 8 // the uncompressed-length prefix
	}
	return n
}

// writeBatch writes the RecordBatch message and its body from e.nodes and
// e.bufs.
func (e *Encoder) writeBatch(rows int64, compressed bool) {
	b := e.b
	b.Reset()

	var bodyLen int64
	for i := range e.bufs {
		bodyLen += int64(pad8(e.bufs[i].stored(compressed)))
	}

	var comp flatbuffers.UOffsetT
	if compressed {
		b.StartObject(2)
		b.PrependInt8Slot(1, 0, 0) // method BUFFER
		codecID := fbCompressionZstd
		if e.codec.Kind() == codec.LZ4 {
			codecID = fbCompressionLZ4Frame
		}
		b.PrependInt8Slot(0, codecID, -1)
		comp = b.EndObject()
	}

	// buffers vector: struct Buffer {offset: long; length: long}
	b.StartVector(16, len(e.bufs), 8)
	off := bodyLen
	for i := len(e.bufs) - 1; i >= 0; i-- {
		n := e.bufs[i].stored(compressed)
		off -= int64(pad8(n))
		b.Prep(8, 16)
		b.PrependInt64(int64(n))
		b.PrependInt64(off)
	}
	bufsVec := b.EndVector(len(e.bufs))

	// nodes vector: struct FieldNode {length: long; null_count: long}
	b.StartVector(16, len(e.nodes), 8)
	for i := len(e.nodes) - 1; i >= 0; i-- {
		b.Prep(8, 16)
		b.PrependInt64(e.nodes[i].nulls)
		b.PrependInt64(e.nodes[i].length)
	}
	nodesVec := b.EndVector(len(e.nodes))

	b.StartObject(5)
	b.PrependInt64Slot(0, rows, 0)
	b.PrependUOffsetTSlot(1, nodesVec, 0)
	b.PrependUOffsetTSlot(2, bufsVec, 0)
	if compressed {
		b.PrependUOffsetTSlot(3, comp, 0)
	}
	rb := b.EndObject()

	blk := block{offset: e.pos(), bodyLength: bodyLen}
	blk.metaLength = e.writeMessage(fbHeaderRecordBatch, rb, bodyLen)

	// the body, in one pass over the buffers
	need := len(e.dst) + int(bodyLen)
	if cap(e.dst) < need {
		grown := make([]byte, len(e.dst), need+need/4)
		copy(grown, e.dst)
		e.dst = grown
	}
	for i := range e.bufs {
		r := &e.bufs[i]
		if r.rawLen == 0 {
			continue
		}
		n := r.stored(compressed)
		if compressed {
			prefix := int64(-1)
			if r.packed {
				prefix = int64(r.rawLen)
			}
			e.dst = binary.LittleEndian.AppendUint64(e.dst, uint64(prefix))
		}
		if r.packed {
			e.dst = append(e.dst, e.packed[r.start:r.end]...)
		} else {
			e.dst = append(e.dst, r.raw...)
		}
		e.dst = appendZeros(e.dst, pad8(n)-n)
		r.raw = nil // keep no reference to caller memory
	}
	e.blocks = append(e.blocks, blk)
}

var zeros [alignment]byte

func appendZeros(dst []byte, n int) []byte { return append(dst, zeros[:n]...) }

// writeMessage finishes a Message table around header in e.b and appends it
// framed as the IPC format wants: continuation marker, length, flatbuffer,
// padding to 8 bytes. It returns the framed length.
func (e *Encoder) writeMessage(headerType byte, header flatbuffers.UOffsetT, bodyLen int64) int32 {
	b := e.b
	b.StartObject(5)
	b.PrependInt64Slot(3, bodyLen, 0)
	b.PrependUOffsetTSlot(2, header, 0)
	b.PrependInt16Slot(0, fbMetadataV5, 0)
	b.PrependByteSlot(1, headerType, 0)
	b.Finish(b.EndObject())
	fb := b.FinishedBytes()
	framed := pad8(8 + len(fb))
	e.dst = binary.LittleEndian.AppendUint32(e.dst, continuation)
	e.dst = binary.LittleEndian.AppendUint32(e.dst, uint32(framed-8))
	e.dst = append(e.dst, fb...)
	e.dst = appendZeros(e.dst, framed-8-len(fb))
	return int32(framed)
}

// writeSchema writes the Schema table into e.b and returns its offset.
func (e *Encoder) writeSchema() flatbuffers.UOffsetT {
	b := e.b
	offs := e.offs[:0]
	for i := range e.fields {
		offs = append(offs, e.writeField(&e.fields[i], e.infos[i]))
	}
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	fieldsVec := b.EndVector(len(offs))
	e.offs = offs
	meta := e.writeKeyValues(e.meta)

	b.StartObject(schemaNumSlot)
	if meta != 0 {
		b.PrependUOffsetTSlot(2, meta, 0)
	}
	b.PrependUOffsetTSlot(1, fieldsVec, 0)
	// endianness (slot 0): Little is the default, 0, so it is not written.
	return b.EndObject()
}

func (e *Encoder) writeField(f *Field, info typeInfo) flatbuffers.UOffsetT {
	b := e.b
	name := b.CreateString(f.Name)
	typ := e.writeType(f.Type, info)
	meta := e.writeKeyValues(f.Metadata)
	b.StartVector(4, 0, 4)
	children := b.EndVector(0)

	b.StartObject(7)
	if meta != 0 {
		b.PrependUOffsetTSlot(6, meta, 0)
	}
	b.PrependUOffsetTSlot(5, children, 0)
	b.PrependUOffsetTSlot(3, typ, 0)
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependByteSlot(2, info.fbType, 0)
	b.PrependBoolSlot(1, f.Nullable, false)
	return b.EndObject()
}

func (e *Encoder) writeType(t arrow.DataType, info typeInfo) flatbuffers.UOffsetT {
	b := e.b
	switch info.fbType {
	case fbTypeInt:
		b.StartObject(2)
		b.PrependInt32Slot(0, info.bitWidth, 0)
		b.PrependBoolSlot(1, info.signed, false)
		return b.EndObject()
	case fbTypeFloatingPoint:
		b.StartObject(1)
		b.PrependInt16Slot(0, info.prec, 0)
		return b.EndObject()
	case fbTypeTimestamp:
		var tz flatbuffers.UOffsetT
		if zone := t.(*arrow.TimestampType).TimeZone; zone != "" {
			tz = b.CreateString(zone)
		}
		b.StartObject(2)
		if tz != 0 {
			b.PrependUOffsetTSlot(1, tz, 0)
		}
		b.PrependInt16Slot(0, fbTimeUnitNanosecond, 0)
		return b.EndObject()
	}
	// Bool, Utf8 and Binary are empty tables.
	b.StartObject(0)
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
		b.StartObject(2)
		b.PrependUOffsetTSlot(1, v, 0)
		b.PrependUOffsetTSlot(0, k, 0)
		e.kvs = append(e.kvs, b.EndObject())
	}
	b.StartVector(4, len(kv), 4)
	for i := len(e.kvs) - 1; i >= base; i-- {
		b.PrependUOffsetT(e.kvs[i])
	}
	e.kvs = e.kvs[:base]
	return b.EndVector(len(kv))
}

// Finish writes the footer and returns dst
// extended by the whole file. After an error the returned slice is dst as
// it was passed to Begin.
func (e *Encoder) Finish() ([]byte, error) {
	if e.state != stateOpen {
		dst := e.reset()
		if e.err != nil {
			return dst, e.err
		}
		return dst, ErrState
	}
	// No end-of-stream marker: it is optional in the stream that a file
	// embeds, and file readers find the batches through the footer. Eight
	// bytes per frame add up over thousands of series.
	b := e.b
	b.Reset()
	schema := e.writeSchema()
	b.StartVector(24, len(e.blocks), 8)
	for i := len(e.blocks) - 1; i >= 0; i-- {
		blk := e.blocks[i]
		b.Prep(8, 24)
		b.PrependInt64(blk.bodyLength)
		b.Pad(4)
		b.PrependInt32(blk.metaLength)
		b.PrependInt64(blk.offset)
	}
	batches := b.EndVector(len(e.blocks))
	b.StartVector(24, 0, 8)
	dicts := b.EndVector(0)
	b.StartObject(5)
	b.PrependUOffsetTSlot(3, batches, 0)
	b.PrependUOffsetTSlot(2, dicts, 0)
	b.PrependUOffsetTSlot(1, schema, 0)
	b.PrependInt16Slot(0, fbMetadataV5, 0)
	b.Finish(b.EndObject())
	fb := b.FinishedBytes()
	e.dst = append(e.dst, fb...)
	e.dst = binary.LittleEndian.AppendUint32(e.dst, uint32(len(fb)))
	e.dst = append(e.dst, magic...)

	out := e.dst
	e.dst = nil
	e.fields, e.meta = nil, nil
	e.state = stateIdle
	return out, nil
}

// reset drops the file being written and returns dst as passed to Begin.
func (e *Encoder) reset() []byte {
	var dst []byte
	if e.dst != nil {
		dst = e.dst[:e.start]
	}
	e.dst = nil
	e.fields, e.meta = nil, nil
	for i := range e.bufs {
		e.bufs[i].raw = nil
	}
	e.state = stateIdle
	return dst
}
