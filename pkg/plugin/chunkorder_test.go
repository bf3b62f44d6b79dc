package plugin

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

// Grafana (grpcplugin/client_v2.go → the ChunkedDataWriter) and the SDK's
// assemblers (experimental/datasourcetest/chunking.go AccumulateArrow,
// AccumulateJSON) place a query's frames in the order their chunks arrive:
// a chunked answer's frames must come in the unary answer's order, frame 0
// first, also when a query fails midway.
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
		next := map[string]int{}
		failed := false
		for _, c := range stream.chunks {
			if c.Error != "" {
				if c.RefId != "F" || next["F"] != 2 {
					t.Errorf("%s: error chunk of %s after %d frames: %q", format, c.RefId, next[c.RefId], c.Error)
				}
				failed = true
				continue
			}
			if failed && c.RefId == "F" {
				t.Errorf("%s: frame %s of F after its error", format, c.FrameId)
			}
			if want := strconv.Itoa(next[c.RefId]); c.FrameId != want {
				t.Fatalf("%s: chunk of %s is frame %s, want frame %s next", format, c.RefId, c.FrameId, want)
			}
			next[c.RefId]++
			var f *data.Frame
			var err error
			if format == pluginv2.DataFrameFormat_ARROW {
				f, err = data.UnmarshalArrowFrame(c.Frame)
			} else {
				f = &data.Frame{}
				err = f.UnmarshalJSON(c.Frame)
			}
			if err != nil {
				t.Fatal(err)
			}
			i := next[c.RefId] - 1
			if v := f.Fields[0].At(0).(float64); v != float64(i*50) {
				t.Errorf("%s: %s frame %d starts with %v", format, c.RefId, i, v)
			}
		}
		if next["A"] != 64 || next["F"] != 2 || !failed {
			t.Errorf("%s: frames %v, failed %v; want A's 64, F's 2 and F's error", format, next, failed)
		}
		if used, _, _, _ := s.pipeline.Stats(); used != 0 {
			t.Errorf("%s: %d bytes held after the response", format, used)
		}
	}
}
