package arrowipc

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// AppendRecords appends one Arrow IPC file holding schema and recs (in
// order) to dst and returns the extended slice. The records may be slices
// of larger ones (non-zero array offsets); their columns must have the types
// of schema's fields. On error dst is returned unextended.
func (e *Encoder) AppendRecords(dst []byte, schema *arrow.Schema, recs ...arrow.RecordBatch) ([]byte, error) {
	fields, meta := e.schemaOf(schema)
	err := e.Begin(dst, fields, meta)
	for _, rec := range recs {
		if err != nil {
			break
		}
		err = e.writeRecord(rec)
	}
	out, ferr := e.Finish()
	if err == nil {
		err = ferr
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendRecord appends one Arrow IPC file of the single record rec, as
// AppendFile does: meta receives what compression did and the record's
// schema metadata, and returns the schema metadata to write.
func (e *Encoder) AppendRecord(dst []byte, rec arrow.RecordBatch, meta func(BodyStats, []KeyValue) ([]KeyValue, error)) ([]byte, error) {
	fields, schemaMeta := e.schemaOf(rec.Schema())
	if err := e.open(dst, fields); err != nil {
		return e.reset(), err
	}
	cols, err := e.columnsOf(rec)
	if err == nil {
		var compressed bool
		compressed, err = e.prepare(int(rec.NumRows()), cols)
		var kvs []KeyValue
		if err == nil {
			kvs, err = meta(e.total, schemaMeta)
		}
		if err == nil {
			e.writeHeader(kvs)
			e.writeBatch(rec.NumRows(), compressed)
		}
	}
	clear(cols) // keep no reference to the record's memory
	if err != nil {
		e.fail(err)
		return e.reset(), err
	}
	return e.Finish()
}

// schemaOf converts schema to Fields and metadata in encoder scratch.
func (e *Encoder) schemaOf(schema *arrow.Schema) ([]Field, []KeyValue) {
	fields := e.recFields[:0]
	kvs := e.recKVs[:0]
	for i := range schema.NumFields() {
		f := schema.Field(i) // Fields() would copy the slice
		start := len(kvs)
		kvs = appendMetadata(kvs, f.Metadata)
		fields = append(fields, Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable, Metadata: kvs[start:len(kvs):len(kvs)]})
	}
	start := len(kvs)
	kvs = appendMetadata(kvs, schema.Metadata())
	e.recFields, e.recKVs = fields, kvs
	return fields, kvs[start:]
}

func appendMetadata(kvs []KeyValue, md arrow.Metadata) []KeyValue {
	keys, values := md.Keys(), md.Values()
	for i := range keys {
		kvs = append(kvs, KeyValue{Key: keys[i], Value: values[i]})
	}
	return kvs
}

// writeRecord writes rec as one batch.
func (e *Encoder) writeRecord(rec arrow.RecordBatch) error {
	cols, err := e.columnsOf(rec)
	if err == nil {
		err = e.WriteBatch(int(rec.NumRows()), cols)
	}
	clear(cols) // keep no reference to the record's memory
	if err != nil {
		return e.fail(err)
	}
	return nil
}

// columnsOf lays rec's arrays out as Columns, normalising sliced arrays
// (bitmaps shifted to bit 0, offsets rebased to 0) into encoder scratch.
func (e *Encoder) columnsOf(rec arrow.RecordBatch) ([]Column, error) {
	if int(rec.NumCols()) != len(e.fields) {
		return nil, fmt.Errorf("%w: record has %d columns, schema %d fields", ErrBatch, rec.NumCols(), len(e.fields))
	}
	rows := int(rec.NumRows())
	cols := e.recCols[:0]
	if need := 2 * len(e.fields); len(e.scratch) < need {
		e.scratch = append(e.scratch, make([][]byte, need-len(e.scratch))...)
	}
	for i, arr := range rec.Columns() {
		f := &e.fields[i]
		if !arrow.TypeEqual(arr.DataType(), f.Type) {
			return cols, fmt.Errorf("%w: field %q: column of type %s, schema says %s", ErrBatch, f.Name, arr.DataType(), f.Type)
		}
		if arr.Len() != rows {
			return cols, fmt.Errorf("%w: field %q: %d rows, record has %d", ErrBatch, f.Name, arr.Len(), rows)
		}
		cols = append(cols, e.columnOf(arr, e.infos[i], e.scratch[2*i:2*i+2]))
	}
	e.recCols = cols
	return cols, nil
}

// columnOf returns arr as a Column. scratch holds two reusable buffers (for
// the validity bitmap, and for a values bitmap or rebased offsets); they
// are grown in place when needed.
func (e *Encoder) columnOf(arr arrow.Array, info typeInfo, scratch [][]byte) Column {
	d := arr.Data()
	off, n := d.Offset(), d.Len()
	bufs := d.Buffers()
	var c Column
	if nulls := arr.NullN(); nulls > 0 {
		c.NullCount = nulls
		scratch[0] = CopyBitmap(scratch[0][:0], bufBytes(bufs, 0), off, n)
		c.Validity = scratch[0]
	}
	switch info.layout {
	case layoutFixed:
		c.Values = bufBytes(bufs, 1)[off*info.width : (off+n)*info.width]
	case layoutBitmap:
		scratch[1] = CopyBitmap(scratch[1][:0], bufBytes(bufs, 1), off, n)
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

func bufBytes(bufs []*memory.Buffer, i int) []byte {
	if i >= len(bufs) || bufs[i] == nil {
		return nil
	}
	return bufs[i].Bytes()
}

// CopyBitmap appends the n bits of src starting at bit off to dst as a
// bitmap starting at bit 0, ceil(n/8) bytes with the bits past n cleared,
// and returns the extended slice. A nil src (no bitmap) reads as all set.
func CopyBitmap(dst, src []byte, off, n int) []byte {
	nb := (n + 7) / 8
	start := len(dst)
	switch {
	case src == nil:
		for range nb {
			dst = append(dst, 0xFF)
		}
	case off%8 == 0:
		dst = append(dst, src[off/8:off/8+nb]...)
	default:
		shift := uint(off % 8)
		base := off / 8
		for i := range nb {
			v := src[base+i] >> shift
			if base+i+1 < len(src) {
				v |= src[base+i+1] << (8 - shift)
			}
			dst = append(dst, v)
		}
	}
	if rem := n % 8; rem != 0 {
		dst[start+nb-1] &= byte(1)<<uint(rem) - 1
	}
	return dst
}
