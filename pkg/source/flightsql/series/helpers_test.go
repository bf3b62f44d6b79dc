package series

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/source"
)

// testRegistry is the split's part of the registration of the types the
// tests' batches have (normalised: timestamp[ns], utf8, bool, numbers), as
// package flightsql registers them (its types.go, whose tests run the split
// with the real registration). Built once, as flightsql's is, so that
// making a builder allocates what it does in the plugin.
var testRegistry = map[arrow.Type]Type{
	arrow.TIMESTAMP: {Times: TimestampValues, Text: func(dst []byte, a arrow.Array, i int) []byte {
		return time.Unix(0, int64(a.(*array.Timestamp).Value(i))).UTC().AppendFormat(dst, time.RFC3339Nano)
	}},
	arrow.STRING: {Text: func(dst []byte, a arrow.Array, i int) []byte { return append(dst, a.(*array.String).Value(i)...) }},
	arrow.BOOL: {Text: func(dst []byte, a arrow.Array, i int) []byte {
		return strconv.AppendBool(dst, a.(*array.Boolean).Value(i))
	}},
	arrow.INT8:    {Numeric: NumericOf[int8]()},
	arrow.INT16:   {Numeric: NumericOf[int16]()},
	arrow.INT32:   {Numeric: NumericOf[int32](), Times: EpochValues[int32]},
	arrow.INT64:   {Numeric: NumericOf[int64](), Times: EpochValues[int64]},
	arrow.UINT8:   {Numeric: NumericOf[uint8]()},
	arrow.UINT16:  {Numeric: NumericOf[uint16]()},
	arrow.UINT32:  {Numeric: NumericOf[uint32]()},
	arrow.UINT64:  {Numeric: NumericOf[uint64]()},
	arrow.FLOAT32: {Numeric: NumericOf[float32]()},
	arrow.FLOAT64: {Numeric: NumericOf[float64]()},
}

func testTypes(id arrow.Type) Type { return testRegistry[id] }

// testConfig is the Config of a time_series query "A" (wide: time_series_wide).
// testMemory is the pooled memory the tests' builders share, as a source's
// queries do.
var testMemory = NewMemory()

func testConfig(wide bool) Config {
	return Config{RefID: "A", Wide: wide, Types: testTypes, Memory: testMemory}
}

// batch builds a record batch column by column.
func batch(schema *arrow.Schema, fill func(b *array.RecordBuilder)) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	return b.NewRecordBatch()
}

// splitInto runs recs (which stay the caller's) through a time_series
// builder into sink, and returns the builder, released.
func splitInto(t *testing.T, sink source.Sink, schema *arrow.Schema, recs []arrow.RecordBatch) *Builder {
	t.Helper()
	return splitAs(t, false, sink, schema, recs)
}

// splitAs is splitInto in format time_series_wide when wide is set.
func splitAs(t *testing.T, wide bool, sink source.Sink, schema *arrow.Schema, recs []arrow.RecordBatch) *Builder {
	t.Helper()
	return splitWith(t, testConfig(wide), sink, schema, recs)
}

// splitWith is splitInto with cfg.
func splitWith(t *testing.T, cfg Config, sink source.Sink, schema *arrow.Schema, recs []arrow.RecordBatch) *Builder {
	t.Helper()
	b, err := New(cfg, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := b.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finish(t.Context(), sink, nil); err != nil {
		t.Fatal(err)
	}
	b.Release()
	return b
}

// frameSink decodes every record through the SDK's reader, the oracle of
// "Grafana can read it", and keeps the frames and the schemas.
type frameSink struct {
	t       *testing.T
	frames  []*data.Frame
	schemas []*arrow.Schema
}

func (s *frameSink) Frame(ctx context.Context, f *data.Frame) error {
	s.frames = append(s.frames, f)
	return nil
}

func (s *frameSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	s.t.Helper()
	f, err := frametest.Decode(rec)
	if err != nil {
		s.t.Fatalf("the SDK cannot read the frame: %v\nschema: %s", err, rec.Schema())
	}
	s.frames = append(s.frames, f)
	s.schemas = append(s.schemas, rec.Schema())
	return nil
}

// holdSink keeps the records it is given, as the plugin's sink keeps the
// first frame of a query until the end.
type holdSink struct{ recs []arrow.RecordBatch }

func (s *holdSink) Frame(context.Context, *data.Frame) error {
	return fmt.Errorf("unexpected data.Frame")
}

func (s *holdSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	s.recs = append(s.recs, rec)
	return nil
}

// discardSink takes frames and drops them.
type discardSink struct{ frames, rows int64 }

func (s *discardSink) Frame(ctx context.Context, f *data.Frame) error {
	s.frames++
	s.rows += int64(f.Rows())
	return nil
}

func (s *discardSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	s.frames++
	s.rows += rec.NumRows()
	rec.Release()
	return nil
}

// lendingDiscard is discardSink taking lent records too
// (source.RecordLender), as the plugin's sink does for the Arrow format.
type lendingDiscard struct{ discardSink }

func (s *lendingDiscard) LendRecord(ctx context.Context, rec arrow.RecordBatch) error {
	return s.Record(ctx, rec)
}

// lendSink is a sink that lends (source.RecordLender), as the plugin's
// does: it reads each record as Grafana does, holds a lent one until
// release (the test's end), as the plugin's sink holds it until its frame
// is sent, and keeps its buffers with a copy of their bytes to tell later
// whether anything wrote over them meanwhile.
type lendSink struct {
	read         frameSink
	lent, copied int
	bufs, copies [][]byte
	times        map[*byte]bool // the lent records' time buffers
	held         []arrow.RecordBatch
}

func newLendSink(t *testing.T) *lendSink {
	s := &lendSink{read: frameSink{t: t}, times: map[*byte]bool{}}
	t.Cleanup(s.release)
	return s
}

// release releases the lent records, as the plugin's sink does once their
// frames are sent.
func (s *lendSink) release() {
	for _, rec := range s.held {
		rec.Release()
	}
	s.held = nil
}

func (s *lendSink) Frame(ctx context.Context, f *data.Frame) error { return s.read.Frame(ctx, f) }

func (s *lendSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	s.copied++
	return s.read.Record(ctx, rec)
}

func (s *lendSink) LendRecord(ctx context.Context, rec arrow.RecordBatch) error {
	s.lent++
	for c, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil && b.Len() > 0 {
				s.bufs = append(s.bufs, b.Bytes())
				s.copies = append(s.copies, bytes.Clone(b.Bytes()))
			}
		}
		if c == 0 {
			s.times[unsafe.SliceData(col.Data().Buffers()[1].Bytes())] = true
		}
	}
	rec.Retain() // held until release; Record releases its own reference
	s.held = append(s.held, rec)
	return s.read.Record(ctx, rec)
}

// overwritten counts the lent buffers whose bytes changed after they were
// lent.
func (s *lendSink) overwritten() int {
	n := 0
	for i, b := range s.bufs {
		if !bytes.Equal(b, s.copies[i]) {
			n++
		}
	}
	return n
}

// ts is the timestamps v.
func ts(v ...int64) []arrow.Timestamp {
	out := make([]arrow.Timestamp, len(v))
	for i, x := range v {
		out[i] = arrow.Timestamp(x)
	}
	return out
}

// metricsSchema is the normalised schema of the metrics tests' results:
// time, two labels (dc null for every third host) and two value columns.
var metricsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: frame.Timestamp, Nullable: true},
	{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "dc", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "cpu", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "reqs", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

type metricRow struct {
	ts   int64 // ms
	host string
	dc   *string
	cpu  float64
	reqs int64
}

// metricBatches writes rows into batches of size n (metricsSchema; the
// times in nanoseconds).
func metricBatches(rows []metricRow, n int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for len(rows) > 0 {
		k := min(n, len(rows))
		chunk := rows[:k]
		rows = rows[k:]
		out = append(out, batch(metricsSchema, func(b *array.RecordBuilder) {
			for _, r := range chunk {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts * 1e6))
				b.Field(1).(*array.StringBuilder).Append(r.host)
				if r.dc == nil {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.StringBuilder).Append(*r.dc)
				}
				b.Field(3).(*array.Float64Builder).Append(r.cpu)
				b.Field(4).(*array.Int64Builder).Append(r.reqs)
			}
		}))
	}
	return out
}

// seriesRows is hosts × points rows, every host in every point, the two dc
// values alternating; dc is null for every third host.
func seriesRows(hosts, points int) []metricRow {
	eu, us := "eu", "us"
	var rows []metricRow
	for p := range points {
		for h := range hosts {
			var dc *string
			switch h % 3 {
			case 0:
				dc = &eu
			case 1:
				dc = &us
			}
			rows = append(rows, metricRow{ts: 1_700_000_000_000 + int64(p)*1000, host: fmt.Sprintf("h%03d", h), dc: dc,
				cpu: float64(h) + float64(p)/10, reqs: int64(h*100 + p)})
		}
	}
	return rows
}

// frameKey names a time-series frame by its value field and labels.
func frameKey(f *data.Frame) string {
	v := f.Fields[1]
	return v.Labels.String() + "|" + v.Name
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// appendOne replaces each value array of ss by itself and one more value,
// which add appends to a builder of its type, in mem (as a post step such
// as fill would).
func appendOne(t *testing.T, ss *sortedSeries, mem memory.Allocator, add func(array.Builder, arrow.Array) error) {
	t.Helper()
	for j, v := range ss.Values {
		bld := array.NewBuilder(mem, v.DataType())
		if err := add(bld, v); err != nil {
			t.Fatal(err)
		}
		tail := bld.NewArray()
		joined, err := array.Concatenate([]arrow.Array{v, tail}, mem)
		if err != nil {
			t.Fatal(err)
		}
		tail.Release()
		bld.Release()
		v.Release()
		ss.Values[j] = joined
	}
}
