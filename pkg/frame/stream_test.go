package frame_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

var partCodecs = []codec.Codec{
	codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0),
	codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.Auto, 0),
}

// finishParts finishes p and returns the frame's pieces joined.
func finishParts(e *frame.Encoder, p *frame.Parts, md arrow.Metadata, stats *frame.Summary) ([]byte, arrowipc.BodyStats, error) {
	pieces, st, err := e.FinishPartsPieces(p, md, stats)
	return bytes.Join(pieces, nil), st, err
}

// withSchemaMeta returns rec's columns under a schema whose metadata is md.
func withSchemaMeta(rec arrow.RecordBatch, md arrow.Metadata) arrow.RecordBatch {
	return array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields(), &md), rec.Columns(), rec.NumRows())
}

// A frame written in parts (slices of one record, an empty one among them,
// encoded by two encoders in turn, each part's schema metadata a decoy)
// decodes through the SDK to the frame of the whole record, value by value,
// and arrow-go's reader finds one batch per part.
func TestPartsReadAsTheJoinedFrame(t *testing.T) {
	whole := frametest.AllTypes(3000, 7)
	rec := sdkRecord(t, whole)
	defer rec.Release()
	decoy := arrow.NewMetadata([]string{frame.KeyName, frame.KeyRefID}, []string{"decoy", "Z"})
	cuts := []int64{0, 1000, 1000, 1001, 2500, 3000}
	for _, c := range partCodecs {
		encs := []*frame.Encoder{newEncoder(t, c, 0.1), newEncoder(t, c, 0.1)}
		p := frame.NewParts(rec.Schema())
		var sum int64
		for i := 1; i < len(cuts); i++ {
			sl := rec.NewSlice(cuts[i-1], cuts[i])
			part := withSchemaMeta(sl, decoy)
			sl.Release()
			st, err := encs[i%2].AppendPart(p, part)
			part.Release()
			if err != nil {
				t.Fatalf("%s: part %d: %v", c, i, err)
			}
			sum += st.RawBytes
		}
		if p.Len() != len(cuts)-1 || p.Rows() != 3000 || p.Size() == 0 {
			t.Errorf("%s: %d parts, %d rows, %d bytes", c, p.Len(), p.Rows(), p.Size())
		}
		out, st, err := finishParts(encs[0], p, rec.Schema().Metadata(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != 3000 || st.RawBytes != sum || st.PerBuffer != nil {
			t.Errorf("%s: frame stats %+v, want 3000 rows and %d raw bytes", c, st, sum)
		}
		if p.Len() != 0 || p.Size() != 0 {
			t.Errorf("%s: a finished Parts holds %d parts, %d bytes", c, p.Len(), p.Size())
		}
		readBack(t, out, whole)
		joined, _, err := encs[1].Append(nil, frame.Input{Record: rec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := data.UnmarshalArrowFrame(out)
		b, errB := data.UnmarshalArrowFrame(joined)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if err := frametest.Equal(b, a); err != nil {
			t.Errorf("%s: parts and joined decode differently: %v", c, err)
		}
		batches, err := arrowipctest.Inspect(out)
		if err != nil || len(batches) != len(cuts)-1 {
			t.Fatalf("%s: Inspect: %d batches, %v", c, len(batches), err)
		}
		for i, b := range batches {
			if b.Rows != cuts[i+1]-cuts[i] {
				t.Errorf("%s: batch %d of %d rows, want %d", c, i, b.Rows, cuts[i+1]-cuts[i])
			}
		}
	}
}

// A field is nullable in the frame when it holds nulls in any part (each
// part declaring nullability by its own nulls, as a source does); the
// frame then decodes as the joined table would.
func TestPartsNullableInAnyPart(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	num, _ := frame.FieldMetadata(frame.TSNumber, data.Labels{"host": "a"}, nil)
	str, _ := frame.FieldMetadata(frame.TSString, nil, nil)
	part := func(vals []float64, valid []bool, texts []string) arrow.RecordBatch {
		fb := array.NewFloat64Builder(mem)
		defer fb.Release()
		fb.AppendValues(vals, valid)
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		sb.AppendValues(texts, nil)
		v, s := fb.NewArray(), sb.NewArray()
		defer v.Release()
		defer s.Release()
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: v.NullN() > 0, Metadata: num},
			{Name: "s", Type: arrow.BinaryTypes.String, Metadata: str},
		}, nil)
		return array.NewRecordBatch(schema, []arrow.Array{v, s}, int64(len(vals)))
	}
	parts := []arrow.RecordBatch{
		part([]float64{1, 2}, nil, []string{"a", ""}),
		part([]float64{3, 0, 5}, []bool{true, false, true}, []string{"ccc", "d", "é"}),
		part([]float64{6}, nil, []string{"f"}),
	}
	meta := &data.FrameMeta{ExecutedQueryString: "SELECT v, s", Notices: []data.Notice{{Severity: data.NoticeSeverityWarning, Text: "late notice"}}}
	md, err := frame.SchemaMetadata("t", "A", meta)
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	want := data.NewFrame("t",
		data.NewField("v", data.Labels{"host": "a"}, []*float64{f(1), f(2), f(3), nil, f(5), f(6)}),
		data.NewField("s", nil, []string{"a", "", "ccc", "d", "é", "f"}))
	want.RefID, want.Meta = "A", meta
	for _, c := range partCodecs {
		e := newEncoder(t, c, 0)
		p := frame.NewParts(parts[0].Schema())
		for _, r := range parts {
			if _, err := e.AppendPart(p, r); err != nil {
				t.Fatal(err)
			}
		}
		out, _, err := finishParts(e, p, md, nil)
		if err != nil {
			t.Fatal(err)
		}
		readBack(t, out, want)
	}
	for _, r := range parts {
		r.Release()
	}
}

// The frame that carries the query's stats counts once, with its parts'
// bodies summed; a frame of no part is one empty batch of its fields.
func TestPartsStatsAndNoPart(t *testing.T) {
	whole := frametest.AllTypes(500, 3)
	rec := sdkRecord(t, whole)
	defer rec.Release()
	e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0.1)
	p := frame.NewParts(rec.Schema())
	var raw, wire int64
	for _, cut := range [][2]int64{{0, 200}, {200, 500}} {
		sl := rec.NewSlice(cut[0], cut[1])
		st, err := e.AppendPart(p, sl)
		sl.Release()
		if err != nil {
			t.Fatal(err)
		}
		raw, wire = raw+st.RawBytes, wire+st.WireBytes
	}
	others := frame.Summary{Frames: 3, RawBytes: 1000, WireBytes: 400, Encode: time.Millisecond}
	out, st, err := finishParts(e, p, rec.Schema().Metadata(), &others)
	if err != nil {
		t.Fatal(err)
	}
	if st.RawBytes != raw || st.WireBytes != wire {
		t.Errorf("stats %+v, parts raw %d wire %d", st, raw, wire)
	}
	got, err := data.UnmarshalArrowFrame(out)
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]float64{}
	for _, s := range got.Meta.Stats {
		stats[s.DisplayName] = s.Value
	}
	if stats[frame.StatFrames] != 4 || stats[frame.StatRawBytes] != float64(1000+raw) || stats[frame.StatWireBytes] != float64(400+wire) {
		t.Errorf("meta stats %v; want 4 frames, raw %d, wire %d", stats, 1000+raw, 400+wire)
	}
	if stats[frame.StatEncode] < 1 {
		t.Errorf("encode time %v ms, want the others' 1 ms and more", stats[frame.StatEncode])
	}

	empty := frame.NewParts(rec.Schema())
	out, st, err = finishParts(e, empty, rec.Schema().Metadata(), nil)
	if err != nil || st.Rows != 0 {
		t.Fatalf("no part: %+v, %v", st, err)
	}
	none := frametest.AllTypes(0, 3)
	readBack(t, out, none)
}

// A part whose fields are not the first part's is refused, leaving the
// frame as it was.
func TestPartsRefuseOtherFields(t *testing.T) {
	a := sdkRecord(t, seriesFrame(10))
	defer a.Release()
	other := seriesFrame(5)
	other.Fields[1].Name = "renamed"
	b := sdkRecord(t, other)
	defer b.Release()
	e := newEncoder(t, codec.MustNew(codec.LZ4, 0), 0)
	p := frame.NewParts(a.Schema())
	if _, err := e.AppendPart(p, a); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AppendPart(p, b); !errors.Is(err, arrowipc.ErrBatch) {
		t.Fatalf("other fields: %v, want ErrBatch", err)
	}
	if p.Len() != 1 || p.Rows() != 10 {
		t.Fatalf("after a refused part: %d parts, %d rows", p.Len(), p.Rows())
	}
	out, _, err := finishParts(e, p, a.Schema().Metadata(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(out))
	if err != nil || r.NumRecords() != 1 {
		t.Fatalf("reader: %v", err)
	}
	r.Close()
}

// AppendLent's pieces, joined, are the bytes Append writes for the same
// record, in every codec, and with the query's stats too.
func TestAppendLentIsAppend(t *testing.T) {
	whole := frametest.AllTypes(3000, 7)
	rec := sdkRecord(t, whole)
	defer rec.Release()
	for _, c := range partCodecs {
		e := newEncoder(t, c, 0.1)
		want, wst, err := e.Append(nil, frame.Input{Record: rec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pieces, st, err := e.AppendLent(rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.Join(pieces, nil), want) {
			t.Errorf("%s: the lent frame's bytes differ from Append's", c)
		}
		if c.Kind() == codec.None && len(pieces) < 3 { // the record's 24 KB columns referenced between the rest
			t.Errorf("%s: the lent frame is %d pieces: nothing referenced", c, len(pieces))
		}
		if st.RawBytes != wst.RawBytes || st.WireBytes != wst.WireBytes || st.Rows != wst.Rows {
			t.Errorf("%s: stats %+v, Append's %+v", c, st, wst)
		}
		pieces, _, err = e.AppendLent(rec, &frame.Summary{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := data.UnmarshalArrowFrame(bytes.Join(pieces, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got.Meta == nil || len(got.Meta.Stats) == 0 {
			t.Errorf("%s: the lent frame with stats carries none", c)
		}
		got.Meta = whole.Meta
		if err := frametest.Equal(whole, got); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}
