// Normalisation: each column of a schema planned once by its type's
// registration (types.go), each batch converted by the plan.

package flightsql

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
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
	{lostPrecision, "Column %s (%s) was converted to float64 and some of its values lost precision: they have more significant digits than a float64 keeps. Cast the column to text in the SQL to see them exactly."},
	{outOfRange, "Column %s (%s) has values outside the timestamps Grafana reads (1677-09-21 to 2262-04-11 in nanoseconds; infinity and -infinity too): they are shown as empty."},
}

// conversion is what normalisation does with one column type.
type conversion struct {
	out     arrow.DataType    // the type Grafana gets
	convert converter         // nil: the column passes through as is
	notice  string            // shown once per query when non-empty
	config  *data.FieldConfig // field config the column gets (a unit, say)
}

// normaliser plans the conversion of a column of the given type: the
// normalise of its registration (types.go).
type normaliser func(name string, dt arrow.DataType) conversion

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
// so a plan is never refused.
func newPlan(s *arrow.Schema) *plan {
	n := s.NumFields()
	p := &plan{in: s, convs: make([]conversion, n), found: make([]found, n), failed: make([]string, n)}
	fields := make([]arrow.Field, n)
	for i, f := range s.Fields() {
		c := normalise(f.Name, f.Type)
		p.convs[i] = c
		fields[i] = arrow.Field{Name: f.Name, Type: c.out, Nullable: f.Nullable}
		if c.config != nil {
			cfg, _ := json.Marshal(c.config) // a FieldConfig built by this package always marshals
			fields[i].Metadata = arrow.NewMetadata([]string{frame.KeyConfig}, []string{string(cfg)})
		}
	}
	p.out = arrow.NewSchema(fields, nil)
	return p
}

// normalise looks dt up in the registry (types.go); this is the one place
// that decides what a type the registry does not know becomes.
func normalise(name string, dt arrow.DataType) conversion {
	n := typeOf(dt.ID()).normalise
	if n == nil {
		return asText(name, dt)
	}
	return n(name, dt)
}

// asText is the conversion of a type the registry does not know: Arrow's own
// text form of each value, with a notice naming the column.
func asText(name string, dt arrow.DataType) conversion {
	return conversion{out: arrow.BinaryTypes.String, convert: stringsOf(valueStrText),
		notice: fmt.Sprintf("Column %s has type %s, which Grafana cannot read: it is shown as text. Cast it in the SQL to choose another type.", source.Quote(name), dt)}
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
				ns = append(ns, fmt.Sprintf(fn.text, source.Quote(p.in.Field(i).Name), p.in.Field(i).Type))
			}
		}
		if p.failed[i] != "" {
			ns = append(ns, fmt.Sprintf("Column %s (%s) could not be converted for Grafana (%s): its values are left out (shown as empty). Cast it in the SQL to text.", source.Quote(p.in.Field(i).Name), p.in.Field(i).Type, p.failed[i]))
		}
	}
	return ns
}

// apply returns rec with every column normalised. The caller owns the result.
// A column whose conversion fails is all null in the result, with a notice:
// one column never fails the query.
func (p *plan) apply(mem memory.Allocator, rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, len(p.convs))
	defer func() { series.ReleaseArrays(cols) }()
	for i, c := range p.convs {
		in := rec.Column(i)
		if c.convert == nil {
			in.Retain()
			cols[i] = in
			continue
		}
		out, f, err := safeConvert(c.convert, mem, in)
		if err != nil {
			out = array.MakeArrayOfNull(mem, c.out, in.Len())
		}
		if f != 0 || err != nil {
			p.mu.Lock()
			p.found[i] |= f
			if err != nil && p.failed[i] == "" {
				p.failed[i] = err.Error()
			}
			p.mu.Unlock()
		}
		cols[i] = out
	}
	return array.NewRecordBatch(p.out, cols, rec.NumRows())
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

// retype reinterprets a's buffers as type to (same physical layout).
func retype(to arrow.DataType) converter {
	return func(_ memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		d := a.Data()
		nd := array.NewData(to, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), 0, nil
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
	return buildStrings(mem, a, func(dst []byte, _ arrow.Array, i int) []byte { return append(dst, src.Value(i)...) })
}

// stringsOf is the converter that writes each value as text with w: the
// engine's text (appendText), Arrow's own for the types this package does
// not know (valueStrText), bytes in base64 (base64Text).
func stringsOf(w valueWriter) converter {
	return func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) { return buildStrings(mem, a, w) }
}

func allNull(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendNulls(a.Len())
	return b.NewArray(), 0, nil
}

func buildStrings(mem memory.Allocator, a arrow.Array, w valueWriter) (arrow.Array, found, error) {
	var buf []byte
	return eachValid(array.NewStringBuilder(mem), a, func(b *array.StringBuilder, i int) {
		buf = w(buf[:0], a, i)
		b.BinaryBuilder.Append(buf)
	}), 0, nil
}

// toJSON writes nested values (lists, structs, maps, unions) and JSON
// extension values as JSON into a binary column, which Grafana reads as JSON
// values (tstype "other"); see appendJSON for the form.
// Its timestamps' zones are ones GetZone loads (knownZones), with a notice
// naming the first it could not find.
func toJSON(name string, dt arrow.DataType) conversion {
	c := conversion{out: arrow.BinaryTypes.Binary, convert: convertJSON}
	if o := base64Opaque(dt); o != nil { // its bytes in base64: say so, as for a column of it
		c.notice = opaqueNotice(name, o, arrow.BinaryTypes.String)
	}
	var unknown []string
	known := knownZones(dt, &unknown)
	if known == dt {
		return c
	}
	c.convert = func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		d := withType(a.Data(), known)
		defer d.Release()
		k := array.MakeFromData(d)
		defer k.Release()
		return convertJSON(mem, k)
	}
	if len(unknown) > 0 {
		zone := fmt.Sprintf("Column %s has times in a time zone the plugin cannot find (%s): they are written in UTC. Name a zone of the IANA database, or an offset such as +05:30.", source.Quote(name), source.Quote(unknown[0]))
		c.notice = strings.TrimSpace(c.notice + " " + zone)
	}
	return c
}

// withType returns d as type dt, which has d's layout: d's buffers, its
// children and dictionary as dt's fields and values.
func withType(d arrow.ArrayData, dt arrow.DataType) arrow.ArrayData {
	var children []arrow.ArrayData
	if nt, ok := dt.(arrow.NestedType); ok {
		for i, f := range nt.Fields() {
			children = append(children, withType(d.Children()[i], f.Type))
		}
	}
	nd := array.NewData(dt, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	if dict, ok := dt.(*arrow.DictionaryType); ok {
		v := withType(d.Dictionary(), dict.ValueType)
		nd.SetDictionary(v)
		v.Release()
	}
	return nd
}

// convertJSON writes a value whose JSON is null (a union holding a null) as a
// null.
func convertJSON(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	_, jsonValues := a.(*extensions.JSONArray) // JSON's null is a value there, not a missing one
	var buf []byte
	return eachValid(array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary), a, func(b *array.BinaryBuilder, i int) {
		buf = appendJSON(buf[:0], a, i)
		if string(buf) == "null" && !jsonValues { // a union whose value is null, say
			b.AppendNull()
			return
		}
		b.Append(buf)
	}), 0, nil
}

// encodedValues returns the values of encoded column a (dictionary or run-end
// encoded), and encodedIndex the index into them of row i.
func encodedValues(a arrow.Array) arrow.Array {
	if d, ok := a.(*array.Dictionary); ok {
		return d.Dictionary()
	}
	return a.(*array.RunEndEncoded).Values()
}

func encodedIndex(a arrow.Array, i int) int {
	if d, ok := a.(*array.Dictionary); ok {
		return d.GetValueIndex(i)
	}
	return a.(*array.RunEndEncoded).GetPhysicalIndex(i)
}

// normaliseEncoded decodes a dictionary or run-end encoded column into its
// (normalised) values; a row is null when its value is.
func normaliseEncoded(name string, dt arrow.DataType) conversion {
	var vc conversion
	if d, ok := dt.(*arrow.DictionaryType); ok {
		vc = normalise(name, d.ValueType)
	} else {
		vc = normalise(name, dt.(*arrow.RunEndEncodedType).Encoded())
	}
	col := typeOf(vc.out.ID()).grafana
	return conversion{out: vc.out, notice: vc.notice, config: vc.config, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		vals := encodedValues(a)
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
			col.appendAt(b, vals, encodedIndex(a, i))
		}), f, nil
	}}
}
