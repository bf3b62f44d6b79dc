package flightsql

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
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

// appendJSON appends a[i] as one JSON value.
func appendJSON(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, "null"...)
	}
	if w, ok := jsonWriters[a.DataType().ID()]; ok {
		return w(dst, a, i)
	}
	start := len(dst)
	dst = appendText(dst, a, i)
	text := string(dst[start:])
	return appendJSONString(dst[:start], text)
}

func jsonList(dst []byte, a arrow.Array, i int) []byte {
	l := a.(array.ListLike)
	start, end := l.ValueOffsets(i)
	values := l.ListValues()
	dst = append(dst, '[')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		dst = appendJSON(dst, values, int(j))
	}
	return append(dst, ']')
}

func jsonStruct(dst []byte, a arrow.Array, i int) []byte {
	s := a.(*array.Struct)
	st := s.DataType().(*arrow.StructType)
	dst = append(dst, '{')
	for j := range s.NumField() {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, st.Field(j).Name)
		dst = append(dst, ':')
		dst = appendJSON(dst, s.Field(j), i)
	}
	return append(dst, '}')
}

// jsonMap writes a map as an object; keys that are not text are written as
// the text of their JSON (1 → "1").
func jsonMap(dst []byte, a arrow.Array, i int) []byte {
	m := a.(*array.Map)
	start, end := m.ValueOffsets(i)
	keys, items := m.Keys(), m.Items()
	dst = append(dst, '{')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		k := len(dst)
		dst = appendJSON(dst, keys, int(j))
		if dst[k] != '"' {
			text := string(dst[k:])
			dst = appendJSONString(dst[:k], text)
		}
		dst = append(dst, ':')
		dst = appendJSON(dst, items, int(j))
	}
	return append(dst, '}')
}

// jsonUnion writes a union value as DuckDB's to_json does, an object naming
// the member that holds it ({"num":2}); a union holding a null is null (Arrow
// cannot tell a null union from one whose member is null).
func jsonUnion(dst []byte, u array.Union, child, i int) []byte {
	values := u.Field(child)
	if values.IsNull(i) {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	dst = appendJSONString(dst, u.DataType().(arrow.UnionType).Fields()[child].Name)
	dst = append(dst, ':')
	dst = appendJSON(dst, values, i)
	return append(dst, '}')
}

// jsonFloat writes a float as encoding/json does; NaN and infinities as strings.
func jsonFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	abs := math.Abs(f)
	fm := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fm = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fm, -1, bits)
	if n := len(dst); fm == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 → e-7
		dst = dst[:n-1]
	}
	return dst
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

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civil returns the calendar date of a day number (days since 1970-01-01),
// valid for any int64 day count a date or timestamp can hold.
func civil(days int64) (year int64, month, day int) {
	// Howard Hinnant's days_from_civil inverse.
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, int(m), int(d)
}

func appendPadded(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for n := len(s); n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendDate writes YYYY-MM-DD; years before 1 as DuckDB does (0044-03-15 (BC)).
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civil(days)
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(m), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(d), 2)
	if bc {
		dst = append(dst, " (BC)"...)
	}
	return dst
}

// appendClock writes HH:MM:SS[.fraction] of ns nanoseconds (non-negative),
// the fraction without trailing zeros; hours may exceed 23.
func appendClock(dst []byte, ns int64) []byte {
	sec := ns / 1e9
	frac := ns % 1e9
	dst = appendPadded(dst, sec/3600, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec/60%60, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec%60, 2)
	if frac != 0 {
		dst = append(dst, '.')
		start := len(dst)
		dst = appendPadded(dst, frac, 9)
		for dst[len(dst)-1] == '0' && len(dst) > start {
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

func dateText(dst []byte, days, maxV int64) []byte {
	switch days {
	case maxV:
		return append(dst, "infinity"...)
	case -maxV:
		return append(dst, "-infinity"...)
	}
	return appendDate(dst, days)
}

// zones caches the time zones of timestamp types.
var zones sync.Map // name → *time.Location

func zone(name string) *time.Location {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		if off, ok := parseOffset(name); ok {
			l = time.FixedZone(name, off)
		} else {
			l = time.UTC // an unknown zone: the instant in UTC, still exact
		}
	}
	zones.Store(name, l)
	return l
}

// parseOffset reads a zone written as an offset: +05:30, -08:00, +0100.
func parseOffset(s string) (int, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	if len(digits) != 2 && len(digits) != 4 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false
	}
	h, m := n, 0
	if len(digits) == 4 {
		h, m = n/100, n%100
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// timestampText writes YYYY-MM-DD HH:MM:SS[.fraction], and for a timestamp
// with a zone the local time there followed by its offset (+00, -05,
// +05:30), as DuckDB writes TIMESTAMPTZ; infinities as infinity, -infinity.
func timestampText(dst []byte, a arrow.Array, i int) []byte {
	tt := a.DataType().(*arrow.TimestampType)
	v := int64(a.(*array.Timestamp).Value(i))
	if isInfinity(v, math.MaxInt64) {
		if v > 0 {
			return append(dst, "infinity"...)
		}
		return append(dst, "-infinity"...)
	}
	per := unitNS[tt.Unit]
	perSec := 1e9 / per
	sec, sub := floorDiv(v, perSec), v-floorDiv(v, perSec)*perSec
	offset := 0
	if tt.TimeZone != "" {
		_, offset = time.Unix(sec, 0).In(zone(tt.TimeZone)).Zone()
		sec += int64(offset)
	}
	days := floorDiv(sec, 86400)
	y, _, _ := civil(days)
	dst = appendDate(dst, days)
	if y <= 0 { // the (BC) mark goes after the time
		dst = dst[:len(dst)-len(" (BC)")]
	}
	dst = append(dst, ' ')
	dst = appendClock(dst, (sec-days*86400)*1e9+sub*per)
	if tt.TimeZone != "" {
		if offset < 0 {
			dst = append(dst, '-')
			offset = -offset
		} else {
			dst = append(dst, '+')
		}
		dst = appendPadded(dst, int64(offset/3600), 2)
		if m := offset % 3600 / 60; m != 0 {
			dst = append(dst, ':')
			dst = appendPadded(dst, int64(m), 2)
		}
	}
	if y <= 0 {
		dst = append(dst, " (BC)"...)
	}
	return dst
}

func time32Text(dst []byte, a arrow.Array, i int) []byte {
	t := a.(*array.Time32)
	return appendClock(dst, int64(t.Value(i))*unitNS[t.DataType().(*arrow.Time32Type).Unit])
}

func time64Text(dst []byte, a arrow.Array, i int) []byte {
	t := a.(*array.Time64)
	return appendClock(dst, int64(t.Value(i))*unitNS[t.DataType().(*arrow.Time64Type).Unit])
}

// intervalText writes an interval as DuckDB does: "1 year 2 months 3 days
// 04:05:06.5", "-1 day -01:00:00", "00:00:00" when it is zero.
func intervalText(dst []byte, months, days int32, ns int64) []byte {
	start := len(dst)
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 && v != -1 {
			dst = append(dst, 's')
		}
	}
	part(int64(months/12), "year")
	part(int64(months%12), "month")
	part(int64(days), "day")
	if ns != 0 {
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		u := uint64(ns)
		if ns < 0 {
			dst = append(dst, '-')
			u = uint64(-ns) // math.MinInt64 too: two's complement
		}
		dst = appendClockU(dst, u)
	} else if len(dst) == start {
		dst = append(dst, "00:00:00"...)
	}
	return dst
}

// appendClockU is appendClock for magnitudes up to 2^63 nanoseconds.
func appendClockU(dst []byte, ns uint64) []byte {
	if ns <= math.MaxInt64 {
		return appendClock(dst, int64(ns))
	}
	return appendClock(dst, math.MaxInt64) // only |math.MinInt64| gets here
}

func monthDayNanoText(dst []byte, a arrow.Array, i int) []byte {
	v := a.(*array.MonthDayNanoInterval).Value(i)
	return intervalText(dst, v.Months, v.Days, v.Nanoseconds)
}

func dayTimeText(dst []byte, a arrow.Array, i int) []byte {
	v := a.(*array.DayTimeInterval).Value(i)
	return intervalText(dst, 0, v.Days, int64(v.Milliseconds)*1e6)
}

// durationText writes a duration as an interval of hours, minutes and
// seconds (DuckDB has no duration type).
func durationText(dst []byte, a arrow.Array, i int) []byte {
	d := a.(*array.Duration)
	v := int64(d.Value(i))
	per := unitNS[d.DataType().(*arrow.DurationType).Unit]
	if v > math.MaxInt64/per || v < math.MinInt64/per {
		return append(dst, d.ValueStr(i)...) // beyond 292 years of nanoseconds
	}
	return intervalText(dst, 0, 0, v*per)
}

// decimalReader reads the unscaled values of one decimal width.
type decimalReader struct {
	// int64At returns a[i]'s unscaled value when it fits in an int64.
	int64At func(a arrow.Array, i int) (int64, bool)
	// appendDigits appends a[i]'s unscaled value in base 10.
	appendDigits func(dst []byte, a arrow.Array, i int) []byte
}

var decimals = map[arrow.Type]decimalReader{
	arrow.DECIMAL32: {
		int64At: func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Decimal32).Value(i)), true },
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendInt(dst, int64(a.(*array.Decimal32).Value(i)), 10)
		},
	},
	arrow.DECIMAL64: {
		int64At: func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Decimal64).Value(i)), true },
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendInt(dst, int64(a.(*array.Decimal64).Value(i)), 10)
		},
	},
	arrow.DECIMAL128: {
		int64At: func(a arrow.Array, i int) (int64, bool) {
			n := a.(*array.Decimal128).Value(i)
			lo := n.LowBits()
			return int64(lo), n.HighBits() == int64(lo)>>63
		},
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			n := a.(*array.Decimal128).Value(i)
			return appendInt128(dst, uint64(n.HighBits()), n.LowBits())
		},
	},
	arrow.DECIMAL256: {
		int64At: func(a arrow.Array, i int) (int64, bool) {
			w := a.(*array.Decimal256).Value(i).Array()
			sign := uint64(int64(w[0]) >> 63)
			return int64(w[0]), w[1] == sign && w[2] == sign && w[3] == sign
		},
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			n := a.(*array.Decimal256).Value(i)
			w := n.Array()
			if sign := uint64(int64(w[0]) >> 63); w[1] == sign && w[2] == sign && w[3] == sign {
				return strconv.AppendInt(dst, int64(w[0]), 10)
			}
			return n.BigInt().Append(dst, 10)
		},
	},
}

// appendDecimal appends the exact text of decimal a[i] at its scale:
// "-12.50" for -1250 at scale 2, "1200" for 12 at scale -2.
func appendDecimal(dst []byte, d decimalReader, a arrow.Array, i int, scale int32) []byte {
	start := len(dst)
	dst = d.appendDigits(dst, a, i)
	if scale <= 0 {
		if scale < 0 && !(len(dst) == start+1 && dst[start] == '0') {
			for range -scale {
				dst = append(dst, '0')
			}
		}
		return dst
	}
	digits := start
	if dst[start] == '-' {
		digits++
	}
	// Left-pad with zeros so there is at least one digit before the point.
	if n := len(dst) - digits; n <= int(scale) {
		pad := int(scale) - n + 1
		dst = append(dst, make([]byte, pad)...)
		copy(dst[digits+pad:], dst[digits:len(dst)-pad])
		for j := range pad {
			dst[digits+j] = '0'
		}
	}
	at := len(dst) - int(scale)
	dst = append(dst, 0)
	copy(dst[at+1:], dst[at:len(dst)-1])
	dst[at] = '.'
	return dst
}

func decimalText(dst []byte, a arrow.Array, i int) []byte {
	return appendDecimal(dst, decimals[a.DataType().ID()], a, i, a.DataType().(arrow.DecimalType).GetScale())
}
