//go:build unix

package series

import (
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/walks"
)

// normalised returns rec with its timestamp columns typed as normalisation
// makes them (timestamp[ns] without a zone), over the same buffers: the
// batches package flightsql hands the split.
func normalised(rec arrow.RecordBatch) arrow.RecordBatch {
	fields := make([]arrow.Field, rec.NumCols())
	cols := make([]arrow.Array, rec.NumCols())
	for i, f := range rec.Schema().Fields() {
		col := rec.Column(i)
		if f.Type.ID() == arrow.TIMESTAMP {
			f.Type = frame.Timestamp
			d := array.NewData(f.Type, col.Len(), col.Data().Buffers(), nil, col.NullN(), col.Data().Offset())
			col = array.MakeFromData(d)
			d.Release()
			defer col.Release()
		}
		fields[i], cols[i] = f, col
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// BenchmarkSeriesSplit is the split alone (no server, no network): the
// throughput result's batches (tests/walks), normalised once, through a
// Builder up to a sink that drops the frames (sink=lend: one that takes
// them lent, as the plugin's sink does for the Arrow format). Package
// flightsql's BenchmarkTableBuilder is the same for a table.
func BenchmarkSeriesSplit(b *testing.B) {
	var norms []arrow.RecordBatch
	for _, r := range walks.Batches(walks.Hosts, walks.Points, walks.BatchRows) {
		norms = append(norms, normalised(r))
		r.Release()
	}
	schema := norms[0].Schema()
	for _, row := range []struct {
		format string
		wide   bool
		lend   bool
	}{{"time_series", false, false}, {"time_series", false, true}, {"time_series_wide", true, false}, {"time_series_wide", true, true}} {
		name := "format=" + row.format
		if row.lend {
			name += "/sink=lend" // the series' arrays lent, as to the plugin
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				c0 := cpuTime()
				sb, err := New(testConfig(row.wide), schema)
				if err != nil {
					b.Fatal(err)
				}
				for _, n := range norms {
					if err := sb.Add(n); err != nil {
						b.Fatal(err)
					}
				}
				var sink source.Sink = &discardSink{}
				if row.lend {
					sink = &lendingDiscard{}
				}
				if err := sb.Finish(b.Context(), sink, nil); err != nil {
					b.Fatal(err)
				}
				sb.Release()
				cpu += cpuTime() - c0
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(walks.Hosts*walks.Points), "ns/row")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(walks.Hosts*walks.Points), "cpu-ns/row")
		})
	}
}

// cpuTime is the process's CPU time (user and system, every thread).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
