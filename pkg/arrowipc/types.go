package arrowipc

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// layout is how a column's values are laid out in body buffers.
type layout uint8

const (
	layoutFixed  layout = iota // validity + values of width bytes each
	layoutBitmap               // validity + values bitmap (bool)
	layoutVar                  // validity + int32 offsets + data (utf8, binary)
)

// typeInfo is one row of the table of supported column types: how the type
// is written in the schema and how its values are laid out in the body.
type typeInfo struct {
	fbType byte
	signed bool  // Int
	prec   int16 // FloatingPoint
	layout layout
	width  int // bytes per value for layoutFixed; an Int's bit width is 8 × width
}

// types is the one table of column types the encoder writes, keyed by
// arrow-go's type ID. Timestamps need a further check (unit), see lookupType.
var types = map[arrow.Type]typeInfo{
	arrow.BOOL:      {fbType: format.TypeBool, layout: layoutBitmap},
	arrow.INT8:      {fbType: format.TypeInt, signed: true, width: 1},
	arrow.INT16:     {fbType: format.TypeInt, signed: true, width: 2},
	arrow.INT32:     {fbType: format.TypeInt, signed: true, width: 4},
	arrow.INT64:     {fbType: format.TypeInt, signed: true, width: 8},
	arrow.UINT8:     {fbType: format.TypeInt, width: 1},
	arrow.UINT16:    {fbType: format.TypeInt, width: 2},
	arrow.UINT32:    {fbType: format.TypeInt, width: 4},
	arrow.UINT64:    {fbType: format.TypeInt, width: 8},
	arrow.FLOAT32:   {fbType: format.TypeFloatingPoint, prec: format.PrecisionSingle, width: 4},
	arrow.FLOAT64:   {fbType: format.TypeFloatingPoint, prec: format.PrecisionDouble, width: 8},
	arrow.STRING:    {fbType: format.TypeUtf8, layout: layoutVar},
	arrow.BINARY:    {fbType: format.TypeBinary, layout: layoutVar},
	arrow.TIMESTAMP: {fbType: format.TypeTimestamp, width: 8},
}

// UnsupportedTypeError reports a column whose type Grafana's reader does not
// accept.
type UnsupportedTypeError struct {
	Field string
	Type  arrow.DataType
	Hint  string
}

func (e *UnsupportedTypeError) Error() string {
	t := "<nil>"
	if e.Type != nil {
		t = e.Type.String()
	}
	msg := fmt.Sprintf("arrowipc: field %q: type %s is not one Grafana can read", e.Field, t)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// lookupType returns the table row for a field's type, or an
// *UnsupportedTypeError.
func lookupType(name string, t arrow.DataType) (typeInfo, error) {
	if t == nil {
		return typeInfo{}, &UnsupportedTypeError{Field: name, Type: t}
	}
	info, ok := types[t.ID()]
	if !ok {
		return typeInfo{}, &UnsupportedTypeError{Field: name, Type: t}
	}
	if ts, isTS := t.(*arrow.TimestampType); isTS && ts.Unit != arrow.Nanosecond {
		return typeInfo{}, &UnsupportedTypeError{Field: name, Type: t,
			Hint: "Grafana reads every timestamp as nanoseconds; convert to timestamp[ns] first"}
	}
	return info, nil
}
