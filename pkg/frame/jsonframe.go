package frame

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	jsoniter "github.com/json-iterator/go"
)

// This file writes a frame as Grafana's data-frame JSON (the format of
// backend.DataFrameFormat_JSON), byte for byte what the SDK's
// (*data.Frame).MarshalJSON writes (SDK data/frame_json.go), from a
// data.Frame's vectors in place or from an Arrow record's columns, without
// converting either to the other. The values of each column type are
// written by its one registration in jsonvalues.go.

// sdkJSON is the jsoniter configuration the SDK writes frame JSON with; a
// frame's meta and its fields' configs go through it, so that their bytes
// are the SDK's.
var sdkJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// JSONWriter writes frames as the SDK's data-frame JSON. It is not safe for
// concurrent use; its scratch memory is reused from one frame to the next.
// The zero value is ready to use.
type JSONWriter struct {
	err error // why the column being written cannot be written

	// The "entities" and "nanos" arrays of the frame being written, an
	// element per field so far, and whether one element is not null. The
	// field being written adds its rows holding NaN, +Inf and -Inf to ents
	// and its nanos element to fieldNanos (a time field, when some row has
	// a sub-millisecond part).
	entities, nanos     []byte
	anyEntity, anyNanos bool
	ents                [3][]int
	fieldNanos          []byte

	keys   []string    // label keys, sorted
	labels data.Labels // a record's labels, when they must be parsed

	// The meta JSON of the last frame, by pointer (as Encoder keeps it):
	// a FrameMeta handed over is not changed.
	lastMeta     *data.FrameMeta
	lastMetaJSON []byte
	// A record's meta and field configs: their JSON in the record's
	// metadata, and the SDK's JSON of what data.FromArrowRecord decodes
	// that to.
	recMeta     string
	recMetaJSON []byte
	configs     map[string][]byte
}

// maxConfigs bounds the record field configs a JSONWriter remembers.
const maxConfigs = 64

// AppendJSON appends in as the SDK's data-frame JSON to dst with a new
// JSONWriter (see JSONWriter.Append); a caller writing many frames should
// keep a JSONWriter.
func AppendJSON(dst []byte, in Input) ([]byte, error) {
	var w JSONWriter
	return w.Append(dst, in)
}

// Append appends in as the SDK's data-frame JSON to dst and returns the
// extended slice, which aliases dst when dst had the room (dst unextended
// on error). The bytes are those of the SDK's MarshalJSON of the frame, or,
// for a record, of the frame data.FromArrowRecord makes of it.
//
// Where the SDK would write JSON that does not parse, Append writes what
// it does parse: a JSON field's value that holds more than one JSON value
// (`1 2`) is written as null, as the SDK writes a value it cannot read. It
// returns an error where the SDK does (a float it refuses in meta or
// config), for a timestamp column whose unit is not nanoseconds (the SDK
// would read it as nanoseconds), and for column types Grafana cannot read.
//
// A Frame's Meta is treated as immutable: the writer keeps the JSON of the
// last meta it wrote by pointer.
func (w *JSONWriter) Append(dst []byte, in Input) ([]byte, error) {
	start := len(dst)
	var err error
	switch {
	case in.Frame != nil && in.Record != nil:
		err = fmt.Errorf("frame: input %q holds both a frame and a record", in.Frame.Name)
	case in.Frame != nil:
		dst, err = w.appendFrame(dst, in.Frame)
	case in.Record != nil:
		dst, err = w.appendRecord(dst, in.Record)
	default:
		err = errors.New("frame: nil frame (the input holds neither a frame nor a record)")
	}
	w.err = nil
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// JSONSizeHint is about the size of a record's JSON (Append): no less than
// it for columns of numbers, times and bools (their longest values), the
// bytes of text and binary columns with their quotes or nulls (but not
// their escapes), and twice the schema's metadata; 0 for a data.Frame,
// whose size it does not estimate. A buffer sized by it once for a large
// frame grows only for a text column's escapes.
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
		n += 2*(len(f.Name)+metadataLen(f.Metadata)) + 64 + rows*(jsonMaxLen[col.DataType().ID()]+len(","))
		switch a := col.(type) {
		case *array.String:
			n += len(a.ValueBytes())
		case *array.Binary:
			n += len(a.ValueBytes())
		case *array.Timestamp:
			if vals, err := fixedValues[int64](a); err == nil && anySubMilli(vals) {
				n += rows * len("999999,") // the column's nanos
			}
		}
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

func anySubMilli(ns []int64) bool {
	for _, v := range ns {
		if v%1e6 != 0 {
			return true
		}
	}
	return false
}

func (w *JSONWriter) appendFrame(dst []byte, f *data.Frame) ([]byte, error) {
	rows, err := f.RowLen()
	if err != nil {
		return dst, fmt.Errorf("frame: %q: %w", f.Name, err)
	}
	dst = append(dst, `{"schema":{`...)
	dst = appendFrameHead(dst, f.Name, f.RefID)
	if f.Meta != nil {
		if f.Meta != w.lastMeta {
			b, err := sdkJSON.Marshal(f.Meta)
			if err != nil {
				return dst, fmt.Errorf("frame: %q: encoding meta: %w", f.Name, err)
			}
			w.lastMeta, w.lastMetaJSON = f.Meta, b
		}
		dst = appendKey(dst, `"meta":`)
		dst = append(dst, w.lastMetaJSON...)
	}
	dst = appendKey(dst, `"fields":[`)
	for i, fld := range f.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		ft := fld.Type()
		if _, ok := jsonFrameValues[ft]; !ok {
			return dst, fmt.Errorf("frame: %q: field %q: field type %s cannot be written as JSON", f.Name, fld.Name, ft)
		}
		dst = appendFieldHead(dst, fld.Name, ft)
		if fld.Labels != nil {
			dst = append(dst, `,"labels":`...)
			dst, w.keys = appendLabelsQuoted(dst, fld.Labels, w.keys, quotePlain)
		}
		if fld.Config != nil {
			dst = append(dst, `,"config":`...)
			if dst, err = appendSDKJSON(dst, fld.Config); err != nil {
				return dst, fmt.Errorf("frame: %q: field %q: encoding config: %w", f.Name, fld.Name, err)
			}
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `]},"data":{"values":[`...)
	w.startData()
	for i, fld := range f.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		if rows > 0 {
			dst = jsonFrameValues[fld.Type()](w, dst, fld)
		}
		dst = append(dst, ']')
		if w.err != nil {
			return dst, fmt.Errorf("frame: %q: field %q: %w", f.Name, fld.Name, w.err)
		}
		w.endField(i)
	}
	return w.endData(dst), nil
}

func (w *JSONWriter) appendRecord(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	schema := rec.Schema()
	md := schema.Metadata()
	name, _ := metadataValue(md, KeyName)
	refID, _ := metadataValue(md, KeyRefID)
	dst = append(dst, `{"schema":{`...)
	dst = appendFrameHead(dst, name, refID)
	if m, ok := metadataValue(md, KeyMeta); ok {
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
		if i > 0 {
			dst = append(dst, ',')
		}
		ft, err := recordFieldType(af)
		if err != nil {
			return dst, fmt.Errorf("frame: %q: %w", name, err)
		}
		dst = appendFieldHead(dst, af.Name, ft)
		if l, ok := metadataValue(af.Metadata, KeyLabels); ok {
			if dst, err = w.appendRecordLabels(dst, l); err != nil {
				return dst, fmt.Errorf("frame: %q: field %q: reading labels: %w", name, af.Name, err)
			}
		}
		if c, ok := metadataValue(af.Metadata, KeyConfig); ok {
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
		if i > 0 {
			dst = append(dst, ',')
		}
		af := schema.Field(i)
		if int64(col.Len()) != rows {
			return dst, fmt.Errorf("frame: %q: column %q has %d rows, the record %d", name, af.Name, col.Len(), rows)
		}
		dst = append(dst, '[')
		if col.Len() > 0 {
			dst = jsonRecordValues[col.DataType().ID()](w, dst, col, af.Nullable)
		}
		dst = append(dst, ']')
		if w.err != nil {
			return dst, fmt.Errorf("frame: %q: column %q: %w", name, af.Name, w.err)
		}
		w.endField(i)
	}
	return w.endData(dst), nil
}

// metadataValue is the value of the first key in md, as the SDK reads it.
func metadataValue(md arrow.Metadata, key string) (string, bool) {
	i := md.FindKey(key)
	if i < 0 {
		return "", false
	}
	return md.Values()[i], true
}

// recordKey is what decides the SDK field type of a record's column.
type recordKey struct {
	id             arrow.Type
	nullable, enum bool
}

// recordTypes maps columns to the SDK field types data.FromArrowRecord
// gives them, derived from the one table of field types (kinds).
var recordTypes = func() map[recordKey]data.FieldType {
	m := make(map[recordKey]data.FieldType, len(kinds))
	for ft, k := range kinds {
		m[recordKey{k.arrow.ID(), k.nullable, k.tstype == TSEnum}] = ft
	}
	return m
}()

// recordFieldType is the SDK field type of a record's field: its column
// type, its nullable flag, and, for uint16, whether its tstype is enum.
func recordFieldType(af arrow.Field) (data.FieldType, error) {
	if af.Type == nil {
		return 0, fmt.Errorf("field %q has no type", af.Name)
	}
	key := recordKey{id: af.Type.ID(), nullable: af.Nullable}
	if key.id == arrow.UINT16 {
		ts, _ := metadataValue(af.Metadata, KeyTSType)
		key.enum = ts == TSEnum
	}
	if ts, ok := af.Type.(*arrow.TimestampType); ok && ts.Unit != arrow.Nanosecond {
		return 0, fmt.Errorf("field %q: type %s: Grafana reads every timestamp as nanoseconds; convert to timestamp[ns] first", af.Name, af.Type)
	}
	ft, ok := recordTypes[key]
	if _, known := jsonRecordValues[key.id]; !ok || !known {
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

// appendKey appends a key of the schema object, after a comma unless it is
// the object's first.
func appendKey(dst []byte, key string) []byte {
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	return append(dst, key...)
}

// appendFrameHead appends the schema's name and refId, each when not empty.
func appendFrameHead(dst []byte, name, refID string) []byte {
	if name != "" {
		dst = append(dst, `"name":`...)
		dst = appendQuoted(dst, name, quotePlain)
	}
	if refID != "" {
		dst = appendKey(dst, `"refId":`)
		dst = appendQuoted(dst, refID, quotePlain)
	}
	return dst
}

// appendFieldHead appends a field's schema object up to its labels: name
// (when not empty), type and typeInfo.
func appendFieldHead(dst []byte, name string, ft data.FieldType) []byte {
	dst = append(dst, '{')
	if name != "" {
		dst = append(dst, `"name":`...)
		dst = appendQuoted(dst, name, quotePlain)
		dst = append(dst, ',')
	}
	dst = append(dst, `"type":"`...)
	dst = append(dst, kinds[ft].tstype...)
	dst = append(dst, `","typeInfo":{"frame":"`...)
	dst = append(dst, ft.NonNullableType().ItemTypeString()...)
	if ft.Nullable() {
		return append(dst, `","nullable":true}`...)
	}
	return append(dst, `"}`...)
}

// appendSDKJSON appends v as the SDK's jsoniter configuration writes it.
func appendSDKJSON(dst []byte, v any) ([]byte, error) {
	s := sdkJSON.BorrowStream(nil)
	defer sdkJSON.ReturnStream(s)
	s.SetBuffer(dst)
	s.WriteVal(v)
	out := s.Buffer()
	s.SetBuffer(nil)
	if s.Error != nil {
		return dst, s.Error
	}
	return out, nil
}

// Entities in the order the SDK writes them (its fieldEntityLookup).
const (
	entNaN = iota
	entInf
	entNegInf
)

var entityKeys = [3]string{`"NaN":[`, `"Inf":[`, `"NegInf":[`}

// startData resets the entities and nanos for the frame about to be
// written.
func (w *JSONWriter) startData() {
	w.entities, w.nanos, w.fieldNanos = w.entities[:0], w.nanos[:0], w.fieldNanos[:0]
	w.anyEntity, w.anyNanos = false, false
	for k := range w.ents {
		w.ents[k] = w.ents[k][:0]
	}
}

// endField adds field i's elements to the entities and nanos arrays.
func (w *JSONWriter) endField(i int) {
	if i > 0 {
		w.entities = append(w.entities, ',')
		w.nanos = append(w.nanos, ',')
	}
	if len(w.fieldNanos) > 0 {
		w.anyNanos = true
		w.nanos = append(w.nanos, w.fieldNanos...)
		w.fieldNanos = w.fieldNanos[:0]
	} else {
		w.nanos = append(w.nanos, "null"...)
	}
	if len(w.ents[entNaN])+len(w.ents[entInf])+len(w.ents[entNegInf]) == 0 {
		w.entities = append(w.entities, "null"...)
		return
	}
	w.anyEntity = true
	w.entities = append(w.entities, '{')
	first := true
	for k, rows := range w.ents {
		if len(rows) == 0 {
			continue
		}
		if !first {
			w.entities = append(w.entities, ',')
		}
		first = false
		w.entities = append(w.entities, entityKeys[k]...)
		for j, r := range rows {
			if j > 0 {
				w.entities = append(w.entities, ',')
			}
			w.entities = strconv.AppendInt(w.entities, int64(r), 10)
		}
		w.entities = append(w.entities, ']')
		w.ents[k] = rows[:0]
	}
	w.entities = append(w.entities, '}')
}

// endData closes the values array, appends the entities and nanos arrays
// when one of their elements is not null, and closes the frame.
func (w *JSONWriter) endData(dst []byte) []byte {
	dst = append(dst, ']')
	if w.anyEntity {
		dst = append(dst, `,"entities":[`...)
		dst = append(dst, w.entities...)
		dst = append(dst, ']')
	}
	if w.anyNanos {
		dst = append(dst, `,"nanos":[`...)
		dst = append(dst, w.nanos...)
		dst = append(dst, ']')
	}
	return append(dst, "}}"...)
}
