// Package e2e drives the built gpx_quiver binary the way Grafana does (see
// package harness) and decodes every frame with the SDK.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/tests/harness"

	// The binary's code: importing it makes a change to it invalidate
	// cached results of these tests, which build and run the binary.
	_ "github.com/quiverdata/quiver/pkg/plugin"
)

var plug *harness.Plugin

// binary is the built gpx_quiver, for tests that start their own process.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, _ := os.Getwd()
	root, err := harness.RepoRoot(wd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "quiver-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "gpx_quiver")
	binary = bin
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := harness.Build(ctx, root, "./pkg", bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	plug, err = harness.Start(bin, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer plug.Close()
	return m.Run()
}

var (
	t0   = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	from = t0.Add(-6 * time.Hour)
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// nextID gives every test its own data-source instance.
var nextID int64 = 100

func instance(jsonData string, secure map[string]string) *pluginv2.PluginContext {
	nextID++
	return harness.Context(nextID, jsonData, secure)
}

func walk(refID string, series int) *pluginv2.DataQuery {
	return harness.Query(refID, map[string]any{"scenario": "random_walk", "seriesCount": series, "seed": 7}, from, t0, time.Minute, 1000)
}

func TestHealthOK(t *testing.T) {
	for js, want := range map[string]string{
		`{}`:                          "auto (none, lz4 or zstd per frame, preferring cpu)",
		`{"codecPreference":"bytes"}`: "auto (none, lz4 or zstd per frame, preferring bytes)",
		`{"codec":"zstd"}`:            "zstd/3 (zstd default)",
		`{"codec":"lz4","level":9}`:   "lz4/9 (lz4 level 9)",
		`{"codec":"none"}`:            "none",
		`{"codec":"zstd","level":19}`: "zstd/19 (zstd best)",
	} {
		res, err := plug.Health(ctx(t), instance(js, nil))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != pluginv2.CheckHealthResponse_OK || !strings.Contains(res.Message, want) {
			t.Errorf("%s: %v %q, want OK naming %q", js, res.Status, res.Message, want)
		}
	}
}

func TestBadSettings(t *testing.T) {
	for js, want := range map[string][]string{
		`{"upstream":"mysql"}`:        {"upstream", `"demo"`, `"flightsql"`},
		`{"codec":"brotli"}`:          {"codec", `"zstd"`, `"lz4"`, `"none"`},
		`{"codec":"zstd","level":30}`: {"level", "1 to 22"},
		`{"codec":"lz4","level":12}`:  {"level", "0 to 9"},
		`{"minSavings":1.5}`:          {"minSavings", "0 to 0.9"},
		`{"maxSeries":0}`:             {"maxSeries", "1 to 1000000"},
		`{"maxPoints":-5}`:            {"maxPoints"},
		`{"level":"high"}`:            {"level", "whole number"},
		`not json`:                    {"jsonData"},
		`{"upstream":"flightsql"}`:    {"address", "host:port"},
		`{"upstream":"flightsql","address":"db:1","authType":"kerberos"}`: {"authType", `"token"`},
	} {
		pc := instance(js, nil)
		res, err := plug.Health(ctx(t), pc)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != pluginv2.CheckHealthResponse_ERROR {
			t.Errorf("%s: health %v", js, res.Status)
		}
		for _, w := range want {
			if !strings.Contains(res.Message, w) {
				t.Errorf("%s: health message %q does not say %q", js, res.Message, w)
			}
		}
		// Queries against the instance fail with the same message.
		resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 1))
		if err != nil {
			t.Fatal(err)
		}
		if dr := resp.Responses["A"]; dr.Error != res.Message || dr.Status != 400 || dr.ErrorSource != "plugin" {
			t.Errorf("%s: query error %q (%d, %s), want the health message %q", js, dr.Error, dr.Status, dr.ErrorSource, res.Message)
		}
	}
}

// decode decodes a response's frames with Grafana's decoder and checks that
// no record batch declares another codec than wantCodec ("none" is always
// allowed: a batch where nothing was worth compressing declares none). It
// returns the frames and how many batches declare wantCodec.
func decodeCount(t *testing.T, dr *pluginv2.DataResponse, wantCodec string) (data.Frames, int) {
	t.Helper()
	if dr.Error != "" {
		t.Fatalf("query error: %s", dr.Error)
	}
	frames, err := data.UnmarshalArrowFrames(dr.Frames)
	if err != nil {
		t.Fatal(err)
	}
	compressed := 0
	for _, b := range dr.Frames {
		batches, err := arrowipctest.Inspect(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, bi := range batches {
			if bi.Codec != wantCodec && bi.Codec != "none" {
				t.Fatalf("a batch declares %s, want %s", bi.Codec, wantCodec)
			}
			if bi.Codec == wantCodec {
				compressed++
			}
		}
	}
	return frames, compressed
}

func decode(t *testing.T, dr *pluginv2.DataResponse, wantCodec string) data.Frames {
	t.Helper()
	frames, _ := decodeCount(t, dr, wantCodec)
	return frames
}

func stats(f *data.Frame) map[string]float64 {
	m := map[string]float64{}
	if f.Meta != nil {
		for _, s := range f.Meta.Stats {
			m[s.DisplayName] = s.Value
		}
	}
	return m
}

func TestScenariosUnderEachCodec(t *testing.T) {
	for _, c := range []struct{ settings, codec string }{
		{`{"codec":"zstd","level":3}`, "zstd"}, {`{"codec":"zstd","level":1}`, "zstd"}, {`{"codec":"zstd","level":19}`, "zstd"},
		{`{"codec":"lz4"}`, "lz4"}, {`{"codec":"lz4","level":9}`, "lz4"}, {`{"codec":"none"}`, "none"},
	} {
		pc := instance(c.settings, nil)
		logs := harness.Query("L", `{"scenario":"logs","seriesCount":5}`, from, t0, time.Minute, 1000)
		table := harness.Query("T", `{"scenario":"table","seriesCount":20}`, from, t0, time.Minute, 1000)
		resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 25), logs, table)
		if err != nil {
			t.Fatal(err)
		}
		series, n := decodeCount(t, resp.Responses["A"], c.codec)
		// Random-walk values never compress; 1-minute timestamps only do at
		// zstd's best level (see docs/journal/benchmarks.md).
		if strings.Contains(c.settings, `"level":19`) && n != 25 {
			t.Errorf("%s: %d of 25 series batches declare zstd, want all (their timestamps compress)", c.settings, n)
		}
		if len(series) != 25 {
			t.Fatalf("%s: %d frames, want one per series (25)", c.settings, len(series))
		}
		for _, f := range series {
			if f.RefID != "A" || f.Fields[0].Type() != data.FieldTypeTime || f.Fields[1].Labels["host"] == "" || f.Rows() != 361 {
				t.Fatalf("%s: series frame %q: %d rows, labels %v", c.settings, f.Name, f.Rows(), f.Fields[1].Labels)
			}
		}
		// The first frame carries the query's stats; the others none.
		st := stats(series[0])
		if st[frame.StatFrames] != 25 || st[frame.StatRawBytes] != 25*361*16 || st[frame.StatWireBytes] <= 0 || st[frame.StatWireBytes] > st[frame.StatRawBytes] {
			t.Errorf("%s: stats %v", c.settings, st)
		}
		for _, f := range series[1:] {
			if len(stats(f)) != 0 {
				t.Fatalf("%s: a frame other than the first carries stats", c.settings)
			}
		}
		lf, n := decodeCount(t, resp.Responses["L"], c.codec)
		if c.codec != "none" && n != 1 {
			t.Errorf("%s: the logs frame's batch does not declare %s", c.settings, c.codec)
		}
		if len(lf) != 1 || lf[0].Meta.PreferredVisualization != data.VisTypeLogs || lf[0].Rows() != 5*200 {
			t.Errorf("%s: logs frame %+v", c.settings, lf[0].Meta)
		}
		tf := decode(t, resp.Responses["T"], c.codec)
		if len(tf) != 1 || tf[0].Rows() != 20 {
			t.Errorf("%s: table frame", c.settings)
		}
	}
}

func TestBadQueryBesideGoodOne(t *testing.T) {
	pc := instance(`{}`, nil)
	bad := harness.Query("B", `{"scenario":`, from, t0, time.Minute, 100)
	unknown := harness.Query("U", `{"scenario":"fractal"}`, from, t0, time.Minute, 100)
	huge := harness.Query("H", `{"seriesCount":50000}`, from, t0, time.Minute, 100)
	resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 3), bad, unknown, huge)
	if err != nil {
		t.Fatal(err)
	}
	if frames := decode(t, resp.Responses["A"], "zstd"); len(frames) != 3 {
		t.Errorf("good query: %d frames", len(frames))
	}
	for ref, want := range map[string]string{
		"B": "demo query",
		"U": `scenario "fractal" is not one of "random_walk", "logs", "table"`,
		"H": "seriesCount 50000 is more than 10000 series, this data source's limit per query (setting maxSeries)",
	} {
		dr := resp.Responses[ref]
		if !strings.Contains(dr.Error, want) || dr.Status != 400 || len(dr.Frames) != 0 {
			t.Errorf("%s: %q (status %d, %d frames), want status 400 saying %q", ref, dr.Error, dr.Status, len(dr.Frames), want)
		}
	}
}

func TestChunkedMatchesQueryData(t *testing.T) {
	pc := instance(`{"codec":"lz4"}`, nil)
	logs := harness.Query("L", `{"scenario":"logs","seriesCount":2}`, from, t0, time.Minute, 1000)
	bad := harness.Query("B", `{"scenario":"nope"}`, from, t0, time.Minute, 1000)
	resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 40), logs, bad)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := plug.QueryChunked(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 40), logs, bad)
	if err != nil {
		t.Fatal(err)
	}
	// Grafana places a query's frames in the order their chunks arrive.
	byRef := map[string][]*data.Frame{}
	var chunkErr string
	for _, c := range chunks {
		if c.Error != "" {
			if c.RefId != "B" || c.Status != 400 {
				t.Errorf("error chunk %s: %q %d", c.RefId, c.Error, c.Status)
			}
			chunkErr = c.Error
			continue
		}
		f, err := data.UnmarshalArrowFrame(c.Frame)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(len(byRef[c.RefId])); c.FrameId != want {
			t.Fatalf("%s: chunk of frame %s where frame %s comes next", c.RefId, c.FrameId, want)
		}
		byRef[c.RefId] = append(byRef[c.RefId], f)
	}
	if chunkErr != resp.Responses["B"].Error {
		t.Errorf("chunked error %q, QueryData error %q", chunkErr, resp.Responses["B"].Error)
	}
	for _, ref := range []string{"A", "L"} {
		want := decode(t, resp.Responses[ref], "lz4")
		if len(byRef[ref]) != len(want) {
			t.Fatalf("%s: %d chunks, %d frames", ref, len(byRef[ref]), len(want))
		}
		for i, w := range want {
			got := byRef[ref][i]
			w.Meta.Stats, got.Meta.Stats = nil, nil // the encode time differs
			if err := frametest.Equal(w, got); err != nil {
				t.Errorf("%s frame %d: %v", ref, i, err)
			}
		}
	}
}

func TestJSONFormat(t *testing.T) {
	pc := instance(`{"replyFormat":"requested"}`, nil)
	table := harness.Query("T", `{"scenario":"table","seriesCount":4}`, from, t0, time.Minute, 1000)
	arrowResp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 3), table)
	if err != nil {
		t.Fatal(err)
	}
	jsonResp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_JSON, walk("A", 3), table)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"A", "T"} {
		want := decode(t, arrowResp.Responses[ref], "zstd")
		dr := jsonResp.Responses[ref]
		if dr.Format != pluginv2.DataFrameFormat_JSON || len(dr.Frames) != len(want) {
			t.Fatalf("%s: format %v, %d frames", ref, dr.Format, len(dr.Frames))
		}
		for i, b := range dr.Frames {
			var got data.Frame
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: JSON frame: %v", ref, err)
			}
			want[i].Meta = nil
			got.Meta = nil
			if err := frametest.Equal(want[i], &got); err != nil {
				t.Errorf("%s frame %d: %v", ref, i, err)
			}
		}
	}
}

func TestMetrics(t *testing.T) {
	pc := instance(`{"codec":"zstd","level":7}`, nil)
	if _, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 5)); err != nil {
		t.Fatal(err)
	}
	res, err := plug.Diagnostics.CollectMetrics(ctx(t), &pluginv2.CollectMetricsRequest{PluginContext: pc})
	if err != nil {
		t.Fatal(err)
	}
	text := string(res.Metrics.Prometheus)
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "quiver_") && strings.Contains(l, `codec="zstd/7"`) {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"quiver_frames_total{codec=\"zstd/7\"} 5", "quiver_body_raw_bytes_total", "quiver_body_wire_bytes_total", "quiver_frame_bytes_total", "quiver_encode_seconds_count{codec=\"zstd/7\"} 5"} {
		if !strings.Contains(joined, want) {
			t.Errorf("metrics lack %q:\n%s", want, joined)
		}
	}
}
