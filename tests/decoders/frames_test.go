package decoders_test

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/demo"
)

var write = flag.String("write", "", "TestWriteFrames writes the frame files into this directory (default: a temporary one)")

// shape is one kind of response the benchmark decodes: the frames of one
// query, as the demo source produces them.
type shape struct {
	name   string
	frames func(t testing.TB) []*data.Frame
}

var shapes = []shape{
	// one series of 256 points at a 1 s step: the timestamps compress
	{"ts256", func(t testing.TB) []*data.Frame { return demoSeries(t, 1, 256, time.Second) }},
	// one series of 1080 points at a 20 s step (6 h)
	{"ts1080s20", func(t testing.TB) []*data.Frame { return demoSeries(t, 1, 1080, 20*time.Second) }},
	// the query: 200 series × 1080 points at a 20 s step
	{"q200x1080s20", func(t testing.TB) []*data.Frame { return demoSeries(t, 200, 1080, 20*time.Second) }},
	// 4096 log lines (text compresses 3–6×)
	{"logs4096", func(testing.TB) []*data.Frame { return []*data.Frame{logLines(4096, 5)} }},
}

// setting is one codec setting the frames are written with.
type setting struct {
	name string
	opts arrowipc.Options
}

func settings() []setting {
	out := []setting{
		{"none", arrowipc.Options{Codec: codec.MustNew(codec.None, 0)}},
		{"lz4", arrowipc.Options{Codec: codec.MustNew(codec.LZ4, 0), MinSavings: 0.1}},
		{"zstd3", arrowipc.Options{Codec: codec.MustNew(codec.Zstd, 3), MinSavings: 0.1}},
	}
	for _, d := range codec.Decoders {
		out = append(out, setting{"auto-" + d.Name, arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), MinSavings: 0.1, Decoder: d}})
	}
	return out
}

// demoSeries is what the demo source answers to a random walk of series
// series × points points at step.
func demoSeries(t testing.TB, series, points int, step time.Duration) []*data.Frame {
	t.Helper()
	to := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	from := to.Add(-time.Duration(points-1) * step)
	var c collect
	q := source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"scenario":"random_walk","seriesCount":%d}`, series)),
		From: from, To: to, Interval: step, MaxDataPoints: int64(points)}
	if err := demo.New().Query(context.Background(), q, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.frames) != series || c.frames[0].Rows() != points {
		t.Fatalf("demo answered %d frames of %d rows, not %d of %d", len(c.frames), c.frames[0].Rows(), series, points)
	}
	return c.frames
}

type collect struct{ frames []*data.Frame }

func (c *collect) Frame(ctx context.Context, f *data.Frame) error {
	c.frames = append(c.frames, f)
	return nil
}
func (c *collect) Record(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Release()
	return fmt.Errorf("decoders: the demo source handed over a record")
}

// logLines is a logs frame of rows lines of about 120 bytes in the logfmt
// style (the frames of pkg/frame's BenchmarkChoice).
func logLines(rows int, seed uint64) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x1095))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ts, lines, levels := make([]time.Time, rows), make([]string, rows), make([]string, rows)
	methods := []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	paths := []string{"/api/v1/query_range", "/api/v1/query", "/api/v1/labels", "/api/v1/series", "/api/v1/push", "/ready", "/metrics"}
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	components := []string{"ingester", "querier", "distributor", "compactor", "store-gateway"}
	statuses := []int{200, 200, 200, 200, 204, 400, 404, 499, 500, 503}
	at := t0
	var sb strings.Builder
	for i := range rows {
		at = at.Add(time.Duration(r.IntN(2000)) * time.Millisecond)
		ts[i] = at
		level := "info"
		switch p := r.IntN(100); {
		case p < 15:
			level = "debug"
		case p < 25:
			level = "warn"
		case p < 30:
			level = "error"
		}
		levels[i] = level
		sb.Reset()
		switch r.IntN(4) {
		case 0, 1:
			fmt.Fprintf(&sb, `level=%s method=%s path=%s status=%d duration=%dms user=%s traceID=%016x`,
				level, methods[r.IntN(len(methods))], paths[r.IntN(len(paths))], statuses[r.IntN(len(statuses))],
				r.IntN(3000), users[r.IntN(len(users))], r.Uint64())
		case 2:
			fmt.Fprintf(&sb, `level=%s component=%s msg="flushed chunks" chunks=%d bytes=%d series=%d tenant=tenant-%02d`,
				level, components[r.IntN(len(components))], r.IntN(500), r.IntN(1<<24), r.IntN(20000), r.IntN(40))
		default:
			fmt.Fprintf(&sb, `level=%s caller=pool.go:%d component=%s msg="connection reset by peer" addr=10.%d.%d.%d:9095`,
				level, 100+r.IntN(300), components[r.IntN(len(components))], r.IntN(256), r.IntN(256), r.IntN(256))
		}
		lines[i] = sb.String()
	}
	f := data.NewFrame("logs", data.NewField("time", nil, ts), data.NewField("line", nil, lines), data.NewField("level", nil, levels))
	f.RefID = "A"
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeLogs}
	return f
}

// written is what encoding one shape with one setting gave.
type written struct {
	frames   [][]byte
	byCodec  [codec.Auto]int // frames by the codec their batch declares
	wire     int             // bytes of all frames
	packed   int             // raw bytes of the buffers stored compressed
	encodeNs time.Duration   // wall time of encoding them (one pass, noisy)
}

// encode writes frames as a data source instance does: through one
// long-lived encoder, whose skip history carries from frame to frame.
// A first pass warms the history (the instance's earlier queries); the
// second is kept.
func encode(t testing.TB, frames []*data.Frame, o arrowipc.Options) written {
	t.Helper()
	e, err := frame.NewEncoder(o)
	if err != nil {
		t.Fatal(err)
	}
	var w written
	for pass := range 2 {
		w = written{}
		start := time.Now()
		for _, f := range frames {
			b, st, err := e.Append(nil, frame.Input{Frame: f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.frames = append(w.frames, b)
			w.byCodec[st.Codec]++
			w.wire += len(b)
			for _, pb := range st.PerBuffer {
				if pb.Outcome == arrowipc.BufferCompressed {
					w.packed += pb.RawBytes
				}
			}
		}
		w.encodeNs = time.Since(start)
		_ = pass
	}
	return w
}

// fileName is the file of one shape at one setting.
func fileName(shape, setting string) string { return shape + "." + setting + ".frames" }

// writeFile writes frames as a sequence of (uint32 little-endian length,
// Arrow IPC file) pairs, the format the decode benchmarks read.
func writeFile(path string, frames [][]byte) error {
	var out []byte
	for _, f := range frames {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return os.WriteFile(path, out, 0o644)
}

// TestWriteFrames writes every shape at every setting into -write's
// directory (a temporary one without it) with a manifest of what each file
// holds, and checks that every frame decodes with the SDK to the input's
// rows, and that each file declares the codecs its setting allows.
func TestWriteFrames(t *testing.T) {
	dir := *write
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var manifest strings.Builder
	fmt.Fprintf(&manifest, "# file frames wire-bytes packed-raw-bytes none lz4 zstd\n")
	for _, sh := range shapes {
		frames := sh.frames(t)
		for _, s := range settings() {
			w := encode(t, frames, s.opts)
			name := fileName(sh.name, s.name)
			if err := writeFile(filepath.Join(dir, name), w.frames); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&manifest, "%s %d %d %d %d %d %d\n", name, len(w.frames), w.wire, w.packed,
				w.byCodec[codec.None], w.byCodec[codec.LZ4], w.byCodec[codec.Zstd])
			got, err := readFrames(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range got {
				f, err := data.UnmarshalArrowFrame(b)
				if err != nil {
					t.Fatalf("%s frame %d: %v", name, i, err)
				}
				if f.Rows() != frames[i].Rows() {
					t.Fatalf("%s frame %d: %d rows, want %d", name, i, f.Rows(), frames[i].Rows())
				}
			}
			switch k := s.opts.Codec.Kind(); k {
			case codec.None, codec.LZ4, codec.Zstd:
				other := len(frames) - w.byCodec[codec.None]
				if k != codec.None {
					other -= w.byCodec[k]
				}
				if other != 0 {
					t.Errorf("%s: %d frames declare a codec other than none and %s", name, other, k)
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.txt"), []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + manifest.String())
}

// TestBenchCopiesAgree checks that the old-decoder module benchmarks the
// same way as this one: its decode_bench_test.go is this module's copy.
func TestBenchCopiesAgree(t *testing.T) {
	a, err := os.ReadFile("decode_bench_test.go")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("old", "decode_bench_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Error("tests/decoders/decode_bench_test.go and old/decode_bench_test.go differ: copy one onto the other")
	}
}

// TestDefaultPerDecoder pins what the default (codec auto preferring cpu,
// minSavings 0.1) sends for each decoder generation: log lines as zstd 3
// for both, the same bytes as zstd 3; a 256-point series at a 1 s step
// uncompressed for the per-batch decoder of every released Grafana and as
// zstd for the pooled one, whose setup is cheap; the 1080-point series at
// a 20 s step, alone and as the query of 200, uncompressed for the
// per-batch decoder (its 4240 bytes saved, 84.8 µs at 20 ns a byte, pay
// for that decoder's ~76 µs but not for it and the zstd trial of the next
// frames, ~43 µs, which sending it uncompressed lets the skip's history
// save) and as zstd for the pooled one (~21 µs of margin by the model).
func TestDefaultPerDecoder(t *testing.T) {
	logs := []*data.Frame{logLines(4096, 5)}
	zstd3 := encode(t, logs, arrowipc.Options{Codec: codec.MustNew(codec.Zstd, 3), MinSavings: 0.1})
	for _, tc := range []struct {
		decoder          string
		ts256, ts1080s20 codec.Kind
	}{
		{"per-batch", codec.None, codec.None},
		{"pooled", codec.Zstd, codec.Zstd},
	} {
		o := arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), MinSavings: 0.1, Decoder: codec.ParseDecoder(tc.decoder)}
		if w := encode(t, logs, o); w.byCodec[codec.Zstd] != 1 || w.wire != zstd3.wire {
			t.Errorf("%s: logs4096 sent as %v, %d bytes; zstd 3 writes %d", tc.decoder, w.byCodec, w.wire, zstd3.wire)
		}
		for _, sh := range []struct {
			name   string
			frames []*data.Frame
			want   codec.Kind
		}{
			{"ts256", demoSeries(t, 1, 256, time.Second), tc.ts256},
			{"ts1080s20", demoSeries(t, 1, 1080, 20*time.Second), tc.ts1080s20},
			{"q200x1080s20", demoSeries(t, 200, 1080, 20*time.Second), tc.ts1080s20},
		} {
			if w := encode(t, sh.frames, o); w.byCodec[sh.want] != len(sh.frames) {
				t.Errorf("%s: %s sent as %v (none, lz4, zstd), want %s", tc.decoder, sh.name, w.byCodec, sh.want)
			}
		}
	}
}
