// Nested values as JSON, written the way DuckDB's to_json writes them.

package flightsql

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

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
