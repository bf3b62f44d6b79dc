//go:build unix

// This file is over 400 lines: one benchmark of the source's throughput
// with its anchors, sinks and meters, whose rows are compared with each
// other in docs/journal/benchmarks.md.

package flightsql

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/walks"
)

// throughputBatches builds the throughput result (tests/walks) once.
func throughputBatches() []arrow.RecordBatch {
	return walks.Batches(walks.Hosts, walks.Points, walks.BatchRows)
}

// discardSink takes frames and drops them: the source up to the Sink.
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

// Parts takes a table in parts (source.PartSink) and drops each part.
func (s *discardSink) Parts(*arrow.Schema) (source.FrameWriter, error) {
	return &discardParts{s: s}, nil
}

type discardParts struct{ s *discardSink }

func (w *discardParts) Part(ctx context.Context, rec arrow.RecordBatch) error {
	w.s.rows += rec.NumRows()
	rec.Release()
	return nil
}

func (w *discardParts) Close(context.Context, arrow.Metadata) error {
	w.s.frames++
	return nil
}

func (w *discardParts) Abort() {}

// encodeSink encodes every frame with pkg/frame's encoder at codec none, as
// the plugin's sink does (here on the source's goroutine), and keeps the
// bytes when keep is set. It counts the frames by the codec their batch
// declares.
type encodeSink struct {
	enc     *frame.Encoder
	buf     []byte
	bytes   int64
	keep    bool
	wire    [][]byte
	byCodec [codec.Auto]int
}

func newEncodeSink(tb testing.TB, keep bool) *encodeSink {
	enc, err := frame.NewEncoder(arrowipc.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return &encodeSink{enc: enc, keep: keep}
}

func (s *encodeSink) Frame(context.Context, *data.Frame) error {
	return fmt.Errorf("unexpected data.Frame")
}

func (s *encodeSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	out, st, err := s.enc.Append(s.buf[:0], frame.Input{Record: rec}, nil)
	if err != nil {
		return err
	}
	s.bytes += int64(len(out))
	s.byCodec[st.Codec]++
	if s.keep {
		s.wire = append(s.wire, append([]byte(nil), out...))
	}
	s.buf = out[:0]
	return nil
}

// Parts takes a table in parts and encodes each part as it arrives (a
// frame of several record batches), as the plugin's sink does.
func (s *encodeSink) Parts(schema *arrow.Schema) (source.FrameWriter, error) {
	return &encodeParts{s: s, p: frame.NewParts(schema)}, nil
}

type encodeParts struct {
	s *encodeSink
	p *frame.Parts
}

func (w *encodeParts) Part(ctx context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	_, err := w.s.enc.AppendPart(w.p, rec)
	return err
}

func (w *encodeParts) Close(ctx context.Context, md arrow.Metadata) error {
	pieces, _, err := w.s.enc.FinishPartsPieces(w.p, md, nil)
	if err != nil {
		return err
	}
	for _, b := range pieces { // written out one after the other, as the plugin does
		w.s.bytes += int64(len(b))
	}
	if w.s.keep {
		w.s.wire = append(w.s.wire, bytes.Join(pieces, nil))
	}
	return nil
}

func (w *encodeParts) Abort() { w.p.Reset() }

// cpuTime is the CPU time of the process so far (user and system), every
// goroutine included: the in-process server's too, in every variant alike.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakHeap samples the heap's object bytes (live and not yet swept: what
// the process holds) while a query runs.
type peakHeap struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		s := []metrics.Sample{{Name: heapMetric}}
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			p.peak = max(p.peak, s[0].Value.Uint64())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) end() uint64 {
	close(p.stop)
	<-p.done
	return p.peak
}

// BenchmarkFlightSQLThroughput reads a 1,000,000-row, 1000-series result
// from an in-memory Flight SQL server (pre-built batches, so the server costs
// almost nothing) through the Source in each format, and through anchors in
// the same run:
//
//   - anchor=raw_client: arrow-go's Flight SQL client scanning the stream
//     (Execute, DoGet, Next over every batch): the ceiling;
//   - anchor=raw_client/receive=quiver: the same client with the Source's
//     receive path (receiveOptions: its FlightData codec and buffer pool),
//     what the Source's receiving alone costs;
//   - anchor=data_frame: the raw client copying every row into a long
//     data.Frame (time, host, value), as SDK-based plugins do;
//   - anchor=long_to_wide: that, then the SDK's data.LongToWide;
//   - format=…: the Source up to the Sink (a sink that drops the frames);
//   - format=…/sink=encode: the same with every frame encoded by pkg/frame
//     at codec none on the source's goroutine;
//   - decode=…: what Grafana pays to read the frames of each format
//     (data.UnmarshalArrowFrame of all of them), with their wire bytes.
//
// Metrics: rows/s of the result, and peak-heap/arrow, the peak of the heap's
// object bytes above the level before the query over the result's Arrow
// buffer size (the in-process server's send buffers are in every figure,
// the raw client's included).
func BenchmarkFlightSQLThroughput(b *testing.B) {
	batches := throughputBatches()
	var arrowSize, rows int64
	for _, r := range batches {
		arrowSize += recordBytes(r)
		rows += r.NumRows()
	}
	srv := newMemServer()
	srv.set(walks.SQL, &dataset{schema: walks.Schema, endpoints: [][]arrow.RecordBatch{batches}})
	addr := startServer(b, srv, serverOpts{})
	drainDoGets(srv)

	cfg := baseConfig(addr)
	cfg.RowLimit = 2 * rows
	cfg.ByteLimit = 4 * arrowSize
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	client, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.Close() })
	// The same client, but receiving as the Source does (receiveOptions).
	received, err := flightsql.NewClient(addr, nil, nil, append(receiveOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = received.Close() })
	limits := source.Limits{MaxSeries: 10 * walks.Hosts, MaxPoints: 10 * rows}
	query := func(format string, sink source.Sink) error {
		return s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"rawSql":%q,"format":%q}`, walks.SQL, format)),
			Limits: limits}, sink)
	}

	// run measures one full read of the result per iteration.
	run := func(b *testing.B, once func() error) {
		b.ReportAllocs()
		var (
			peak uint64
			cpu  time.Duration
		)
		for b.Loop() {
			b.StopTimer()
			runtime.GC()
			base := heapNow()
			p := startPeakHeap()
			c0 := cpuTime()
			b.StartTimer()
			if err := once(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu += cpuTime() - c0
			if top := p.end(); top > base {
				peak = max(peak, top-base)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(peak)/float64(arrowSize), "peak-heap/arrow")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(rows), "cpu-ns/row")
	}

	b.Run("anchor=raw_client", func(b *testing.B) {
		run(b, func() error { return rawScan(client, nil) })
	})
	b.Run("anchor=raw_client/receive=quiver", func(b *testing.B) {
		run(b, func() error { return rawScan(received, nil) })
	})
	b.Run("anchor=data_frame", func(b *testing.B) {
		run(b, func() error {
			_, err := longFrame(client)
			return err
		})
	})
	b.Run("anchor=long_to_wide", func(b *testing.B) {
		run(b, func() error {
			f, err := longFrame(client)
			if err != nil {
				return err
			}
			w, err := data.LongToWide(f, nil)
			if err == nil && len(w.Fields) != walks.Hosts+1 {
				err = fmt.Errorf("LongToWide: %d fields", len(w.Fields))
			}
			return err
		})
	})
	for _, format := range []string{FormatTimeSeries, FormatTimeSeriesWide, FormatTable} {
		b.Run("format="+format, func(b *testing.B) {
			run(b, func() error {
				sink := &discardSink{}
				if err := query(format, sink); err != nil {
					return err
				}
				return checkFrames(format, sink.frames)
			})
		})
		b.Run("format="+format+"/sink=encode", func(b *testing.B) {
			sink := newEncodeSink(b, false)
			run(b, func() error { return query(format, sink) })
			b.ReportMetric(float64(sink.bytes)/float64(b.N), "wire-B/op")
		})
	}
	for _, format := range []string{FormatTimeSeries, FormatTimeSeriesWide} {
		b.Run("decode="+format, func(b *testing.B) {
			sink := newEncodeSink(b, true)
			if err := query(format, sink); err != nil {
				b.Fatal(err)
			}
			run(b, func() error {
				for _, w := range sink.wire {
					if _, err := data.UnmarshalArrowFrame(w); err != nil {
						return err
					}
				}
				return nil
			})
			b.ReportMetric(float64(sink.bytes), "wire-B/op")
		})
	}
}

// drainDoGets keeps the test server's DoGet notifications from filling up.
func drainDoGets(srv *memServer) {
	go func() {
		for range srv.doGets { //nolint:revive // discard
		}
	}()
}

func checkFrames(format string, frames int64) error {
	want := map[string]int64{FormatTimeSeries: walks.Hosts, FormatTimeSeriesWide: 1, FormatTable: 1}[format]
	if frames != want {
		return fmt.Errorf("%s: %d frames, want %d", format, frames, want)
	}
	return nil
}

// rawScan runs walks.SQL through the Flight SQL client and reads every batch,
// handing each to each when set.
func rawScan(client *flightsql.Client, each func(arrow.RecordBatch)) error {
	ctx := context.Background()
	info, err := client.Execute(ctx, walks.SQL)
	if err != nil {
		return err
	}
	var n int64
	for _, ep := range info.GetEndpoint() {
		rdr, err := client.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			n += rec.NumRows()
			if each != nil {
				each(rec)
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	if n != walks.Hosts*walks.Points {
		return fmt.Errorf("raw scan read %d rows", n)
	}
	return nil
}

// longFrame copies the result into a long data.Frame, row by row.
func longFrame(client *flightsql.Client) (*data.Frame, error) {
	var (
		times  []time.Time
		hosts  []string
		values []float64
	)
	err := rawScan(client, func(rec arrow.RecordBatch) {
		ts := rec.Column(0).(*array.Timestamp)
		hs := rec.Column(1).(*array.String)
		vs := rec.Column(2).(*array.Float64)
		for i := range int(rec.NumRows()) {
			times = append(times, time.Unix(0, int64(ts.Value(i))).UTC())
			hosts = append(hosts, strings.Clone(hs.Value(i)))
			values = append(values, vs.Value(i))
		}
	})
	if err != nil {
		return nil, err
	}
	return data.NewFrame("", data.NewField("time", nil, times), data.NewField("host", nil, hosts), data.NewField("value", nil, values)), nil
}

// BenchmarkTableBuilder is the table builder alone (no server, no
// network): the throughput result's batches, normalised once, through a
// tableBuilder up to a sink that drops the frames. Package series'
// BenchmarkSeriesSplit is the same for the series formats.
func BenchmarkTableBuilder(b *testing.B) {
	batches := throughputBatches()
	plan := newPlan(walks.Schema)
	var norms []arrow.RecordBatch
	for _, r := range batches {
		norms = append(norms, plan.apply(memory.DefaultAllocator, r))
	}
	b.Run("format="+FormatTable, func(b *testing.B) {
		b.ReportAllocs()
		var cpu time.Duration
		for b.Loop() {
			c0 := cpuTime()
			tb := newTableBuilder(memory.DefaultAllocator, frameInfo{refID: "A"}, plan.out)
			for _, n := range norms {
				if err := tb.addBatch(b.Context(), n, false); err != nil {
					b.Fatal(err)
				}
			}
			if err := tb.Finish(b.Context(), &discardSink{}, nil); err != nil {
				b.Fatal(err)
			}
			tb.Release()
			cpu += cpuTime() - c0
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(walks.Hosts*walks.Points), "ns/row")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(walks.Hosts*walks.Points), "cpu-ns/row")
	})
}
