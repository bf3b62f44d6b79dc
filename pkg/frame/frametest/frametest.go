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
	i8, i16, i32, i64 := make([]int8, rows), make([]int16, rows), make([]int32, rows), make([]int64, rows)
	u8, u16, u32, u64 := make([]uint8, rows), make([]uint16, rows), make([]uint32, rows), make([]uint64, rows)
	f32, f64 := make([]float32, rows), make([]float64, rows)
	bs, ts, ss := make([]bool, rows), make([]time.Time, rows), make([]string, rows)
	js, en := make([]json.RawMessage, rows), make([]data.EnumItemIndex, rows)
	for i := range rows {
		i8[i], i16[i], i32[i], i64[i] = int8(r.Uint32()), int16(r.Uint32()), int32(r.Uint32()), int64(r.Uint64())
		u8[i], u16[i], u32[i], u64[i] = uint8(r.Uint32()), uint16(r.Uint32()), r.Uint32(), r.Uint64()
		f64[i] = Floats[r.IntN(len(Floats))]
		if r.IntN(3) == 0 {
			f64[i] = r.NormFloat64() * 1e6
		}
		f32[i] = float32(f64[i])
		bs[i] = r.IntN(2) == 0
		ts[i] = t0.Add(time.Duration(r.Int64N(1e15)) - 5e14)
		ss[i] = Strings[r.IntN(len(Strings))]
		js[i] = json.RawMessage(fmt.Sprintf(`{"k":%d,"s":%q}`, i, ss[i]))
		en[i] = data.EnumItemIndex(r.IntN(5))
	}
	fields := []*data.Field{
		data.NewField("int8", nil, i8),
		data.NewField("int16", nil, i16),
		data.NewField("int32", nil, i32),
		data.NewField("int64", nil, i64),
		data.NewField("uint8", nil, u8),
		data.NewField("uint16", nil, u16),
		data.NewField("uint32", nil, u32),
		data.NewField("uint64", nil, u64),
		data.NewField("float32", nil, f32),
		data.NewField("float64", nil, f64),
		data.NewField("bool", nil, bs),
		data.NewField("time", nil, ts),
		data.NewField("string", nil, ss),
		data.NewField("json", nil, js),
		data.NewField("enum", nil, en),
	}
	for _, f := range fields { // the 15 above: range reads fields once
		nf := data.NewFieldFromFieldType(f.Type().NullableType(), rows)
		nf.Name = "nullable " + f.Name
		for i := range rows {
			if !null(i) {
				nf.Set(i, ptrTo(f.At(i)))
			}
		}
		fields = append(fields, nf)
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
