package flightsql

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/source"
)

// partsSink takes a frame in parts (source.PartSink) and encodes each part
// with pkg/frame as it arrives, as the plugin does; whole frames go through
// the wireSink. decline makes it refuse the parts.
type partsSink struct {
	*wireSink
	enc     *frame.Encoder
	decline bool
	lend    bool     // its writers take lent parts (source.PartLender), borrowing them
	lent    int      // parts lent (of parts)
	wire    [][]byte // the frames written in parts
	parts   int
	aborted int
}

func newPartsSink(t testing.TB, c codec.Codec) *partsSink {
	enc, err := frame.NewEncoder(arrowipc.Options{Codec: c})
	if err != nil {
		t.Fatal(err)
	}
	return &partsSink{wireSink: newWireSink(t), enc: enc}
}

func (s *partsSink) Parts(schema *arrow.Schema) (source.FrameWriter, error) {
	if s.decline {
		return nil, nil
	}
	w := &partsWriter{s: s, p: frame.NewParts(schema)}
	if s.lend {
		return lendingWriter{w}, nil
	}
	return w, nil
}

// lendingWriter borrows the parts lent to it, as the plugin's writer does:
// a part whose memory the frame references is held until the frame is
// written (source.PartLender).
type lendingWriter struct{ *partsWriter }

func (w lendingWriter) LendPart(ctx context.Context, rec arrow.RecordBatch) error {
	w.s.parts++
	w.s.lent++
	_, borrowed, err := w.s.enc.AppendLentPart(w.p, rec)
	if err != nil || !borrowed {
		rec.Release()
		return err
	}
	w.kept = append(w.kept, rec)
	return nil
}

type partsWriter struct {
	s    *partsSink
	p    *frame.Parts
	done bool
	kept []arrow.RecordBatch // lent parts the frame references
}

// release releases the lent parts the frame referenced.
func (w *partsWriter) release() {
	for _, r := range w.kept {
		r.Release()
	}
	w.kept = nil
}

func (w *partsWriter) Part(ctx context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	w.s.parts++
	_, err := w.s.enc.AppendPart(w.p, rec)
	return err
}

func (w *partsWriter) Close(ctx context.Context, md arrow.Metadata) error {
	w.done = true
	defer w.release() // the pieces are joined below: written
	pieces, _, err := w.s.enc.FinishPartsPieces(w.p, md, nil)
	if err != nil {
		return err
	}
	b := bytes.Join(pieces, nil)
	f, err := data.UnmarshalArrowFrame(b)
	if err != nil {
		return fmt.Errorf("the SDK cannot read the frame in parts: %w", err)
	}
	w.s.wire = append(w.s.wire, b)
	w.s.frames = append(w.s.frames, f)
	return nil
}

func (w *partsWriter) Abort() {
	if !w.done {
		w.done = true
		w.s.aborted++
		w.p.Reset()
		w.release()
	}
}

// A table read in several batches (two endpoints, columns that need
// converting, nulls, text, a value that becomes null with a notice) reaches
// a sink that takes parts as one frame of one batch per received batch of
// minPartRows or more (smaller ones joined), which decodes to exactly the
// frame the joined table gives — notices and
// executedQueryString included — in every codec; a sink that declines gets
// the joined table.
func TestTableInParts(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Second}},
		{Name: "host", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	mk := func(start, rows int) arrow.RecordBatch {
		return batch(schema, func(b *array.RecordBuilder) {
			for r := start; r < start+rows; r++ {
				ts := arrow.Timestamp(1_700_000_000 + r)
				if r == 1500 {
					ts = 40_000_000_000 // year 3237: out of Grafana's range
				}
				b.Field(0).(*array.TimestampBuilder).Append(ts)
				if r%5 == 2 && start > 0 { // nulls in later batches only
					b.Field(1).AppendNull()
				} else {
					b.Field(1).(*array.LargeStringBuilder).Append(fmt.Sprintf("host-%d", r%17))
				}
				if r%3 == 0 {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.Int16Builder).Append(int16(r))
				}
				b.Field(3).(*array.Float64Builder).Append(float64(r) / 4)
			}
		})
	}
	// Two batches big enough to be parts as they are, then two small ones
	// (and an empty one) joined into a third part.
	eps := [][]arrow.RecordBatch{{mk(0, minPartRows), mk(minPartRows, minPartRows)}, {mk(2*minPartRows, 1), mk(2*minPartRows+1, 0), mk(2*minPartRows+1, 999)}}
	const rows = 2*minPartRows + 1000
	srv := newMemServer()
	srv.set("t", &dataset{schema: schema, endpoints: eps})
	drainDoGets(srv)
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	q := func(sink source.Sink, limits source.Limits) error {
		return s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"t","format":"table"}`),
			From: time.Unix(1_700_000_000, 0), To: time.Unix(1_700_003_600, 0), Limits: limits}, sink)
	}
	joined := newWireSink(t)
	if err := q(joined, source.Limits{}); err != nil {
		t.Fatal(err)
	}
	if len(joined.frames) != 1 || joined.frames[0].Rows() != rows || joined.frames[0].Meta == nil || len(joined.frames[0].Meta.Notices) == 0 {
		t.Fatalf("joined: %d frames, meta %+v", len(joined.frames), joined.frames[0].Meta)
	}
	want := joined.frames[0]
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.Auto, 0)} {
		sink := newPartsSink(t, c)
		if err := q(sink, source.Limits{}); err != nil {
			t.Fatal(err)
		}
		if len(sink.frames) != 1 || len(sink.wire) != 1 || sink.parts != 3 {
			t.Fatalf("%s: %d frames (%d in parts), %d parts; want one frame of 3 parts", c, len(sink.frames), len(sink.wire), sink.parts)
		}
		if err := frametest.Equal(want, sink.frames[0]); err != nil {
			t.Errorf("%s: the table in parts differs from the joined table: %v", c, err)
		}
		batches, err := arrowipctest.Inspect(sink.wire[0])
		if err != nil || len(batches) != 3 {
			t.Errorf("%s: %d batches (%v), want 3", c, len(batches), err)
		}
	}
	declining := newPartsSink(t, codec.MustNew(codec.None, 0))
	declining.decline = true
	if err := q(declining, source.Limits{}); err != nil {
		t.Fatal(err)
	}
	if len(declining.frames) != 1 || len(declining.wire) != 0 || declining.parts != 0 {
		t.Fatalf("declined: %d frames, %d in parts", len(declining.frames), len(declining.wire))
	}
	if err := frametest.Equal(want, declining.frames[0]); err != nil {
		t.Errorf("declined: %v", err)
	}

	// A limit hit in the middle: the frame is aborted, nothing is kept
	// (newTestSource checks every buffer is released).
	limited := newPartsSink(t, codec.MustNew(codec.LZ4, 0))
	err := q(limited, source.Limits{MaxPoints: minPartRows + 1500})
	mustKind(t, err, source.KindLimit, fmt.Sprintf("more than %d rows", minPartRows+1500))
	if limited.aborted != 1 || len(limited.frames) != 0 {
		t.Errorf("limit: %d aborted, %d frames", limited.aborted, len(limited.frames))
	}

	// An empty result in parts is a frame of no row with the columns.
	srv.set("empty", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{}}})
	empty := newPartsSink(t, codec.MustNew(codec.None, 0))
	if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"empty","format":"table"}`)}, empty); err != nil {
		t.Fatal(err)
	}
	ej := newWireSink(t)
	if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"empty","format":"table"}`)}, ej); err != nil {
		t.Fatal(err)
	}
	if len(empty.frames) != 1 || len(ej.frames) != 1 {
		t.Fatalf("empty: %d and %d frames", len(empty.frames), len(ej.frames))
	}
	if err := frametest.Equal(ej.frames[0], empty.frames[0]); err != nil {
		t.Errorf("empty: %v", err)
	}
}

// Batches smaller than a part are joined until they make one: 20 batches
// of 1000 rows are three parts (9000, 9000 and the last 2000 rows), which
// decode to the 20 000 rows in order.
func TestTableSmallBatchesJoinedIntoParts(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	var eps []arrow.RecordBatch
	for b := range 20 {
		eps = append(eps, batch(schema, func(rb *array.RecordBuilder) {
			for r := b * 1000; r < (b+1)*1000; r++ {
				rb.Field(0).(*array.Int64Builder).Append(int64(r))
				rb.Field(1).(*array.StringBuilder).Append(fmt.Sprint("row ", r))
			}
		}))
	}
	srv := newMemServer()
	srv.set("t", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{eps}})
	drainDoGets(srv)
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	sink := newPartsSink(t, codec.MustNew(codec.Zstd, 3))
	if err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"t","format":"table"}`)}, sink); err != nil {
		t.Fatal(err)
	}
	if sink.parts != 3 || len(sink.frames) != 1 {
		t.Fatalf("%d parts, %d frames; want 3 parts of one frame", sink.parts, len(sink.frames))
	}
	batches, err := arrowipctest.Inspect(sink.wire[0])
	if err != nil {
		t.Fatal(err)
	}
	var rows []int64
	for _, b := range batches {
		rows = append(rows, b.Rows)
	}
	if fmt.Sprint(rows) != "[9000 9000 2000]" {
		t.Errorf("batch rows %v, want [9000 9000 2000]", rows)
	}
	f := sink.frames[0]
	if f.Rows() != 20000 {
		t.Fatalf("%d rows", f.Rows())
	}
	for r := range 20000 {
		if i, s := f.Fields[0].At(r).(int64), f.Fields[1].At(r).(string); i != int64(r) || s != fmt.Sprint("row ", r) {
			t.Fatalf("row %d: %d %q", r, i, s)
		}
	}
}

// Parts are lent only when their memory is their own: a batch received as
// it is, or batches joined into one part; a batch with a converted column
// (its received buffer stays in the message's body), or cut at the row
// limit, is handed over to be copied. Lent or not, the frame is the joined
// table's.
func TestTableLendsOnlyWholeParts(t *testing.T) {
	kept := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	converted := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}, // to nanoseconds
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	mk := func(schema *arrow.Schema, start, rows int) arrow.RecordBatch {
		return batch(schema, func(b *array.RecordBuilder) {
			for r := start; r < start+rows; r++ {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + r))
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-%d", r%17))
				b.Field(2).(*array.Float64Builder).Append(float64(r) / 4)
			}
		})
	}
	one := mk(kept, 0, minPartRows)
	batchBytes := recordBytes(one)
	one.Release()
	for _, tc := range []struct {
		name                string
		schema              *arrow.Schema
		rowLimit, byteLimit int64
		parts, lent         int
	}{
		// Two parts of one batch each, then one of two batches joined.
		{"kept as received", kept, 0, 0, 3, 3},
		{"a column converted", converted, 0, 0, 3, 1},
		// The second batch cut at the limit: a part of its own.
		{"cut at the row limit", kept, minPartRows + 100, 0, 2, 1},
		{"cut at the byte limit", kept, 0, batchBytes + batchBytes/2, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.schema
			eps := [][]arrow.RecordBatch{{mk(s, 0, minPartRows), mk(s, minPartRows, minPartRows), mk(s, 2*minPartRows, 500), mk(s, 2*minPartRows+500, 500)}}
			srv := newMemServer()
			srv.set("t", &dataset{schema: s, endpoints: eps})
			drainDoGets(srv)
			cfg := baseConfig(startServer(t, srv, serverOpts{}))
			if tc.rowLimit > 0 {
				cfg.RowLimit = tc.rowLimit
			}
			if tc.byteLimit > 0 {
				cfg.ByteLimit = tc.byteLimit
			}
			src := newTestSource(t, cfg)
			q := func(sink source.Sink) {
				t.Helper()
				if err := src.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"t","format":"table"}`)}, sink); err != nil {
					t.Fatal(err)
				}
			}
			joined := newWireSink(t)
			q(joined)
			lending := newPartsSink(t, codec.MustNew(codec.None, 0))
			lending.lend = true
			q(lending)
			if lending.parts != tc.parts || lending.lent != tc.lent {
				t.Errorf("%d parts, %d lent; want %d, %d", lending.parts, lending.lent, tc.parts, tc.lent)
			}
			if len(lending.frames) != 1 || len(joined.frames) != 1 {
				t.Fatalf("%d frames, joined %d", len(lending.frames), len(joined.frames))
			}
			if err := frametest.Equal(joined.frames[0], lending.frames[0]); err != nil {
				t.Errorf("the lent table differs from the joined one: %v", err)
			}
		})
	}
}

// keptAll takes a record whose buffers lie together, as a received body's
// do, and not one whose buffers leave other bytes between them (the
// compressed buffers of a body compressed in part, which borrowing one of
// its raw buffers would keep alive).
func TestKeptAllWantsOneSpan(t *testing.T) {
	const rows = 4096
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Float64}}, nil)
	over := func(gap int) arrow.RecordBatch {
		body := make([]byte, 2*8*rows+gap)
		a := array.NewData(arrow.PrimitiveTypes.Int64, rows, []*memory.Buffer{nil, memory.NewBufferBytes(body[:8*rows])}, nil, 0, 0)
		b := array.NewData(arrow.PrimitiveTypes.Float64, rows, []*memory.Buffer{nil, memory.NewBufferBytes(body[8*rows+gap:])}, nil, 0, 0)
		defer a.Release()
		defer b.Release()
		cols := []arrow.Array{array.MakeFromData(a), array.MakeFromData(b)}
		defer cols[0].Release()
		defer cols[1].Release()
		return array.NewRecordBatch(schema, cols, rows)
	}
	for _, tc := range []struct {
		gap  int
		want bool
	}{{0, true}, {64, true}, {2 * 8 * rows / 4, false}, {8 * rows, false}} {
		rec := over(tc.gap)
		if got := keptAll(rec, rec); got != tc.want {
			t.Errorf("buffers %d bytes apart: kept %v, want %v", tc.gap, got, tc.want)
		}
		rec.Release()
	}
}
