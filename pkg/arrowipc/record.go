package arrowipc

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recordScratch is PrepareRecord's reusable memory: a record's schema as
// Fields, its columns, and two buffers per column for what is normalised.
type recordScratch struct {
	fields  []Field
	kvs     []KeyValue
	cols    []Column
	scratch [][]byte
}

// PrepareRecord is Prepare for an Arrow record: its schema gives the fields
// (with their metadata; the schema's own metadata is the caller's to pass
// to AppendFile, see AppendMetadata), its arrays the columns. The record
// may be a slice of a larger one (non-zero array offsets): bitmaps and
// offsets are normalised into encoder scratch, the rest is referenced as
// Prepare references columns. Keep rec alive until AppendFile returns (its
// memory, once borrowed, as long as the pieces).
func (e *Encoder) PrepareRecord(rec arrow.RecordBatch) (BodyStats, error) {
	err := e.batch.setSchema(e.rec.fieldsOf(rec.Schema()))
	var st BodyStats
	if err == nil {
		var cols []Column
		cols, err = e.rec.columnsOf(rec, &e.batch)
		if err == nil {
			st, err = e.prepare(int(rec.NumRows()), cols)
		}
		clear(cols) // the batch holds what it needs; keep no other reference
	}
	return st, e.settle(err)
}

// fieldsOf converts schema's fields, with their metadata, to Fields in
// scratch.
func (s *recordScratch) fieldsOf(schema *arrow.Schema) []Field {
	fields := s.fields[:0]
	kvs := s.kvs[:0]
	for i := range schema.NumFields() {
		f := schema.Field(i) // Fields() would copy the slice
		start := len(kvs)
		kvs = AppendMetadata(kvs, f.Metadata)
		fields = append(fields, Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable, Metadata: kvs[start:len(kvs):len(kvs)]})
	}
	s.fields, s.kvs = fields, kvs
	return fields
}

// columnsOf lays rec's arrays out as Columns, normalising sliced arrays
// (bitmaps shifted to bit 0, offsets rebased to 0) into encoder scratch.
func (s *recordScratch) columnsOf(rec arrow.RecordBatch, b *batch) ([]Column, error) {
	if int(rec.NumCols()) != len(b.fields) {
		return nil, fmt.Errorf("%w: record has %d columns, schema %d fields", ErrBatch, rec.NumCols(), len(b.fields))
	}
	rows := int(rec.NumRows())
	cols := s.cols[:0]
	if need := 2 * len(b.fields); len(s.scratch) < need {
		s.scratch = append(s.scratch, make([][]byte, need-len(s.scratch))...)
	}
	for i, arr := range rec.Columns() {
		f := &b.fields[i]
		if !sameType(arr.DataType(), f.Type) {
			return cols, fmt.Errorf("%w: field %q: column of type %s, schema says %s", ErrBatch, f.Name, arr.DataType(), f.Type)
		}
		if arr.Len() != rows {
			return cols, fmt.Errorf("%w: field %q: %d rows, record has %d", ErrBatch, f.Name, arr.Len(), rows)
		}
		cols = append(cols, columnOf(arr, b.infos[i], s.scratch[2*i:2*i+2]))
	}
	s.cols = cols
	return cols, nil
}

// sameType reports whether a column of type t fits field type want, one of
// the types of the table in types.go: for those, the type ID decides but
// for a timestamp's unit and zone. arrow.TypeEqual would say the same, but
// allocates for types that are equal without being the same pointer (its
// options escape), as an SDK record's timestamps are.
func sameType(t, want arrow.DataType) bool {
	if t == nil || t.ID() != want.ID() {
		return false
	}
	if w, ok := want.(*arrow.TimestampType); ok {
		ts, ok := t.(*arrow.TimestampType)
		return ok && ts.Unit == w.Unit && ts.TimeZone == w.TimeZone
	}
	return true
}

// columnOf returns arr as a Column. scratch holds two reusable buffers (for
// the validity bitmap, and for a values bitmap or rebased offsets); they
// are grown in place when needed.
func columnOf(arr arrow.Array, info typeInfo, scratch [][]byte) Column {
	d := arr.Data()
	off, n := d.Offset(), d.Len()
	bufs := d.Buffers()
	var c Column
	if nulls := arr.NullN(); nulls > 0 {
		c.NullCount = nulls
		scratch[0] = copyBitmap(scratch[0][:0], bufBytes(bufs, 0), off, n)
		c.Validity = scratch[0]
	}
	switch info.layout {
	case layoutFixed:
		c.Values = bufBytes(bufs, 1)[off*info.width : (off+n)*info.width]
	case layoutBitmap:
		scratch[1] = copyBitmap(scratch[1][:0], bufBytes(bufs, 1), off, n)
		c.Values = scratch[1]
	case layoutVar:
		offsets := bufBytes(bufs, 1)
		data := bufBytes(bufs, 2)
		if len(offsets) == 0 { // an empty array may carry no offsets at all
			scratch[1] = append(scratch[1][:0], 0, 0, 0, 0)
			c.Offsets = scratch[1]
			break
		}
		offsets = offsets[4*off : 4*(off+n+1)]
		first := binary.LittleEndian.Uint32(offsets)
		last := binary.LittleEndian.Uint32(offsets[4*n:])
		if first != 0 {
			s := scratch[1][:0]
			for r := 0; r <= n; r++ {
				s = binary.LittleEndian.AppendUint32(s, binary.LittleEndian.Uint32(offsets[4*r:])-first)
			}
			scratch[1] = s
			offsets = s
		}
		c.Offsets = offsets
		c.Values = data[first:last]
	}
	return c
}

// holds reports whether b is memory of the scratch (a bitmap or offsets
// normalised by columnOf), not the record's.
func (s *recordScratch) holds(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, sc := range s.scratch {
		if cap(sc) > 0 && unsafe.SliceData(sc) == unsafe.SliceData(b) {
			return true
		}
	}
	return false
}

func bufBytes(bufs []*memory.Buffer, i int) []byte {
	if i >= len(bufs) || bufs[i] == nil {
		return nil
	}
	return bufs[i].Bytes()
}

// copyBitmap appends the n bits of src starting at bit off to dst as a
// bitmap starting at bit 0, ceil(n/8) bytes with the bits past n cleared,
// and returns the extended slice. A nil src (no bitmap) reads as all set.
func copyBitmap(dst, src []byte, off, n int) []byte {
	start, nb := len(dst), (n+7)/8
	dst = slices.Grow(dst, nb)[:start+nb]
	if src == nil {
		for i := start; i < len(dst); i++ {
			dst[i] = 0xFF
		}
	} else {
		bitutil.CopyBitmap(src, off, n, dst[start:], 0)
	}
	if rem := n % 8; rem != 0 {
		dst[start+nb-1] &= byte(1)<<uint(rem) - 1
	}
	return dst
}

// AppendMetadata appends md's entries to dst, in md's order, and returns the
// extended slice: the schema metadata of a record as AppendFile takes it.
func AppendMetadata(dst []KeyValue, md arrow.Metadata) []KeyValue {
	keys, values := md.Keys(), md.Values()
	for i := range keys {
		dst = append(dst, KeyValue{Key: keys[i], Value: values[i]})
	}
	return dst
}
