package frame

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// This file holds how each column type's values are written as frame JSON:
// the field-type table (kinds, fields.go) gives each SDK field type its
// jsonKind, built here, which holds the writer of an SDK field of that type,
// of its nullable variant and of the Arrow column it is in a record. Each
// writer appends the elements of the column's values array, without the
// brackets, for a column of at least one row, and reports a column it
// cannot read in w.err.

type (
	frameValues  func(w *JSONWriter, dst []byte, f *data.Field) []byte
	recordValues func(w *JSONWriter, dst []byte, a arrow.Array, nullable bool) []byte
	// put appends value v of row row.
	put[T any] func(w *JSONWriter, dst []byte, v T, row int) []byte
)

// jsonKind is how the values of one row of the field-type table (kinds)
// are written: of an SDK field of the type, and of the Arrow column the type
// becomes in a record, whose values take at most maxLen bytes (null
// included), but for the bytes of a text or binary value and their escapes
// (JSONSizeHint). A kind whose record column another kind writes (an enum
// is a uint16 column) has no record writer.
type jsonKind struct {
	values, nullable frameValues
	record           recordValues
	maxLen           int
	// valueLen, when set, bounds a record column's values by their own
	// (integers, times) rather than the type's maxLen (JSONSizeHint).
	valueLen func(a arrow.Array) int
}

// jsonOf is the jsonKind of an SDK field type whose values are of type T
// (and of its nullable variant, *T), written by p; its record column is
// written by record.
func jsonOf[T any](p put[T], record recordValues, maxLen int) jsonKind {
	return jsonKind{
		values: func(w *JSONWriter, dst []byte, f *data.Field) []byte {
			for i, v := range Values[T](f) {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = p(w, dst, v, i)
			}
			return dst
		},
		nullable: func(w *JSONWriter, dst []byte, f *data.Field) []byte {
			for i, v := range Values[*T](f) {
				if i > 0 {
					dst = append(dst, ',')
				}
				if v == nil {
					dst = append(dst, "null"...)
					continue
				}
				dst = p(w, dst, *v, i)
			}
			return dst
		},
		record: record,
		maxLen: maxLen,
	}
}

// jsonFixed is jsonOf for a fixed-width type, whose record column is read
// in place.
func jsonFixed[T fixedWidth](p put[T], maxLen int) jsonKind {
	return jsonOf(p, func(w *JSONWriter, dst []byte, a arrow.Array, nullable bool) []byte {
		vals, err := fixedValues[T](a)
		if err != nil {
			w.err = err
			return dst
		}
		nulls := nullable && a.NullN() > 0
		for i, v := range vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			if nulls && a.IsNull(i) {
				dst = append(dst, "null"...)
				continue
			}
			dst = p(w, dst, v, i)
		}
		return dst
	}, maxLen)
}

// jsonInt is jsonFixed for an integer type, whose record column is bounded
// by its own least and greatest values.
func jsonInt[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64](p put[T], maxLen int) jsonKind {
	k := jsonFixed(p, maxLen)
	k.valueLen = intLen[T]
	return k
}

// The longest values: below 1e21 a float is a sign and up to 21 integer
// digits (float32's most); from 1e-6, "-0.00000" and 17 digits (float64's).
// Times are milliseconds and, for a row with a sub-millisecond part, its
// nanoseconds in the column's nanos element.
const (
	maxFloat32Len = len("-") + 21
	maxFloat64Len = len("-0.00000") + 17
	maxTimeLen    = len("-9223372036854") + len("999999,")
)

// jsonTimes is the jsonKind of times.
var jsonTimes = jsonKind{values: frameTimes, nullable: frameNullableTimes, record: recordTimes, maxLen: maxTimeLen, valueLen: timeLen}

// fixedValues views the values of a fixed-width column in place.
func fixedValues[T fixedWidth](a arrow.Array) ([]T, error) {
	d := a.Data()
	var zero T
	size := int(unsafe.Sizeof(zero))
	bufs := d.Buffers()
	need := (d.Offset() + d.Len()) * size
	if len(bufs) < 2 || bufs[1] == nil || bufs[1].Len() < need {
		return nil, fmt.Errorf("the %s column's values buffer holds fewer than its %d rows", a.DataType(), d.Len())
	}
	b := bufs[1].Bytes()
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), d.Offset()+d.Len())[d.Offset():], nil
}

// recordVar is the writer of a column read value by value (Value(i)):
// utf8, binary and bool.
func recordVar[T string | []byte | bool](p put[T]) recordValues {
	return func(w *JSONWriter, dst []byte, a arrow.Array, nullable bool) []byte {
		col, ok := a.(interface {
			arrow.Array
			Value(int) T
		})
		if !ok {
			w.err = fmt.Errorf("internal: a %s column is a %T", a.DataType(), a)
			return dst
		}
		nulls := nullable && a.NullN() > 0
		for i := range a.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			if nulls && a.IsNull(i) {
				dst = append(dst, "null"...)
				continue
			}
			dst = p(w, dst, col.Value(i), i)
		}
		return dst
	}
}

func putInt[T ~int8 | ~int16 | ~int32 | ~int64](_ *JSONWriter, dst []byte, v T, _ int) []byte {
	return strconv.AppendInt(dst, int64(v), 10)
}

func putUint[T ~uint8 | ~uint16 | ~uint32 | ~uint64](_ *JSONWriter, dst []byte, v T, _ int) []byte {
	return strconv.AppendUint(dst, uint64(v), 10)
}

func putBool(_ *JSONWriter, dst []byte, v bool, _ int) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// putFloat64 writes v as jsoniter's WriteFloat64 does (shortest
// representation, exponent form below 1e-6 and from 1e21 on, the exponent
// as strconv writes it: 1e-07), and NaN and ±Inf as null, with the row
// added to the field's entities.
func putFloat64(w *JSONWriter, dst []byte, v float64, row int) []byte {
	if v-v != 0 { // NaN or ±Inf
		return w.entity(dst, v, row)
	}
	f := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		f = 'e'
	}
	return strconv.AppendFloat(dst, v, f, -1, 64)
}

// putFloat32 is putFloat64 for float32 (jsoniter's WriteFloat32: the
// thresholds compared as float32, the shortest float32 representation).
func putFloat32(w *JSONWriter, dst []byte, v float32, row int) []byte {
	if v-v != 0 {
		return w.entity(dst, float64(v), row)
	}
	f := byte('f')
	if abs := float32(math.Abs(float64(v))); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		f = 'e'
	}
	return strconv.AppendFloat(dst, float64(v), f, -1, 32)
}

// entity writes null for NaN or ±Inf v and adds row to the field's
// entities of its kind.
func (w *JSONWriter) entity(dst []byte, v float64, row int) []byte {
	k := entNaN
	switch {
	case math.IsInf(v, 1):
		k = entInf
	case math.IsInf(v, -1):
		k = entNegInf
	}
	w.ents[k] = append(w.ents[k], row)
	return append(dst, "null"...)
}

func putString(_ *JSONWriter, dst []byte, v string, _ int) []byte {
	return appendQuoted(dst, v, quoteHTML)
}

// putRaw writes a JSON value as the SDK's jsoniter configuration does
// (its ValidateJsonRawMessage): as it is when it reads as JSON, else null.
// jsoniter reads the value as Go values, so a number beyond float64 makes
// it null too; what jsoniter reads past its first value the SDK writes as
// it is, and the frame does not parse (`1 2`) or holds more values than
// rows (`1,2`): written as null here.
func putRaw[T ~[]byte](_ *JSONWriter, dst []byte, v T, _ int) []byte {
	if len(v) == 0 || !json.Valid(v) || overflows(v) {
		return append(dst, "null"...)
	}
	return append(dst, v...)
}

// overflows reports whether valid JSON v holds a number whose magnitude is
// beyond float64's (strconv.ParseFloat's range error).
func overflows(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"': // skip the string
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			j, exp := i, false
			for ; j < len(v) && isNumberByte(v[j]); j++ {
				exp = exp || v[j] == 'e' || v[j] == 'E'
			}
			if exp || j-i > 300 {
				if _, err := strconv.ParseFloat(bytesView(v[i:j]), 64); err != nil {
					return true
				}
			}
			i = j - 1
		}
	}
	return false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// Times are written as the SDK writes them: milliseconds since the epoch,
// rounded down (time.Time.UnixMilli), and, when a row of the field has a
// sub-millisecond part, the field's nanos element: each row's part (0 for
// null), in nanoseconds.

// appendNanos writes the field's nanos element of n rows, sub(i) the part
// of row i.
func (w *JSONWriter) appendNanos(n int, sub func(i int) int64) {
	w.fieldNanos = append(w.fieldNanos, '[')
	for i := range n {
		w.fieldNanos = appendComma(w.fieldNanos, i)
		w.fieldNanos = strconv.AppendInt(w.fieldNanos, sub(i), 10)
	}
	w.fieldNanos = append(w.fieldNanos, ']')
}

func frameTimes(w *JSONWriter, dst []byte, f *data.Field) []byte {
	v := Values[time.Time](f)
	sub := false
	for i := range v {
		dst = appendComma(dst, i)
		dst = strconv.AppendInt(dst, v[i].UnixMilli(), 10)
		sub = sub || v[i].Nanosecond()%1e6 != 0
	}
	if sub {
		w.appendNanos(len(v), func(i int) int64 { return int64(v[i].Nanosecond() % 1e6) })
	}
	return dst
}

func frameNullableTimes(w *JSONWriter, dst []byte, f *data.Field) []byte {
	v := Values[*time.Time](f)
	sub := false
	for i, t := range v {
		dst = appendComma(dst, i)
		if t == nil {
			dst = append(dst, "null"...)
			continue
		}
		dst = strconv.AppendInt(dst, t.UnixMilli(), 10)
		sub = sub || t.Nanosecond()%1e6 != 0
	}
	if sub {
		w.appendNanos(len(v), func(i int) int64 {
			if v[i] == nil {
				return 0
			}
			return int64(v[i].Nanosecond() % 1e6)
		})
	}
	return dst
}

// splitMilli splits nanoseconds since the epoch into milliseconds, rounded
// down, and the nanoseconds after them.
func splitMilli(ns int64) (ms, sub int64) {
	ms, sub = ns/1e6, ns%1e6
	if sub < 0 {
		ms, sub = ms-1, sub+1e6
	}
	return ms, sub
}

// recordTimes writes a timestamp[ns] column as data.FromArrowRecord reads
// it (time.Unix(0, ns)) and the SDK writes the times.
func recordTimes(w *JSONWriter, dst []byte, a arrow.Array, nullable bool) []byte {
	vals, err := fixedValues[int64](a)
	if err != nil {
		w.err = err
		return dst
	}
	nulls := nullable && a.NullN() > 0
	sub := false
	for i, ns := range vals {
		dst = appendComma(dst, i)
		if nulls && a.IsNull(i) {
			dst = append(dst, "null"...)
			continue
		}
		ms, s := splitMilli(ns)
		dst = strconv.AppendInt(dst, ms, 10)
		sub = sub || s != 0
	}
	if sub {
		w.appendNanos(len(vals), func(i int) int64 {
			if nulls && a.IsNull(i) {
				return 0
			}
			_, s := splitMilli(vals[i])
			return s
		})
	}
	return dst
}
