// Package frametest helps tests compare Grafana frames exactly, build
// frames of every field type, and read a record back as Grafana would. Test code only: no production package imports it.
package frametest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Equal reports how got differs from want, or nil when they are the same
// frame: name, refId, meta, and per field name, type, labels, config and
// every value. Floats compare by bit pattern (NaN, -0 and ±Inf exactly);
// times by instant in nanoseconds.
func Equal(want, got *data.Frame) error {
	if want.Name != got.Name || want.RefID != got.RefID {
		return fmt.Errorf("name/refId: got %q/%q, want %q/%q", got.Name, got.RefID, want.Name, want.RefID)
	}
	if err := jsonEqual("meta", want.Meta, got.Meta); err != nil {
		return err
	}
	if len(want.Fields) != len(got.Fields) {
		return fmt.Errorf("got %d fields, want %d", len(got.Fields), len(want.Fields))
	}
	for i, wf := range want.Fields {
		gf := got.Fields[i]
		if wf.Name != gf.Name {
			return fmt.Errorf("field %d: name %q, want %q", i, gf.Name, wf.Name)
		}
		if wf.Type() != gf.Type() {
			return fmt.Errorf("field %q: type %s, want %s", wf.Name, gf.Type(), wf.Type())
		}
		if !reflect.DeepEqual(wf.Labels, gf.Labels) && !(len(wf.Labels) == 0 && len(gf.Labels) == 0 && (wf.Labels == nil) == (gf.Labels == nil)) {
			return fmt.Errorf("field %q: labels %v, want %v", wf.Name, gf.Labels, wf.Labels)
		}
		if err := jsonEqual("field "+wf.Name+" config", wf.Config, gf.Config); err != nil {
			return err
		}
		if wf.Len() != gf.Len() {
			return fmt.Errorf("field %q: %d rows, want %d", wf.Name, gf.Len(), wf.Len())
		}
		for r := 0; r < wf.Len(); r++ {
			if !valueEqual(wf.At(r), gf.At(r)) {
				return fmt.Errorf("field %q row %d: got %s, want %s", wf.Name, r, show(gf.At(r)), show(wf.At(r)))
			}
		}
	}
	return nil
}

func jsonEqual(what string, want, got any) error {
	w, err := json.Marshal(want)
	if err != nil {
		return err
	}
	g, err := json.Marshal(got)
	if err != nil {
		return err
	}
	if string(w) != string(g) {
		return fmt.Errorf("%s: got %s, want %s", what, g, w)
	}
	return nil
}

func show(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "null"
		}
		return fmt.Sprintf("&%v", rv.Elem().Interface())
	}
	return fmt.Sprintf("%v", v)
}

func valueEqual(a, b any) bool {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if ra.Kind() == reflect.Pointer && rb.Kind() == reflect.Pointer {
		if ra.IsNil() || rb.IsNil() {
			return ra.IsNil() == rb.IsNil()
		}
		return valueEqual(ra.Elem().Interface(), rb.Elem().Interface())
	}
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.UnixNano() == y.UnixNano()
	case json.RawMessage:
		y, ok := b.(json.RawMessage)
		return ok && string(x) == string(y)
	}
	return reflect.DeepEqual(a, b)
}

// Strings used by generators: unicode, escapes, empty.
var Strings = []string{"", "a", "héllo wörld", "日本語テキスト", "emoji 🚀✨", "tab\tnew\nline", `quote " back \ slash`, "<html>&amp;", strings.Repeat("long line ", 20)}

// Floats used by generators: NaN, ±Inf, -0 and ordinary values.
var Floats = []float64{0, math.Copysign(0, -1), 1.5, -2.25, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64}

// AllTypes returns a frame with one field of every type the SDK has,
// nullable and not, rows rows long, with labels on some fields, a config
// on one and meta on the frame. Values come from seed; nullable fields hold
// nulls at some rows.
func AllTypes(rows int, seed uint64) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x51))
	null := func(i int) bool { return (i+int(seed))%4 == 1 }
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	types := []data.FieldType{data.FieldTypeInt8, data.FieldTypeInt16, data.FieldTypeInt32, data.FieldTypeInt64,
		data.FieldTypeUint8, data.FieldTypeUint16, data.FieldTypeUint32, data.FieldTypeUint64, data.FieldTypeFloat32,
		data.FieldTypeFloat64, data.FieldTypeBool, data.FieldTypeTime, data.FieldTypeString, data.FieldTypeJSON, data.FieldTypeEnum}
	names := strings.Fields("int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 bool time string json enum")
	fields := make([]*data.Field, 2*len(types)) // each type, then its nullable variant
	for j, ft := range types {
		fields[j] = data.NewFieldFromFieldType(ft, rows)
		fields[j].Name = names[j]
		fields[len(types)+j] = data.NewFieldFromFieldType(ft.NullableType(), rows)
		fields[len(types)+j].Name = "nullable " + names[j]
	}
	for i := range rows {
		// Drawn in the fields' order but the float64 before the float32 made
		// of it: a seed gives the values it always gave.
		v := []any{int8(r.Uint32()), int16(r.Uint32()), int32(r.Uint32()), int64(r.Uint64()),
			uint8(r.Uint32()), uint16(r.Uint32()), r.Uint32(), r.Uint64(), nil, Floats[r.IntN(len(Floats))]}
		if r.IntN(3) == 0 {
			v[9] = r.NormFloat64() * 1e6
		}
		v[8] = float32(v[9].(float64))
		v = append(v, r.IntN(2) == 0, t0.Add(time.Duration(r.Int64N(1e15))-5e14), Strings[r.IntN(len(Strings))])
		v = append(v, json.RawMessage(fmt.Sprintf(`{"k":%d,"s":%q}`, i, v[12])), data.EnumItemIndex(r.IntN(5)))
		for j, x := range v {
			fields[j].Set(i, x)
			if !null(i) {
				fields[len(types)+j].Set(i, ptrTo(x))
			}
		}
	}
	fields[9].Labels = data.Labels{"host": "a<b>&c", "région": "eu-ouest", "empty": ""}
	fields[9].Config = &data.FieldConfig{DisplayName: "value", Unit: "bytes"}
	fields[17].Labels = data.Labels{}
	f := data.NewFrame("all types", fields...)
	f.RefID = "A"
	f.Meta = &data.FrameMeta{ExecutedQueryString: "SELECT 1", Notices: []data.Notice{{Severity: data.NoticeSeverityInfo, Text: "note"}}}
	return f
}

func ptrTo(v any) any {
	rv := reflect.ValueOf(v)
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	return p.Interface()
}

// Decode writes rec with arrow-go's IPC file writer and reads it back with
// the SDK's decoder, as Grafana reads a frame: the frame Grafana would see.
func Decode(rec arrow.RecordBatch) (*data.Frame, error) {
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return data.UnmarshalArrowFrame(buf.Bytes())
}
