// TestSeriesRecycledMemory is over 80 lines: its subtests share one result
// and its checks, and Magefile.go selects it by name (with the
// SteadyStateAllocs tests, outside the race detector).

package series

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
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

// TestSeriesRecycledMemory: the arrays of a series live in memory that is
// handed to the next series once the sink releases them. A sink that holds
// every record sees every series intact; one that releases each record at
// once sees them intact too (and the memory reused); in both, every buffer
// comes back once the records are released.
func TestSeriesRecycledMemory(t *testing.T) {
	const hosts, points = 40, 5 * flushRows / 2 / 40 // 2.5 flushes: every series in 3 runs
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: frame.Timestamp},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	isNull := func(h, p int) bool { return (h+p)%11 == 0 }
	var recs []arrow.RecordBatch
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for p := range points {
		for h := range hosts {
			rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(p))
			rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("h%02d", h))
			if isNull(h, p) {
				rb.Field(2).AppendNull()
			} else {
				rb.Field(2).(*array.Float64Builder).Append(float64(h*1_000_000 + p))
			}
			rb.Field(3).(*array.Int64Builder).Append(int64(p))
			if rb.Field(0).Len() == 8192 {
				recs = append(recs, rb.NewRecordBatch())
			}
		}
	}
	recs = append(recs, rb.NewRecordBatch())
	rb.Release()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	check := func(t *testing.T, f *data.Frame) {
		t.Helper()
		h := 0
		if _, err := fmt.Sscanf(f.Fields[1].Labels["host"], "h%02d", &h); err != nil || f.Rows() != points {
			t.Fatalf("frame %v with %d rows", f.Fields[1].Labels, f.Rows())
		}
		for p := range points {
			if got := f.Fields[0].At(p).(time.Time).UnixNano(); got != int64(p) {
				t.Fatalf("host %d point %d: time %d", h, p, got)
			}
			v, ok := f.Fields[1].ConcreteAt(p)
			if f.Fields[1].Name == "n" {
				if !ok || v.(int64) != int64(p) {
					t.Fatalf("host %d point %d: n %v", h, p, v)
				}
				continue
			}
			if ok == isNull(h, p) || (ok && v.(float64) != float64(h*1_000_000+p)) {
				t.Fatalf("host %d point %d: v %v (valid %v)", h, p, v, ok)
			}
		}
	}
	build := func(t *testing.T, sink source.Sink) *Builder { return splitInto(t, sink, schema, recs) }
	// A sink that holds every record until the query ends: every series
	// intact, and every buffer back in the pool once the records are
	// released, for the next query.
	// Under the race detector, which makes sync.Pool drop items at random,
	// only the series are checked.
	t.Run("held", func(t *testing.T) {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P's pool (see "lent given back")
		hold := &holdSink{}
		sink := &bufferSink{Sink: hold}
		build(t, sink)
		if len(hold.recs) != 2*hosts {
			t.Fatalf("%d frames", len(hold.recs))
		}
		read := &frameSink{t: t} // reads each record as Grafana does, and releases it
		for _, rec := range hold.recs {
			if err := read.Record(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range read.frames {
			check(t, f)
		}
		if raceEnabled {
			return
		}
		held := map[*byte]bool{}
		for _, b := range sink.bufs {
			held[b] = true
		}
		again := &bufferSink{Sink: &discardSink{}}
		build(t, again)
		reused := 0
		for _, b := range again.bufs {
			if held[b] {
				reused++
			}
		}
		if reused < len(again.bufs)/2 {
			t.Errorf("%d arrays held in %d buffers; %d of the next query's %d buffers are theirs", len(sink.bufs), len(held), reused, len(again.bufs))
		}
	})
	// A sink that encodes each record and releases it: the next series'
	// arrays are the released ones' memory (Memory.arrays), so the query
	// uses far fewer buffers than it builds arrays. The collector is off
	// meanwhile: a collection empties a sync.Pool.
	t.Run("released", func(t *testing.T) {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P's pool (see "lent given back")
		sink := &bufferSink{Sink: &frameSink{t: t}}
		build(t, sink)
		frames := sink.Sink.(*frameSink).frames
		if len(frames) != 2*hosts {
			t.Fatalf("%d frames", len(frames))
		}
		for _, f := range frames {
			check(t, f)
		}
		if raceEnabled {
			return
		}
		distinct := map[*byte]bool{}
		for _, b := range sink.bufs {
			distinct[b] = true
		}
		if len(distinct) > len(sink.bufs)/2 {
			t.Errorf("%d arrays in %d distinct buffers: released memory is not reused", len(sink.bufs), len(distinct))
		}
	})
	// A sink that lends: every frame lent (each series is in three runs,
	// its arrays its own), none of their memory reused once released, and
	// the series, which have the same times, sharing them.
	t.Run("lent", func(t *testing.T) {
		sink := newLendSink(t)
		build(t, sink)
		if sink.lent != 2*hosts || sink.copied != 0 {
			t.Fatalf("%d frames lent, %d copied; want %d lent", sink.lent, sink.copied, 2*hosts)
		}
		for _, f := range sink.read.frames {
			check(t, f)
		}
		if n := sink.overwritten(); n > 0 {
			t.Errorf("%d of %d lent buffers written over after they were lent", n, len(sink.bufs))
		}
		if len(sink.times) != 1 {
			t.Errorf("the %d frames' times, the same in all, lie in %d buffers", sink.lent, len(sink.times))
		}
	})
	// A post step (as fill) that replaces the times of series that share
	// them, each series' differently: every frame has its own new times,
	// neither the shared ones nor another series'.
	t.Run("lent, times replaced after", func(t *testing.T) {
		b, err := New(testConfig(false), schema)
		if err != nil {
			t.Fatal(err)
		}
		nth := 0 // the series' place in the frames' order
		b.post = func(ss *sortedSeries, _ func(int64) error) error {
			ss.Times = append(slices.Clone(ss.Times), ss.Times[len(ss.Times)-1]+1+arrow.Timestamp(nth))
			nth++
			appendOne(t, ss, memory.DefaultAllocator, func(bld array.Builder, _ arrow.Array) error { bld.AppendNull(); return nil })
			ss.inSegments = false
			return nil
		}
		for _, rec := range recs {
			if err := b.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		sink := newLendSink(t)
		if err := b.Finish(t.Context(), sink, nil); err != nil {
			t.Fatal(err)
		}
		b.Release()
		if len(sink.read.frames) != 2*hosts {
			t.Fatalf("%d frames", len(sink.read.frames))
		}
		for i, f := range sink.read.frames {
			if f.Rows() != points+1 {
				t.Fatalf("%v: %d rows, want %d", f.Fields[1].Labels, f.Rows(), points+1)
			}
			if got, want := f.Fields[0].At(points).(time.Time).UnixNano(), int64(points+i/2); got != want {
				t.Fatalf("frame %d %v: last time %d, want %d", i, f.Fields[1].Labels, got, want)
			}
		}
	})
	// Once the sink releases the lent records, their memory goes back to
	// the arrays' pool (Memory.arrays): the same query again writes its series
	// into it. The collector is off meanwhile: a collection empties a
	// sync.Pool. So is every P but one: an item in one P's private slot is
	// not seen from another, where the scheduler may move the test.
	t.Run("lent given back", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector makes sync.Pool drop items at random")
		}
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P's pool (see "lent given back")
		first := newLendSink(t)
		build(t, first)
		lent := map[*byte]bool{}
		for _, b := range first.bufs {
			lent[unsafe.SliceData(b)] = true
		}
		first.release()
		again := newLendSink(t)
		build(t, again)
		for _, f := range again.read.frames {
			check(t, f)
		}
		reused := 0
		for _, b := range again.bufs {
			if lent[unsafe.SliceData(b)] {
				reused++
			}
		}
		if reused < len(again.bufs)/2 {
			t.Errorf("%d of the %d lent buffers are memory the first query lent", reused, len(again.bufs))
		}
	})
	// The wide frame of the same series: lent, and the frame a sink that
	// copies gets.
	t.Run("wide lent", func(t *testing.T) {
		lending, copying := newLendSink(t), &frameSink{t: t}
		splitAs(t, true, lending, schema, recs)
		splitAs(t, true, copying, schema, recs)
		if lending.lent != 1 || lending.copied != 0 || len(copying.frames) != 1 {
			t.Fatalf("%d frames lent, %d copied, %d frames copying", lending.lent, lending.copied, len(copying.frames))
		}
		if n := lending.overwritten(); n > 0 {
			t.Errorf("%d of %d lent buffers written over after they were lent", n, len(lending.bufs))
		}
		if err := frametest.Equal(copying.frames[0], lending.read.frames[0]); err != nil {
			t.Error(err)
		}
	})
	// A result of one flush: each series is one run of its segments, memory
	// shared with the other series, so nothing is lent.
	t.Run("one run", func(t *testing.T) {
		sink := newLendSink(t)
		splitInto(t, sink, schema, recs[:1])
		if sink.lent != 0 || sink.copied != 2*hosts {
			t.Fatalf("%d frames lent, %d copied; want %d copied", sink.lent, sink.copied, 2*hosts)
		}
	})
	// The same result to a sink that keeps its records: they reference the
	// builder's segments, which are then not given back to the scratch pool, so
	// a query after it (the same sizes, other values) writes elsewhere.
	t.Run("one run held", func(t *testing.T) {
		sink := &holdSink{}
		b := splitInto(t, sink, schema, recs[:1])
		if !b.segmentsOut || len(b.segMem.bufs) != 0 {
			t.Fatalf("segments handed over %v, %d pooled buffers still held", b.segmentsOut, len(b.segMem.bufs))
		}
		negated := negateValues(t, recs[0])
		defer negated.Release()
		splitInto(t, newLendSink(t), schema, []arrow.RecordBatch{negated})
		read := &frameSink{t: t}
		for _, rec := range sink.recs {
			if err := read.Record(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range read.frames {
			h := 0
			if _, err := fmt.Sscanf(f.Fields[1].Labels["host"], "h%02d", &h); err != nil {
				t.Fatal(err)
			}
			for p := range f.Rows() {
				v, ok := f.Fields[1].ConcreteAt(p)
				want := any(int64(p))
				if f.Fields[1].Name == "v" {
					want = float64(h*1_000_000 + p)
				}
				if ok == (f.Fields[1].Name == "v" && isNull(h, p)) || (ok && v != want) {
					t.Fatalf("host %d point %d: %s %v (valid %v), want %v", h, p, f.Fields[1].Name, v, ok, want)
				}
			}
		}
	})
	// Lent frames reference none of the builder's own memory: it all goes
	// back to the scratch pool, and the same query again takes its segments and
	// pending rows from there, allocating little more than the lent values
	// (segs bytes, as much as the segments hold). The collector is off
	// meanwhile: a collection empties a sync.Pool.
	t.Run("given back", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector makes sync.Pool drop items at random")
		}
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P's pool (see "lent given back")
		b := splitInto(t, &lendingDiscard{}, schema, recs)
		if b.segmentsOut || len(b.segMem.bufs) != 0 || len(b.scratchMem.bufs) != 0 {
			t.Fatalf("segments handed over %v, %d + %d pooled buffers still held", b.segmentsOut, len(b.segMem.bufs), len(b.scratchMem.bufs))
		}
		segs := 0
		for _, r := range recs {
			segs += 2 * 8 * int(r.NumRows()) // v and n
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		splitInto(t, &lendingDiscard{}, schema, recs)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(segs)*3/2 {
			t.Errorf("the query again allocated %d bytes; its lent values are %d", got, segs)
		}
	})
}

// negateValues returns rec (time, host, v float64, n int64) with v and n
// negated.
func negateValues(t *testing.T, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	vb, nb := array.NewFloat64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	defer vb.Release()
	defer nb.Release()
	v, n := rec.Column(2).(*array.Float64), rec.Column(3).(*array.Int64)
	for i := range v.Len() {
		if v.IsNull(i) {
			vb.AppendNull()
		} else {
			vb.Append(-v.Value(i))
		}
		nb.Append(-n.Value(i))
	}
	cols := []arrow.Array{rec.Column(0), rec.Column(1), vb.NewArray(), nb.NewArray()}
	defer cols[2].Release()
	defer cols[3].Release()
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// bufferSink is a sink that notes the value buffers (of 4 KiB and more,
// the pooled ones) of the records it passes on.
type bufferSink struct {
	source.Sink
	bufs []*byte
}

func (s *bufferSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	for _, col := range rec.Columns() {
		if bufs := col.Data().Buffers(); len(bufs) > 1 && bufs[1] != nil && bufs[1].Len() >= 4096 {
			s.bufs = append(s.bufs, unsafe.SliceData(bufs[1].Bytes()))
		}
	}
	return s.Sink.Record(ctx, rec)
}
