//go:build unix

package flightsql

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/walks"
)

// BenchmarkFlightSQLCodec: what compression costs the plugin on the
// throughput result (1000 series × 1000 points, see
// BenchmarkFlightSQLThroughput), read through the Source and encoded frame
// by frame on the source's goroutine, at codec none and at codec auto (the
// default), with its timestamps at 10 s steps (zstd shrinks them) and at
// 60 s steps (nothing in the result compresses at zstd 3 or lz4). Profile
// it for the share of the CPU spent in compression:
//
//	go test -tags arrow_json_stdlib ./pkg/source/flightsql -run '^$' -bench FlightSQLCodec -count 6
func BenchmarkFlightSQLCodec(b *testing.B) {
	srv := newMemServer()
	batches := throughputBatches()
	var rows int64
	for _, r := range batches {
		rows += r.NumRows()
	}
	steps := []struct {
		name string
		sql  string
		data []arrow.RecordBatch
	}{
		{"step=10s", walks.SQL, batches},
		{"step=60s", walks.SQL + " -- 60 s", stretchTime(b, batches, 6)},
	}
	for _, st := range steps {
		srv.set(st.sql, &dataset{schema: walks.Schema, endpoints: [][]arrow.RecordBatch{st.data}})
	}
	addr := startServer(b, srv, serverOpts{})
	drainDoGets(srv)
	cfg := baseConfig(addr)
	cfg.RowLimit = 2 * rows
	cfg.ByteLimit = 1 << 30
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	codecs := []struct {
		name string
		o    arrowipc.Options
	}{
		{"codec=none", arrowipc.Options{}},
		{"codec=auto", arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), Preference: codec.Preferences[0], MinSavings: 0.1}},
	}
	for _, st := range steps {
		for _, format := range []string{FormatTimeSeries, FormatTable} {
			for _, c := range codecs {
				b.Run(fmt.Sprintf("%s/format=%s/%s", st.name, format, c.name), func(b *testing.B) {
					enc, err := frame.NewEncoder(c.o)
					if err != nil {
						b.Fatal(err)
					}
					sink := &encodeSink{enc: enc}
					q := source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"rawSql":%q,"format":%q}`, st.sql, format)),
						Limits: source.Limits{MaxSeries: 10 * walks.Hosts, MaxPoints: 10 * rows}}
					if err := s.Query(context.Background(), q, sink); err != nil { // warm up the skip's history
						b.Fatal(err)
					}
					sink.bytes, sink.byCodec = 0, [codec.Auto]int{}
					cpu0 := cpuTime()
					for b.Loop() {
						if err := s.Query(context.Background(), q, sink); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(rows), "cpu-ns/row")
					b.ReportMetric(float64(sink.bytes)/float64(b.N), "wire-B/op")
					for k, n := range sink.byCodec {
						if n > 0 {
							b.ReportMetric(float64(n)/float64(b.N), "frames-"+codec.Kind(k).String()+"/op")
						}
					}
				})
			}
		}
	}
}

// stretchTime returns batches with every timestamp's distance from the
// first multiplied by k (10 s steps become 60 s steps at k = 6).
func stretchTime(tb testing.TB, batches []arrow.RecordBatch, k int64) []arrow.RecordBatch {
	base := int64(batches[0].Column(0).(*array.Timestamp).Value(0))
	out := make([]arrow.RecordBatch, len(batches))
	for i, r := range batches {
		ts := r.Column(0).(*array.Timestamp)
		bld := array.NewTimestampBuilder(memory.DefaultAllocator, ts.DataType().(*arrow.TimestampType))
		for j := range ts.Len() {
			bld.Append(arrow.Timestamp(base + (int64(ts.Value(j))-base)*k))
		}
		col := bld.NewArray()
		bld.Release()
		out[i] = array.NewRecordBatch(r.Schema(), []arrow.Array{col, r.Column(1), r.Column(2)}, r.NumRows())
		col.Release()
	}
	tb.Cleanup(func() {
		for _, r := range out {
			r.Release()
		}
	})
	return out
}
