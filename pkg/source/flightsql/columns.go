package flightsql

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// column describes how this package handles one of the Arrow types that
// Grafana's reader accepts (the output types of normalisation). It is the
// single place that knows how to copy, compare and print such a column.
type column struct {
	// tstype is the SDK's TypeScript type string for the field metadata.
	tstype string
	// numeric columns are time-series values; all others become labels.
	numeric bool
	// appendAt appends a[i] (or a null) to b, which was made by
	// array.NewBuilder for a's type.
	appendAt func(b array.Builder, a arrow.Array, i int)
	// text appends a[i] as label text to dst; a[i] is not null.
	text func(dst []byte, a arrow.Array, i int) []byte
}

// columns is keyed by the Arrow type IDs Grafana's reader accepts. Timestamps
// are always nanoseconds without a time zone by the time they get here.
var columns = map[arrow.Type]*column{
	arrow.INT8:      numberColumn[int8, *array.Int8, *array.Int8Builder](intText),
	arrow.INT16:     numberColumn[int16, *array.Int16, *array.Int16Builder](intText),
	arrow.INT32:     numberColumn[int32, *array.Int32, *array.Int32Builder](intText),
	arrow.INT64:     numberColumn[int64, *array.Int64, *array.Int64Builder](intText),
	arrow.UINT8:     numberColumn[uint8, *array.Uint8, *array.Uint8Builder](uintText),
	arrow.UINT16:    numberColumn[uint16, *array.Uint16, *array.Uint16Builder](uintText),
	arrow.UINT32:    numberColumn[uint32, *array.Uint32, *array.Uint32Builder](uintText),
	arrow.UINT64:    numberColumn[uint64, *array.Uint64, *array.Uint64Builder](uintText),
	arrow.FLOAT32:   numberColumn[float32, *array.Float32, *array.Float32Builder](floatText[float32](32)),
	arrow.FLOAT64:   numberColumn[float64, *array.Float64, *array.Float64Builder](floatText[float64](64)),
	arrow.BOOL:      valueColumn[bool, *array.Boolean, *array.BooleanBuilder]("boolean", func(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }),
	arrow.STRING:    valueColumn[string, *array.String, *array.StringBuilder]("string", func(dst []byte, v string) []byte { return append(dst, v...) }),
	arrow.BINARY:    valueColumn[[]byte, *array.Binary, *array.BinaryBuilder]("other", func(dst []byte, v []byte) []byte { return append(dst, v...) }), // holds JSON
	arrow.TIMESTAMP: valueColumn[arrow.Timestamp, *array.Timestamp, *array.TimestampBuilder]("time", timeText),
}

type valueArray[T any] interface {
	arrow.Array
	Value(int) T
}

type valueBuilder[T any] interface {
	array.Builder
	Append(T)
}

func valueColumn[T any, A valueArray[T], B valueBuilder[T]](tstype string, text func([]byte, T) []byte) *column {
	return &column{
		tstype: tstype,
		appendAt: func(b array.Builder, a arrow.Array, i int) {
			if a.IsNull(i) {
				b.AppendNull()
				return
			}
			b.(B).Append(a.(A).Value(i))
		},
		text: func(dst []byte, a arrow.Array, i int) []byte { return text(dst, a.(A).Value(i)) },
	}
}

func numberColumn[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64, A valueArray[T], B valueBuilder[T]](text func([]byte, T) []byte) *column {
	c := valueColumn[T, A, B]("number", text)
	c.numeric = true
	return c
}

func intText[T int8 | int16 | int32 | int64](dst []byte, v T) []byte {
	return strconv.AppendInt(dst, int64(v), 10)
}

func uintText[T uint8 | uint16 | uint32 | uint64](dst []byte, v T) []byte {
	return strconv.AppendUint(dst, uint64(v), 10)
}

func floatText[T float32 | float64](bits int) func([]byte, T) []byte {
	return func(dst []byte, v T) []byte { return strconv.AppendFloat(dst, float64(v), 'g', -1, bits) }
}

func timeText(dst []byte, v arrow.Timestamp) []byte {
	return time.Unix(0, int64(v)).UTC().AppendFormat(dst, time.RFC3339Nano)
}

// timestampNS is the only timestamp type Grafana reads correctly.
var timestampNS = &arrow.TimestampType{Unit: arrow.Nanosecond}

// The engine's text and JSON of any Arrow value
//
// appendText writes a value the way DuckDB's CAST(x AS VARCHAR) does, and
// appendJSON the way its to_json does: maps as objects with text keys, unions
// as an object naming the member that holds the value ({"num":2}), decimals
// as numbers with their exact digits, timestamps,
// dates, times and intervals as their text, NULL as null. Blobs are base64
// (DuckDB writes its own escaped form, which no JSON reader decodes); NaN and
// infinities, which JSON numbers cannot hold, are the strings "NaN",
// "Infinity" and "-Infinity".

// valueWriter appends a[i], which is not null, to dst.
type valueWriter func(dst []byte, a arrow.Array, i int) []byte

// textWriters and jsonWriters are keyed by Arrow type ID. A type missing from
// jsonWriters is written as its text in a JSON string; a type missing from
// textWriters as Arrow's own ValueStr.
var textWriters, jsonWriters map[arrow.Type]valueWriter

func init() {
	textWriters = map[arrow.Type]valueWriter{
		arrow.TIMESTAMP: timestampText,
		arrow.DATE32: func(dst []byte, a arrow.Array, i int) []byte {
			return dateText(dst, int64(a.(*array.Date32).Value(i)), math.MaxInt32)
		},
		arrow.DATE64: func(dst []byte, a arrow.Array, i int) []byte {
			return dateText(dst, floorDiv(int64(a.(*array.Date64).Value(i)), 86_400_000), math.MaxInt64)
		},
		arrow.TIME32:   time32Text,
		arrow.TIME64:   time64Text,
		arrow.DURATION: durationText,
		arrow.INTERVAL_MONTHS: func(dst []byte, a arrow.Array, i int) []byte {
			return intervalText(dst, int32(a.(*array.MonthInterval).Value(i)), 0, 0)
		},
		arrow.INTERVAL_DAY_TIME:       dayTimeText,
		arrow.INTERVAL_MONTH_DAY_NANO: monthDayNanoText,
		arrow.DECIMAL32:               decimalText,
		arrow.DECIMAL64:               decimalText,
		arrow.DECIMAL128:              decimalText,
		arrow.DECIMAL256:              decimalText,
		arrow.BINARY:                  base64Text[*array.Binary],
		arrow.LARGE_BINARY:            base64Text[*array.LargeBinary],
		arrow.BINARY_VIEW:             base64Text[*array.BinaryView],
		arrow.FIXED_SIZE_BINARY:       base64Text[*array.FixedSizeBinary],
		arrow.EXTENSION:               extensionText,
		arrow.DICTIONARY: func(dst []byte, a arrow.Array, i int) []byte {
			d := a.(*array.Dictionary)
			return appendTextOrNull(dst, d.Dictionary(), d.GetValueIndex(i))
		},
		arrow.RUN_END_ENCODED: func(dst []byte, a arrow.Array, i int) []byte {
			r := a.(*array.RunEndEncoded)
			return appendTextOrNull(dst, r.Values(), r.GetPhysicalIndex(i))
		},
	}
	number := func(dst []byte, a arrow.Array, i int) []byte { return append(dst, a.ValueStr(i)...) }
	jsonWriters = map[arrow.Type]valueWriter{
		arrow.INT8: number, arrow.INT16: number, arrow.INT32: number, arrow.INT64: number,
		arrow.UINT8: number, arrow.UINT16: number, arrow.UINT32: number, arrow.UINT64: number,
		arrow.FLOAT16: func(dst []byte, a arrow.Array, i int) []byte {
			return jsonFloat(dst, float64(a.(*array.Float16).Value(i).Float32()), 32)
		},
		arrow.FLOAT32: func(dst []byte, a arrow.Array, i int) []byte {
			return jsonFloat(dst, float64(a.(*array.Float32).Value(i)), 32)
		},
		arrow.FLOAT64: func(dst []byte, a arrow.Array, i int) []byte { return jsonFloat(dst, a.(*array.Float64).Value(i), 64) },
		arrow.BOOL: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendBool(dst, a.(*array.Boolean).Value(i))
		},
		arrow.DECIMAL32:  decimalText,
		arrow.DECIMAL64:  decimalText,
		arrow.DECIMAL128: decimalText,
		arrow.DECIMAL256: decimalText,
		arrow.NULL:       func(dst []byte, _ arrow.Array, _ int) []byte { return append(dst, "null"...) },

		arrow.LIST: jsonList, arrow.LARGE_LIST: jsonList, arrow.FIXED_SIZE_LIST: jsonList,
		arrow.LIST_VIEW: jsonList, arrow.LARGE_LIST_VIEW: jsonList,
		arrow.STRUCT: jsonStruct,
		arrow.MAP:    jsonMap,
		arrow.SPARSE_UNION: func(dst []byte, a arrow.Array, i int) []byte {
			u := a.(*array.SparseUnion)
			return jsonUnion(dst, u, u.ChildID(i), i)
		},
		arrow.DENSE_UNION: func(dst []byte, a arrow.Array, i int) []byte {
			u := a.(*array.DenseUnion)
			return jsonUnion(dst, u, u.ChildID(i), int(u.ValueOffset(i)))
		},
		arrow.DICTIONARY: func(dst []byte, a arrow.Array, i int) []byte {
			d := a.(*array.Dictionary)
			return appendJSON(dst, d.Dictionary(), d.GetValueIndex(i))
		},
		arrow.RUN_END_ENCODED: func(dst []byte, a arrow.Array, i int) []byte {
			r := a.(*array.RunEndEncoded)
			return appendJSON(dst, r.Values(), r.GetPhysicalIndex(i))
		},
		arrow.EXTENSION: extensionJSON,
	}
}

// appendText appends the text of a[i], which is not null.
func appendText(dst []byte, a arrow.Array, i int) []byte {
	if w, ok := textWriters[a.DataType().ID()]; ok {
		return w(dst, a, i)
	}
	return append(dst, a.ValueStr(i)...)
}

func appendTextOrNull(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, array.NullValueStr...)
	}
	return appendText(dst, a, i)
}

// extensionValues are the text and JSON of the canonical extension types, by
// extension name: arrow.json values as they are (a JSON string when they are
// not valid JSON), bool8 as a boolean, uuid as its text 8-4-4-4-12.
var extensionValues = map[string]struct{ text, json valueWriter }{
	extensions.NewUUIDType().ExtensionName(): {
		text: valueStrText,
		json: func(dst []byte, a arrow.Array, i int) []byte { return appendJSONString(dst, a.ValueStr(i)) },
	},
	extensions.NewBool8Type().ExtensionName(): {
		text: valueStrText,
		json: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendBool(dst, a.(*extensions.Bool8Array).Value(i))
		},
	},
	(&extensions.JSONType{}).ExtensionName(): {
		text: valueStrText,
		json: func(dst []byte, a arrow.Array, i int) []byte {
			if v := a.(*extensions.JSONArray).ValueJSON(i); json.Valid(v) {
				return append(dst, v...)
			}
			return appendJSONString(dst, a.ValueStr(i))
		},
	},
}

func valueStrText(dst []byte, a arrow.Array, i int) []byte { return append(dst, a.ValueStr(i)...) }

// extensionJSON writes the extension types of extensionValues as those say,
// the opaque types of opaqueForms as their number or text, other extensions
// as their storage.
func extensionJSON(dst []byte, a arrow.Array, i int) []byte {
	e := a.(array.ExtensionArray)
	if v, ok := extensionValues[e.ExtensionType().ExtensionName()]; ok {
		return v.json(dst, a, i)
	}
	start := len(dst)
	out, number, ok := opaqueText(dst, e, i)
	switch {
	case ok && number:
		return out
	case ok:
		text := string(out[start:])
		return appendJSONString(out[:start], text)
	}
	return appendJSON(dst, e.Storage(), i)
}

func extensionText(dst []byte, a arrow.Array, i int) []byte {
	e := a.(array.ExtensionArray)
	if v, ok := extensionValues[e.ExtensionType().ExtensionName()]; ok {
		return v.text(dst, a, i)
	}
	if out, _, ok := opaqueText(dst, e, i); ok {
		return out
	}
	return appendText(dst, e.Storage(), i)
}

// int128Reader and uint128Reader read 16-byte little-endian integers
// (DuckDB's HUGEINT and UHUGEINT) from a fixed_size_binary[16] column.
var int128Reader = decimalReader{
	int64At: func(a arrow.Array, i int) (int64, bool) {
		lo, hi := halves(a, i)
		return int64(lo), int64(hi) == int64(lo)>>63
	},
	appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
		lo, hi := halves(a, i)
		return appendInt128(dst, hi, lo)
	},
}

var uint128Reader = decimalReader{
	int64At: func(a arrow.Array, i int) (int64, bool) {
		lo, hi := halves(a, i)
		return int64(lo), hi == 0 && lo <= math.MaxInt64
	},
	appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
		lo, hi := halves(a, i)
		return appendUint128(dst, hi, lo)
	},
}

// appendInt128 appends the two's complement 128-bit integer hi:lo in base 10.
func appendInt128(dst []byte, hi, lo uint64) []byte {
	if int64(hi) < 0 {
		dst = append(dst, '-')
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	return appendUint128(dst, hi, lo)
}

// appendUint128 appends the unsigned 128-bit integer hi:lo in base 10,
// without allocating: 19 digits at a time.
func appendUint128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	const e19 = 10_000_000_000_000_000_000
	q, r := bits.Div64(hi%e19, lo, e19)
	dst = appendUint128(dst, hi/e19, q)
	var buf [20]byte
	digits := strconv.AppendUint(buf[:0], r, 10)
	for range 19 - len(digits) {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

func halves(a arrow.Array, i int) (lo, hi uint64) {
	b := a.(*array.FixedSizeBinary).Value(i)
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
}

// timeTZText writes DuckDB's TIMETZ (8 bytes, little-endian: microseconds
// << 24 | (57599 - offset seconds)) as DuckDB does: 01:02:03+05, 01:02:03-05:30.
func timeTZText(dst []byte, a arrow.Array, i int) []byte {
	bits := binary.LittleEndian.Uint64(a.(*array.FixedSizeBinary).Value(i))
	const maxOffset = 16*60*60 - 1
	micros, offset := int64(bits>>24), maxOffset-int64(bits&(1<<24-1))
	dst = appendClock(dst, micros*1000)
	if offset < 0 {
		dst = append(dst, '-')
		offset = -offset
	} else {
		dst = append(dst, '+')
	}
	dst = appendPadded(dst, offset/3600, 2)
	if offset%3600 != 0 {
		dst = append(dst, ':')
		dst = appendPadded(dst, offset/60%60, 2)
		if offset%60 != 0 {
			dst = append(dst, ':')
			dst = appendPadded(dst, offset%60, 2)
		}
	}
	return dst
}

// bitText writes DuckDB's BIT (a byte counting the padding bits, then the
// bits, the padding first) as its digits: 101.
func bitText(dst []byte, a arrow.Array, i int) []byte {
	b := a.(*array.Binary).Value(i)
	if len(b) == 0 {
		return dst
	}
	pad := int(b[0])
	for j := pad; j < (len(b)-1)*8; j++ {
		dst = append(dst, '0'+(b[1+j/8]>>(7-j%8))&1)
	}
	return dst
}

func base64Text[A valueArray[[]byte]](dst []byte, a arrow.Array, i int) []byte {
	return base64.StdEncoding.AppendEncode(dst, a.(A).Value(i))
}
