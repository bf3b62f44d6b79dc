//go:build linux

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// benchSDKTableJSON is the anchor of a table answered in JSON: what a
// plugin on the SDK's standard path does, after the raw client's scan
// (anchor=raw_client), to answer Grafana's JSON request with the result as
// one table frame: the batches joined column by column, data.FromArrowRecord,
// and the frame's MarshalJSON (the SDK's JSON reply), in this process.
// It reports that CPU a row (sdk-cpu-ns/row); the SDK path's whole plugin
// CPU is it plus the raw client's scan, raw_client/in=child's cpu-ns/row.
func benchSDKTableJSON(b *testing.B, res *benchResult) {
	checked := false
	var cpu time.Duration
	var size int
	for b.Loop() {
		c0 := selfCPU(b)
		frame, err := sdkTable(res.batches)
		if err != nil {
			b.Fatal(err)
		}
		out, err := frame.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		cpu += selfCPU(b) - c0
		size = len(out)
		if !checked { // once, outside the CPU counted
			var got data.Frame
			if err := json.Unmarshal(out, &got); err != nil {
				b.Fatal(err)
			}
			if n, _ := got.RowLen(); int64(n) != res.rows {
				b.Fatalf("the SDK's JSON holds %d rows, want %d", n, res.rows)
			}
			checked = true
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(res.rows), "sdk-cpu-ns/row")
	b.ReportMetric(float64(size)/float64(res.arrowBytes), "json/arrow")
}

// sdkTable is the result's batches as one data.Frame, as the SDK converts a
// record.
func sdkTable(batches []arrow.RecordBatch) (*data.Frame, error) {
	schema := batches[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for c := range cols {
		parts := make([]arrow.Array, len(batches))
		for i, rec := range batches {
			parts[i] = rec.Column(c)
		}
		joined, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		cols[c], rows = joined, int64(joined.Len())
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	defer rec.Release()
	return data.FromArrowRecord(rec)
}
