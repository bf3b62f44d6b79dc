package arrowipc

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/quiverdata/quiver/pkg/codec"
)

// Column is one column of a record batch, in Arrow's physical layout with no
// offset: bit 0 of a bitmap is row 0 and offsets start at 0. Prepare keeps
// references to the buffers it stores raw until AppendFile has written them
// (or the next Prepare): do not change them in between.
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

// BodyStats says what compression did to a record-batch body.
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
	// PerBuffer lists every body buffer in the order of the batch's buffers
	// (validity, then values or offsets and data, field by field). It is the
	// encoder's memory: valid until its next Prepare.
	PerBuffer []BufferStats
}

// BufferStats says what became of one body buffer.
type BufferStats struct {
	// RawBytes is the buffer's length, WireBytes what it occupies in the
	// body without padding (the length prefix included when the batch is
	// compressed).
	RawBytes, WireBytes int
	Outcome             BufferOutcome
}

// BufferOutcome is how a body buffer is stored.
type BufferOutcome uint8

const (
	// BufferEmpty: the buffer has no bytes (a validity bitmap with no
	// nulls, a column of no rows); nothing is stored.
	BufferEmpty BufferOutcome = iota
	// BufferRaw: stored as it is, because the codec is none, the buffer is
	// too short for compression to pay, or compressing it did not save
	// MinSavings.
	BufferRaw
	// BufferCompressed: stored compressed, after its uncompressed length.
	BufferCompressed
)

// minCompressLen: buffers shorter than this are stored raw without trying;
// a zstd or lz4 frame's own header and trailer would eat any gain.
const minCompressLen = 64

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

// bufRef is where the bytes of one body buffer are: a slice of the caller's
// memory stored raw, or a range of batch.packed.
type bufRef struct {
	raw        []byte // stored raw when packed is false
	start, end int    // batch.packed[start:end] when packed is true
	rawLen     int    // uncompressed length
	packed     bool
}

// batch is a record batch laid out by Prepare for AppendFile: the schema it
// was checked against, its field nodes, where each buffer's bytes are and
// where they go in the body. Its slices are reused from one batch to the
// next.
type batch struct {
	fields []Field // as passed to Prepare
	infos  []typeInfo
	rows   int64
	nodes  []fieldNode
	refs   []bufRef
	layout []buffer // each buffer's offset and stored length in the body
	stats  []BufferStats
	packed []byte // the compressed buffers, back to back
	// compressed: some buffer is stored compressed, so the batch declares
	// its codec and every buffer carries a length prefix.
	compressed bool
	length     int64 // of the body, padding included
	ready      bool  // prepared and not yet written
}

// setSchema resets b for a batch of fields, whose types it looks up.
func (b *batch) setSchema(fields []Field) error {
	b.drop()
	b.fields = fields
	for _, f := range fields {
		info, err := lookupType(f.Name, f.Type)
		if err != nil {
			return err
		}
		b.infos = append(b.infos, info)
	}
	return nil
}

// drop forgets the batch and every reference to the caller's memory.
func (b *batch) drop() {
	for i := range b.refs {
		b.refs[i].raw = nil
	}
	b.fields = nil
	b.infos = b.infos[:0]
	b.ready = false
}

// prepare checks cols against b's schema, compresses what is worth it into
// b.packed, lays the body out and returns what compression did. It is the
// work of phase one; appendBody in file.go is its other half.
func (e *Encoder) prepare(rows int, cols []Column) (BodyStats, error) {
	start := time.Now()
	b := &e.batch
	b.ready = false
	if len(cols) != len(b.fields) {
		return BodyStats{}, fmt.Errorf("%w: %d columns for %d fields", ErrBatch, len(cols), len(b.fields))
	}
	if rows < 0 {
		return BodyStats{}, fmt.Errorf("%w: negative row count %d", ErrBatch, rows)
	}
	b.rows = int64(rows)
	b.nodes = b.nodes[:0]
	b.refs = b.refs[:0]
	b.packed = b.packed[:0]
	b.compressed = false
	enc := e.codec.Encoder()
	defer enc.Close()
	for i := range cols {
		c := &cols[i]
		info := b.infos[i]
		if err := checkColumn(b.fields[i].Name, info, rows, c); err != nil {
			return BodyStats{}, err
		}
		if c.NullCount > 0 {
			e.addBuffer(enc, c.Validity[:bitmapLen(rows)], false)
		} else {
			b.refs = append(b.refs, bufRef{})
		}
		switch info.layout {
		case layoutFixed:
			e.addBuffer(enc, c.Values[:rows*info.width], true)
		case layoutBitmap:
			e.addBuffer(enc, c.Values[:bitmapLen(rows)], false)
		case layoutVar:
			e.addBuffer(enc, c.Offsets[:4*(rows+1)], false)
			end := int(binary.LittleEndian.Uint32(c.Offsets[4*rows:]))
			e.addBuffer(enc, c.Values[:end], false)
		}
		b.nodes = append(b.nodes, fieldNode{length: int64(rows), nulls: int64(c.NullCount)})
	}
	st := b.layOut()
	b.ready = true
	st.Elapsed = time.Since(start)
	return st, nil
}

// layOut places every buffer in the body, each padded to 8 bytes, and sums
// what compression did.
func (b *batch) layOut() BodyStats {
	st := BodyStats{Rows: b.rows}
	b.layout = b.layout[:0]
	b.stats = b.stats[:0]
	var off int64
	for i := range b.refs {
		r := &b.refs[i]
		n := r.stored(b.compressed)
		b.layout = append(b.layout, buffer{offset: off, length: int64(n)})
		off += int64(pad8(n))
		bs := BufferStats{RawBytes: r.rawLen, WireBytes: n}
		switch {
		case r.rawLen == 0:
			bs.Outcome = BufferEmpty
		case r.packed:
			bs.Outcome = BufferCompressed
			st.Compressed++
		default:
			bs.Outcome = BufferRaw
		}
		b.stats = append(b.stats, bs)
		if r.rawLen > 0 {
			st.Buffers++
			st.RawBytes += int64(r.rawLen)
			st.WireBytes += int64(n)
		}
	}
	b.length = off
	st.PerBuffer = b.stats
	return st
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

// addBuffer compresses buf into the batch's packed bytes and keeps the
// result when it saves at least minSavings of buf; otherwise it keeps a
// reference to buf, stored raw. With probe set (fixed-width values), a long
// buffer's prefix decides first whether compressing the whole is worth
// trying.
func (e *Encoder) addBuffer(enc *codec.Encoder, buf []byte, probe bool) {
	b := &e.batch
	if e.codec.Kind() == codec.None || len(buf) < minCompressLen {
		b.refs = append(b.refs, bufRef{raw: buf, rawLen: len(buf)})
		return
	}
	start := len(b.packed)
	if probe && len(buf) >= probeMin {
		b.packed = enc.Encode(b.packed, buf[:probeLen])
		n := len(b.packed) - start
		b.packed = b.packed[:start]
		if float64(n) > probeLen*(1-e.minSavings) {
			b.refs = append(b.refs, bufRef{raw: buf, rawLen: len(buf)})
			return
		}
	}
	b.packed = enc.Encode(b.packed, buf)
	n := len(b.packed) - start
	if float64(n) > float64(len(buf))*(1-e.minSavings) {
		b.packed = b.packed[:start]
		b.refs = append(b.refs, bufRef{raw: buf, rawLen: len(buf)})
		return
	}
	b.refs = append(b.refs, bufRef{start: start, end: len(b.packed), rawLen: len(buf), packed: true})
	b.compressed = true
}

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
