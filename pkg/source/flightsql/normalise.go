// This file is over 400 lines: it is the one conversion table of Arrow
// types and its converters, kept in one place so that what a type becomes has
// one home (the text and JSON writers are in columns*.go).

package flightsql

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// converter returns column a in a type Grafana reads, and what it found on
// the way that deserves a notice. The result is owned by the caller; a is not
// released.
type converter func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error)

// found is what converting a column met in its values.
type found uint8

const (
	// lostPrecision: a decimal did not survive the conversion to float64.
	lostPrecision found = 1 << iota
	// outOfRange: a timestamp or date outside int64 nanoseconds (or a
	// DuckDB infinity) became null.
	outOfRange
)

// foundNotices are the notices a column gets for what its values met; the
// verb takes the column name, then its upstream type.
var foundNotices = []struct {
	f    found
	text string
}{
	{lostPrecision, "Column %q (%s) was converted to float64 and some of its values lost precision: they have more significant digits than a float64 keeps. Cast the column to text in the SQL to see them exactly."},
	{outOfRange, "Column %q (%s) has values outside the timestamps Grafana reads (1677-09-21 to 2262-04-11 in nanoseconds; infinity and -infinity too): they are shown as empty."},
}

// conversion is what normalisation does with one column type.
type conversion struct {
	out     arrow.DataType    // the type Grafana gets
	convert converter         // nil: the column passes through as is
	notice  string            // shown once per query when non-empty
	config  *data.FieldConfig // field config the column gets (a unit, say)
}

// normaliser plans the conversion of a column of the given type. It is keyed
// by Arrow type ID in conversions; a type missing from that table becomes
// text (see asText).
type normaliser func(name string, dt arrow.DataType) conversion

// conversions is the one table of type normalisation: every Arrow type ID a
// Flight SQL server may send maps to how it reaches a type Grafana reads.
// Nested values become JSON in a binary column (Grafana reads an Arrow binary
// column as JSON), opaque bytes become base64 text.
var conversions map[arrow.Type]normaliser

// extensionConversions handles the canonical extension types by name; any
// other extension type is normalised as its storage type.
var extensionConversions map[string]normaliser

func init() {
	conversions = map[arrow.Type]normaliser{
		arrow.INT8: passThrough, arrow.INT16: passThrough, arrow.INT32: passThrough, arrow.INT64: passThrough,
		arrow.UINT8: passThrough, arrow.UINT16: passThrough, arrow.UINT32: passThrough, arrow.UINT64: passThrough,
		arrow.FLOAT32: passThrough, arrow.FLOAT64: passThrough, arrow.BOOL: passThrough, arrow.STRING: passThrough,

		arrow.TIMESTAMP: normaliseTimestamp,
		arrow.DATE32:    fixed(timestampNS, scaleToNS[arrow.Date32, *array.Date32](int64(24*3600*1e9))),
		arrow.DATE64:    fixed(timestampNS, scaleToNS[arrow.Date64, *array.Date64](1e6)),
		arrow.TIME32:    fixed(arrow.BinaryTypes.String, textOf),
		arrow.TIME64:    fixed(arrow.BinaryTypes.String, textOf),

		// Pure time spans are numbers with a duration unit; intervals that
		// count months (which have no fixed length) are text.
		arrow.DURATION:                normaliseDuration,
		arrow.INTERVAL_DAY_TIME:       withUnit(arrow.PrimitiveTypes.Int64, dayTimeToMS, "ms"),
		arrow.INTERVAL_MONTHS:         fixed(arrow.BinaryTypes.String, textOf),
		arrow.INTERVAL_MONTH_DAY_NANO: fixed(arrow.BinaryTypes.String, textOf),

		arrow.FLOAT16:    fixed(arrow.PrimitiveTypes.Float32, convertFloat16),
		arrow.DECIMAL32:  fixed(arrow.PrimitiveTypes.Float64, decimalToFloat),
		arrow.DECIMAL64:  fixed(arrow.PrimitiveTypes.Float64, decimalToFloat),
		arrow.DECIMAL128: fixed(arrow.PrimitiveTypes.Float64, decimalToFloat),
		arrow.DECIMAL256: fixed(arrow.PrimitiveTypes.Float64, decimalToFloat),

		arrow.LARGE_STRING: fixed(arrow.BinaryTypes.String, toString[*array.LargeString]),
		arrow.STRING_VIEW:  fixed(arrow.BinaryTypes.String, toString[*array.StringView]),

		arrow.BINARY:            fixed(arrow.BinaryTypes.String, toBase64[*array.Binary]),
		arrow.LARGE_BINARY:      fixed(arrow.BinaryTypes.String, toBase64[*array.LargeBinary]),
		arrow.BINARY_VIEW:       fixed(arrow.BinaryTypes.String, toBase64[*array.BinaryView]),
		arrow.FIXED_SIZE_BINARY: fixed(arrow.BinaryTypes.String, toBase64[*array.FixedSizeBinary]),

		arrow.LIST: toJSON, arrow.LARGE_LIST: toJSON, arrow.FIXED_SIZE_LIST: toJSON,
		arrow.LIST_VIEW: toJSON, arrow.LARGE_LIST_VIEW: toJSON,
		arrow.STRUCT: toJSON, arrow.MAP: toJSON, arrow.SPARSE_UNION: toJSON, arrow.DENSE_UNION: toJSON,

		arrow.DICTIONARY:      normaliseDictionary,
		arrow.RUN_END_ENCODED: normaliseRunEnd,
		arrow.EXTENSION:       normaliseExtension,
		arrow.NULL:            fixed(arrow.BinaryTypes.String, allNull),
	}
	extensionConversions = map[string]normaliser{
		extensions.NewUUIDType().ExtensionName():  fixed(arrow.BinaryTypes.String, textOf),
		extensions.NewBool8Type().ExtensionName(): fixed(arrow.FixedWidthTypes.Boolean, bool8ToBool),
		(&extensions.JSONType{}).ExtensionName():  toJSON,
		(&extensions.OpaqueType{}).ExtensionName(): func(name string, dt arrow.DataType) conversion {
			o := dt.(*extensions.OpaqueType)
			if f, ok := opaqueForms[opaqueKey{o.VendorName, o.TypeName}]; ok && f.fits(o.Storage) {
				return f.conversion(name, dt)
			}
			c := normaliseStorage(name, dt)
			shown := "as text"
			if c.out.ID() == arrow.STRING && o.Storage.ID() != arrow.STRING {
				shown = "as base64 of their bytes"
			}
			c.notice = fmt.Sprintf("Column %q holds values of type %q from %q that Arrow does not describe: they are shown %s.", name, o.TypeName, o.VendorName, shown)
			return c
		},
	}
}

func passThrough(_ string, dt arrow.DataType) conversion { return conversion{out: dt} }

func fixed(out arrow.DataType, c converter) normaliser {
	return func(string, arrow.DataType) conversion { return conversion{out: out, convert: c} }
}

func withUnit(out arrow.DataType, c converter, unit string) normaliser {
	return func(string, arrow.DataType) conversion {
		return conversion{out: out, convert: c, config: &data.FieldConfig{Unit: unit}}
	}
}

// plan is the normalisation of one upstream schema. apply may be called from
// several goroutines; notices reports what every call so far met.
type plan struct {
	in, out *arrow.Schema
	convs   []conversion

	mu     sync.Mutex
	found  []found  // per column
	failed []string // per column: why its conversion failed, "" if it did not
}

// newPlan plans the normalisation of schema s. Every column gets a type
// Grafana reads: a type the table does not know becomes text with a notice,
// so a plan is never refused (the error result is always nil).
func newPlan(s *arrow.Schema) (*plan, error) {
	n := s.NumFields()
	p := &plan{in: s, convs: make([]conversion, n), found: make([]found, n), failed: make([]string, n)}
	fields := make([]arrow.Field, n)
	for i, f := range s.Fields() {
		c := normalise(f.Name, f.Type)
		p.convs[i] = c
		fields[i] = arrow.Field{Name: f.Name, Type: c.out, Nullable: f.Nullable}
		if c.config != nil {
			fields[i].Metadata = arrow.NewMetadata([]string{mdConfig}, []string{fieldConfigJSON(c.config)})
		}
	}
	p.out = arrow.NewSchema(fields, nil)
	return p, nil
}

// normalise looks dt up in the table; this is the one place that decides
// what a type the table does not know becomes.
func normalise(name string, dt arrow.DataType) conversion {
	n, ok := conversions[dt.ID()]
	if !ok {
		return asText(name, dt)
	}
	return n(name, dt)
}

// asText is the conversion of a type the table does not know: Arrow's own
// text form of each value, with a notice naming the column.
func asText(name string, dt arrow.DataType) conversion {
	return conversion{out: arrow.BinaryTypes.String, convert: valueStr,
		notice: fmt.Sprintf("Column %q has type %s, which Grafana cannot read: it is shown as text. Cast it in the SQL to choose another type.", name, dt)}
}

// notices returns the notices of the plan's conversions, and those of what
// its values met so far.
func (p *plan) notices() []string {
	var ns []string
	for _, c := range p.convs {
		if c.notice != "" {
			ns = append(ns, c.notice)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.found {
		for _, fn := range foundNotices {
			if f&fn.f != 0 {
				ns = append(ns, fmt.Sprintf(fn.text, p.in.Field(i).Name, p.in.Field(i).Type))
			}
		}
		if p.failed[i] != "" {
			ns = append(ns, fmt.Sprintf("Column %q (%s) could not be converted for Grafana (%s): its values are left out (shown as empty). Cast it in the SQL to text.", p.in.Field(i).Name, p.in.Field(i).Type, p.failed[i]))
		}
	}
	return ns
}

// apply returns rec with every column normalised. The caller owns the result.
// A column whose conversion fails is all null in the result, with a notice:
// one column never fails the query.
func (p *plan) apply(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(p.convs))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var met []found
	for i, c := range p.convs {
		in := rec.Column(i)
		if c.convert == nil {
			in.Retain()
			cols[i] = in
			continue
		}
		out, f, err := safeConvert(c.convert, mem, in)
		if err != nil {
			p.fail(i, err)
			out = array.MakeArrayOfNull(mem, c.out, in.Len())
		}
		if f != 0 {
			if met == nil {
				met = make([]found, len(p.convs))
			}
			met[i] |= f
		}
		cols[i] = out
	}
	if met != nil {
		p.mu.Lock()
		for i, f := range met {
			p.found[i] |= f
		}
		p.mu.Unlock()
	}
	return array.NewRecordBatch(p.out, cols, rec.NumRows()), nil
}

func (p *plan) fail(col int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed[col] == "" {
		p.failed[col] = err.Error()
	}
}

// safeConvert runs c, turning a panic of arrow-go on a value it cannot handle
// into an error.
func safeConvert(c converter, mem memory.Allocator, a arrow.Array) (out arrow.Array, f found, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, f, err = nil, 0, fmt.Errorf("%v", r)
		}
	}()
	return c(mem, a)
}

var unitNS = map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}

// unitName is the Grafana unit of a duration in each Arrow time unit.
var unitName = map[arrow.TimeUnit]string{arrow.Second: "s", arrow.Millisecond: "ms", arrow.Microsecond: "µs", arrow.Nanosecond: "ns"}

// normaliseTimestamp makes any timestamp nanoseconds without a time zone.
// Arrow stores timestamps as UTC instants whatever the zone says, so dropping
// the zone keeps the instant; Grafana renders it in the viewer's zone.
func normaliseTimestamp(_ string, dt arrow.DataType) conversion {
	unit := dt.(*arrow.TimestampType).Unit
	return conversion{out: timestampNS, convert: scaleToNS[arrow.Timestamp, *array.Timestamp](unitNS[unit])}
}

// normaliseDuration keeps the integer value and says its unit in the field
// config, so Grafana formats it as a duration.
func normaliseDuration(name string, dt arrow.DataType) conversion {
	return withUnit(arrow.PrimitiveTypes.Int64, retype(arrow.PrimitiveTypes.Int64), unitName[dt.(*arrow.DurationType).Unit])(name, dt)
}

// retype reinterprets a's buffers as type to (same physical layout).
func retype(to arrow.DataType) converter {
	return func(_ memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		d := a.Data()
		nd := array.NewData(to, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), 0, nil
	}
}

// isInfinity tells DuckDB's infinity and -infinity of timestamps and dates
// (the largest value of the type, and its negation) and the type's minimum.
func isInfinity[T int32 | int64](v, maxV T) bool { return v == maxV || v == -maxV || v == -maxV-1 }

// hasInfinity says whether a value of vals is an infinity (isInfinity with
// maxV, T's largest value) in one pass without a branch per value: v −
// maxV, wrapping in T, is 0, 1 or 2 for exactly the three infinities
// (maxV, then T's smallest value and the one after it), so the least of
// those differences, read unsigned, tells. Four lanes, so that each step
// does not wait for the one before.
func hasInfinity[T ~int32 | ~int64](vals []T, maxV int64) bool {
	m := T(maxV)
	var d [4]uint64
	for k := range d {
		d[k] = math.MaxUint64
	}
	i := 0
	for ; i+4 <= len(vals); i += 4 {
		v := vals[i : i+4 : i+4]
		d[0] = min(d[0], uint64(int64(v[0]-m)))
		d[1] = min(d[1], uint64(int64(v[1]-m)))
		d[2] = min(d[2], uint64(int64(v[2]-m)))
		d[3] = min(d[3], uint64(int64(v[3]-m)))
	}
	for _, v := range vals[i:] {
		d[0] = min(d[0], uint64(int64(v-m)))
	}
	return min(d[0], d[1], d[2], d[3]) <= 2
}

// scaleToNS converts timestamps and dates to timestamp[ns]; a value outside
// what int64 nanoseconds hold, or an infinity, becomes null (outOfRange).
// Nanosecond timestamps without an infinity keep their buffers.
func scaleToNS[T arrow.Timestamp | arrow.Date32 | arrow.Date64, A valueArray[T]](mul int64) converter {
	return func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		src := a.(A)
		maxV := int64(math.MaxInt64)
		if a.DataType().ID() == arrow.DATE32 {
			maxV = math.MaxInt32
		}
		if mul == 1 {
			// The values slice, nulls' slots included: an infinity there
			// only sends the column to the careful loop below.
			if !hasInfinity(a.(interface{ Values() []T }).Values(), maxV) {
				return retype(timestampNS)(mem, a)
			}
		}
		var f found
		out := eachValid(array.NewTimestampBuilder(mem, timestampNS), a, func(b *array.TimestampBuilder, i int) {
			v := int64(src.Value(i))
			if v > math.MaxInt64/mul || v < math.MinInt64/mul || isInfinity(v, maxV) {
				b.AppendNull()
				f |= outOfRange
				return
			}
			b.UnsafeAppend(arrow.Timestamp(v * mul))
		})
		return out, f, nil
	}
}

// eachValid builds b's column from a, row by row: a null row stays null,
// and put appends to b what each other row i becomes (a value, or a null).
// It releases b; the column is the caller's.
func eachValid[B array.Builder](b B, a arrow.Array, put func(b B, i int)) arrow.Array {
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		put(b, i)
	}
	return b.NewArray()
}

// dayTimeToMS makes a day_time interval milliseconds, a day being 24 hours.
func dayTimeToMS(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	src := a.(*array.DayTimeInterval)
	return eachValid(array.NewInt64Builder(mem), a, func(b *array.Int64Builder, i int) {
		v := src.Value(i)
		b.UnsafeAppend(int64(v.Days)*86_400_000 + int64(v.Milliseconds))
	}), 0, nil
}

// decimalToFloat converts a decimal column to float64, each value correctly
// rounded (see decimalFloat), and reports lostPrecision when a value does not
// read back exactly.
func decimalToFloat(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	return exactToFloat(mem, a, decimals[a.DataType().ID()], a.DataType().(arrow.DecimalType).GetScale())
}

// exactToFloat converts exact numbers read by d (at scale) to float64.
func exactToFloat(mem memory.Allocator, a arrow.Array, d decimalReader, scale int32) (arrow.Array, found, error) {
	var f found
	var buf []byte
	out := eachValid(array.NewFloat64Builder(mem), a, func(b *array.Float64Builder, i int) {
		v, lossy := decimalFloat(d, a, i, scale, &buf)
		if lossy {
			f |= lostPrecision
		}
		b.UnsafeAppend(v)
	})
	return out, f, nil
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// maxExactInt is the largest integer below which every integer is a float64.
const maxExactInt = 1 << 53

// decimalFloat returns the float64 nearest to decimal a[i] and whether that
// float64 fails to read back as the decimal at its scale. When the unscaled
// value and the power of ten are both exact float64s, one IEEE division gives
// the correctly rounded result; otherwise the decimal's exact text goes
// through strconv.ParseFloat, which rounds correctly too. Values with at most
// 15 significant digits always read back; others are checked by formatting
// the float64 at the decimal's scale. buf is scratch space.
func decimalFloat(d decimalReader, a arrow.Array, i int, scale int32, buf *[]byte) (float64, bool) {
	if n, ok := d.int64At(a, i); ok && n > -maxExactInt && n < maxExactInt && scale >= 0 && int(scale) < len(pow10) {
		v := float64(n) / pow10[scale]
		if scale == 0 || (n > -1e15 && n < 1e15) {
			return v, false
		}
		*buf = appendDecimal((*buf)[:0], d, a, i, scale)
		return v, !readsBack(v, *buf, scale, buf)
	}
	*buf = appendDecimal((*buf)[:0], d, a, i, scale)
	// ParseFloat does not keep its argument (its errors copy it), so the
	// bytes can be read in place; string(*buf) allocates beyond 32 bytes.
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(*buf), len(*buf)), 64)
	if err != nil {
		return v, true
	}
	return v, !readsBack(v, *buf, scale, buf)
}

// readsBack reports whether v formatted at scale is the decimal text exact.
// It appends to *buf after the text.
func readsBack(v float64, exact []byte, scale int32, buf *[]byte) bool {
	start := len(*buf)
	*buf = strconv.AppendFloat(*buf, v, 'f', int(max(scale, 0)), 64)
	back := (*buf)[start:]
	if len(back) > 1 && back[0] == '-' && len(exact) > 0 && exact[0] != '-' {
		back = back[1:] // -0.00 for a tiny negative value read as 0
	}
	return bytes.Equal(back, exact)
}

func convertFloat16(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	src := a.(valueArray[float16.Num])
	return eachValid(array.NewFloat32Builder(mem), a, func(b *array.Float32Builder, i int) {
		b.UnsafeAppend(src.Value(i).Float32())
	}), 0, nil
}

func bool8ToBool(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	src := a.(*extensions.Bool8Array)
	return eachValid(array.NewBooleanBuilder(mem), a, func(b *array.BooleanBuilder, i int) {
		b.UnsafeAppend(src.Value(i))
	}), 0, nil
}

func toString[A valueArray[string]](mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	src := a.(A)
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return append(dst, src.Value(i)...) })
}

// toBase64 writes opaque bytes as standard base64 text, as JSON encoders do.
func toBase64[A valueArray[[]byte]](mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	src := a.(A)
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return base64.StdEncoding.AppendEncode(dst, src.Value(i)) })
}

// textOf writes each value as the engine's own text (see appendText).
func textOf(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return appendText(dst, a, i) })
}

// valueStr uses Arrow's own text form, for types this package does not know.
func valueStr(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	return buildStrings(mem, a, func(dst []byte, i int) []byte { return append(dst, a.ValueStr(i)...) })
}

func allNull(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendNulls(a.Len())
	return b.NewArray(), 0, nil
}

func buildStrings(mem memory.Allocator, a arrow.Array, text func(dst []byte, i int) []byte) (arrow.Array, found, error) {
	var buf []byte
	return eachValid(array.NewStringBuilder(mem), a, func(b *array.StringBuilder, i int) {
		buf = text(buf[:0], i)
		b.BinaryBuilder.Append(buf)
	}), 0, nil
}

// toJSON writes nested values (lists, structs, maps, unions) and JSON
// extension values as JSON into a binary column, which Grafana reads as JSON
// values (tstype "other"); see appendJSON for the form.
func toJSON(string, arrow.DataType) conversion {
	return conversion{out: arrow.BinaryTypes.Binary, convert: convertJSON}
}

// convertJSON writes a value whose JSON is null (a union holding a null) as a
// null.
func convertJSON(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	var buf []byte
	return eachValid(array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary), a, func(b *array.BinaryBuilder, i int) {
		buf = appendJSON(buf[:0], a, i)
		if string(buf) == "null" { // a union whose value is null, say
			b.AppendNull()
			return
		}
		b.Append(buf)
	}), 0, nil
}

// normaliseDictionary decodes a dictionary into its (normalised) values.
func normaliseDictionary(name string, dt arrow.DataType) conversion {
	return decoded(name, dt.(*arrow.DictionaryType).ValueType, func(a arrow.Array) (arrow.Array, func(int) int) {
		d := a.(*array.Dictionary)
		return d.Dictionary(), d.GetValueIndex
	})
}

// normaliseRunEnd expands a run-end encoded column into its (normalised) values.
func normaliseRunEnd(name string, dt arrow.DataType) conversion {
	return decoded(name, dt.(*arrow.RunEndEncodedType).Encoded(), func(a arrow.Array) (arrow.Array, func(int) int) {
		r := a.(*array.RunEndEncoded)
		return r.Values(), r.GetPhysicalIndex
	})
}

// decoded normalises an encoded column: values(a) returns the values and the
// index into them of each row (the row itself being null when the value is).
func decoded(name string, valueType arrow.DataType, values func(arrow.Array) (arrow.Array, func(int) int)) conversion {
	vc := normalise(name, valueType)
	col := columns[vc.out.ID()]
	return conversion{out: vc.out, notice: vc.notice, config: vc.config, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		vals, index := values(a)
		var f found
		if vc.convert != nil {
			v, vf, err := vc.convert(mem, vals)
			if err != nil {
				return nil, 0, err
			}
			defer v.Release()
			vals, f = v, vf
		}
		return eachValid(array.NewBuilder(mem, vc.out), a, func(b array.Builder, i int) {
			col.appendAt(b, vals, index(i))
		}), f, nil
	}}
}

// normaliseExtension reads the canonical extension types (registered by
// arrow-go's extensions package, so the IPC reader builds them) by name;
// other extensions are normalised as their storage type.
func normaliseExtension(name string, dt arrow.DataType) conversion {
	if n, ok := extensionConversions[dt.(arrow.ExtensionType).ExtensionName()]; ok {
		return n(name, dt)
	}
	return normaliseStorage(name, dt)
}

func normaliseStorage(name string, dt arrow.DataType) conversion {
	sc := normalise(name, dt.(arrow.ExtensionType).StorageType())
	c := sc
	c.convert = func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		storage := a.(array.ExtensionArray).Storage()
		if sc.convert == nil {
			storage.Retain()
			return storage, 0, nil
		}
		return sc.convert(mem, storage)
	}
	return c
}

// opaqueKey names a vendor's type that Arrow marks arrow.opaque.
type opaqueKey struct{ vendor, name string }

// opaqueForm reads one vendor type from its opaque storage: as an exact
// number (number) or as text (text).
type opaqueForm struct {
	width  int // the storage's fixed_size_binary width; 0: binary
	number *decimalReader
	text   valueWriter // of the storage array
}

// opaqueForms are the types DuckDB's lossless Arrow export
// (arrow_lossless_conversion) marks opaque: HUGEINT and UHUGEINT (16 bytes,
// little-endian) become numbers, TIMETZ and BIT their DuckDB text. Others
// (BIGNUM, say) are shown as base64 with a notice.
var opaqueForms = map[opaqueKey]opaqueForm{
	{"DuckDB", "hugeint"}:  {width: 16, number: &int128Reader},
	{"DuckDB", "uhugeint"}: {width: 16, number: &uint128Reader},
	{"DuckDB", "time_tz"}:  {width: 8, text: timeTZText},
	{"DuckDB", "bit"}:      {text: bitText},
}

func (f opaqueForm) fits(storage arrow.DataType) bool {
	if f.width == 0 {
		return storage.ID() == arrow.BINARY
	}
	fs, ok := storage.(*arrow.FixedSizeBinaryType)
	return ok && fs.ByteWidth == f.width
}

func (f opaqueForm) conversion(_ string, _ arrow.DataType) conversion {
	if f.number != nil {
		return conversion{out: arrow.PrimitiveTypes.Float64, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
			return exactToFloat(mem, a.(array.ExtensionArray).Storage(), *f.number, 0)
		}}
	}
	return conversion{out: arrow.BinaryTypes.String, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		st := a.(array.ExtensionArray).Storage()
		return buildStrings(mem, a, func(dst []byte, i int) []byte { return f.text(dst, st, i) })
	}}
}

// opaqueText appends the text of a known opaque value, and says whether it
// is a number; ok is false for an opaque type opaqueForms does not know.
func opaqueText(dst []byte, e array.ExtensionArray, i int) (out []byte, number, ok bool) {
	o, isOpaque := e.ExtensionType().(*extensions.OpaqueType)
	if !isOpaque {
		return dst, false, false
	}
	f, known := opaqueForms[opaqueKey{o.VendorName, o.TypeName}]
	if !known || !f.fits(o.Storage) {
		return dst, false, false
	}
	if f.number != nil {
		return f.number.appendDigits(dst, e.Storage(), i), true, true
	}
	return f.text(dst, e.Storage(), i), false, true
}
