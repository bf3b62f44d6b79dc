package plugin

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

// Grafana (grpcplugin/client_v2.go → the ChunkedDataWriter) and the SDK's
// assemblers (experimental/datasourcetest/chunking.go AccumulateArrow,
// AccumulateJSON) place a query's frames in the order their chunks arrive:
// a chunked answer's frames must come in the unary answer's order, frame 0
// first, also when a query fails midway (checkChunks: chunkstress_test.go).
func TestChunksComeInFrameOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := newTestService(t, fakeSource{mem: mem, frames: 64, rows: 50}, 4)
	for _, format := range []pluginv2.DataFrameFormat{pluginv2.DataFrameFormat_ARROW, pluginv2.DataFrameFormat_JSON} {
		pc := pluginContext(`{"codec":"none"}`)
		stream := &chunkStream{ctx: context.Background()}
		req := &pluginv2.QueryChunkedDataRequest{PluginContext: pc, Format: format,
			Queries: []*pluginv2.DataQuery{query("A", `"ok"`), query("F", `"fail"`)}}
		if err := s.QueryChunkedData(req, stream); err != nil {
			t.Fatal(err)
		}
		next, errs := checkChunks(t, format.String(), stream.chunks, format, func(_ string, i int) float64 { return float64(i * 50) })
		failed := errs["F"] != "" && len(errs) == 1
		if next["A"] != 64 || next["F"] != 2 || !failed {
			t.Errorf("%s: frames %v, failed %v; want A's 64, F's 2 and F's error", format, next, failed)
		}
		if used, _, _, _ := s.pipeline.Stats(); used != 0 {
			t.Errorf("%s: %d bytes held after the response", format, used)
		}
	}
}
