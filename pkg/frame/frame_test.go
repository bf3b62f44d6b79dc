package frame_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

// codecs is every codec at a spread of levels.
var codecs = []codec.Codec{
	codec.MustNew(codec.None, 0),
	codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.LZ4, 9),
	codec.MustNew(codec.Zstd, 1), codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.Zstd, 7), codec.MustNew(codec.Zstd, 19),
}

func newEncoder(t testing.TB, c codec.Codec, minSavings float64) *frame.Encoder {
	t.Helper()
	e, err := frame.NewEncoder(arrowipc.Options{Codec: c, MinSavings: minSavings})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// readBack decodes b with Grafana's decoder and with arrow-go's file reader
// and checks both agree with want.
func readBack(t testing.TB, b []byte, want *data.Frame) {
	t.Helper()
	got, err := data.UnmarshalArrowFrame(b)
	if err != nil {
		t.Fatalf("data.UnmarshalArrowFrame: %v", err)
	}
	if err := frametest.Equal(want, got); err != nil {
		t.Fatalf("SDK decode: %v", err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatalf("ipc.NewFileReader: %v", err)
	}
	defer r.Close()
	rows := int64(0)
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatalf("arrow-go record %d: %v", i, err)
		}
		rows += rec.NumRows()
	}
	if wantRows, _ := want.RowLen(); rows != int64(wantRows) || r.Schema().NumFields() != len(want.Fields) {
		t.Fatalf("arrow-go: %d rows %d fields, want %d rows %d fields", rows, r.Schema().NumFields(), wantRows, len(want.Fields))
	}
}

func TestRoundTripAllTypes(t *testing.T) {
	for _, c := range codecs {
		for _, rows := range []int{0, 1, 9, 1000} {
			for _, ms := range []float64{0, 0.1} {
				t.Run(fmt.Sprintf("codec=%s/rows=%d/minSavings=%v", c, rows, ms), func(t *testing.T) {
					f := frametest.AllTypes(rows, uint64(rows))
					e := newEncoder(t, c, ms)
					b, _, err := e.Append(nil, frame.Input{Frame: f}, nil)
					if err != nil {
						t.Fatal(err)
					}
					readBack(t, b, f)
					// The encoder reused for a second frame writes the same bytes.
					again, _, err := e.Append(nil, frame.Input{Frame: f}, nil)
					if err != nil || !bytes.Equal(b, again) {
						t.Fatalf("second encode differs (err %v)", err)
					}
				})
			}
		}
	}
}

func TestRoundTripEdgeFrames(t *testing.T) {
	noFields := data.NewFrame("empty")
	noFields.RefID = "B"
	unicode := data.NewFrame("日本語 🚀", data.NewField("valeur ✨", data.Labels{"clé": "välue\u2028"}, []string{"ünï", "", "\x00\xff"}))
	floats := data.NewFrame("floats", data.NewField("v", nil, frametest.Floats))
	for _, f := range []*data.Frame{noFields, unicode, floats} {
		for _, c := range codecs {
			b, _, err := newEncoder(t, c, 0).Append(nil, frame.Input{Frame: f}, nil)
			if err != nil {
				t.Fatalf("%s %q: %v", c, f.Name, err)
			}
			// Invalid UTF-8 reads back as the SDK's JSON writer replaced it.
			want := f
			if f == unicode {
				want = f.EmptyCopy()
				want.Fields[0].Labels = data.Labels{"clé": "välue\u2028"}
				want.AppendRow("ünï")
				want.AppendRow("")
				want.AppendRow("\x00\xff")
			}
			readBack(t, b, want)
		}
	}
}

// The SDK's own MarshalArrow path (FrameToArrowTable) and ours write the
// same schema, metadata and buffers for the same frame: fed the SDK's
// record, Append of the Record must produce exactly the Frame's bytes.
func TestSameBytesAsRecordPath(t *testing.T) {
	for _, c := range codecs {
		for _, rows := range []int{0, 5, 300} {
			f := frametest.AllTypes(rows, 42)
			e := newEncoder(t, c, 0.1)
			fromFrame, _, err := e.Append(nil, frame.Input{Frame: f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := data.FrameToArrowTable(f)
			if err != nil {
				t.Fatal(err)
			}
			tr := array.NewTableReader(tbl, -1)
			var recs []arrow.RecordBatch
			for tr.Next() {
				rec := tr.RecordBatch()
				rec.Retain()
				recs = append(recs, rec)
			}
			if len(recs) == 0 { // a table of 0 rows yields no record
				recs = append(recs, array.NewRecordBatch(tbl.Schema(), emptyColumns(tbl.Schema()), 0))
			}
			if len(recs) != 1 {
				t.Fatalf("table of %d rows gave %d records", rows, len(recs))
			}
			fromRecord, _, err := e.Append(nil, frame.Input{Record: recs[0]}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fromFrame, fromRecord) {
				t.Errorf("codec=%s rows=%d: frame path %d bytes, record path %d bytes, not identical", c, rows, len(fromFrame), len(fromRecord))
			}
			// And with metadata built by this package rather than the SDK.
			md, err := frame.SchemaMetadata(f.Name, f.RefID, f.Meta)
			if err != nil {
				t.Fatal(err)
			}
			fields := tbl.Schema().Fields()
			for i, fld := range f.Fields {
				ts, ok := fields[i].Metadata.GetValue(frame.KeyTSType) // the type names are the SDK's
				if !ok {
					t.Fatalf("field %q: the SDK wrote no %s", fld.Name, frame.KeyTSType)
				}
				if fields[i].Metadata, err = frame.FieldMetadata(ts, fld.Labels, fld.Config); err != nil {
					t.Fatal(err)
				}
			}
			ours := array.NewRecordBatch(arrow.NewSchema(fields, &md), recs[0].Columns(), recs[0].NumRows())
			fromOurs, _, err := e.Append(nil, frame.Input{Record: ours}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fromFrame, fromOurs) {
				t.Errorf("codec=%s rows=%d: metadata built by package frame differs from the SDK's", c, rows)
			}
			ours.Release()
			recs[0].Release()
			tr.Release()
			tbl.Release()
		}
	}
}

func emptyColumns(s *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, s.NumFields())
	for i, f := range s.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return cols
}

// The encoder reads SDK vectors in place through PointerAt(0): pin that
// PointerAt(i) of every field type is &vector[i], so that an SDK which
// changes its vectors fails here and not by writing wrong frames.
func TestPointerAtViewsVector(t *testing.T) {
	f := frametest.AllTypes(3, 7)
	for _, fld := range f.Fields {
		p0 := fmt.Sprintf("%p", fld.PointerAt(0))
		p1 := fmt.Sprintf("%p", fld.PointerAt(1))
		if p0 == p1 {
			t.Errorf("field %q: PointerAt(0) and PointerAt(1) are the same pointer", fld.Name)
		}
		// Writing through the pointer must change the field's value.
		before := fmt.Sprint(fld.At(1))
		fld.Set(1, fld.At(0))
		after := fmt.Sprint(fld.At(1))
		_ = before
		if after != fmt.Sprint(fld.At(0)) {
			t.Errorf("field %q: Set did not write the vector", fld.Name)
		}
	}
	// The view itself: a float64 vector viewed through PointerAt is the
	// vector, and a change through the view shows in At.
	fld := data.NewField("v", nil, []float64{1, 2, 3})
	p := fld.PointerAt(1).(*float64)
	*p = 42
	if fld.At(1).(float64) != 42 {
		t.Fatal("PointerAt(1) does not point into the float64 vector")
	}
	tm := data.NewField("t", nil, []time.Time{{}, {}})
	if _, ok := tm.PointerAt(0).(*time.Time); !ok {
		t.Fatalf("PointerAt of a time vector is %T, want *time.Time", tm.PointerAt(0))
	}
	nf := data.NewField("n", nil, []*float64{nil, new(float64)})
	if _, ok := nf.PointerAt(0).(**float64); !ok {
		t.Fatalf("PointerAt of a nullable float64 vector is %T, want **float64", nf.PointerAt(0))
	}
}

func TestLabelsJSONMatchesSDK(t *testing.T) {
	for _, l := range []data.Labels{
		{}, {"a": "b"}, {"z": "1", "a": "2", "m": "3"},
		{"html": "<script>&</script>", "ctl": "\x01\x1f\t\n\r\b\f", "q": `"\`},
		{"bad utf8": "\xff\xfe", "sep": "\u2028\u2029", "ünï": "日本"},
	} {
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		md, err := frame.FieldMetadata(frame.TSNumber, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := md.Values()[md.FindKey(frame.KeyLabels)]; got != string(want) {
			t.Errorf("labels %v: got %s, want %s", l, got, want)
		}
	}
}

func FuzzLabelsJSON(f *testing.F) {
	f.Add("k", "v")
	f.Add("<&>", "\xff\u2028")
	f.Fuzz(func(t *testing.T, k, v string) {
		l := data.Labels{k: v, "fixed": v + k}
		want, err := json.Marshal(l)
		if err != nil {
			t.Skipf("the oracle, json.Marshal of the labels, refuses them: %v", err)
		}
		md, err := frame.FieldMetadata(frame.TSNumber, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := md.Values()[md.FindKey(frame.KeyLabels)]; got != string(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	})
}

func TestUnsupportedAndBadInput(t *testing.T) {
	e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0)
	if _, _, err := e.Append(nil, frame.Input{Frame: nil}, nil); err == nil {
		t.Error("nil frame accepted")
	}
	uneven := data.NewFrame("uneven", data.NewField("a", nil, []int64{1, 2}), data.NewField("b", nil, []int64{1}))
	if _, _, err := e.Append([]byte("keep"), frame.Input{Frame: uneven}, nil); err == nil {
		t.Error("fields of different lengths accepted")
	}
	// After errors the encoder still writes good frames.
	good := data.NewFrame("good", data.NewField("v", nil, []float64{1, math.Pi}))
	b, _, err := e.Append(nil, frame.Input{Frame: good}, nil)
	if err != nil {
		t.Fatal(err)
	}
	readBack(t, b, good)
}

// seriesFrame is a typical time series: time + float64 random walk with labels.
func seriesFrame(rows int) *data.Frame {
	ts := make([]time.Time, rows)
	vs := make([]float64, rows)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := 100.0
	for i := range ts {
		ts[i] = t0.Add(time.Duration(i) * time.Second)
		v += math.Sin(float64(i)) * 1.7
		vs[i] = v
	}
	return data.NewFrame("cpu",
		data.NewField("time", nil, ts),
		data.NewField("value", data.Labels{"host": "web-01", "region": "eu-west", "job": "node"}, vs))
}

// Steady state: a reused encoder writing a frame of a size it has seen into
// a reused buffer allocates nothing.
func TestAppendFrameSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are checked without -race")
	}
	f := seriesFrame(256)
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3)} {
		e := newEncoder(t, c, 0.1)
		buf, _, err := e.Append(nil, frame.Input{Frame: f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			buf, _, err = e.Append(buf[:0], frame.Input{Frame: f}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs > 0 {
			t.Errorf("codec=%s: %.1f allocations per frame in steady state, want 0", c, allocs)
		}
	}
}

func TestStatsInMeta(t *testing.T) {
	f := seriesFrame(4096)
	f.Meta = &data.FrameMeta{Notices: []data.Notice{{Text: "kept"}}}
	e, err := frame.NewEncoder(arrowipc.Options{Codec: codec.MustNew(codec.Zstd, 3), MinSavings: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	others := frame.Summary{Frames: 2, RawBytes: 1000, WireBytes: 500, Encode: time.Millisecond}
	check := func(b []byte) {
		t.Helper()
		got, err := data.UnmarshalArrowFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Meta == nil || len(got.Meta.Notices) != 1 || got.Meta.Notices[0].Text != "kept" {
			t.Fatalf("meta lost: %+v", got.Meta)
		}
		stats := map[string]float64{}
		for _, s := range got.Meta.Stats {
			stats[s.DisplayName] = s.Value
		}
		raw, wire := stats[frame.StatRawBytes], stats[frame.StatWireBytes]
		if raw != 1000+4096*16 || wire <= 500 || wire >= raw || stats[frame.StatFrames] != 3 {
			t.Errorf("frames %v raw %v wire %v: want 3 frames, 1000+65536 raw bytes compressed", stats[frame.StatFrames], raw, wire)
		}
		if stats[frame.StatEncode] < 1 {
			t.Errorf("encode time %v ms, want at least the others' 1 ms", stats[frame.StatEncode])
		}
		if r := stats[frame.StatRatio]; r < 1 || math.Abs(r-raw/wire) > 0.01 {
			t.Errorf("ratio %v for %v/%v", r, raw, wire)
		}
		if lvl, ok := stats[frame.StatCodec+"zstd/3 (zstd default)"]; !ok || lvl != 3 {
			t.Errorf("codec stat missing: %v", stats)
		}
		if _, ok := stats[frame.StatEncode]; !ok {
			t.Errorf("encode time missing: %v", stats)
		}
		// The time and value buffers of this frame, one of them compressed.
		c, r, k := stats[frame.StatCompressed], stats[frame.StatRaw], stats[frame.StatSkipped]
		if c+r+k != 2 || c < 1 {
			t.Errorf("buffers compressed %v, raw %v, skipped %v: want 2 in all, one compressed at least", c, r, k)
		}
		// Values are untouched by the stats.
		if err := frametest.Equal(seriesFrame(4096), withoutMeta(got)); err != nil {
			t.Error(err)
		}
	}
	b, _, err := e.Append(nil, frame.Input{Frame: f}, &others)
	if err != nil {
		t.Fatal(err)
	}
	check(b)
	plain, _, err := e.Append(nil, frame.Input{Frame: f}, nil) // no stats: the frame's own meta only
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := data.UnmarshalArrowFrame(plain); got == nil || len(got.Meta.Stats) != 0 {
		t.Fatal("Append without stats after one with stats wrote stats")
	}
	tbl, err := data.FrameToArrowTable(f)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	tr.Next()
	b, _, err = e.Append(nil, frame.Input{Record: tr.RecordBatch()}, &others)
	if err != nil {
		t.Fatal(err)
	}
	check(b)
}

func withoutMeta(f *data.Frame) *data.Frame {
	f.Meta = nil
	return f
}

// ValueBytes is the size of each fixed-width SDK field type's Go value,
// and no fixed size for text and JSON.
func TestValueBytes(t *testing.T) {
	for _, ft := range []data.FieldType{data.FieldTypeInt8, data.FieldTypeInt16, data.FieldTypeInt32, data.FieldTypeInt64,
		data.FieldTypeUint8, data.FieldTypeUint16, data.FieldTypeUint32, data.FieldTypeUint64, data.FieldTypeFloat32,
		data.FieldTypeFloat64, data.FieldTypeBool, data.FieldTypeTime, data.FieldTypeEnum, data.FieldTypeString, data.FieldTypeJSON} {
		n, fixed := frame.ValueBytes(ft)
		nn, nfixed := frame.ValueBytes(ft.NullableType())
		if nn != n || nfixed != fixed {
			t.Errorf("%s: %d/%v, its nullable type %d/%v", ft, n, fixed, nn, nfixed)
		}
		size := int64(reflect.TypeOf(data.NewFieldFromFieldType(ft, 1).At(0)).Size())
		text := ft == data.FieldTypeString || ft == data.FieldTypeJSON
		if text && fixed || !text && (!fixed || n != size) {
			t.Errorf("%s: ValueBytes %d (fixed %v), its Go value is %d bytes", ft, n, fixed, size)
		}
	}
}
