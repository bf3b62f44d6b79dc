// Nested values as JSON, written the way DuckDB's to_json writes them.

package flightsql

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// appendJSON appends a[i] as one JSON value.
func appendJSON(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, "null"...)
	}
	if w := typeOf(a.DataType().ID()).json; w != nil {
		return w(dst, a, i)
	}
	return jsonStringFrom(appendText(dst, a, i), len(dst))
}

// jsonStringFrom makes dst[start:], text, a JSON string.
func jsonStringFrom(dst []byte, start int) []byte {
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
			dst = jsonStringFrom(dst, k)
		}
		dst = append(dst, ':')
		dst = appendJSON(dst, items, int(j))
	}
	return append(dst, '}')
}

// unionJSON writes a union value as DuckDB's to_json does, an object naming
// the member that holds it ({"num":2}); a union holding a null is null (Arrow
// cannot tell a null union from one whose member is null).
func unionJSON(dst []byte, a arrow.Array, i int) []byte {
	u := a.(array.Union)
	child := u.ChildID(i)
	if d, dense := a.(*array.DenseUnion); dense {
		i = int(d.ValueOffset(i))
	}
	values := u.Field(child)
	if values.IsNull(i) {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	dst = appendJSONString(dst, u.UnionType().Fields()[child].Name)
	dst = append(dst, ':')
	dst = appendJSON(dst, values, i)
	return append(dst, '}')
}

// encodedJSON writes an encoded value as its value's JSON.
func encodedJSON(dst []byte, a arrow.Array, i int) []byte {
	return appendJSON(dst, encodedValues(a), encodedIndex(a, i))
}

func boolJSON(dst []byte, a arrow.Array, i int) []byte {
	return strconv.AppendBool(dst, a.(*array.Boolean).Value(i))
}

func float16JSON(dst []byte, a arrow.Array, i int) []byte {
	return jsonFloat(dst, float64(a.(*array.Float16).Value(i).Float32()), 32)
}

func nullJSON(dst []byte, _ arrow.Array, _ int) []byte { return append(dst, "null"...) }

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

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
			i++
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return append(dst, '"')
}
