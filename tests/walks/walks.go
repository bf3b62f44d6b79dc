// Package walks builds the result of the Flight SQL throughput benchmarks
// (pkg/source/flightsql's, in process, and tests/e2e's, through the
// binary): hosts × points rows, `time` timestamp[ns, UTC] at 10 s steps,
// `host` utf8 (host-0000, …), `value` float64 random walks, rows of
// different series interleaved as GROUP BY time, host returns them (every
// host at one time, then the next time).
package walks

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The benchmarks' result: 1000 series × 1000 points in batches of 8192
// rows (DataFusion's default), and the query that asks for it.
const (
	Hosts     = 1000
	Points    = 1000
	BatchRows = 8192
	SQL       = "SELECT time, host, value FROM cpu GROUP BY time, host"
)

// Schema is the result's schema.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
	{Name: "host", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// Batches builds hosts × points rows in batches of batchRows (the last one
// shorter), the same rows for the same arguments.
func Batches(hosts, points, batchRows int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, hosts)
	walk := make([]float64, hosts)
	for h := range names {
		names[h] = fmt.Sprintf("host-%04d", h)
		walk[h] = 50
	}
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano()
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	var out []arrow.RecordBatch
	n := 0
	for p := range points {
		for h := range hosts {
			walk[h] += rng.NormFloat64()
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base + int64(p)*10e9))
			b.Field(1).(*array.StringBuilder).Append(names[h])
			b.Field(2).(*array.Float64Builder).Append(walk[h])
			if n++; n%batchRows == 0 {
				out = append(out, b.NewRecordBatch())
			}
		}
	}
	if n%batchRows != 0 {
		out = append(out, b.NewRecordBatch())
	}
	return out
}
