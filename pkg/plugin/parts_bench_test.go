//go:build unix

package plugin

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTableThroughThePlugin is a table of about 1,000,000 rows (a
// float64 column with some nulls, a text column), 122 parts of 8192 rows
// built once, through QueryData at codec none: handed over in parts
// (handover=parts, what the Flight SQL source does now), against the same
// table joined by the source and handed over whole (handover=joined, what
// it did before, and what it does when Grafana asks for JSON:
// handover=joined/reply=json, the frame JSON of the whole table). Metrics: process CPU per row (the encode workers' too),
// bytes allocated, and the budget's peak (what the query held at most).
func BenchmarkTableThroughThePlugin(b *testing.B) {
	q := partQuery{Parts: 122, Rows: 8192}
	pre := make([]arrow.RecordBatch, q.Parts)
	for p := range pre {
		pre[p] = partRecord(memory.DefaultAllocator, p, q.Rows)
	}
	rows := int64(q.Parts * q.Rows)
	for _, mode := range []string{"parts", "joined", "joined/reply=json"} {
		b.Run("handover="+mode, func(b *testing.B) {
			s := NewService(Options{
				Sources: func(context.Context, settings.Settings) (source.Source, error) {
					return partSource{mem: memory.DefaultAllocator, pre: pre}, nil
				},
				EncodeWorkers: 2,
				Budget:        settings.Budget{Bytes: 1 << 30, Wait: time.Minute},
			})
			b.Cleanup(s.Close)
			pc := pluginContext(`{"codec":"none","replyFormat":"requested"}`)
			mq := q
			mq.Join = mode != "parts"
			req := &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", partModel(mq))}}
			if mode == "joined/reply=json" {
				req.Format = pluginv2.DataFrameFormat_JSON
			}
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				c0 := processCPU()
				b.StartTimer()
				resp, err := s.QueryData(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if dr := resp.Responses["A"]; dr.Error != "" || len(dr.Frames) != 1 {
					b.Fatal(fmt.Sprint(dr.Error, len(dr.Frames)))
				}
				b.StopTimer()
				cpu += processCPU() - c0
				b.StartTimer()
			}
			_, peak, _, _ := s.pipeline.Stats()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(rows), "cpu-ns/row")
			b.ReportMetric(float64(peak), "budget-peak-B")
		})
	}
}
