//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/tests/harness"
)

// Frames asked for as JSON, through QueryData and through
// QueryChunkedData (each frame a chunk), are byte for byte the frames the
// SDK's standard path writes for the same queries (the reference plugin:
// backend.QueryDataHandler, the SDK's MarshalJSON), and decode through the
// SDK's json.Unmarshal to the same frames, value by value.
func TestJSONMatchesSDK(t *testing.T) {
	t.Cleanup(closeReference)
	ref := reference(t)
	queries := []*pluginv2.DataQuery{
		walk("A", 12),
		harness.Query("T", `{"scenario":"table","seriesCount":40}`, from, t0, time.Minute, 1000),
		harness.Query("L", `{"scenario":"logs","seriesCount":3}`, from, t0, time.Minute, 500),
	}
	want, err := ref.QueryData(ctx(t), instance(`{}`, nil), pluginv2.DataFrameFormat_JSON, queries...)
	if err != nil {
		t.Fatal(err)
	}
	pc := instance(`{"replyFormat":"requested"}`, nil)
	got, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_JSON, queries...)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := plug.QueryChunked(ctx(t), pc, pluginv2.DataFrameFormat_JSON, queries...)
	if err != nil {
		t.Fatal(err)
	}
	chunked := map[string]map[string][]byte{}
	for _, c := range chunks {
		if c.Error != "" {
			t.Fatalf("chunk of %s: error %q", c.RefId, c.Error)
		}
		if chunked[c.RefId] == nil {
			chunked[c.RefId] = map[string][]byte{}
		}
		if _, dup := chunked[c.RefId][c.FrameId]; dup {
			t.Fatalf("frame %s/%s sent twice", c.RefId, c.FrameId)
		}
		chunked[c.RefId][c.FrameId] = c.Frame
	}
	for _, q := range queries {
		w, g := want.Responses[q.RefId], got.Responses[q.RefId]
		if w.Error != "" || g.Error != "" {
			t.Fatalf("%s: errors %q (SDK) and %q", q.RefId, w.Error, g.Error)
		}
		if g.Format != pluginv2.DataFrameFormat_JSON || w.Format != pluginv2.DataFrameFormat_JSON {
			t.Fatalf("%s: formats %v and %v (SDK)", q.RefId, g.Format, w.Format)
		}
		if len(g.Frames) != len(w.Frames) || len(chunked[q.RefId]) != len(w.Frames) || len(w.Frames) == 0 {
			t.Fatalf("%s: %d frames, %d chunks, the SDK %d", q.RefId, len(g.Frames), len(chunked[q.RefId]), len(w.Frames))
		}
		for i, wb := range w.Frames {
			cb := chunked[q.RefId][strconv.Itoa(i)]
			for _, c := range []struct {
				path string
				b    []byte
			}{{"QueryData", g.Frames[i]}, {"QueryChunkedData", cb}} {
				var wf, gf data.Frame
				if err := json.Unmarshal(wb, &wf); err != nil {
					t.Fatalf("%s frame %d: the SDK's JSON: %v", q.RefId, i, err)
				}
				if err := json.Unmarshal(c.b, &gf); err != nil {
					t.Fatalf("%s %s frame %d: %v", c.path, q.RefId, i, err)
				}
				if err := frametest.Equal(&wf, &gf); err != nil {
					t.Errorf("%s %s frame %d: %v", c.path, q.RefId, i, err)
				}
				if !bytes.Equal(wb, c.b) {
					t.Errorf("%s %s frame %d: %d bytes, the SDK's %d, not identical", c.path, q.RefId, i, len(c.b), len(wb))
				}
			}
		}
	}
}
