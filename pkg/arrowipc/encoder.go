package arrowipc

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
	"github.com/quiverdata/quiver/pkg/codec"
)

// Options configure an Encoder. They are checked once, by NewEncoder.
type Options struct {
	// Codec compresses body buffers; the zero Codec stores them raw.
	Codec codec.Codec
	// MinSavings is the fraction of a buffer's size that compression must
	// save for the buffer to be stored compressed; otherwise it is stored raw
	// (length prefix -1), which spares the reader a decompression. 0 keeps
	// every buffer that compression made smaller. Range 0 ≤ MinSavings < 1.
	MinSavings float64
	// Preference prices a wire byte for a Codec of kind codec.Auto, which
	// chooses none, lz4 or zstd per batch (see codec.Auto); the zero
	// Preference is the default, "cpu". Other codecs ignore it.
	Preference codec.Preference
	// Decoder is the generation of Grafana's decoder a Codec of kind
	// codec.Auto prices decoding by; nil is codec.Decoders[0], the oldest
	// and most expensive. SetDecoder changes it per frame.
	Decoder *codec.Decoder
	// AlwaysTry compresses every buffer long enough to pay, whatever its
	// slot's history says: for measurements that compare with the skip.
	AlwaysTry bool
}

var (
	// ErrState is returned by AppendFile, AppendFilePieces and AppendBatch
	// when no batch is prepared: Prepare was not called, or its batch is
	// written already.
	ErrState = errors.New("arrowipc: no prepared batch to write")
	// ErrBatch is wrapped by errors about a batch that does not match its
	// schema.
	ErrBatch = errors.New("arrowipc: batch does not match schema")
)

// compressionTypes maps a codec to the CompressionType a compressed batch
// declares; a codec missing here never compresses.
var compressionTypes = map[codec.Kind]int8{
	codec.LZ4:  format.CompressionLZ4Frame,
	codec.Zstd: format.CompressionZstd,
}

// Encoder writes Arrow IPC files of one record batch, in two phases:
//
//  1. Prepare (or PrepareRecord) checks a batch against its fields and
//     compresses its body, keeping the result, and returns what compression
//     did, so that the caller can put that into the schema metadata;
//  2. AppendFile appends the whole file (magic, schema with the caller's
//     metadata, the prepared batch, footer) to the caller's buffer.
//
// It is not safe for concurrent use; keep one per goroutine (or pool them)
// and reuse it: its scratch memory (flatbuffer builder, body layout,
// compressed bytes) is kept from one file to the next, so that encoding a
// batch of a size seen before allocates nothing.
type Encoder struct {
	codec      codec.Codec    // for Auto, the zstd codec it tries
	auto       bool           // choose none, lz4 or zstd per batch
	lz4        codec.Codec    // Auto's other codec
	bytePrice  float64        // Auto's price of a wire byte, in ns
	decoder    *codec.Decoder // Auto's reader: what decoding costs Grafana
	minSavings float64
	history    []slotHistory // what each buffer slot did lately
	alwaysTry  bool
	enc        codec.Encoder // borrowed by compress until the batch is laid out
	encOpen    bool

	b     *flatbuffers.Builder // the schema and its message
	rb    *flatbuffers.Builder // the RecordBatch message
	fb    *flatbuffers.Builder // the footer
	hdr   header               // the schema message built in b
	batch batch                // phase one's result, phase two's input
	err   error                // why the last Prepare failed, until the next one
	offs  []flatbuffers.UOffsetT
	kvs   []flatbuffers.UOffsetT
	rec   recordScratch // PrepareRecord's
	join  joiner        // the file or batch being written
}

// NewEncoder returns an Encoder configured by o.
func NewEncoder(o Options) (*Encoder, error) {
	if math.IsNaN(o.MinSavings) || o.MinSavings < 0 || o.MinSavings >= 1 {
		return nil, fmt.Errorf("arrowipc: MinSavings %v is not within [0, 1)", o.MinSavings)
	}
	e := &Encoder{
		codec:      o.Codec,
		minSavings: o.MinSavings,
		alwaysTry:  o.AlwaysTry,
		b:          flatbuffers.NewBuilder(2048),
		rb:         flatbuffers.NewBuilder(1024),
		fb:         flatbuffers.NewBuilder(2048),
	}
	e.SetDecoder(o.Decoder)
	if o.Codec.Kind() == codec.Auto {
		p := o.Preference
		if p.Name == "" {
			p, _ = codec.ParsePreference(codec.DefaultPreference) // one of codec.Preferences, the first
		}
		if math.IsNaN(p.BytePrice) || p.BytePrice <= 0 {
			return nil, fmt.Errorf("arrowipc: preference %q prices a byte at %v ns, not above 0", p.Name, p.BytePrice)
		}
		e.auto, e.bytePrice = true, p.BytePrice
		e.codec = codec.MustNew(codec.Zstd, codec.AutoZstdLevel)
		e.lz4 = codec.MustNew(codec.LZ4, codec.LZ4DefaultLevel)
	}
	return e, nil
}

// SetDecoder sets the generation of Grafana's decoder that codec.Auto
// prices the next batches by (nil: codec.Decoders[0]), for the Grafana that
// asked for them. Other codecs ignore it.
func (e *Encoder) SetDecoder(d *codec.Decoder) { e.decoder = cmp.Or(d, codec.Decoders[0]) }

// Prepare is phase one: it checks that cols (one Column per field, laid out
// as Column describes) hold rows rows of fields' types, compresses the
// buffers worth compressing and keeps the batch for AppendFile. fields and
// the buffers stored raw are referenced, not copied, until AppendFile
// returns (borrowed ones, by AppendFilePieces or AppendBatchBorrowing,
// for as long as the pieces are). A field whose type Grafana cannot read is an
// *UnsupportedTypeError, a column that does not match its field an error
// wrapping ErrBatch; either way nothing is prepared.
//
// The stats returned are what compression did to the body; their PerBuffer
// is valid until the next Prepare.
func (e *Encoder) Prepare(fields []Field, rows int, cols []Column) (BodyStats, error) {
	err := e.batch.setSchema(fields)
	var st BodyStats
	if err == nil {
		st, err = e.prepare(rows, cols)
	}
	return st, e.settle(err)
}

// settle records how a Prepare ended: on error nothing stays prepared and
// no reference to the caller's memory is kept.
func (e *Encoder) settle(err error) error {
	e.err = err
	if err != nil {
		e.batch.drop()
	}
	return err
}

// AppendFile is phase two: it appends to dst the Arrow IPC file of the
// prepared batch, whose schema carries meta as its custom metadata (in this
// order), and returns the extended slice, which aliases dst when dst has
// the capacity. When it has not, an empty dst (nil) is replaced by memory
// of exactly the file's size, not cleared before the file is written into
// it, so that AppendFile(nil, meta) returns the file with no slack and no
// copy of it; a longer dst grows as append grows
// it. The file is appended in one contiguous run and the batch is then no
// longer prepared. Without a prepared batch it returns dst
// unextended and the error of the failed Prepare, or ErrState.
func (e *Encoder) AppendFile(dst []byte, meta []KeyValue) ([]byte, error) {
	if !e.batch.ready {
		return dst, cmp.Or(e.err, ErrState)
	}
	return e.assembleFile(meta, false).join(dst), nil
}

// AppendFilePieces is AppendFile into pieces, borrowing as
// AppendBatchBorrowing does: the file is the returned pieces in order, the
// prepared batch's buffers of MinBorrow bytes and more among them,
// referenced, when it stores none compressed, and what lies between them
// each in a buffer of exactly its size. The caller must then leave the
// borrowed memory as it is, and not let it be reused, until the pieces are
// written out. The bytes, joined, are AppendFile's; its errors too.
func (e *Encoder) AppendFilePieces(meta []KeyValue) ([][]byte, error) {
	if !e.batch.ready {
		return nil, cmp.Or(e.err, ErrState)
	}
	return e.assembleFile(meta, true).split(nil), nil
}

// Discard drops the prepared batch without writing it, and every reference
// to the caller's memory with it: for a caller whose metadata failed.
func (e *Encoder) Discard() {
	e.batch.drop()
	e.err = nil
}

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
