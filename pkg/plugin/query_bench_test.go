//go:build unix

package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

// BenchmarkQuerySeries: the plugin's whole query path in process (demo
// source, limits, encode workers, the response) for the query of
// BenchmarkEndToEnd's workload=series, 1000 series × 256 one-minute points,
// at the default settings and at codec none. Besides the wall time it
// reports the process's CPU time per query (user + system, all threads,
// from getrusage): the encode workers run in parallel, so the wall time
// says little of what a query costs the host. Profile it to see the
// encode and emit path without gRPC:
//
//	go test -tags arrow_json_stdlib ./pkg/plugin -run '^$' -bench QuerySeries -cpuprofile cpu.out
func BenchmarkQuerySeries(b *testing.B) {
	s := NewService(Options{})
	defer s.Close()
	to := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	from := to.Add(-255 * time.Minute)
	q := &pluginv2.DataQuery{
		RefId: "A", Json: []byte(`{"scenario":"random_walk","seriesCount":1000,"seed":3}`),
		TimeRange:  &pluginv2.TimeRange{FromEpochMS: from.UnixMilli(), ToEpochMS: to.UnixMilli()},
		IntervalMS: time.Minute.Milliseconds(), MaxDataPoints: 256,
	}
	for _, c := range []struct{ name, settings string }{
		{"codec=default", `{}`},
		{"codec=none", `{"codec":"none"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			preq := &pluginv2.QueryDataRequest{PluginContext: pluginContext(c.settings), Queries: []*pluginv2.DataQuery{q}}
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				resp, err := s.QueryData(context.Background(), preq)
				if err != nil {
					b.Fatal(err)
				}
				if dr := resp.Responses["A"]; dr.Error != "" || len(dr.Frames) != 1000 {
					b.Fatalf("%q, %d frames", dr.Error, len(dr.Frames))
				}
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
