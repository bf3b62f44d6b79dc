package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/tests/harness"
)

// The reply-format policy through the binary, decoded as Grafana decodes a
// reply (backend.FromProto, which reads each DataResponse by the format it
// declares): by default a JSON request gets Arrow frames, which decode to
// the same frames as the JSON reply the plugin writes when replyFormat is
// requested; replyFormat json answers an Arrow request in JSON; a chunked
// request gets the format it asked for whatever the setting.
func TestReplyFormatPolicy(t *testing.T) {
	queries := func() []*pluginv2.DataQuery {
		return []*pluginv2.DataQuery{walk("A", 3), harness.Query("T", `{"scenario":"table","seriesCount":4}`, from, t0, time.Minute, 1000)}
	}
	grafanaDecode := func(resp *pluginv2.QueryDataResponse) map[string]data.Frames {
		t.Helper()
		r, err := backend.FromProto().QueryDataResponse(resp)
		if err != nil {
			t.Fatalf("Grafana's decode: %v", err)
		}
		out := map[string]data.Frames{}
		for ref, dr := range r.Responses {
			if dr.Error != nil {
				t.Fatalf("%s: %v", ref, dr.Error)
			}
			for _, f := range dr.Frames {
				f.Meta = nil // the stats differ between runs
			}
			out[ref] = dr.Frames
		}
		return out
	}
	run := func(jsonData string, format pluginv2.DataFrameFormat) (*pluginv2.QueryDataResponse, map[string]data.Frames) {
		t.Helper()
		resp, err := plug.QueryData(ctx(t), instance(jsonData, nil), format, queries()...)
		if err != nil {
			t.Fatal(err)
		}
		return resp, grafanaDecode(resp)
	}
	formats := func(resp *pluginv2.QueryDataResponse) map[pluginv2.DataFrameFormat]int {
		n := map[pluginv2.DataFrameFormat]int{}
		for _, dr := range resp.Responses {
			n[dr.Format]++
		}
		return n
	}

	defResp, byDefault := run(`{}`, pluginv2.DataFrameFormat_JSON)
	if n := formats(defResp); n[pluginv2.DataFrameFormat_ARROW] != 2 {
		t.Errorf("default, JSON asked: replies by format %v, want Arrow", n)
	}
	reqResp, asked := run(`{"replyFormat":"requested"}`, pluginv2.DataFrameFormat_JSON)
	if n := formats(reqResp); n[pluginv2.DataFrameFormat_JSON] != 2 {
		t.Errorf("requested, JSON asked: replies by format %v, want JSON", n)
	}
	for _, b := range reqResp.Responses["A"].Frames {
		var f data.Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("requested JSON is not a JSON frame: %v", err)
		}
	}
	jsonResp, forced := run(`{"replyFormat":"json"}`, pluginv2.DataFrameFormat_ARROW)
	if n := formats(jsonResp); n[pluginv2.DataFrameFormat_JSON] != 2 {
		t.Errorf("json, Arrow asked: replies by format %v, want JSON", n)
	}
	for _, ref := range []string{"A", "T"} {
		want := byDefault[ref]
		for name, got := range map[string]data.Frames{"requested JSON": asked[ref], "json": forced[ref]} {
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%s %s: %d frames, default %d", ref, name, len(got), len(want))
			}
			for i := range want {
				if err := frametest.Equal(want[i], got[i]); err != nil {
					t.Errorf("%s %s frame %d: %v", ref, name, i, err)
				}
			}
		}
	}

	for _, js := range []string{`{}`, `{"replyFormat":"json"}`} {
		for _, format := range []pluginv2.DataFrameFormat{pluginv2.DataFrameFormat_ARROW, pluginv2.DataFrameFormat_JSON} {
			chunks, err := plug.QueryChunked(ctx(t), instance(js, nil), format, queries()...)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) < 2 {
				t.Fatalf("%s %v: %d chunks", js, format, len(chunks))
			}
			for _, c := range chunks {
				if c.Error != "" || c.Format != format {
					t.Fatalf("%s, %v asked: a chunk in %v (%q)", js, format, c.Format, c.Error)
				}
				if format == pluginv2.DataFrameFormat_JSON {
					var f data.Frame
					if err := json.Unmarshal(c.Frame, &f); err != nil {
						t.Fatalf("%s: a JSON chunk that is not a JSON frame: %v", js, err)
					}
				}
			}
		}
	}
}
