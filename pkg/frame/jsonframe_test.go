package frame_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

var updateJSON = flag.Bool("update", false, "rewrite the golden files in testdata/json")

// sdkFrameJSON is the oracle: the SDK's MarshalJSON of f.
func sdkFrameJSON(t testing.TB, f *data.Frame) []byte {
	t.Helper()
	b, err := f.MarshalJSON()
	if err != nil {
		t.Fatalf("the SDK's MarshalJSON refused frame %q: %v", f.Name, err)
	}
	return b
}

// sdkRecordJSON is the oracle of a record: the SDK's MarshalJSON of the
// frame data.FromArrowRecord makes of it (what the JSON path did before).
func sdkRecordJSON(t testing.TB, rec arrow.RecordBatch) []byte {
	t.Helper()
	f, err := data.FromArrowRecord(rec)
	if err != nil {
		t.Fatalf("the SDK's FromArrowRecord refused the record: %v", err)
	}
	return sdkFrameJSON(t, f)
}

// sameJSON asserts that got is byte for byte want, and, to say where they
// differ in terms of frames, that both decode through the SDK's
// json.Unmarshal to the same frame, value by value.
func sameJSON(t testing.TB, what string, want, got []byte) {
	t.Helper()
	var wf, gf data.Frame
	if err := json.Unmarshal(want, &wf); err != nil {
		t.Fatalf("%s: the SDK's JSON does not decode: %v", what, err)
	}
	if err := json.Unmarshal(got, &gf); err != nil {
		t.Fatalf("%s: our JSON does not decode: %v\n%s", what, err, got)
	}
	if err := frametest.Equal(&wf, &gf); err != nil {
		t.Errorf("%s: decoded frames differ: %v", what, err)
	}
	if !bytes.Equal(want, got) {
		i := 0
		for i < len(want) && i < len(got) && want[i] == got[i] {
			i++
		}
		t.Errorf("%s: %d bytes, the SDK's %d; first difference at byte %d:\n ours: %s\n  sdk: %s", what, len(got), len(want), i, around(got, i), around(want, i))
	}
}

func around(b []byte, i int) string {
	lo, hi := max(0, i-60), min(len(b), i+60)
	return fmt.Sprintf("%q", b[lo:hi])
}

// checkFrame writes f through both paths (the frame, and the SDK's record
// of it) and compares each with its oracle.
func checkFrame(t *testing.T, name string, w *frame.JSONWriter, f *data.Frame) {
	t.Helper()
	got, err := w.Append(nil, frame.Input{Frame: f})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sameJSON(t, name+" (frame)", sdkFrameJSON(t, f), got)
	rec := sdkRecordOf(t, f)
	defer rec.Release()
	got, err = w.Append(nil, frame.Input{Record: rec})
	if err != nil {
		t.Fatalf("%s (record): %v", name, err)
	}
	sameJSON(t, name+" (record)", sdkRecordJSON(t, rec), got)
}

// sdkRecordOf is sdkRecord, also for frames of no rows or no fields.
func sdkRecordOf(t testing.TB, f *data.Frame) arrow.RecordBatch {
	t.Helper()
	if rows, _ := f.RowLen(); rows > 0 {
		return sdkRecord(t, f)
	}
	tbl, err := data.FrameToArrowTable(f)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	cols := emptyColumns(tbl.Schema())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(tbl.Schema(), cols, 0)
}

// oddStrings are names, label keys and values, and string values with
// every kind of byte the writers escape differently.
var oddStrings = func() []string {
	s := []string{"", "plain", "<script>&amp;</script>", "\u2028\u2029", "\xff\xfe", "a\xe2\x80", "\xe2\x80\xa8x",
		"ctl \x00\x01\x08\x0c\x1f\x7f", "tab\tnl\nret\r", `quote " slash \ `, "héllo 日本 🚀", "\xed\xa0\x80 surrogate"}
	var all []byte
	for b := range 256 {
		all = append(all, byte(b))
	}
	return append(s, string(all))
}()

// Every field type, nullable and not, with nulls, NaN, ±Inf, -0, odd
// strings, JSON values, labels, a config and meta: byte for byte the SDK's.
func TestJSONAllTypes(t *testing.T) {
	var w frame.JSONWriter
	for _, rows := range []int{0, 1, 5, 300} {
		for _, seed := range []uint64{1, 42} {
			checkFrame(t, fmt.Sprintf("rows=%d/seed=%d", rows, seed), &w, frametest.AllTypes(rows, seed))
		}
	}
}

func TestJSONEdgeFrames(t *testing.T) {
	var w frame.JSONWriter
	withMeta := data.NewFrame("")
	withMeta.Meta = &data.FrameMeta{ExecutedQueryString: "x"}
	noName := data.NewFrame("", data.NewField("", nil, []float64{1}))
	noName.RefID = "B"
	checkFrame(t, "no fields", &w, data.NewFrame(""))
	checkFrame(t, "no fields, named", &w, data.NewFrame("n"))
	checkFrame(t, "no fields, meta only", &w, withMeta)
	checkFrame(t, "unnamed field, refId only", &w, noName)
	checkFrame(t, "empty labels", &w, data.NewFrame("x", data.NewField("v", data.Labels{}, []int64{})))
	checkFrame(t, "nil labels", &w, data.NewFrame("x", data.NewField("v", nil, []int64{1})))
	for i, s := range oddStrings {
		f := data.NewFrame(s,
			data.NewField(s, data.Labels{s: s, "k" + s: "v"}, []string{s, s + s}),
			data.NewField("n", nil, []*string{&s, nil}),
		)
		f.RefID = s
		checkFrame(t, fmt.Sprintf("odd string %d", i), &w, f)
	}
}

// Floats as jsoniter writes them: shortest form, exponents below 1e-6 and
// from 1e21 on (e-07, not e-7), float32 at its own precision.
func TestJSONFloats(t *testing.T) {
	f64 := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, 1e-6, 9.99999e-7, 1e-7, 1.5e-300, 5e-324,
		1e20, 1e21, 9.999999999999999e20, 1.2345e21, 123456789012345678, math.MaxFloat64, -math.MaxFloat64,
		math.NaN(), math.Inf(1), math.Inf(-1), 2.5, -1e-10, 1e100}
	f32 := make([]float32, 0, len(f64))
	for _, v := range f64 {
		f32 = append(f32, float32(v))
	}
	f32 = append(f32, 16777217, 3.4e38, math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-6, 0.1, 9.99999e-7)
	n64 := make([]*float64, len(f64)+1)
	for i := range f64 {
		n64[i] = &f64[i]
	}
	n32 := make([]*float32, len(f32)+1)
	for i := range f32 {
		n32[i] = &f32[i]
	}
	var w frame.JSONWriter
	checkFrame(t, "float64", &w, data.NewFrame("f", data.NewField("v", nil, f64)))
	checkFrame(t, "float32", &w, data.NewFrame("f", data.NewField("v", nil, f32)))
	checkFrame(t, "nullable float64", &w, data.NewFrame("f", data.NewField("v", nil, n64)))
	checkFrame(t, "nullable float32", &w, data.NewFrame("f", data.NewField("v", nil, n32)))
	// Entities of several fields, one field without.
	checkFrame(t, "entities", &w, data.NewFrame("f",
		data.NewField("a", nil, []float64{math.NaN(), 1, math.Inf(-1)}),
		data.NewField("b", nil, []float64{1, 2, 3}),
		data.NewField("c", nil, []float32{float32(math.Inf(1)), float32(math.NaN()), float32(math.Inf(1))})))
}

func TestJSONIntegers(t *testing.T) {
	var w frame.JSONWriter
	checkFrame(t, "extremes", &w, data.NewFrame("i",
		data.NewField("i64", nil, []int64{math.MinInt64, -1, 0, math.MaxInt64}),
		data.NewField("u64", nil, []uint64{0, 1, 1 << 53, math.MaxUint64}),
		data.NewField("i8", nil, []int8{math.MinInt8, 0, 1, math.MaxInt8}),
		data.NewField("enum", nil, []data.EnumItemIndex{0, 1, 2, math.MaxUint16}),
	))
}

// Times: milliseconds rounded down, nanos only for fields with a
// sub-millisecond part, before the epoch as well, nulls 0 in nanos.
func TestJSONTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ms := []time.Time{t0, t0.Add(time.Minute)}
	sub := []time.Time{t0.Add(1), t0.Add(time.Millisecond), time.Unix(0, -1), time.Unix(-1, 999_999_999), time.Unix(0, -1_500_001), time.Time{}}
	nsub := []*time.Time{&sub[0], nil, &sub[2], nil}
	local := []time.Time{t0.In(time.FixedZone("x", 3600)).Add(123456)}
	var w frame.JSONWriter
	checkFrame(t, "times", &w, data.NewFrame("t",
		data.NewField("ms", nil, ms[:1]),
		data.NewField("sub", nil, sub[:1]),
		data.NewField("local", nil, local)))
	checkFrame(t, "sub-ms times", &w, data.NewFrame("t", data.NewField("sub", nil, sub)))
	checkFrame(t, "nullable sub-ms times", &w, data.NewFrame("t",
		data.NewField("a", nil, []float64{1, 2, 3, 4}),
		data.NewField("n", nil, nsub),
		data.NewField("b", nil, []float64{math.NaN(), 2, 3, 4})))
	checkFrame(t, "ms times only", &w, data.NewFrame("t", data.NewField("ms", nil, ms)))
	// Sub-millisecond parts in whole microseconds only.
	checkFrame(t, "µs times", &w, data.NewFrame("t",
		data.NewField("us", nil, []time.Time{t0, t0.Add(1500 * time.Microsecond)}),
		data.NewField("nus", nil, []*time.Time{nil, ptr(t0.Add(-time.Microsecond))})))
}

// JSON values are written as they are, and as null when the SDK's jsoniter
// cannot read them: byte for byte the SDK's wherever its JSON parses, and
// JSON that parses where it does not (a value followed by more).
func TestJSONRawValues(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, v := range []string{"1e400", "-1e400", "[1e999]", `{"a":[1,{"b":-2E+999}]}`, `"1e999"`, `"\"1e999"`, `"\ud800"`, deep(9996), deep(10001),
		`{"a":1,"a":2}`, `{"a":1,}`, "tru", "nul", "01", "1.", "-", "\"\x01\"", "\"\xff\"", " ", "", "[1,]", `{"a"}`, "NaN", "1e-400",
		"123456789012345678901234567890", strings.Repeat("9", 400), `"\u00zz"`, "{}}", "[]]", `"a"b`, "true false", "1 2", `{"a":1}{`, "[1 2]", "{a:1}", "+1", ".5"} {
		f := data.NewFrame("j", data.NewField("j", nil, []json.RawMessage{json.RawMessage(v)}), data.NewField("n", nil, []*json.RawMessage{ptr(json.RawMessage(v))}))
		var w frame.JSONWriter
		got, err := w.Append(nil, frame.Input{Frame: f})
		if err != nil {
			t.Fatalf("%.40q: %v", v, err)
		}
		if want := sdkFrameJSON(t, f); json.Valid(want) {
			sameJSON(t, fmt.Sprintf("%.40q", v), want, got)
		} else if !json.Valid(got) {
			t.Errorf("%.40q: written as JSON that does not parse: %.200s", v, got)
		}
	}
	// A value nested 9997 to 10000 deep is valid JSON, which the SDK writes
	// as it is, in a frame nested deeper than encoding/json and jsoniter
	// read: written as the SDK writes it.
	for _, n := range []int{9997, 10000} {
		f := data.NewFrame("j", data.NewField("j", nil, []json.RawMessage{json.RawMessage(deep(n))}))
		got, err := frame.AppendJSON(nil, frame.Input{Frame: f})
		if err != nil || !bytes.Equal(got, sdkFrameJSON(t, f)) {
			t.Errorf("nested %d deep: not the SDK's bytes (error %v)", n, err)
		}
	}
	raw := []json.RawMessage{json.RawMessage(`{"a" : [1, 2.50, "x"]}`), nil, json.RawMessage(`null`), json.RawMessage(` "é\u00e9<" `), json.RawMessage(`1e-7`)}
	nraw := []*json.RawMessage{&raw[0], nil, &raw[1], &raw[2], &raw[3]}
	var w frame.JSONWriter
	checkFrame(t, "json", &w, data.NewFrame("j", data.NewField("j", nil, raw), data.NewField("n", nil, nraw)))
}

// Meta and config as the SDK writes them (jsoniter): Quiver's stats and
// notices, custom values, floats, HTML characters.
func TestJSONMetaAndConfig(t *testing.T) {
	dec := uint16(2)
	yes := true
	minV, maxV := data.ConfFloat64(math.NaN()), data.ConfFloat64(1e-7)
	meta := &data.FrameMeta{
		Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1},
		Path: "p", PathSeparator: "/", Channel: "ds/x",
		Custom:              map[string]any{"z": 1e-7, "a": "<b>&", "n": []any{1.0, "x", nil, map[string]any{"q": true}}},
		ExecutedQueryString: "SELECT a < b AND c > d & e\u2028",
		Stats: []data.QueryStat{
			{FieldConfig: data.FieldConfig{DisplayName: frame.StatFrames}, Value: 1000},
			{FieldConfig: data.FieldConfig{DisplayName: frame.StatRawBytes, Unit: "decbytes"}, Value: 4.5e21},
			{FieldConfig: data.FieldConfig{DisplayName: frame.StatEncode, Unit: "ms"}, Value: 0.000001},
		},
		Notices: []data.Notice{
			{Severity: data.NoticeSeverityWarning, Text: "truncated at maxPoints", Link: "https://x/?a=1&b=<2>", Inspect: data.InspectTypeData},
			{Severity: data.NoticeSeverityError, Text: "\xff bad utf8"},
		},
		PreferredVisualization: data.VisTypeGraph,
	}
	cfg := &data.FieldConfig{
		DisplayName: "v", DisplayNameFromDS: "ds", Description: "<d>", Unit: "bytes", Decimals: &dec,
		Min: &minV, Max: &maxV, Filterable: &yes, NoValue: "-", Path: "a.b", Interval: 1e-7,
		Custom: map[string]any{"k": 1e21, "h": "&"},
		Links:  []data.DataLink{{Title: "t", URL: "https://x/?a=1&b=2", TargetBlank: true}},
		Mappings: data.ValueMappings{
			data.ValueMapper{"1": data.ValueMappingResult{Text: "one", Color: "red"}},
			data.RangeValueMapper{From: &minV, To: &maxV, Result: data.ValueMappingResult{Text: "r"}},
		},
		Thresholds: &data.ThresholdsConfig{Mode: data.ThresholdsModeAbsolute, Steps: []data.Threshold{{Value: data.ConfFloat64(math.Inf(-1)), Color: "green"}, {Value: 80, Color: "red"}}},
		Color:      map[string]any{"mode": "fixed"},
		TypeConfig: &data.FieldTypeConfig{Enum: &data.EnumFieldConfig{Text: []string{"a", "<b>"}, Color: []string{"red"}}},
	}
	f := data.NewFrame("m",
		data.NewField("time", nil, []time.Time{time.Unix(1, 0)}),
		data.NewField("v", data.Labels{"a": "b"}, []float64{1}),
		data.NewField("e", nil, []data.EnumItemIndex{1}))
	f.Meta = meta
	f.Fields[1].Config = cfg
	f.Fields[2].Config = cfg
	f.RefID = "A"
	var w frame.JSONWriter
	checkFrame(t, "meta and config", &w, f)
	// The writer keeps the last meta's JSON by pointer: a new meta is
	// written anew.
	g := data.NewFrame("m2", data.NewField("v", nil, []float64{2}))
	g.Meta = &data.FrameMeta{ExecutedQueryString: "other"}
	checkFrame(t, "another meta", &w, g)
	checkFrame(t, "meta again", &w, f)
}

// Records as Quiver's sources build them (NewRecord: labels written with
// encoding/json's escapes, nullable exactly when a column holds nulls,
// enum by tstype), sliced columns, and labels JSON the SDK rewrites. Each
// record is built twice: on a checked allocator for our writer, which must
// leave nothing held, and on Go's for the SDK oracle (FromArrowRecord wraps
// the columns' data without releasing it).
func TestJSONRecords(t *testing.T) {
	var w frame.JSONWriter
	build := func(mem memory.Allocator, labels data.Labels, config string, nulls bool) arrow.RecordBatch {
		tb := array.NewTimestampBuilder(mem, frame.Timestamp)
		fb := array.NewFloat64Builder(mem)
		sb := array.NewStringBuilder(mem)
		eb := array.NewUint16Builder(mem)
		bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		ob := array.NewBooleanBuilder(mem)
		defer func() {
			for _, b := range []interface{ Release() }{tb, fb, sb, eb, bb, ob} {
				b.Release()
			}
		}()
		for i := range 7 {
			tb.Append(arrow.Timestamp(int64(i)*1_000_000_123 - 2_000_000_000))
			if nulls && i%3 == 1 {
				fb.AppendNull()
				sb.AppendNull()
				eb.AppendNull()
				bb.AppendNull()
				ob.AppendNull()
				continue
			}
			fb.Append([]float64{1.5, math.NaN(), math.Inf(1), 1e-7, math.Copysign(0, -1), 1e21, 3}[i])
			sb.Append(oddStrings[i])
			eb.Append(uint16(i))
			bb.Append([]byte(fmt.Sprintf(`{"i":%d}`, i)))
			ob.Append(i%2 == 0)
		}
		cols := []frame.Column{
			{Name: "time", Array: tb.NewArray(), TSType: frame.TSTime},
			{Name: "value", Array: fb.NewArray(), TSType: frame.TSNumber, Labels: labels, Config: config},
			{Name: "text", Array: sb.NewArray(), TSType: frame.TSString},
			{Name: "enum", Array: eb.NewArray(), TSType: frame.TSEnum},
			{Name: "json", Array: bb.NewArray(), TSType: frame.TSOther},
			{Name: "ok", Array: ob.NewArray(), TSType: frame.TSBoolean},
		}
		meta := &data.FrameMeta{ExecutedQueryString: "SELECT <x>", Stats: []data.QueryStat{{FieldConfig: data.FieldConfig{DisplayName: "s"}, Value: 1e-7}}}
		rec, err := frame.NewRecord("series", "A", meta, cols)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	check := func(name string, mk func(memory.Allocator) arrow.RecordBatch) {
		t.Helper()
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		rec := mk(mem)
		got, err := w.Append(nil, frame.Input{Record: rec})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rec.Release()
		mem.AssertSize(t, 0)
		oracle := mk(memory.DefaultAllocator)
		sameJSON(t, name, sdkRecordJSON(t, oracle), got)
	}
	for _, c := range []struct {
		name   string
		labels data.Labels
		config string
		nulls  bool
	}{
		{"plain labels", data.Labels{"host": "a", "job": "b"}, "", false},
		{"labels to escape", data.Labels{"h": "<&>\u2028", "\xff": "\x01", `q"`: `\`}, `{"unit":"ms","displayName":"<v>","min":1e-7}`, true},
		{"empty labels", data.Labels{}, `null`, true},
	} {
		check(c.name, func(mem memory.Allocator) arrow.RecordBatch { return build(mem, c.labels, c.config, c.nulls) })
		check(c.name+", sliced", func(mem memory.Allocator) arrow.RecordBatch {
			rec := build(mem, c.labels, c.config, c.nulls)
			defer rec.Release()
			return rec.NewSlice(2, 6)
		})
	}
	// Labels JSON that is not what the SDK writes of the labels it holds.
	for _, l := range []string{`{"b":"1","a":"2"}`, `{ "a" : "1" }`, `{"a":"1","a":"2"}`, `null`, `{"a":"\u00e9"}`, `{"é":"x"}`, `{"a":"x","b":"y"}`, `{}`} {
		check("labels "+l, func(mem memory.Allocator) arrow.RecordBatch {
			md := arrow.NewMetadata([]string{frame.KeyLabels, frame.KeyTSType}, []string{l, frame.TSNumber})
			fb := array.NewFloat64Builder(mem)
			defer fb.Release()
			fb.Append(1)
			rec, err := frame.NewRecord("", "", nil, []frame.Column{{Name: "v", Array: fb.NewArray(), Metadata: &md}})
			if err != nil {
				t.Fatal(err)
			}
			return rec
		})
	}
}

// JSONSizeHint is no less than a record's JSON but for its text's escapes:
// every type, the longest integers and floats, nulls, sub-millisecond times
// (the nanos array) and the odd strings, whose escapes are added here as
// encoding/json writes them (as the SDK does).
func TestJSONSizeHintIsABound(t *testing.T) {
	// Columns of 5000 rows of one of the longest values each, so that a
	// bound a byte short per value fails, not hidden by the margin for the
	// schema or by shorter values; and of 4000, below the size from which
	// a column's own values are read.
	repN := func(name string, rows int, v any) *data.Frame {
		vals := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(v)), rows, rows)
		for i := range rows {
			vals.Index(i).Set(reflect.ValueOf(v))
		}
		return data.NewFrame(name, data.NewField(name, nil, vals.Interface()))
	}
	rep := func(name string, v any) *data.Frame { return repN(name, 5000, v) }
	frames := []*data.Frame{
		rep("f64 small", -1.2345678901234567e-6), rep("f64 large", -999999999999999868928.0), rep("f64 exp", -1.2345678901234567e-300),
		rep("f32 small", float32(-1.2345678e-6)), rep("f32 large", float32(-1e20)),
		rep("i8", int8(math.MinInt8)), rep("i16", int16(math.MinInt16)), rep("i32", int32(math.MinInt32)), rep("i64", int64(math.MinInt64)),
		rep("u8", uint8(math.MaxUint8)), rep("u16", uint16(math.MaxUint16)), rep("u32", uint32(math.MaxUint32)), rep("u64", uint64(math.MaxUint64)),
		rep("bool", false), rep("time", time.Unix(0, math.MinInt64)), rep("time sub-ms", time.Unix(0, 999_999)),
		rep("u8 null", (*uint8)(nil)), rep("i64 null", (*int64)(nil)), rep("f64 null", (*float64)(nil)),
		repN("time sub-ms, 4000 rows", 4000, time.Unix(0, math.MinInt64+1)),
	}
	for _, rows := range []int{0, 1, 300} {
		for _, seed := range []uint64{1, 42} {
			frames = append(frames, frametest.AllTypes(rows, seed))
		}
	}
	var w frame.JSONWriter
	for _, f := range frames {
		rec := sdkRecordOf(t, f)
		in := frame.Input{Record: rec}
		got, err := w.Append(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		escapes := 0
		for _, col := range rec.Columns() {
			s, ok := col.(*array.String)
			if !ok {
				continue
			}
			for r := range s.Len() {
				if s.IsValid(r) {
					q, _ := json.Marshal(s.Value(r))
					escapes += len(q) - len(`""`) - len(s.Value(r))
				}
			}
		}
		if hint := frame.JSONSizeHint(in); hint+escapes < len(got) {
			t.Errorf("frame %q: hint %d (+%d for escapes) for %d bytes of JSON", f.Name, hint, escapes, len(got))
		}
		rec.Release()
	}
	if frame.JSONSizeHint(frame.Input{Frame: frames[0]}) != 0 {
		t.Error("a hint for a data.Frame, which JSONSizeHint does not estimate")
	}
}

// The hint of an integer or time column is its own values' longest, not
// its type's: a table of small integers and recent times is not sized for
// the widest ones.
func TestJSONSizeHintFitsIntegers(t *testing.T) {
	n := 5000
	small, times := make([]int64, n), make([]time.Time, n)
	for i := range n {
		small[i], times[i] = int64(i%100), time.Unix(1_700_000_000+int64(i), 0)
	}
	rec := sdkRecordOf(t, data.NewFrame("t", data.NewField("n", nil, small), data.NewField("t", nil, times)))
	defer rec.Release()
	in := frame.Input{Record: rec}
	got, err := frame.AppendJSON(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if hint := frame.JSONSizeHint(in); hint < len(got) || hint > len(got)*5/4 {
		t.Errorf("hint %d for %d bytes of JSON", hint, len(got))
	}
}

// What the writer refuses, with a message naming it, leaving dst as it was.
func TestJSONRefuses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	record := func(dt arrow.DataType, md arrow.Metadata) arrow.RecordBatch {
		a := array.MakeArrayOfNull(mem, dt, 2)
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt, Nullable: true, Metadata: md}}, nil), []arrow.Array{a}, 2)
	}
	msRec := record(&arrow.TimestampType{Unit: arrow.Millisecond}, arrow.Metadata{})
	defer msRec.Release()
	dateRec := record(arrow.FixedWidthTypes.Date32, arrow.Metadata{})
	defer dateRec.Release()
	badLabels := record(arrow.PrimitiveTypes.Int64, arrow.NewMetadata([]string{frame.KeyLabels}, []string{`{"a":1}`}))
	defer badLabels.Release()
	nanMeta := data.NewFrame("nan meta", data.NewField("v", nil, []float64{1}))
	nanMeta.Meta = &data.FrameMeta{Custom: map[string]any{"x": math.NaN()}}
	for _, c := range []struct {
		name string
		in   frame.Input
		want string
	}{
		{"neither", frame.Input{}, "neither a frame nor a record"},
		{"both", frame.Input{Frame: data.NewFrame("x"), Record: msRec}, "both a frame and a record"},
		{"lengths", frame.Input{Frame: data.NewFrame("uneven", data.NewField("a", nil, []int64{1}), data.NewField("b", nil, []int64{1, 2}))}, `"uneven": frame has different field lengths`},
		{"nil field", frame.Input{Frame: &data.Frame{Name: "holes", Fields: []*data.Field{nil}}}, `"holes": frame's field at index 0 is nil`},
		{"NaN in meta", frame.Input{Frame: nanMeta}, `"nan meta": encoding meta: `},
		{"ms timestamps", frame.Input{Record: msRec}, `field "c": type timestamp[ms]: Grafana reads every timestamp as nanoseconds`},
		{"date32", frame.Input{Record: dateRec}, `field "c": type date32 is not one Grafana can read`},
		{"bad labels", frame.Input{Record: badLabels}, `field "c": reading labels: json: cannot unmarshal number`},
	} {
		dst := []byte("keep")
		var w frame.JSONWriter
		got, err := w.Append(dst, c.in)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if want := strings.Split(c.want, " ... "); !strings.Contains(err.Error(), want[0]) || !strings.Contains(err.Error(), want[len(want)-1]) {
			t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
		}
		if string(got) != "keep" {
			t.Errorf("%s: dst became %q, want it unextended", c.name, got)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Golden files: the bytes of a few frames, reviewed once; -update rewrites
// them (after the SDK oracle tests above pass).
func TestJSONGolden(t *testing.T) {
	for name, f := range map[string]*data.Frame{
		"alltypes-5": frametest.AllTypes(5, 42),
		"empty":      data.NewFrame(""),
		"series":     seriesFrame(4),
	} {
		got, err := frame.AppendJSON(nil, frame.Input{Frame: f})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "json", name+".json")
		if *updateJSON {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s: differs from %s:\n got: %s\nwant: %s", name, path, got, want)
		}
	}
}

// Writing a frame into a buffer with room allocates nothing once the
// writer is warm: no boxing per value, no copy of a column.
func TestJSONSteadyStateAllocs(t *testing.T) {
	f := seriesFrame(256)
	f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti}
	rec := sdkRecord(t, f)
	defer rec.Release()
	var w frame.JSONWriter
	for _, in := range []frame.Input{{Frame: f}, {Record: rec}} {
		buf, err := w.Append(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if buf, err = w.Append(buf[:0], in); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("frame %v record %v: %.1f allocations per frame, want 0", in.Frame != nil, in.Record != nil, allocs)
		}
	}
}

// FuzzAppendJSON: a frame built from the fuzzer's input (field types chosen
// by a mask from every SDK type, rows and values from a seed, a float and a
// time from raw bits, strings, labels, names and JSON values cut from its
// bytes) must be written byte for byte as the SDK's MarshalJSON writes it,
// and its record (the SDK's FrameToArrowTable) as the SDK writes
// FromArrowRecord's frame; where the SDK's JSON does not parse (a JSON
// value followed by more), ours must.
func FuzzAppendJSON(f *testing.F) {
	f.Add(uint16(3), uint64(1), uint32(0xFFFFFFFF), []byte("héllo\x00 wörld {} [1]"), "lbl", uint64(0x7FF8000000000001), int64(1))
	f.Add(uint16(1), uint64(2), uint32(1<<9|1<<11), []byte{0xff, 0xfe, '<', '&', ' ', '"', 'x'}, "\u2028", math.Float64bits(1e-7), int64(-1_500_001))
	f.Add(uint16(300), uint64(3), uint32(0x5555), []byte(strings.Repeat("1 ", 100)), "", math.Float64bits(1e21), int64(0))
	f.Add(uint16(0), uint64(4), uint32(0), []byte(nil), "k", uint64(0), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, rows uint16, seed uint64, mask uint32, text []byte, label string, fbits uint64, tns int64) {
		n := int(rows % 300)
		all := frametest.AllTypes(n, seed)
		var fields []*data.Field
		for i, fld := range all.Fields {
			if mask&(1<<(uint(i)%32)) != 0 {
				fields = append(fields, fld)
			}
		}
		parts := bytes.Split(text, []byte{' '})
		words := make([]string, n)
		raws := make([]json.RawMessage, n)
		floats := make([]*float64, n)
		floats32 := make([]float32, n)
		times := make([]time.Time, n)
		fv := math.Float64frombits(fbits)
		for i := range n {
			p := parts[i%len(parts)]
			words[i] = string(p)
			if len(p) > 0 {
				raws[i] = json.RawMessage(p)
			}
			if i%3 != 2 {
				floats[i] = &fv
			}
			floats32[i] = float32(fv) * float32(i)
			times[i] = time.Unix(0, tns+int64(i)*int64(fbits%1e9))
		}
		fields = append(fields,
			data.NewField(label, data.Labels{label: string(text), "k": label}, words),
			data.NewField("raw "+label, nil, raws),
			data.NewField("f", nil, floats),
			data.NewField("f32", nil, floats32),
			data.NewField("t", nil, times))
		in := data.NewFrame(string(text), fields...)
		in.RefID = label
		in.Meta = &data.FrameMeta{ExecutedQueryString: string(text), Notices: []data.Notice{{Text: label}}}

		var w frame.JSONWriter
		want, err := in.MarshalJSON()
		if err != nil {
			t.Fatalf("the SDK refused the frame: %v", err)
		}
		got, err := w.Append(nil, frame.Input{Frame: in})
		if err != nil {
			t.Fatalf("refused a frame the SDK writes: %v", err)
		}
		if json.Valid(want) {
			sameJSON(t, "frame", want, got)
		} else if !json.Valid(got) {
			t.Fatalf("written as JSON that does not parse:\n%.300s", got)
		}

		rec := sdkRecordOf(t, in)
		defer rec.Release()
		fr, err := data.FromArrowRecord(rec)
		if err != nil {
			t.Fatalf("the SDK's FromArrowRecord refused its own record: %v", err)
		}
		want = sdkFrameJSON(t, fr)
		if got, err = w.Append(nil, frame.Input{Record: rec}); err != nil {
			t.Fatalf("refused a record the SDK writes: %v", err)
		}
		if json.Valid(want) {
			sameJSON(t, "record", want, got)
		} else if !json.Valid(got) {
			t.Fatalf("record written as JSON that does not parse:\n%.300s", got)
		}
	})
}
