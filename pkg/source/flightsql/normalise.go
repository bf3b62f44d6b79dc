package flightsql

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// converter returns column a in a type Grafana reads. The result is owned by
// the caller; a is not released.
type converter func(mem memory.Allocator, a arrow.Array) (arrow.Array, error)

// conversion is what normalisation does with one column type.
type conversion struct {
	out     arrow.DataType    // the type Grafana gets
	convert converter         // nil: the column passes through as is
	notice  string            // shown once per query when non-empty
	config  *data.FieldConfig // field config the column gets (a unit, say)
}

// normaliser plans the conversion of a column of the given type. It is keyed
// by Arrow type ID in conversions; a type missing from that table is rejected.
type normaliser func(name string, dt arrow.DataType) (conversion, error)

// conversions is the one table of type normalisation: every Arrow type ID a
// Flight SQL server may send maps to how it reaches a type Grafana reads.
// Nested values and opaque bytes are written as JSON / base64 text: Grafana
// reads an Arrow binary column as JSON, so only JSON may go into one.
var conversions map[arrow.Type]normaliser

func init() {
	conversions = map[arrow.Type]normaliser{
		arrow.INT8: passThrough, arrow.INT16: passThrough, arrow.INT32: passThrough, arrow.INT64: passThrough,
		arrow.UINT8: passThrough, arrow.UINT16: passThrough, arrow.UINT32: passThrough, arrow.UINT64: passThrough,
		arrow.FLOAT32: passThrough, arrow.FLOAT64: passThrough, arrow.BOOL: passThrough, arrow.STRING: passThrough,

		arrow.TIMESTAMP: normaliseTimestamp,
		arrow.DATE32:    fixed(timestampNS, scaleToNS[arrow.Date32, *array.Date32](int64(24*3600*1e9))),
		arrow.DATE64:    fixed(timestampNS, scaleToNS[arrow.Date64, *array.Date64](1e6)),
		arrow.DURATION:  normaliseDuration,
		arrow.TIME32:    fixed(arrow.BinaryTypes.String, valueStr),
		arrow.TIME64:    fixed(arrow.BinaryTypes.String, valueStr),

		arrow.FLOAT16:    fixed(arrow.PrimitiveTypes.Float32, convertFloat16),
		arrow.DECIMAL32:  normaliseDecimal(decimalToFloat[decimal.Decimal32, *array.Decimal32]),
		arrow.DECIMAL64:  normaliseDecimal(decimalToFloat[decimal.Decimal64, *array.Decimal64]),
		arrow.DECIMAL128: normaliseDecimal(decimalToFloat[decimal.Decimal128, *array.Decimal128]),
		arrow.DECIMAL256: normaliseDecimal(decimalToFloat[decimal.Decimal256, *array.Decimal256]),

		arrow.LARGE_STRING: fixed(arrow.BinaryTypes.String, toString[*array.LargeString]),
		arrow.STRING_VIEW:  fixed(arrow.BinaryTypes.String, toString[*array.StringView]),

		arrow.BINARY:            fixed(arrow.BinaryTypes.String, toBase64[*array.Binary]),
		arrow.LARGE_BINARY:      fixed(arrow.BinaryTypes.String, toBase64[*array.LargeBinary]),
		arrow.BINARY_VIEW:       fixed(arrow.BinaryTypes.String, toBase64[*array.BinaryView]),
		arrow.FIXED_SIZE_BINARY: fixed(arrow.BinaryTypes.String, toBase64[*array.FixedSizeBinary]),

		arrow.LIST: toJSON, arrow.LARGE_LIST: toJSON, arrow.FIXED_SIZE_LIST: toJSON,
		arrow.LIST_VIEW: toJSON, arrow.LARGE_LIST_VIEW: toJSON,
		arrow.STRUCT: toJSON, arrow.MAP: toJSON, arrow.SPARSE_UNION: toJSON, arrow.DENSE_UNION: toJSON,

		arrow.DICTIONARY: normaliseDictionary,
		arrow.EXTENSION:  fixed(arrow.BinaryTypes.String, valueStr),
		arrow.NULL:       fixed(arrow.BinaryTypes.String, allNull),
	}
}

func passThrough(_ string, dt arrow.DataType) (conversion, error) { return conversion{out: dt}, nil }

func fixed(out arrow.DataType, c converter) normaliser {
	return func(string, arrow.DataType) (conversion, error) { return conversion{out: out, convert: c}, nil }
}

// plan is the normalisation of one upstream schema.
type plan struct {
	in, out *arrow.Schema
	convs   []conversion
}

// newPlan plans the normalisation of schema s, or returns a BadQuery error
// naming the first column whose type Grafana cannot get.
func newPlan(s *arrow.Schema) (*plan, error) {
	p := &plan{in: s, convs: make([]conversion, s.NumFields())}
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		c, err := normalise(f.Name, f.Type)
		if err != nil {
			return nil, err
		}
		p.convs[i] = c
		fields[i] = arrow.Field{Name: f.Name, Type: c.out, Nullable: f.Nullable}
		if c.config != nil {
			fields[i].Metadata = arrow.NewMetadata([]string{mdConfig}, []string{fieldConfigJSON(c.config)})
		}
	}
	p.out = arrow.NewSchema(fields, nil)
	return p, nil
}

func normalise(name string, dt arrow.DataType) (conversion, error) {
	n, ok := conversions[dt.ID()]
	if !ok {
		return conversion{}, source.BadQuery("flightsql: column %q has type %s, which Grafana cannot read; cast it in the SQL (to a number, text or timestamp)", name, dt)
	}
	return n(name, dt)
}

// notices returns the notices of the plan's conversions.
func (p *plan) notices() []string {
	var ns []string
	for _, c := range p.convs {
		if c.notice != "" {
			ns = append(ns, c.notice)
		}
	}
	return ns
}

// apply returns rec with every column normalised. The caller owns the result.
func (p *plan) apply(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(p.convs))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range p.convs {
		in := rec.Column(i)
		if c.convert == nil {
			in.Retain()
			cols[i] = in
			continue
		}
		out, err := c.convert(mem, in)
		if err != nil {
			return nil, fmt.Errorf("flightsql: column %q: %w", p.in.Field(i).Name, err)
		}
		cols[i] = out
	}
	return array.NewRecordBatch(p.out, cols, rec.NumRows()), nil
}

var unitNS = map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}

var unitName = map[arrow.TimeUnit]string{arrow.Second: "s", arrow.Millisecond: "ms", arrow.Microsecond: "µs", arrow.Nanosecond: "ns"}

// normaliseTimestamp makes any timestamp nanoseconds without a time zone.
// Arrow stores timestamps as UTC instants whatever the zone says, so dropping
// the zone keeps the instant; Grafana renders it in the viewer's zone.
func normaliseTimestamp(_ string, dt arrow.DataType) (conversion, error) {
	unit := dt.(*arrow.TimestampType).Unit
	if unit == arrow.Nanosecond {
		if dt.(*arrow.TimestampType).TimeZone == "" {
			return conversion{out: dt}, nil
		}
		return conversion{out: timestampNS, convert: retype(timestampNS)}, nil
	}
	return conversion{out: timestampNS, convert: scaleToNS[arrow.Timestamp, *array.Timestamp](unitNS[unit])}, nil
}

// normaliseDuration keeps the integer value and says its unit in the field
// config, so Grafana formats it as a duration.
func normaliseDuration(_ string, dt arrow.DataType) (conversion, error) {
	unit := dt.(*arrow.DurationType).Unit
	return conversion{out: arrow.PrimitiveTypes.Int64, convert: retype(arrow.PrimitiveTypes.Int64),
		config: &data.FieldConfig{Unit: unitName[unit]}}, nil
}

// retype reinterprets a's buffers as type to (same physical layout).
func retype(to arrow.DataType) converter {
	return func(_ memory.Allocator, a arrow.Array) (arrow.Array, error) {
		d := a.Data()
		nd := array.NewData(to, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}
}

func scaleToNS[T arrow.Timestamp | arrow.Date32 | arrow.Date64, A valueArray[T]](mul int64) converter {
	return func(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
		src := a.(A)
		b := array.NewTimestampBuilder(mem, timestampNS)
		defer b.Release()
		b.Reserve(a.Len())
		for i := range a.Len() {
			if a.IsNull(i) {
				b.AppendNull()
				continue
			}
			v := int64(src.Value(i))
			if v > math.MaxInt64/mul || v < math.MinInt64/mul {
				return nil, fmt.Errorf("%s value %s is outside the nanosecond range Grafana reads (years 1678 – 2262)", a.DataType(), a.ValueStr(i))
			}
			b.UnsafeAppend(arrow.Timestamp(v * mul))
		}
		return b.NewArray(), nil
	}
}

// float64Digits is the number of significant decimal digits a float64 always
// keeps exactly.
const float64Digits = 15

func normaliseDecimal(c converter) normaliser {
	return func(name string, dt arrow.DataType) (conversion, error) {
		conv := conversion{out: arrow.PrimitiveTypes.Float64, convert: c}
		if p := dt.(arrow.DecimalType).GetPrecision(); p > float64Digits {
			conv.notice = fmt.Sprintf("Column %q is %s and was converted to float64: values with more than %d significant digits lost precision.", name, dt, float64Digits)
		}
		return conv, nil
	}
}

func decimalToFloat[T interface {
	decimal.DecimalTypes
	decimal.Num[T]
}, A valueArray[T]](mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	src := a.(A)
	scale := a.DataType().(arrow.DecimalType).GetScale()
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.UnsafeAppend(src.Value(i).ToFloat64(scale))
	}
	return b.NewArray(), nil
}

func convertFloat16(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	src := a.(valueArray[float16.Num])
	b := array.NewFloat32Builder(mem)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.UnsafeAppend(src.Value(i).Float32())
	}
	return b.NewArray(), nil
}

func toString[A valueArray[string]](mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	src := a.(A)
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return append(dst, src.Value(i)...) })
}

// toBase64 writes opaque bytes as standard base64 text, as JSON encoders do.
func toBase64[A valueArray[[]byte]](mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	src := a.(A)
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return base64.StdEncoding.AppendEncode(dst, src.Value(i)) })
}

// valueStr uses Arrow's own text form (time of day, extension types such as UUID).
func valueStr(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return append(dst, a.ValueStr(i)...) })
}

func allNull(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendNulls(a.Len())
	return b.NewArray(), nil
}

func buildStrings(mem memory.Allocator, a arrow.Array, text func(dst []byte, i int) []byte) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(a.Len())
	var buf []byte
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		buf = text(buf[:0], i)
		b.BinaryBuilder.Append(buf)
	}
	return b.NewArray(), nil
}

// toJSON writes nested values (lists, structs, maps, unions) as JSON into a
// binary column, which Grafana reads as JSON values (tstype "other").
func toJSON(_ string, _ arrow.DataType) (conversion, error) {
	return conversion{out: arrow.BinaryTypes.Binary, convert: convertJSON}, nil
}

func convertJSON(mem memory.Allocator, a arrow.Array) (out arrow.Array, err error) {
	// arrow-go panics when a nested value cannot be marshalled (NaN, say).
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("cannot write %s values as JSON: %v", a.DataType(), r)
		}
	}()
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		v, err := json.Marshal(a.GetOneForMarshal(i))
		if err != nil {
			return nil, fmt.Errorf("cannot write %s value %d as JSON: %w", a.DataType(), i, err)
		}
		b.Append(v)
	}
	return b.NewArray(), nil
}

// normaliseDictionary decodes a dictionary into its (normalised) values.
func normaliseDictionary(name string, dt arrow.DataType) (conversion, error) {
	vc, err := normalise(name, dt.(*arrow.DictionaryType).ValueType)
	if err != nil {
		return conversion{}, err
	}
	col := columns[vc.out.ID()]
	return conversion{out: vc.out, notice: vc.notice, config: vc.config, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
		d := a.(*array.Dictionary)
		values := d.Dictionary()
		if vc.convert != nil {
			v, err := vc.convert(mem, values)
			if err != nil {
				return nil, err
			}
			defer v.Release()
			values = v
		}
		b := array.NewBuilder(mem, vc.out)
		defer b.Release()
		b.Reserve(a.Len())
		for i := range a.Len() {
			if d.IsNull(i) {
				b.AppendNull()
				continue
			}
			col.appendAt(b, values, d.GetValueIndex(i))
		}
		return b.NewArray(), nil
	}}, nil
}
