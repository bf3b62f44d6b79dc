// This file is over 400 lines: one record batch's body — its layout, the
// per-buffer compression, the skip history and codec auto's choice — which
// together decide the bytes the golden files pin.

package arrowipc

import (
	"encoding/binary"
	"fmt"

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
	// compressed, Skipped those stored raw without calling the codec (too
	// short, or their slot's history says compressing cannot pay). The
	// others of Buffers were tried and stored raw, or the codec is none.
	Buffers, Compressed, Skipped int
	// Codec is the codec the batch declares: the encoder's, or none when no
	// buffer is stored compressed; for codec.Auto, the one it chose.
	Codec codec.Kind
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
	// BufferRaw: stored as it is, because the codec is none, compressing
	// it did not save MinSavings (or, under codec.Auto, the batch was
	// cheaper uncompressed).
	BufferRaw
	// BufferCompressed: stored compressed, after its uncompressed length.
	BufferCompressed
	// BufferSkipped: stored as it is without calling the codec: the buffer
	// is too short for compression to pay, or the last attempts on its slot
	// did not pay (see slotHistory).
	BufferSkipped
)

// String names the outcome as stats show it.
func (o BufferOutcome) String() string {
	return [...]string{"empty", "raw", "compressed", "skipped"}[o]
}

// slotHistory is what the buffers of one slot (a field position and buffer
// role, for one field name and type) did in this encoder's last batches.
// An encoder is pooled per data-source instance and writes that instance's
// frames, so its history is the instance's recent queries, kept without
// locks; sync.Pool may drop an encoder, which only forgets. A slot with no
// history (or another field's) is always tried. An attempt that does not
// pay (it saves less than MinSavings, or under codec.Auto its batch is sent
// uncompressed) skips the slot's next 1, 2, 4, … and then 64 buffers
// before trying again; one that pays clears the slot. So a column that
// never compresses is tried on 7 of its first 127 frames and one in 65
// after, and one that starts to compress is stored raw for at most 64
// frames (why 64 and not fewer: docs/compression.md).
type slotHistory struct {
	key   uint64 // fieldKey of the field, with the buffer's role
	fails uint8  // attempts in a row that did not pay, at most maxFails
	skip  uint8  // buffers still to store raw without trying
}

const maxFails = 7 // skip at most 1<<(maxFails-1) = 64 buffers

func (h *slotHistory) paid() { h.fails, h.skip = 0, 0 }

func (h *slotHistory) failed() {
	h.fails = min(h.fails+1, maxFails)
	h.skip = 1 << (h.fails - 1)
}

// Buffer roles, mixed into a slot's key.
const (
	roleValidity = iota + 1
	roleValues
	roleOffsets
	roleData
)

// fieldKey hashes a field's name and type (FNV-1a), the identity of its
// buffers' slots.
func fieldKey(f *Field) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(f.Name); i++ {
		h = (h ^ uint64(f.Name[i])) * 1099511628211
	}
	return (h ^ uint64(f.Type.ID())) * 1099511628211
}

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
// buffer when the prefix does compress (see docs/journal/benchmarks.md).
const (
	probeLen = 1 << 10
	probeMin = 8 << 10
)

// bufRef is where the bytes of one body buffer are: a slice of the caller's
// memory stored raw, or a range of batch.packed.
type bufRef struct {
	raw        []byte // the buffer, stored raw when packed is false
	start, end int    // batch.packed[start:end] when packed is true
	rawLen     int    // uncompressed length
	packed     bool
	skipped    bool // stored raw without trying
	// alt is the buffer compressed by codec.Auto's lz4, in batch.alt.
	altStart, altEnd int
	altPacked        bool
}

// batch is a record batch laid out by Prepare for AppendFile: the schema it
// was checked against, its field nodes, where each buffer's bytes are and
// how many bytes it takes in the body (bufRef.stored). Its slices are
// reused from one batch to the next.
type batch struct {
	fields []Field // as passed to Prepare
	infos  []typeInfo
	rows   int64
	nulls  []int64 // each field's null count; its node's length is rows
	refs   []bufRef
	stats  []BufferStats
	packed []byte     // the compressed buffers, back to back
	alt    []byte     // codec.Auto's lz4 attempt, back to back
	kind   codec.Kind // the codec the batch declares when compressed
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
// work of phase one; addBatch in file.go is its other half.
func (e *Encoder) prepare(rows int, cols []Column) (BodyStats, error) {
	b := &e.batch
	if len(cols) != len(b.fields) {
		return BodyStats{}, fmt.Errorf("%w: %d columns for %d fields", ErrBatch, len(cols), len(b.fields))
	}
	if rows < 0 {
		return BodyStats{}, fmt.Errorf("%w: negative row count %d", ErrBatch, rows)
	}
	b.rows = int64(rows)
	b.nulls = b.nulls[:0]
	b.refs = b.refs[:0]
	b.packed = b.packed[:0]
	b.compressed = false
	b.kind = e.codec.Kind()
	defer e.closeEncoder()
	for i := range cols {
		c := &cols[i]
		info := b.infos[i]
		if err := checkColumn(b.fields[i].Name, info, rows, c); err != nil {
			return BodyStats{}, err
		}
		key := fieldKey(&b.fields[i])
		if c.NullCount > 0 {
			e.addBuffer(c.Validity[:bitmapLen(rows)], false, key+roleValidity)
		} else {
			b.refs = append(b.refs, bufRef{})
		}
		switch info.layout {
		case layoutFixed:
			e.addBuffer(c.Values[:rows*info.width], true, key+roleValues)
		case layoutBitmap:
			e.addBuffer(c.Values[:bitmapLen(rows)], false, key+roleValues)
		case layoutVar:
			e.addBuffer(c.Offsets[:4*(rows+1)], false, key+roleOffsets)
			end := int(binary.LittleEndian.Uint32(c.Offsets[4*rows:]))
			e.addBuffer(c.Values[:end], false, key+roleData)
		}
		b.nulls = append(b.nulls, int64(c.NullCount))
	}
	if e.auto {
		e.choose()
	}
	st := b.layOut()
	b.ready = true
	return st, nil
}

// layOut sizes the body, each buffer padded to 8 bytes, and sums what
// compression did.
func (b *batch) layOut() BodyStats {
	st := BodyStats{Rows: b.rows, Codec: codec.None, Buffers: len(b.refs)}
	if b.compressed {
		st.Codec = b.kind
	}
	b.stats = b.stats[:0]
	var off int64
	for i := range b.refs {
		r := &b.refs[i]
		n := r.stored(b.compressed) // 0 for an empty buffer
		off += int64(pad8(n))
		bs := BufferStats{RawBytes: r.rawLen, WireBytes: n, Outcome: BufferRaw}
		switch {
		case r.rawLen == 0:
			bs.Outcome = BufferEmpty
			st.Buffers--
		case r.packed:
			bs.Outcome = BufferCompressed
			st.Compressed++
		case r.skipped:
			bs.Outcome = BufferSkipped
			st.Skipped++
		}
		b.stats = append(b.stats, bs)
		st.RawBytes += int64(r.rawLen)
		st.WireBytes += int64(n)
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
		if first := binary.LittleEndian.Uint32(c.Offsets); first != 0 {
			return fmt.Errorf("%w: field %q: offsets start at %d, not 0", ErrBatch, name, first)
		}
		last, ok := offsetsRise(c.Offsets[:4*(rows+1)])
		if !ok {
			return fmt.Errorf("%w: field %q: offsets decrease at row %d", ErrBatch, name, offsetsFall(c.Offsets[:4*(rows+1)]))
		}
		if int(last) > len(c.Values) {
			return fmt.Errorf("%w: field %q: offsets reach %d past %d value bytes", ErrBatch, name, last, len(c.Values))
		}
	}
	return nil
}

func bitmapLen(rows int) int { return (rows + 7) / 8 }

// offsetsRise reports whether the int32 offsets in b (little-endian, the
// first 0) never decrease, which also keeps them all at 0 or above, and
// returns the last. One pass without a branch per offset: each step's
// difference is ORed in, and a negative one sets the sign bit.
func offsetsRise(b []byte) (last int32, ok bool) {
	var prev, fell int64
	for i := 4; i+4 <= len(b); i += 4 {
		o := int64(int32(binary.LittleEndian.Uint32(b[i : i+4 : i+4])))
		fell |= o - prev
		prev = o
	}
	return int32(prev), fell >= 0
}

// offsetsFall is the first row whose offset in b is below the one before
// (offsetsRise found one).
func offsetsFall(b []byte) int {
	prev := int32(0)
	for r := 1; 4*r+4 <= len(b); r++ {
		o := int32(binary.LittleEndian.Uint32(b[4*r:]))
		if o < prev {
			return r
		}
		prev = o
	}
	return 0
}

// addBuffer adds buf, the buffer of slot len(b.refs) whose field and role
// key names, to the batch: compressed into the batch's packed bytes when
// that saves at least minSavings of buf, otherwise as a reference to buf,
// stored raw. It does not call the codec for a buffer too short to pay, or
// one whose slot's history says to skip it.
func (e *Encoder) addBuffer(buf []byte, probe bool, key uint64) {
	b := &e.batch
	ref := bufRef{raw: buf, rawLen: len(buf)}
	switch {
	case e.codec.Kind() == codec.None:
	case len(buf) < minCompressLen:
		ref.skipped = len(buf) > 0
	default:
		h := e.slot(len(b.refs), key)
		if h.skip > 0 && !e.alwaysTry {
			h.skip--
			ref.skipped = true
			break
		}
		switch {
		case !e.compress(buf, probe, &ref):
			h.failed()
		case !e.auto: // auto's choice for the batch says whether it paid
			h.paid()
		}
	}
	b.refs = append(b.refs, ref)
}

// closeEncoder gives back the encoder compress borrowed, if any.
func (e *Encoder) closeEncoder() {
	if e.encOpen {
		e.enc.Close()
		e.encOpen = false
	}
}

// slot returns the history of buffer slot i, cleared when it belonged to
// another field or role.
func (e *Encoder) slot(i int, key uint64) *slotHistory {
	for len(e.history) <= i {
		e.history = append(e.history, slotHistory{})
	}
	h := &e.history[i]
	if h.key != key {
		*h = slotHistory{key: key}
	}
	return h
}

// compress tries to compress buf into the batch's packed bytes and reports
// whether that saved minSavings, in which case ref now points there. With
// probe set (fixed-width values), a long buffer's prefix decides first
// whether compressing the whole is worth trying.
func (e *Encoder) compress(buf []byte, probe bool, ref *bufRef) bool {
	b := &e.batch
	if !e.encOpen {
		// Borrowed on the first buffer tried: a batch whose buffers are all
		// skipped does not pay for the pool round trip (an lz4 encoder's
		// reset clears its tables).
		e.enc, e.encOpen = *e.codec.Encoder(), true
	}
	enc := &e.enc
	start := len(b.packed)
	if probe && len(buf) >= probeMin {
		b.packed = enc.Encode(b.packed, buf[:probeLen])
		n := len(b.packed) - start
		b.packed = b.packed[:start]
		if float64(n) > probeLen*(1-e.minSavings) {
			return false
		}
	}
	b.packed = enc.Encode(b.packed, buf)
	n := len(b.packed) - start
	if float64(n) > float64(len(buf))*(1-e.minSavings) {
		b.packed = b.packed[:start]
		return false
	}
	ref.start, ref.end, ref.packed = start, len(b.packed), true
	b.compressed = true
	return true
}

// choose is codec.Auto's decision for a batch whose buffers were tried with
// zstd: it prices sending the batch uncompressed, as compressed by zstd,
// and with lz4 (estimated from zstd's savings, then compressed to check),
// by the model documented at codec.Auto, and keeps the cheapest.
func (e *Encoder) choose() {
	b := &e.batch
	if !b.compressed {
		b.kind = codec.None
		return
	}
	var raw, zwire, packedRaw, n int
	for i := range b.refs {
		r := &b.refs[i]
		if r.rawLen == 0 {
			continue
		}
		n++
		raw += r.rawLen
		zwire += r.stored(false)
		if r.packed {
			packedRaw += r.rawLen
		}
	}
	price, d := e.bytePrice, e.decoder
	prefixes := float64(8 * n)
	costNone := price * float64(raw)
	// Staying compressed keeps the slots zstd compressed tried in the next
	// batches (codec.ZstdTrialNsPerByte); none lets the history skip them.
	trial := codec.ZstdTrialNsPerByte * float64(packedRaw)
	costZstd := price*(float64(zwire)+prefixes) + d.ZstdBatchNs + d.ZstdNsPerByte*float64(packedRaw) + trial
	lz4Est := price*(float64(raw)-codec.LZ4ShareOfZstdSavings*float64(raw-zwire)+prefixes) +
		d.LZ4BatchNs + (codec.LZ4EncodeNsPerByte+d.LZ4NsPerByte)*float64(packedRaw) + trial
	if lz4Est < costZstd && lz4Est < costNone {
		if lwire, lraw, ok := e.tryLZ4(); ok {
			costLZ4 := price*(float64(raw-packedRaw+lwire)+prefixes) + d.LZ4BatchNs + d.LZ4NsPerByte*float64(lraw) + trial
			if costLZ4 < costZstd && costLZ4 < costNone {
				for i := range b.refs {
					r := &b.refs[i]
					r.start, r.end, r.packed = r.altStart, r.altEnd, r.altPacked
				}
				b.packed, b.alt = b.alt, b.packed
				b.kind = codec.LZ4
			}
		}
	}
	// Else b.kind stays zstd, as prepare set it. Every slot whose buffer is
	// stored compressed (by the codec kept) learns whether sending the
	// batch compressed paid; when it did not, the batch goes uncompressed.
	paid := b.kind == codec.LZ4 || costZstd <= costNone
	for i := range b.refs {
		switch r := &b.refs[i]; {
		case !r.packed:
		case paid:
			e.history[i].paid()
		default:
			e.history[i].failed()
			r.packed = false
		}
	}
	if !paid {
		b.compressed, b.kind = false, codec.None
	}
}

// tryLZ4 compresses with lz4 the buffers zstd compressed, into b.alt, and
// returns their lz4 wire bytes (a buffer lz4 does not shrink by minSavings
// counts raw), the raw size of those it compressed, and whether there is
// any.
func (e *Encoder) tryLZ4() (wire, packedRaw int, some bool) {
	b := &e.batch
	b.alt = b.alt[:0]
	enc := e.lz4.Encoder()
	defer enc.Close()
	for i := range b.refs {
		r := &b.refs[i]
		r.altPacked = false
		if !r.packed {
			continue
		}
		start := len(b.alt)
		b.alt = enc.Encode(b.alt, r.raw)
		m := len(b.alt) - start
		if float64(m) > float64(r.rawLen)*(1-e.minSavings) {
			b.alt = b.alt[:start]
			wire += r.rawLen
			continue
		}
		r.altStart, r.altEnd, r.altPacked = start, len(b.alt), true
		wire += m
		packedRaw += r.rawLen
		some = true
	}
	return wire, packedRaw, some
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
