package frame

import (
	"encoding/binary"
	"encoding/json"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
)

// scratch is one column's reusable memory for what cannot be viewed in
// place: bitmaps, converted times, gathered nullable values, string offsets
// and bytes.
type scratch struct {
	validity []byte
	values   []byte
	offsets  []byte
}

// kind is one row of the table of SDK field types: the Arrow column it
// becomes, how its vector is laid out as an arrowipc.Column, and how its
// values are written as frame JSON (jsonvalues.go).
type kind struct {
	arrow    arrow.DataType
	nullable bool
	tstype   string
	column   func(f *data.Field, s *scratch) arrowipc.Column
	// frameJSON writes the field's values as JSON: its jsonKind's values,
	// or nullable for a nullable type.
	frameJSON frameValues
	// goBytes is the Go memory of one value as the SDK's vector holds it
	// (a nullable one adds its pointer); 0 for text and JSON, whose values
	// are a header and their bytes.
	goBytes int64
}

// kinds is the one table of SDK field types this package writes, with the
// Arrow types the SDK's own MarshalArrow gives them: a field type added
// here is written in both formats. Each row adds a type and its nullable
// variant, whose vector holds pointers and whose column takes nullable.
// Each row fills too the tables a record's JSON is written by: the jsonKind
// of the Arrow column type the row writes in a record (jsonRecordKinds), and
// the SDK field types data.FromArrowRecord gives columns (recordTypes).
var kinds, jsonRecordKinds, recordTypes = func() (
	map[data.FieldType]kind, map[arrow.Type]jsonKind, map[recordKey]data.FieldType) {
	m, rk, rt := map[data.FieldType]kind{}, map[arrow.Type]jsonKind{}, map[recordKey]data.FieldType{}
	add := func(ft data.FieldType, t arrow.DataType, tstype string,
		column, nullable func(*data.Field, *scratch) arrowipc.Column, j jsonKind, goBytes int64) {
		m[ft] = kind{t, false, tstype, column, j.values, goBytes}
		m[ft.NullableType()] = kind{t, true, tstype, nullable, j.nullable, goBytes}
		if j.record != nil {
			rk[t.ID()] = j
		}
		rt[recordKey{t.ID(), false, tstype == TSEnum}] = ft
		rt[recordKey{t.ID(), true, tstype == TSEnum}] = ft.NullableType()
	}
	add(data.FieldTypeInt8, arrow.PrimitiveTypes.Int8, TSNumber, fixed[int8], nullableFixed[int8], jsonInt(putInt[int8], len("-128")), 1)
	add(data.FieldTypeInt16, arrow.PrimitiveTypes.Int16, TSNumber, fixed[int16], nullableFixed[int16], jsonInt(putInt[int16], len("-32768")), 2)
	add(data.FieldTypeInt32, arrow.PrimitiveTypes.Int32, TSNumber, fixed[int32], nullableFixed[int32], jsonInt(putInt[int32], len("-2147483648")), 4)
	add(data.FieldTypeInt64, arrow.PrimitiveTypes.Int64, TSNumber, fixed[int64], nullableFixed[int64], jsonInt(putInt[int64], len("-9223372036854775808")), 8)
	add(data.FieldTypeUint8, arrow.PrimitiveTypes.Uint8, TSNumber, fixed[uint8], nullableFixed[uint8], jsonInt(putUint[uint8], len("255")), 1)
	add(data.FieldTypeUint16, arrow.PrimitiveTypes.Uint16, TSNumber, fixed[uint16], nullableFixed[uint16], jsonInt(putUint[uint16], len("65535")), 2)
	add(data.FieldTypeUint32, arrow.PrimitiveTypes.Uint32, TSNumber, fixed[uint32], nullableFixed[uint32], jsonInt(putUint[uint32], len("4294967295")), 4)
	add(data.FieldTypeUint64, arrow.PrimitiveTypes.Uint64, TSNumber, fixed[uint64], nullableFixed[uint64], jsonInt(putUint[uint64], len("18446744073709551615")), 8)
	add(data.FieldTypeFloat32, arrow.PrimitiveTypes.Float32, TSNumber, fixed[float32], nullableFixed[float32], jsonFixed(putFloat32, maxFloat32Len), 4)
	add(data.FieldTypeFloat64, arrow.PrimitiveTypes.Float64, TSNumber, fixed[float64], nullableFixed[float64], jsonFixed(putFloat64, maxFloat64Len), 8)
	// An enum is a uint16 column in a record: the Uint16 rows write it.
	add(data.FieldTypeEnum, arrow.PrimitiveTypes.Uint16, TSEnum, fixed[data.EnumItemIndex], nullableFixed[data.EnumItemIndex],
		jsonOf(putUint[data.EnumItemIndex], nil, 0), 2)
	add(data.FieldTypeBool, arrow.FixedWidthTypes.Boolean, TSBoolean, bools, nullableBools, jsonOf(putBool, recordVar[bool](putBool), len("false")), 1)
	add(data.FieldTypeTime, Timestamp, TSTime, times, nullableTimes, jsonTimes, 24)
	add(data.FieldTypeString, arrow.BinaryTypes.String, TSString, varWidth[string], nullableVarWidth[string],
		jsonOf(putString, recordVar[string](putString), len("null")), 0)
	add(data.FieldTypeJSON, arrow.BinaryTypes.Binary, TSOther, varWidth[json.RawMessage], nullableVarWidth[json.RawMessage],
		jsonOf(putRaw[json.RawMessage], recordVar[[]byte](putRaw[[]byte]), len("null")), 0)
	return m, rk, rt
}()

// ValueBytes is the Go memory of one value of an SDK field type as its
// vector holds it, but for a nullable type's pointer; fixed is false for
// text and JSON, whose values are a header and their bytes.
func ValueBytes(ft data.FieldType) (n int64, fixed bool) {
	k := kinds[ft.NonNullableType()]
	return k.goBytes, k.goBytes > 0
}

// Values returns the vector of field f, whose elements are of type T (for
// example float64 for a FieldTypeFloat64 field, *float64 for a nullable
// one), as the slice it is: no copy, and writes through it change the field.
// It panics when T is not the field's element type. Sources use it to fill
// a field made with data.NewFieldFromFieldType in place; the encoders read
// every vector through it. Every SDK vector is a Go slice and PointerAt(i)
// returns &vector[i]; the PointerAt contract test pins this, so an SDK that
// changes it fails loudly.
func Values[T any](f *data.Field) []T {
	n := f.Len()
	if n == 0 {
		return nil
	}
	return unsafe.Slice(f.PointerAt(0).(*T), n)
}

type fixedWidth interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// fixed's column is the vector's own memory, as its little-endian bytes
// (every platform Grafana runs plugins on is little-endian).
func fixed[T fixedWidth](f *data.Field, _ *scratch) arrowipc.Column {
	return arrowipc.Column{Values: arrow.GetBytes(Values[T](f))}
}

// withValidity returns c with the validity of v's rows (a nil row is null)
// in s.validity, when any row is null.
func withValidity[P any](c arrowipc.Column, s *scratch, v []*P) arrowipc.Column {
	s.validity = resize(s.validity, (len(v)+7)/8)
	clear(s.validity)
	nulls := 0
	for i, p := range v {
		if p == nil {
			nulls++
			continue
		}
		s.validity[i>>3] |= 1 << (i & 7)
	}
	if nulls > 0 {
		c.NullCount, c.Validity = nulls, s.validity
	}
	return c
}

func resize(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n, n+n/4)
	}
	return b[:n]
}

func nullableFixed[T fixedWidth](f *data.Field, s *scratch) arrowipc.Column {
	v := Values[*T](f)
	var zero T
	size := int(unsafe.Sizeof(zero))
	s.values = resize(s.values, len(v)*size)
	vals := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s.values))), len(v))
	for i, p := range v {
		if p != nil {
			vals[i] = *p
		} else {
			vals[i] = 0
		}
	}
	return withValidity(arrowipc.Column{Values: s.values}, s, v)
}

func bools(f *data.Field, s *scratch) arrowipc.Column {
	v := Values[bool](f)
	s.values = resize(s.values, (len(v)+7)/8)
	clear(s.values)
	for i, b := range v {
		if b {
			s.values[i>>3] |= 1 << (i & 7)
		}
	}
	return arrowipc.Column{Values: s.values}
}

func nullableBools(f *data.Field, s *scratch) arrowipc.Column {
	v := Values[*bool](f)
	s.values = resize(s.values, (len(v)+7)/8)
	clear(s.values)
	for i, b := range v {
		if b != nil && *b {
			s.values[i>>3] |= 1 << (i & 7)
		}
	}
	return withValidity(arrowipc.Column{Values: s.values}, s, v)
}

func times(f *data.Field, s *scratch) arrowipc.Column {
	v := Values[time.Time](f)
	s.values = resize(s.values, 8*len(v))
	for i := range v {
		binary.LittleEndian.PutUint64(s.values[8*i:], uint64(v[i].UnixNano()))
	}
	return arrowipc.Column{Values: s.values}
}

func nullableTimes(f *data.Field, s *scratch) arrowipc.Column {
	v := Values[*time.Time](f)
	s.values = resize(s.values, 8*len(v))
	for i, p := range v {
		var ns int64
		if p != nil {
			ns = p.UnixNano()
		}
		binary.LittleEndian.PutUint64(s.values[8*i:], uint64(ns))
	}
	return withValidity(arrowipc.Column{Values: s.values}, s, v)
}

type bytesLike interface{ ~string | ~[]byte }

func varWidth[T bytesLike](f *data.Field, s *scratch) arrowipc.Column {
	v := Values[T](f)
	s.offsets = resize(s.offsets, 4*(len(v)+1))[:4]
	binary.LittleEndian.PutUint32(s.offsets, 0)
	s.values = s.values[:0]
	for _, x := range v {
		s.values = append(s.values, x...)
		s.offsets = binary.LittleEndian.AppendUint32(s.offsets, uint32(len(s.values)))
	}
	return arrowipc.Column{Offsets: s.offsets, Values: s.values}
}

func nullableVarWidth[T bytesLike](f *data.Field, s *scratch) arrowipc.Column {
	v := Values[*T](f)
	s.offsets = resize(s.offsets, 4*(len(v)+1))[:4]
	binary.LittleEndian.PutUint32(s.offsets, 0)
	s.values = s.values[:0]
	for _, p := range v {
		if p != nil {
			s.values = append(s.values, *p...)
		}
		s.offsets = binary.LittleEndian.AppendUint32(s.offsets, uint32(len(s.values)))
	}
	return withValidity(arrowipc.Column{Offsets: s.offsets, Values: s.values}, s, v)
}
