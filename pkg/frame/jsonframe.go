package frame

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	jsoniter "github.com/json-iterator/go"
)

// This file is JSONWriter (see the package documentation; the SDK's side is
// data/frame_json.go). The values of each column type are written as its
// row of the field-type table says (kinds, jsonvalues.go).

// sdkJSON is the jsoniter configuration the SDK writes frame JSON with; a
// frame's meta and its fields' configs go through it, so that their bytes
// are the SDK's.
var sdkJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// JSONWriter writes frames as the SDK's data-frame JSON. It is not safe for
// concurrent use; its scratch memory is reused from one frame to the next.
// The zero value is ready to use.
type JSONWriter struct {
	err error // why the record column being written cannot be written

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

// Append appends in as the SDK's data-frame JSON to dst and returns the
// extended slice, which aliases dst when dst had the room (dst unextended
// on error). The bytes are those of the SDK's MarshalJSON of the frame, or,
// for a record, of the frame data.FromArrowRecord makes of it.
//
// Where the SDK would write JSON that does not parse, or reads back as
// other rows, Append differs: a JSON field's value that holds more than one
// JSON value (`1 2`, `1,2`) is written as null, as the SDK writes a value
// it cannot read. It
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
		dst = appendComma(dst, i)
		ft := fld.Type()
		if _, ok := kinds[ft]; !ok {
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
		dst = appendComma(dst, i)
		dst = append(dst, '[')
		if rows > 0 {
			dst = kinds[fld.Type()].frameJSON(w, dst, fld)
		}
		dst = append(dst, ']')
		w.endField(i)
	}
	return w.endData(dst), nil
}

// appendKey appends a key of an object (the schema, a field's entities),
// after a comma unless it is the object's first.
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
	for k, rows := range w.ents {
		if len(rows) == 0 {
			continue
		}
		w.entities = appendKey(w.entities, entityKeys[k])
		for j, r := range rows {
			w.entities = appendComma(w.entities, j)
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
