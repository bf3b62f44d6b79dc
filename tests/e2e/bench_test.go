//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/tests/harness"
)

var (
	refOnce sync.Once
	refPlug *harness.Plugin
	refErr  error
)

// reference starts the plugin that serves the same demo frames through the
// SDK's standard path (tests/e2e/reference), once until closeReference.
func reference(b testing.TB) *harness.Plugin {
	refOnce.Do(func() {
		wd, _ := os.Getwd()
		root, err := harness.RepoRoot(wd)
		if err != nil {
			refErr = err
			return
		}
		bin := filepath.Join(b.TempDir(), "gpx_reference")
		// b.TempDir is removed when this benchmark or test ends; the process
		// keeps its open executable.
		if refErr = harness.Build(context.Background(), root, "./tests/e2e/reference", bin); refErr != nil {
			return
		}
		refPlug, refErr = harness.Start(bin, io.Discard)
	})
	if refErr != nil {
		b.Fatal(refErr)
	}
	return refPlug
}

// closeReference stops the reference plugin, which reference started for
// one run of BenchmarkEndToEnd or one test.
func closeReference() {
	if refPlug != nil {
		refPlug.Close()
	}
	refOnce, refPlug, refErr = sync.Once{}, nil, nil
}

// BenchmarkEndToEnd: one query through the built binaries, as Grafana
// sends it: 1000 series × 256 points (workload=series) or about 4096 log
// lines (workload=logs). Reports the plugin process's CPU time per query
// (read from /proc; the client's own work is not counted), Grafana's side
// (the SDK's data.UnmarshalArrowFrame of every frame, or json.Unmarshal for
// JSON frames, in this process, CPU time from getrusage around the decoding
// only) and the response's size on the wire, for Quiver at its default
// (codec auto) and several codecs and for the reference plugin (SDK
// MarshalArrow) in the same run; the format=json rows ask both for JSON
// frames (Quiver's frame.JSONWriter, the SDK's MarshalJSON).
//
//	go test -tags arrow_json_stdlib -run '^$' -bench EndToEnd -benchtime 20x -count 6 ./tests/e2e
func BenchmarkEndToEnd(b *testing.B) {
	b.Cleanup(closeReference)
	to := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	from := to.Add(-255 * time.Minute) // 256 one-minute points
	workloads := []struct {
		name   string
		q      *pluginv2.DataQuery
		frames int // frames expected, 0 for any
	}{
		{"workload=series", harness.Query("A", `{"scenario":"random_walk","seriesCount":1000,"seed":3}`, from, to, time.Minute, 256), 1000},
		{"workload=logs", harness.Query("A", `{"scenario":"logs","seriesCount":21,"seed":3}`, to.Add(-24*time.Hour), to, time.Minute, 4096), 0},
	}
	arrowF, jsonF := pluginv2.DataFrameFormat_ARROW, pluginv2.DataFrameFormat_JSON
	cases := []struct {
		name     string
		settings string
		format   pluginv2.DataFrameFormat
	}{
		{"plugin=reference", `{}`, arrowF},
		{"plugin=quiver/codec=default", `{}`, arrowF},
		{"plugin=quiver/codec=auto/pref=bytes", `{"codecPreference":"bytes"}`, arrowF},
		{"plugin=quiver/codec=none", `{"codec":"none"}`, arrowF},
		{"plugin=quiver/codec=lz4/level=0", `{"codec":"lz4","level":0}`, arrowF},
		{"plugin=quiver/codec=zstd/level=1", `{"codec":"zstd","level":1}`, arrowF},
		{"plugin=quiver/codec=zstd/level=3", `{"codec":"zstd","level":3}`, arrowF},
		// Grafana asking for JSON frames (its default since the toggle
		// datasources.jsonQueryDataFormat): the SDK's MarshalJSON in the
		// reference, frame.JSONWriter in Quiver when it answers as asked
		// (replyFormat requested), and Quiver's default, which answers in
		// Arrow; each reply decoded as Grafana does, by the format it
		// declares.
		{"plugin=reference/format=json", `{}`, jsonF},
		{"plugin=quiver/codec=default/format=json/reply=requested", `{"replyFormat":"requested"}`, jsonF},
		{"plugin=quiver/codec=default/format=json/reply=default", `{}`, jsonF},
	}
	for wi, w := range workloads {
		for i, c := range cases {
			b.Run(w.name+"/"+c.name, func(b *testing.B) {
				p := plug
				if strings.HasPrefix(c.name, "plugin=reference") {
					p = reference(b)
				}
				pc := harness.Context(int64(5000+100*wi+i), c.settings, nil)
				ctx := context.Background()
				query := func() *pluginv2.QueryDataResponse {
					resp, err := p.QueryData(ctx, pc, c.format, w.q)
					if err != nil {
						b.Fatal(err)
					}
					dr := resp.Responses["A"]
					if dr.Error != "" || (w.frames > 0 && len(dr.Frames) != w.frames) {
						b.Fatalf("%s: error %q, %d frames", c.name, dr.Error, len(dr.Frames))
					}
					return resp
				}
				// Warm up (instance, pools, the skip's history) and check
				// that the frames decode.
				var rows int
				for range 3 {
					dr := query().Responses["A"]
					frames, err := decodeFrames(dr.Format, dr.Frames)
					if err != nil || len(frames) == 0 {
						b.Fatalf("%s: frames do not decode: %v", c.name, err)
					}
					rows = 0
					for _, f := range frames {
						rows += f.Rows()
					}
				}
				cpu0, err := p.CPUTime()
				if err != nil {
					b.Fatal(err)
				}
				size := 0
				var decode time.Duration
				b.ResetTimer()
				for range b.N {
					resp := query()
					size = proto.Size(resp)
					d0 := selfCPU(b)
					if _, err := decodeFrames(resp.Responses["A"].Format, resp.Responses["A"].Frames); err != nil {
						b.Fatal(err)
					}
					decode += selfCPU(b) - d0
				}
				b.StopTimer()
				cpu1, err := p.CPUTime()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N), "plugin-cpu-ms/op")
				b.ReportMetric(float64(decode.Microseconds())/1000/float64(b.N), "grafana-decode-cpu-ms/op")
				b.ReportMetric(float64(size), "resp-bytes/op")
				b.ReportMetric(float64(rows), "rows/op")
			})
		}
	}
}

// decodeFrames decodes a response's frames as Grafana does, by the format
// the response declares (SDK backend/convert_from_protobuf.go).
func decodeFrames(format pluginv2.DataFrameFormat, frames [][]byte) (data.Frames, error) {
	if format == pluginv2.DataFrameFormat_ARROW {
		return data.UnmarshalArrowFrames(frames)
	}
	out := make(data.Frames, len(frames))
	for i, b := range frames {
		out[i] = &data.Frame{}
		if err := json.Unmarshal(b, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// selfCPU is this process's CPU time (user + system, all threads).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
