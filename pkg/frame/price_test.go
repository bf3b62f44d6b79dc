//go:build unix

package frame_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
)

// The byte price of the default preference (cpu) sends log frames of 1000
// lines or more as zstd, with a margin of at least 5 % over their
// break-even price (the lowest price at which codec auto sends the frame
// as zstd), while a series none of whose buffers compresses goes
// uncompressed at any price up to the bytes preference's. With -v it lists
// every frame's break-even price, the table in docs/compression.md. This
// holds for every generation of Grafana's decoder, and a frame's break-even
// is never lower for an older, more expensive, decoder than for a newer.
func TestDefaultPriceSendsLogsAsZstd(t *testing.T) {
	lines := make([]string, 64)
	for i := range lines {
		lines[i] = fmt.Sprintf("level=info msg=\"request served\" path=/api/v1/query status=200 took=%dms", i%7)
	}
	short := data.NewFrame("logs", data.NewField("body", nil, lines))
	cpu, bytes := codec.Preferences[0].BytePrice, codec.Preferences[1].BytePrice
	for _, tc := range []struct {
		name string
		f    *data.Frame
		// max is the highest break-even price the frame may have; 0: the
		// frame must not go as zstd up to the bytes preference's price.
		max float64
	}{
		{"logs8192", benchLogs(8192, 5), cpu / 1.05},
		{"logs4096", benchLogs(4096, 5), cpu / 1.05},
		{"logs2000", benchLogs(2000, 5), cpu / 1.05},
		{"logs1000", benchLogs(1000, 5), cpu / 1.05},
		{"logs500", benchLogs(500, 5), bytes},
		{"logs300", benchLogs(300, 5), bytes},
		{"logs64short", short, 2 * bytes},
		{"ts1000s1", stepSeries(1000, time.Second, 1, false), bytes},
		{"ts1000s20", stepSeries(1000, 20*time.Second, 2, false), bytes},
		{"ts500s20", stepSeries(500, 20*time.Second, 2, false), bytes},
		// ~1.3 KB saved: under the bytes preference it goes as zstd to
		// the pooled decoder, but not to the per-batch one once the zstd
		// trial of the next frames counts (break-even 53 ns a byte).
		{"ts300s1", stepSeries(300, time.Second, 1, false), 1.2 * bytes},
		{"ts1000s60", stepSeries(1000, 60*time.Second, 3, false), 0},
		{"ts256s84", stepSeries(256, 84*time.Second, 4, false), 0},
		{"table1000", benchTable(1000, 6), bytes},
	} {
		limit := tc.max
		if limit == 0 {
			limit = bytes
		}
		older := 2 * limit
		for _, d := range codec.Decoders {
			p, ok := breakEven(t, tc.f, d, 2*limit)
			switch {
			case tc.max == 0 && p <= bytes:
				t.Errorf("%s, decoder %s: sent as zstd from %.0f ns a byte; it does not compress", tc.name, d.Name, p)
			case tc.max > 0 && (!ok || p > tc.max):
				t.Errorf("%s, decoder %s: break-even %.0f ns a byte (found: %v), want at most %.1f", tc.name, d.Name, p, ok, tc.max)
			case p > older:
				t.Errorf("%s, decoder %s: break-even %.0f ns a byte, above an older decoder's %.0f", tc.name, d.Name, p, older)
			}
			older = p
			if ok {
				t.Logf("%-12s %-9s break-even %3.0f ns a byte", tc.name, d.Name, p)
			} else {
				t.Logf("%-12s %-9s not sent as zstd up to %.0f ns a byte", tc.name, d.Name, 2*limit)
			}
		}
	}
}

// breakEven returns the lowest whole byte price up to top at which codec
// auto sends f as zstd for a Grafana whose decoder is d (in the steady
// state of an encoder that wrote it before), and whether there is one.
// Auto's choice moves towards zstd as the price grows, so a bisection finds
// it.
func breakEven(t *testing.T, f *data.Frame, d *codec.Decoder, top float64) (float64, bool) {
	t.Helper()
	zstdAt := func(price float64) bool {
		e, err := frame.NewEncoder(arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), MinSavings: 0.1,
			Preference: codec.Preference{Name: "test", BytePrice: price}, Decoder: d})
		if err != nil {
			t.Fatal(err)
		}
		var st arrowipc.BodyStats
		for range 2 {
			if _, st, err = e.Append(nil, frame.Input{Frame: f}, nil); err != nil {
				t.Fatal(err)
			}
		}
		return st.Codec == codec.Zstd
	}
	lo, hi := 0.0, top // zstdAt(lo) is false, the answer is in (lo, hi]
	if !zstdAt(hi) {
		return hi, false
	}
	for hi-lo > 1 {
		mid := float64(int((lo + hi) / 2))
		if zstdAt(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}
