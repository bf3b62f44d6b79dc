//go:build unix

package frame_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
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

// The string layouts compared, besides Quiver's own encoder (layoutQuiver):
// arrow-go's IPC writer with the frame's string columns as utf8 (what Quiver
// writes), as utf8view, and as dictionary<int32, utf8>.
const (
	layoutQuiver   = "quiver"
	layoutUTF8     = "utf8"
	layoutUTF8View = "utf8view"
	layoutDict     = "dict"
)

// layoutCodecs are arrow-go's writer's compression options by name.
var layoutCodecs = []struct {
	name string
	opts []ipc.Option
}{
	{"none", nil},
	{"lz4", []ipc.Option{ipc.WithLZ4()}},
	{"zstd", []ipc.Option{ipc.WithZstd()}},
}

// layoutFrames are the string-heavy frames: log lines, a table with
// low-cardinality text columns, and short labels-like values.
func layoutFrames() []benchInput {
	return []benchInput{
		{"logs4096", []*data.Frame{benchLogs(4096, 5)}},
		{"table1000", []*data.Frame{layoutTable(1000, 7)}},
		{"labels1000", []*data.Frame{layoutLabels(1000, 8)}},
	}
}

// layoutTable is a 1000-row request table: time, host (20 values), status
// (5 values) and latency.
func layoutTable(rows int, seed uint64) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x1a70))
	statuses := []string{"ok", "ok", "ok", "slow", "error", "timeout", "retry"}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ts, hosts, sts := make([]time.Time, rows), make([]string, rows), make([]string, rows)
	lat := make([]float64, rows)
	for i := range rows {
		ts[i] = t0.Add(time.Duration(i*250+r.IntN(250)) * time.Millisecond)
		hosts[i] = fmt.Sprintf("web-%02d.eu-west-1.example.net", r.IntN(20))
		sts[i] = statuses[r.IntN(len(statuses))]
		lat[i] = r.ExpFloat64() * 0.05
	}
	f := data.NewFrame("requests", data.NewField("time", nil, ts), data.NewField("host", nil, hosts),
		data.NewField("status", nil, sts), data.NewField("latency", nil, lat))
	f.RefID = "A"
	return f
}

// layoutLabels is one column of 1000 labels-like values of at most 12
// bytes (100 distinct: a job name and an ordinal).
func layoutLabels(rows int, seed uint64) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x1abe1))
	jobs := []string{"api", "node", "querier", "ingester", "cache"}
	vs := make([]string, rows)
	for i := range vs {
		vs[i] = fmt.Sprintf("%s-%02d", jobs[r.IntN(len(jobs))], r.IntN(20))
	}
	f := data.NewFrame("labels", data.NewField("instance", nil, vs))
	f.RefID = "A"
	return f
}

// layoutWire writes f as one Arrow IPC file in the given layout and codec:
// Quiver's encoder (codec none) for layoutQuiver, else arrow-go's writer
// with the SDK's schema and columns, the string columns rebuilt in the
// layout.
func layoutWire(f *data.Frame, layout string, opts []ipc.Option) ([]byte, error) {
	if layout == layoutQuiver {
		e, err := frame.NewEncoder(arrowipc.Options{Codec: codec.MustNew(codec.None, 0)})
		if err != nil {
			return nil, err
		}
		wire, _, err := e.Append(nil, frame.Input{Frame: f}, nil)
		return wire, err
	}
	tbl, err := data.FrameToArrowTable(f)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	mem := memory.NewGoAllocator()
	fields := make([]arrow.Field, tbl.NumCols())
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range fields {
		fields[i] = tbl.Schema().Field(i)
		col := tbl.Column(i).Data().Chunk(0)
		if s, ok := col.(*array.String); ok && layout != layoutUTF8 {
			col, fields[i].Type = relayout(mem, s, layout)
			defer col.Release()
		}
		cols[i] = col
	}
	schema := arrow.NewSchema(fields, func() *arrow.Metadata { md := tbl.Schema().Metadata(); return &md }())
	rec := array.NewRecordBatch(schema, cols, tbl.NumRows())
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(mem)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// relayout returns s's values as utf8view or dictionary<int32, utf8>.
func relayout(mem memory.Allocator, s *array.String, layout string) (arrow.Array, arrow.DataType) {
	var b array.Builder
	var appendString func(string)
	switch layout {
	case layoutUTF8View:
		vb := array.NewStringViewBuilder(mem)
		b, appendString = vb, vb.Append
	case layoutDict:
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
		db := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
		b, appendString = db, func(v string) {
			if err := db.AppendString(v); err != nil {
				panic(err) // only on an index overflow, which int32 and these frames rule out
			}
		}
	default:
		panic("unknown layout " + layout)
	}
	defer b.Release()
	for i := range s.Len() {
		if s.IsNull(i) {
			b.AppendNull()
			continue
		}
		appendString(s.Value(i))
	}
	a := b.NewArray()
	return a, a.DataType()
}

// readStrings reads wire with arrow-go's file reader and returns the values
// of column col, whichever string layout it has.
func readStrings(wire []byte, col int) ([]string, error) {
	r, err := ipc.NewFileReader(bytes.NewReader(wire))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	rec, err := r.RecordBatch(0)
	if err != nil {
		return nil, err
	}
	a := rec.Column(col)
	out := make([]string, a.Len())
	for i := range out {
		out[i] = a.ValueStr(i)
	}
	return out, nil
}

// readAll is the arrow-go part of Grafana's decode alone: open the file and
// read its record batches, without converting them to a data.Frame.
func readAll(wire []byte) error {
	r, err := ipc.NewFileReader(bytes.NewReader(wire))
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	for i := range r.NumRecords() {
		if _, err := r.RecordBatch(i); err != nil {
			return err
		}
	}
	return nil
}

// layoutCase is one frame written in one layout and codec.
type layoutCase struct {
	name          string // frame=…/layout=…/codec=…
	f             *data.Frame
	layout, codec string
	wire          []byte
}

// layoutCases writes every frame of layoutFrames in every layout and codec
// (Quiver's encoder with codec none only).
func layoutCases(tb testing.TB) []layoutCase {
	var cases []layoutCase
	for _, in := range layoutFrames() {
		for _, layout := range []string{layoutQuiver, layoutUTF8, layoutUTF8View, layoutDict} {
			for _, c := range layoutCodecs {
				if layout == layoutQuiver && c.name != "none" {
					continue
				}
				lc := layoutCase{fmt.Sprintf("frame=%s/layout=%s/codec=%s", in.name, layout, c.name), in.frames[0], layout, c.name, nil}
				var err error
				if lc.wire, err = layoutWire(lc.f, layout, c.opts); err != nil {
					tb.Fatalf("%s: %v", lc.name, err)
				}
				cases = append(cases, lc)
			}
		}
	}
	return cases
}

// TestLayoutsDecodeEqual checks the frames BenchmarkLayout measures: every
// layout the SDK reads decodes to the frame it was written from and to the
// same JSON as the frame Quiver writes; the dictionary layout, which the SDK
// does not read, holds the same strings when arrow-go reads it, and the
// SDK's error names the type.
func TestLayoutsDecodeEqual(t *testing.T) {
	anchorJSON := map[*data.Frame][]byte{}
	for _, lc := range layoutCases(t) {
		checkStringType(t, lc.name, lc.f, lc.wire, lc.layout)
		got, err := data.UnmarshalArrowFrame(lc.wire)
		if lc.layout == layoutDict {
			if err == nil || !strings.Contains(err.Error(), "unsupported") || !strings.Contains(err.Error(), "DICTIONARY") {
				t.Fatalf("%s: SDK decode error %v, want unsupported DICTIONARY", lc.name, err)
			}
			checkDictStrings(t, lc.name, lc.f, lc.wire)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", lc.name, err)
		}
		if err := frametest.Equal(lc.f, got); err != nil {
			t.Fatalf("%s: %v", lc.name, err)
		}
		js, err := data.FrameToJSON(got, data.IncludeAll)
		if err != nil {
			t.Fatal(err)
		}
		if lc.layout == layoutQuiver { // the first case of each frame
			anchorJSON[lc.f] = js
		} else if !bytes.Equal(js, anchorJSON[lc.f]) {
			t.Fatalf("%s: JSON differs from that of Quiver's frame", lc.name)
		}
	}
	if len(anchorJSON) != len(layoutFrames()) {
		t.Fatalf("%d anchors, want one per frame", len(anchorJSON))
	}
}

// stringTypes is the Arrow type each layout writes a string field as.
var stringTypes = map[string]arrow.Type{
	layoutQuiver: arrow.STRING, layoutUTF8: arrow.STRING, layoutUTF8View: arrow.STRING_VIEW, layoutDict: arrow.DICTIONARY,
}

// checkStringType checks that wire's schema has every string field of f in
// the layout's type, so that no row of the benchmark measures another one.
func checkStringType(t *testing.T, name string, f *data.Frame, wire []byte, layout string) {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(wire))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer func() { _ = r.Close() }()
	for i, fld := range f.Fields {
		if got := r.Schema().Field(i).Type.ID(); fld.Type() == data.FieldTypeString && got != stringTypes[layout] {
			t.Fatalf("%s: field %q is %s, want %s", name, fld.Name, got, stringTypes[layout])
		}
	}
}

// checkDictStrings checks that every string field of f reads back from
// wire, with arrow-go's reader, as the same values.
func checkDictStrings(t *testing.T, name string, f *data.Frame, wire []byte) {
	t.Helper()
	strs := 0
	for i, fld := range f.Fields {
		if fld.Type() != data.FieldTypeString {
			continue
		}
		strs++
		got, err := readStrings(wire, i)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for r, v := range got {
			if want := fld.At(r).(string); v != want {
				t.Fatalf("%s: field %q row %d: %q, want %q", name, fld.Name, r, v, want)
			}
		}
	}
	if strs == 0 {
		t.Fatalf("%s: no string field", name)
	}
}

// BenchmarkLayout measures what Grafana's decoder pays per frame for each
// string layout: op=sdk is data.UnmarshalArrowFrame (what Grafana runs; the
// dictionary layout fails there and is left out), op=read arrow-go's file
// reader alone (the part of it before the conversion to a data.Frame).
// wire-B/op is the file's size. layout=quiver (Quiver's encoder, codec
// none) is the anchor; layout=utf8 is the same layout from arrow-go's
// writer.
func BenchmarkLayout(b *testing.B) {
	ops := []struct {
		name string
		run  func([]byte) error
	}{
		{"sdk", func(w []byte) error { _, err := data.UnmarshalArrowFrame(w); return err }},
		{"read", readAll},
	}
	for _, lc := range layoutCases(b) {
		for _, op := range ops {
			if lc.layout == layoutDict && op.name == "sdk" {
				continue
			}
			b.Run(lc.name+"/op="+op.name, func(b *testing.B) {
				measure(b, func() {
					if err := op.run(lc.wire); err != nil {
						b.Fatal(err)
					}
				})
				b.ReportMetric(float64(len(lc.wire)), "wire-B/op")
			})
		}
	}
}
