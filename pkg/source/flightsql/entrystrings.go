// Text columns in cache entries: their lengths, not their offsets.

package flightsql

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// A string column's offsets grow row by row and compress badly; its lengths
// repeat (label values, as a rule, have few lengths) and compress to almost
// nothing (docs/performance.md, "string lengths in cache entries"). Only
// Quiver reads entries, so a segment stores each string column as two: an
// int32 column of the values' lengths (null where the value is), and a
// binary column whose first value holds every value's bytes and whose others
// are empty (its offsets are constant after the first). entrySchema is a
// segment's schema for a result's; the names of the bytes columns end in
// bytesSuffix.

const bytesSuffix = "\x00bytes"

// entrySchema is the schema of the segments of a result of schema s.
func entrySchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, 0, s.NumFields())
	for _, f := range s.Fields() {
		if f.Type.ID() != arrow.STRING {
			fields = append(fields, f)
			continue
		}
		fields = append(fields,
			arrow.Field{Name: f.Name, Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: f.Metadata},
			arrow.Field{Name: f.Name + bytesSuffix, Type: arrow.BinaryTypes.Binary})
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// toEntry returns rec with its string columns as lengths and bytes, in a
// batch of schema es (entrySchema of rec's).
func toEntry(rec arrow.RecordBatch, es *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	cols := make([]arrow.Array, 0, es.NumFields())
	defer func() { series.ReleaseArrays(cols) }()
	n := int(rec.NumRows())
	for _, col := range rec.Columns() {
		s, ok := col.(*array.String)
		if !ok {
			col.Retain()
			cols = append(cols, col)
			continue
		}
		lens := array.NewInt32Builder(mem)
		lens.Reserve(n)
		var all []byte
		for i := range n {
			if s.IsNull(i) {
				lens.AppendNull()
				continue
			}
			v := s.Value(i)
			lens.UnsafeAppend(int32(len(v)))
			all = append(all, v...)
		}
		data := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		data.Reserve(n)
		if n > 0 {
			data.Append(all)
			for range n - 1 {
				data.Append(nil)
			}
		}
		cols = append(cols, lens.NewArray(), data.NewArray())
		lens.Release()
		data.Release()
	}
	return array.NewRecordBatch(es, cols, int64(n))
}

// fromEntry returns a segment's batch rec as a batch of the result's schema
// want: each string column rebuilt from its lengths and bytes.
func fromEntry(rec arrow.RecordBatch, want *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, want.NumFields())
	defer func() { series.ReleaseArrays(cols) }()
	n := int(rec.NumRows())
	j := 0
	for _, f := range want.Fields() {
		if f.Type.ID() != arrow.STRING {
			c := rec.Column(j)
			c.Retain()
			cols = append(cols, c)
			j++
			continue
		}
		lens, ok1 := rec.Column(j).(*array.Int32)
		data, ok2 := rec.Column(j + 1).(*array.Binary)
		j += 2
		if !ok1 || !ok2 || data.Len() != n {
			return nil, fmt.Errorf("%w: column %s", errEntry, f.Name)
		}
		str, err := stringsFrom(lens, data, n)
		if err != nil {
			return nil, fmt.Errorf("%w: column %s: %w", errEntry, f.Name, err)
		}
		cols = append(cols, str)
	}
	return array.NewRecordBatch(want, cols, int64(n)), nil
}

// stringsFrom is the string array of n values whose lengths (null: a null
// value) are lens and whose bytes are data's first value: its offsets are
// new, its validity and bytes are lens' and data's (referenced, not
// copied).
func stringsFrom(lens *array.Int32, data *array.Binary, n int) (arrow.Array, error) {
	offs := make([]int32, n+1)
	at := int64(0)
	for i := range n {
		if lens.IsValid(i) {
			if lens.Value(i) < 0 {
				return nil, errors.New("a negative length")
			}
			at += int64(lens.Value(i))
		}
		if at > int64(len(data.ValueBytes())) {
			return nil, errors.New("lengths past its bytes")
		}
		offs[i+1] = int32(at)
	}
	if n > 0 && at != int64(data.ValueLen(0)) {
		return nil, errors.New("lengths do not add up to its bytes")
	}
	var validity, values *memory.Buffer
	if lens.NullN() > 0 {
		if lens.Data().Offset() != 0 {
			return nil, errors.New("a sliced lengths column")
		}
		validity = lens.Data().Buffers()[0] // NewData retains it
	}
	if n > 0 {
		start := int(data.ValueOffset(0))
		values = memory.SliceBuffer(data.Data().Buffers()[2], start, data.ValueLen(0))
	} else {
		values = memory.NewBufferBytes(nil)
	}
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs)), values}, nil, lens.NullN(), 0)
	defer d.Release()
	values.Release()
	return array.MakeFromData(d), nil
}
