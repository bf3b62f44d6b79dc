package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/pkg/harness"
)

var (
	refOnce sync.Once
	refPlug *harness.Plugin
	refErr  error
)

// reference starts the plugin that serves the same demo frames through the
// SDK's standard path (tests/e2e/reference).
func reference(b *testing.B) *harness.Plugin {
	refOnce.Do(func() {
		wd, _ := os.Getwd()
		root, err := harness.RepoRoot(wd)
		if err != nil {
			refErr = err
			return
		}
		bin := filepath.Join(b.TempDir(), "gpx_reference")
		// b.TempDir is removed when this benchmark ends; the process keeps
		// its open executable.
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

// BenchmarkEndToEnd: one query of 1000 series × 256 points through the
// built binaries, as Grafana sends it. Reports the plugin process's CPU time
// per query (read from /proc; the client's own work is not counted) and the
// response's size on the wire, for Quiver at several codecs and for the
// reference plugin (SDK MarshalArrow) in the same run.
//
//	go test -tags arrow_json_stdlib -run '^$' -bench EndToEnd -benchtime 20x -count 6 ./tests/e2e
func BenchmarkEndToEnd(b *testing.B) {
	to := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	from := to.Add(-255 * time.Minute) // 256 one-minute points
	q := harness.Query("A", `{"scenario":"random_walk","seriesCount":1000,"seed":3}`, from, to, time.Minute, 256)
	cases := []struct {
		name     string
		settings string
	}{
		{"plugin=reference", `{}`},
		{"plugin=quiver/codec=none", `{"codec":"none"}`},
		{"plugin=quiver/codec=lz4/level=0", `{"codec":"lz4","level":0}`},
		{"plugin=quiver/codec=zstd/level=1", `{"codec":"zstd","level":1}`},
		{"plugin=quiver/codec=zstd/level=3", `{"codec":"zstd","level":3}`},
	}
	for i, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p := plug
			if c.name == "plugin=reference" {
				p = reference(b)
			}
			pc := harness.Context(int64(5000+i), c.settings, nil)
			ctx := context.Background()
			check := func() int {
				resp, err := p.QueryData(ctx, pc, pluginv2.DataFrameFormat_ARROW, q)
				if err != nil {
					b.Fatal(err)
				}
				dr := resp.Responses["A"]
				if dr.Error != "" || len(dr.Frames) != 1000 {
					b.Fatalf("%s: error %q, %d frames", c.name, dr.Error, len(dr.Frames))
				}
				return proto.Size(resp)
			}
			// Warm up (instance, pools) and check once that the frames decode.
			resp, err := p.QueryData(ctx, pc, pluginv2.DataFrameFormat_ARROW, q)
			if err != nil {
				b.Fatal(err)
			}
			frames, err := data.UnmarshalArrowFrames(resp.Responses["A"].Frames)
			if err != nil || len(frames) != 1000 || frames[999].Rows() != 256 {
				b.Fatalf("%s: frames do not decode to 1000 × 256: %v", c.name, err)
			}
			cpu0, err := p.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			size := 0
			b.ResetTimer()
			for range b.N {
				size = check()
			}
			b.StopTimer()
			cpu1, err := p.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N), "plugin-cpu-ms/op")
			b.ReportMetric(float64(size), "resp-bytes/op")
		})
	}
}
