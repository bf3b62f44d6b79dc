//go:build unix

package frame_test

import (
	"fmt"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
)

// BenchmarkDecode measures what Grafana pays to read our frames: the SDK's
// data.UnmarshalArrowFrame of one frame, for each codec and a spread of
// minSavings (the setting that stores a buffer raw unless compression saves
// that fraction, sparing the reader its decompression). Its numbers are
// behind the default minSavings (docs/journal/benchmarks.md).
func BenchmarkDecode(b *testing.B) {
	cases := []struct {
		c          codec.Codec
		minSavings []float64
	}{
		{codec.MustNew(codec.None, 0), []float64{0}},
		{codec.MustNew(codec.LZ4, 0), []float64{0, 0.1, 0.3}},
		{codec.MustNew(codec.Zstd, 3), []float64{0, 0.1, 0.3}},
	}
	for _, in := range benchInputs() {
		if len(in.frames) != 1 || in.name == "ts65536" {
			continue
		}
		for _, tc := range cases {
			for _, ms := range tc.minSavings {
				name := fmt.Sprintf("frame=%s/codec=%s/minSavings=%v", in.name, tc.c.Kind(), ms)
				if tc.c.Kind() != codec.None {
					name = fmt.Sprintf("frame=%s/codec=%s/level=%d/minSavings=%v", in.name, tc.c.Kind(), tc.c.Level(), ms)
				}
				b.Run(name, func(b *testing.B) {
					e, err := frame.NewEncoder(arrowipc.Options{Codec: tc.c, MinSavings: ms})
					if err != nil {
						b.Fatal(err)
					}
					wire, _, err := e.Append(nil, frame.Input{Frame: in.frames[0]}, nil)
					if err != nil {
						b.Fatal(err)
					}
					measure(b, func() {
						if _, err := data.UnmarshalArrowFrame(wire); err != nil {
							b.Fatal(err)
						}
					})
					b.ReportMetric(float64(len(wire)), "wire-B/op")
				})
			}
		}
	}
}
