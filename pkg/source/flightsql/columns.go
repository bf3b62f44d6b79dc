package flightsql

import (
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
