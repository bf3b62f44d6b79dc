package frame

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// This file is the JSON writer's Arrow record input: a record written as
// the frame data.FromArrowRecord makes of it, and the size hint of its JSON.

// JSONSizeHint is about the size of a record's JSON (Append): no less than
// it for columns of numbers, times and bools (the longest of an integer
// or time column's own values, a float type's longest, null), the bytes of
// text and binary columns with their quotes or nulls (but not their
// escapes), and a margin for the schema (an estimate where field configs
// and labels are written again as the SDK writes them); 0 for a
// data.Frame, whose size it does not estimate. A buffer sized by it once
// for a large frame grows only for escapes or rewritten metadata.
func JSONSizeHint(in Input) int {
	rec := in.Record
	if rec == nil || in.Frame != nil {
		return 0
	}
	schema := rec.Schema()
	n := 1024 + 2*metadataLen(schema.Metadata())
	rows := int(rec.NumRows())
	for i, col := range rec.Columns() {
		f := schema.Field(i)
		n += 2*(len(f.Name)+metadataLen(f.Metadata)) + 128 // the field's schema and its values' brackets
		if rows == 0 {
			continue // its offsets may be empty: ValueBytes would read past them
		}
		k := jsonRecordKinds[col.DataType().ID()]
		per := k.maxLen
		switch a := col.(type) {
		case *array.String:
			n += len(a.ValueBytes())
		case *array.Binary:
			n += len(a.ValueBytes())
		}
		// A column's own values are read only where the type's longest
		// would make a large difference: not for a series frame's times.
		if k.valueLen != nil && rows*per > valueLenFrom {
			per = k.valueLen(col)
		}
		if col.NullN() > 0 {
			per = max(per, len("null"))
		}
		n += rows * (per + len(","))
	}
	return n
}

// valueLenFrom is the size, by its type's longest values, above which a
// column's values are read to bound it by their own.
const valueLenFrom = 64 << 10

// timeLen bounds a timestamp column's values as JSON: the milliseconds of
// its least and greatest, and its nanos element when a row has a
// sub-millisecond part.
func timeLen(a arrow.Array) int {
	vals, err := fixedValues[int64](a)
	if err != nil || len(vals) == 0 {
		return maxTimeLen
	}
	lo, _ := splitMilli(slices.Min(vals))
	hi, _ := splitMilli(slices.Max(vals))
	n := max(digits(lo), digits(hi))
	if slices.ContainsFunc(vals, func(ns int64) bool { return ns%1e6 != 0 }) {
		n += len("999999,") // the column's nanos
	}
	return n
}

// intLen is the length of the longest of an integer column's values as
// JSON (its least or its greatest; a null's value counts too).
func intLen[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64](a arrow.Array) int {
	vals, err := fixedValues[T](a)
	if err != nil || len(vals) == 0 {
		return 0
	}
	return max(digits(slices.Min(vals)), digits(slices.Max(vals)))
}

// digits is the length of v in decimal, its sign included.
func digits[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64](v T) int {
	n, u := 1, uint64(v)
	if v < 0 {
		n, u = 2, -uint64(int64(v)) // MinInt64's magnitude too
	}
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}

func metadataLen(md arrow.Metadata) int {
	n := 0
	for i, k := range md.Keys() {
		n += len(k) + len(md.Values()[i])
	}
	return n
}

func (w *JSONWriter) appendRecord(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	schema := rec.Schema()
	md := schema.Metadata()
	name, _ := md.GetValue(KeyName)
	refID, _ := md.GetValue(KeyRefID)
	dst = append(dst, `{"schema":{`...)
	dst = appendFrameHead(dst, name, refID)
	if m, ok := md.GetValue(KeyMeta); ok {
		if m != w.recMeta || w.recMetaJSON == nil {
			meta, err := data.FrameMetaFromJSON(m)
			if err != nil {
				return dst, fmt.Errorf("frame: %q: reading the record's meta: %w", name, err)
			}
			b, err := sdkJSON.Marshal(meta)
			if err != nil {
				return dst, fmt.Errorf("frame: %q: encoding meta: %w", name, err)
			}
			w.recMeta, w.recMetaJSON = m, b
		}
		dst = appendKey(dst, `"meta":`)
		dst = append(dst, w.recMetaJSON...)
	}
	dst = appendKey(dst, `"fields":[`)
	cols := rec.Columns()
	if len(cols) != schema.NumFields() {
		return dst, fmt.Errorf("frame: %q: the record has %d columns and %d fields", name, len(cols), schema.NumFields())
	}
	for i := range cols {
		af := schema.Field(i) // Fields() would copy them
		dst = appendComma(dst, i)
		ft, err := recordFieldType(af)
		if err != nil {
			return dst, fmt.Errorf("frame: %q: %w", name, err)
		}
		dst = appendFieldHead(dst, af.Name, ft)
		if l, ok := af.Metadata.GetValue(KeyLabels); ok {
			if dst, err = w.appendRecordLabels(dst, l); err != nil {
				return dst, fmt.Errorf("frame: %q: field %q: reading labels: %w", name, af.Name, err)
			}
		}
		if c, ok := af.Metadata.GetValue(KeyConfig); ok {
			b, err := w.recordConfig(c)
			if err != nil {
				return dst, fmt.Errorf("frame: %q: field %q: %w", name, af.Name, err)
			}
			dst = append(dst, `,"config":`...)
			dst = append(dst, b...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `]},"data":{"values":[`...)
	w.startData()
	rows := rec.NumRows()
	for i, col := range cols {
		dst = appendComma(dst, i)
		af := schema.Field(i)
		if int64(col.Len()) != rows {
			return dst, fmt.Errorf("frame: %q: column %q has %d rows, the record %d", name, af.Name, col.Len(), rows)
		}
		dst = append(dst, '[')
		if col.Len() > 0 {
			dst = jsonRecordKinds[col.DataType().ID()].record(w, dst, col, af.Nullable)
		}
		dst = append(dst, ']')
		if w.err != nil {
			return dst, fmt.Errorf("frame: %q: column %q: %w", name, af.Name, w.err)
		}
		w.endField(i)
	}
	return w.endData(dst), nil
}

// recordKey is what decides the SDK field type of a record's column.
type recordKey struct {
	id             arrow.Type
	nullable, enum bool
}

// recordFieldType is the SDK field type of a record's field: its column
// type, its nullable flag, and, for uint16, whether its tstype is enum.
func recordFieldType(af arrow.Field) (data.FieldType, error) {
	if af.Type == nil {
		return 0, fmt.Errorf("field %q has no type", af.Name)
	}
	key := recordKey{id: af.Type.ID(), nullable: af.Nullable}
	if key.id == arrow.UINT16 {
		ts, _ := af.Metadata.GetValue(KeyTSType)
		key.enum = ts == TSEnum
	}
	if ts, ok := af.Type.(*arrow.TimestampType); ok && ts.Unit != arrow.Nanosecond {
		return 0, fmt.Errorf("field %q: type %s: Grafana reads every timestamp as nanoseconds; convert to timestamp[ns] first", af.Name, af.Type)
	}
	ft, ok := recordTypes[key]
	if _, known := jsonRecordKinds[key.id]; !ok || !known {
		return 0, fmt.Errorf("field %q: type %s is not one Grafana can read", af.Name, af.Type)
	}
	return ft, nil
}

// appendRecordLabels appends ,"labels":{…} for a record's labels JSON l
// when data.FromArrowRecord decodes it to labels that are not nil: l itself
// when it is what the SDK writes of them (as NewRecord writes labels
// without bytes to escape), else what the SDK writes of what it decodes.
func (w *JSONWriter) appendRecordLabels(dst []byte, l string) ([]byte, error) {
	if plainLabels(l) {
		dst = append(dst, `,"labels":`...)
		return append(dst, l...), nil
	}
	clear(w.labels)
	if err := json.Unmarshal([]byte(l), &w.labels); err != nil {
		return dst, err
	}
	if w.labels == nil { // JSON null
		return dst, nil
	}
	dst = append(dst, `,"labels":`...)
	dst, w.keys = appendLabelsQuoted(dst, w.labels, w.keys, quotePlain)
	return dst, nil
}

// plainLabels reports whether labels JSON l is an object of strings, keys
// in increasing order, written without a space, an escape or a byte outside
// printable ASCII: exactly what the SDK writes of the labels it decodes to.
func plainLabels(l string) bool {
	if len(l) < 2 || l[0] != '{' || l[len(l)-1] != '}' {
		return false
	}
	if len(l) == 2 {
		return true
	}
	i := 1
	prev, first := "", true
	str := func() (string, bool) { // a string at l[i:], i moved past it
		if i >= len(l) || l[i] != '"' {
			return "", false
		}
		start := i + 1
		for j := start; j < len(l); j++ {
			switch c := l[j]; {
			case c == '"':
				i = j + 1
				return l[start:j], true
			case c == '\\' || c < 0x20 || c >= 0x7f:
				return "", false
			}
		}
		return "", false
	}
	for {
		k, ok := str()
		if !ok || (!first && k <= prev) || i >= len(l) || l[i] != ':' {
			return false
		}
		i++
		if _, ok := str(); !ok || i >= len(l) {
			return false
		}
		prev, first = k, false
		switch l[i] {
		case '}':
			return i == len(l)-1
		case ',':
			i++
		default:
			return false
		}
	}
}

// recordConfig is the SDK's JSON of the field config c (a record's config
// metadata) as data.FromArrowRecord decodes it.
func (w *JSONWriter) recordConfig(c string) ([]byte, error) {
	if b, ok := w.configs[c]; ok {
		return b, nil
	}
	var fc data.FieldConfig
	if err := json.Unmarshal([]byte(c), &fc); err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	b, err := sdkJSON.Marshal(&fc)
	if err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	if w.configs == nil || len(w.configs) >= maxConfigs {
		w.configs = make(map[string][]byte)
	}
	w.configs[c] = b
	return b, nil
}
