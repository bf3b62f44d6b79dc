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
// Grafana's reader accepts (the output types of normalisation, registered
// with one in types.go). It is the single place that knows how to copy and
// print such a column.
type column struct {
	// tstype is the SDK's TypeScript type string for the field metadata.
	tstype string
	// appendAt appends a[i] (or a null) to b, which was made by
	// array.NewBuilder for a's type.
	appendAt func(b array.Builder, a arrow.Array, i int)
	// text appends a[i] as label text to dst; a[i] is not null.
	text func(dst []byte, a arrow.Array, i int) []byte
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

func intText[T int8 | int16 | int32 | int64](dst []byte, v T) []byte {
	return strconv.AppendInt(dst, int64(v), 10)
}

func uintText[T uint8 | uint16 | uint32 | uint64](dst []byte, v T) []byte {
	return strconv.AppendUint(dst, uint64(v), 10)
}

func floatText[T float32 | float64](bits int) func([]byte, T) []byte {
	return func(dst []byte, v T) []byte { return strconv.AppendFloat(dst, float64(v), 'g', -1, bits) }
}

func appendRaw[T string | []byte](dst []byte, v T) []byte { return append(dst, v...) }

func timeText(dst []byte, v arrow.Timestamp) []byte {
	return time.Unix(0, int64(v)).UTC().AppendFormat(dst, time.RFC3339Nano)
}

// The engine's text and JSON of any Arrow value
//
// appendText writes a value the way DuckDB's CAST(x AS VARCHAR) does, and
// appendJSON the way its to_json does: maps as objects with text keys, unions
// as an object naming the member that holds the value ({"num":2}), decimals
// as numbers with their exact digits, timestamps,
// dates, times and intervals as their text, NULL as null. Blobs are base64
// (DuckDB writes its own escaped form, which no JSON reader decodes); NaN and
// infinities, which JSON numbers cannot hold, are the strings "NaN",
// "Infinity" and "-Infinity". Each type's writers are in its registration
// (types.go): text, else Arrow's ValueStr; json, else the text as a JSON
// string.

// valueWriter appends a[i], which is not null, to dst.
type valueWriter func(dst []byte, a arrow.Array, i int) []byte

// appendText appends the text of a[i], which is not null.
func appendText(dst []byte, a arrow.Array, i int) []byte {
	if w := typeOf(a.DataType().ID()).text; w != nil {
		return w(dst, a, i)
	}
	return append(dst, a.ValueStr(i)...)
}

// encodedText writes an encoded value as its value's text.
func encodedText(dst []byte, a arrow.Array, i int) []byte {
	if vals, j := encodedValues(a), encodedIndex(a, i); !vals.IsNull(j) {
		return appendText(dst, vals, j)
	}
	return append(dst, array.NullValueStr...)
}

// The text and JSON of the canonical extension types (extensionTypes).

func uuidJSON(dst []byte, a arrow.Array, i int) []byte { return appendJSONString(dst, a.ValueStr(i)) }

func bool8JSON(dst []byte, a arrow.Array, i int) []byte {
	return strconv.AppendBool(dst, a.(*extensions.Bool8Array).Value(i))
}

// jsonExtensionJSON writes arrow.json values as they are, or as a JSON
// string when they are not valid JSON.
func jsonExtensionJSON(dst []byte, a arrow.Array, i int) []byte {
	if v := a.(*extensions.JSONArray).ValueJSON(i); json.Valid(v) {
		return append(dst, v...)
	}
	return appendJSONString(dst, a.ValueStr(i))
}

func valueStrText(dst []byte, a arrow.Array, i int) []byte { return append(dst, a.ValueStr(i)...) }

// extensionJSON writes the extension types extensionOf knows as their
// entries say (json, else their text as a JSON string), others as their
// storage.
func extensionJSON(dst []byte, a arrow.Array, i int) []byte {
	e := a.(array.ExtensionArray)
	v, ok := extensionOf(e.ExtensionType())
	switch {
	case !ok:
		return appendJSON(dst, e.Storage(), i)
	case v.json != nil:
		return v.json(dst, a, i)
	}
	return jsonStringFrom(v.text(dst, a, i), len(dst))
}

func extensionText(dst []byte, a arrow.Array, i int) []byte {
	e := a.(array.ExtensionArray)
	if v, ok := extensionOf(e.ExtensionType()); ok {
		return v.text(dst, a, i)
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
	return appendOffset(appendClock(dst, micros*1000), offset, true)
}

// bitText writes DuckDB's BIT (a byte counting the padding bits, then the
// bits, the padding first) as its digits: 101. Its storage is any binary
// layout (opaqueForm.fits).
func bitText(dst []byte, a arrow.Array, i int) []byte {
	b := a.(valueArray[[]byte]).Value(i)
	if len(b) == 0 {
		return dst
	}
	pad := int(b[0])
	for j := pad; j < (len(b)-1)*8; j++ {
		dst = append(dst, '0'+(b[1+j/8]>>(7-j%8))&1)
	}
	return dst
}

// base64Text writes bytes as standard base64, as JSON encoders do.
func base64Text[A valueArray[[]byte]](dst []byte, a arrow.Array, i int) []byte {
	return base64.StdEncoding.AppendEncode(dst, a.(A).Value(i))
}
