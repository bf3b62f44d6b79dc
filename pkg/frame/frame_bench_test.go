//go:build unix

// This file is longer than the others because it is one benchmark: its
// inputs, and the four encoders it compares in one run, belong together.

package frame_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

// The benchmarks of this file compare, in one run, Quiver's frame encoder
// with the ways a plugin can write the same frames today and with the cost
// of the compression alone:
//
//	enc=quiver   frame.Encoder.Append into a reused buffer, one encoder
//	             reused for every frame (MinSavings 0.1, the settings default)
//	enc=sdk      data.Frame.MarshalArrow (uncompressed)
//	enc=arrowgo  ipc.NewFileWriter with WithZstd or WithLZ4, one writer per
//	             frame, writing the frame's record (converted once, outside
//	             the timed loop, with data.FrameToArrowTable)
//	enc=floor    one reused encoder compressing the frame's body buffers (the
//	             column bytes, gathered once outside the timed loop) with
//	             klauspost zstd EncodeAll or a pierrec lz4 frame writer, built
//	             with the options pkg/codec uses; setup checks that it writes
//	             the very bytes pkg/codec writes. It compresses every buffer
//	             whole, whereas pkg/arrowipc may judge a long fixed-width
//	             buffer by compressing a prefix first
//
// One op is one frame, or one whole response for resp1000x256. Besides
// ns/op, B/op and allocs/op, every benchmark reports the process CPU time
// per op as cpu-ns/op (see measure) and the bytes it wrote per op as
// wire-B/op: for enc=floor these are the compressed body buffers only,
// without any Arrow framing.
//
// Names are slash-separated key=value pairs for benchstat, e.g.
// BenchmarkEncode/frame=ts256/enc=quiver/codec=zstd/level=3.

// measure runs op in the benchmark loop with allocations reported, and
// reports the CPU time the whole process spent per op (user + system, all
// threads, so the garbage collector's work counts) as cpu-ns/op. On a
// shared machine ns/op also counts the time other processes held the CPU;
// cpu-ns/op does not.
func measure(b *testing.B, op func()) {
	b.ReportAllocs()
	n := 0
	c0 := processCPU(b)
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(processCPU(b)-c0)/float64(n), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMinSavings is the plugin's default minSavings setting.
const benchMinSavings = 0.1

// benchInput is one benchmark input: a frame, or the frames of a response.
type benchInput struct {
	name   string
	frames []*data.Frame
}

var benchInputs = sync.OnceValue(func() []benchInput {
	resp := make([]*data.Frame, 1000)
	for i := range resp {
		resp[i] = benchSeries(256, uint64(i+1), i, false)
	}
	return []benchInput{
		{"ts256", []*data.Frame{benchSeries(256, 1, 0, false)}},
		{"ts4096", []*data.Frame{benchSeries(4096, 2, 0, false)}},
		{"ts65536", []*data.Frame{benchSeries(65536, 3, 0, false)}},
		{"ts4096null", []*data.Frame{benchSeries(4096, 4, 0, true)}},
		{"logs4096", []*data.Frame{benchLogs(4096, 5)}},
		{"resp1000x256", resp},
	}
})

var (
	benchRegions = []string{"eu-west-1", "us-east-1", "us-west-2", "ap-southeast-1"}
	benchJobs    = []string{"node", "api", "ingester", "querier", "frontend"}
)

// benchSeries is a time series as a data source returns it: a time field at
// 1 s steps and a float64 random walk labelled with host, region and job.
// With nullable, the values are *float64 and about 5% of them are nil.
func benchSeries(rows int, seed uint64, series int, nullable bool) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x7173))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ts := make([]time.Time, rows)
	vs := make([]float64, rows)
	v := 50 + 50*r.Float64()
	for i := range ts {
		ts[i] = t0.Add(time.Duration(i) * time.Second)
		v += r.NormFloat64()
		vs[i] = v
	}
	labels := data.Labels{
		"host":   fmt.Sprintf("host-%04d.prod.example.net", series),
		"region": benchRegions[series%len(benchRegions)],
		"job":    benchJobs[series%len(benchJobs)],
	}
	var value *data.Field
	if nullable {
		nv := make([]*float64, rows)
		for i := range vs {
			if r.Float64() >= 0.05 {
				nv[i] = &vs[i]
			}
		}
		value = data.NewField("value", labels, nv)
	} else {
		value = data.NewField("value", labels, vs)
	}
	f := data.NewFrame("node_cpu_seconds_total", data.NewField("time", nil, ts), value)
	f.RefID = "A"
	return f
}

// benchLogs is a logs frame: time, a log line of about 120 bytes in the
// logfmt style services write, and its level.
func benchLogs(rows int, seed uint64) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x1095))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ts := make([]time.Time, rows)
	lines := make([]string, rows)
	levels := make([]string, rows)
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
	f := data.NewFrame("logs",
		data.NewField("time", nil, ts),
		data.NewField("line", nil, lines),
		data.NewField("level", nil, levels))
	f.RefID = "A"
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeLogs}
	return f
}

// benchCodec is one codec row of the benchmark: its name parts and the
// codec pkg/codec builds for it.
type benchCodec struct {
	kind  string
	level int
	c     codec.Codec
}

func (bc benchCodec) name() string {
	if bc.kind == "none" {
		return "codec=none"
	}
	return fmt.Sprintf("codec=%s/level=%d", bc.kind, bc.level)
}

var quiverCodecs = []benchCodec{
	{"none", 0, codec.MustNew(codec.None, 0)},
	{"lz4", 0, codec.MustNew(codec.LZ4, 0)},
	{"zstd", 1, codec.MustNew(codec.Zstd, 1)},
	{"zstd", 3, codec.MustNew(codec.Zstd, 3)},
	{"zstd", 7, codec.MustNew(codec.Zstd, 7)},
	{"zstd", 19, codec.MustNew(codec.Zstd, 19)},
}

func BenchmarkEncode(b *testing.B) {
	for _, in := range benchInputs() {
		prefix := "frame=" + in.name + "/"
		for _, bc := range quiverCodecs {
			b.Run(prefix+"enc=quiver/"+bc.name(), func(b *testing.B) { benchQuiver(b, in.frames, bc.c) })
		}
		b.Run(prefix+"enc=sdk/codec=none", func(b *testing.B) { benchSDK(b, in.frames) })
		b.Run(prefix+"enc=arrowgo/codec=zstd", func(b *testing.B) { benchArrowGo(b, in.frames, ipc.WithZstd()) })
		b.Run(prefix+"enc=arrowgo/codec=lz4", func(b *testing.B) { benchArrowGo(b, in.frames, ipc.WithLZ4()) })
		for _, bc := range quiverCodecs {
			if bc.kind == "none" {
				continue
			}
			b.Run(prefix+"enc=floor/"+bc.name(), func(b *testing.B) { benchFloor(b, in.frames, bc) })
		}
	}
}

// benchQuiver appends every frame of frames, one after another, to one
// reused buffer with one reused encoder, as the plugin builds a response.
func benchQuiver(b *testing.B, frames []*data.Frame, c codec.Codec) {
	e, err := frame.NewEncoder(arrowipc.Options{Codec: c, MinSavings: benchMinSavings})
	if err != nil {
		b.Fatal(err)
	}
	// The first pass warms the encoder's scratch and the codec's pool, and
	// its output is checked: a benchmark of wrong bytes measures nothing.
	var buf []byte
	start := 0
	for _, f := range frames {
		if buf, _, err = e.Append(buf, frame.Input{Frame: f}, nil); err != nil {
			b.Fatal(err)
		}
		got, err := data.UnmarshalArrowFrame(buf[start:])
		if err != nil {
			b.Fatal(err)
		}
		if err := frametest.Equal(f, got); err != nil {
			b.Fatal(err)
		}
		start = len(buf)
	}
	measure(b, func() {
		buf = buf[:0]
		for _, f := range frames {
			if buf, _, err = e.Append(buf, frame.Input{Frame: f}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(len(buf)), "wire-B/op")
}

// benchSDK writes every frame with the SDK's MarshalArrow.
func benchSDK(b *testing.B, frames []*data.Frame) {
	wire := 0
	measure(b, func() {
		wire = 0
		for _, f := range frames {
			out, err := f.MarshalArrow()
			if err != nil {
				b.Fatal(err)
			}
			wire += len(out)
		}
	})
	b.ReportMetric(float64(wire), "wire-B/op")
}

// toRecord converts f once with the SDK's own conversion, as a plugin that
// writes frames with arrow-go does.
func toRecord(b *testing.B, f *data.Frame) arrow.RecordBatch {
	b.Helper()
	tbl, err := data.FrameToArrowTable(f)
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	if !tr.Next() {
		b.Fatal("table has no record")
	}
	rec := tr.RecordBatch()
	rec.Retain()
	if tr.Next() {
		b.Fatal("table has more than one record")
	}
	return rec
}

// benchArrowGo writes every frame's record with a new arrow-go file writer
// per frame, as a plugin using arrow-go's compression does today, into one
// reused buffer per response.
func benchArrowGo(b *testing.B, frames []*data.Frame, opt ipc.Option) {
	recs := make([]arrow.RecordBatch, len(frames))
	for i, f := range frames {
		recs[i] = toRecord(b, f)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var buf bytes.Buffer
	write := func() {
		buf.Reset()
		for _, rec := range recs {
			w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(rec.Schema()), opt)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	write()
	measure(b, write)
	b.ReportMetric(float64(buf.Len()), "wire-B/op")
}

// bodies returns the body buffers of rec that the frame encoder compresses,
// at their exact lengths: the validity bitmap of a column with nulls, then
// its values (or offsets and bytes for strings).
func bodies(b *testing.B, rec arrow.RecordBatch) [][]byte {
	b.Helper()
	var out [][]byte
	n := int(rec.NumRows())
	for _, col := range rec.Columns() {
		d := col.Data()
		if d.Offset() != 0 {
			b.Fatal("sliced column")
		}
		bufs := d.Buffers()
		if col.NullN() > 0 {
			out = append(out, bufs[0].Bytes()[:(n+7)/8])
		}
		switch dt := col.DataType().(type) {
		case arrow.FixedWidthDataType:
			out = append(out, bufs[1].Bytes()[:n*dt.BitWidth()/8])
		case *arrow.StringType, *arrow.BinaryType:
			offsets := bufs[1].Bytes()[:4*(n+1)]
			end := int(uint32(offsets[4*n]) | uint32(offsets[4*n+1])<<8 | uint32(offsets[4*n+2])<<16 | uint32(offsets[4*n+3])<<24)
			out = append(out, offsets, bufs[2].Bytes()[:end])
		default:
			b.Fatalf("column type %s", col.DataType())
		}
	}
	return out
}

// floorEncoder compresses one buffer, appending to dst, the way pkg/codec
// does but with the compression library called directly.
type floorEncoder func(dst, src []byte) []byte

// newFloorEncoder builds a klauspost zstd encoder or a pierrec lz4 frame
// writer with the options pkg/codec uses (pkg/codec/zstd.go newZstdEncoder,
// pkg/codec/lz4.go newLZ4Encoder).
func newFloorEncoder(b *testing.B, bc benchCodec) floorEncoder {
	b.Helper()
	switch bc.kind {
	case "zstd":
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(bc.level)),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(128<<10),
			zstd.WithEncoderCRC(false),
			zstd.WithLowerEncoderMem(true))
		if err != nil {
			b.Fatal(err)
		}
		return func(dst, src []byte) []byte { return enc.EncodeAll(src, dst) }
	case "lz4":
		if bc.level != 0 {
			b.Fatalf("lz4 level %d: the floor is built for level 0 only", bc.level)
		}
		aw := &appendWriter{}
		w := lz4.NewWriter(aw)
		if err := w.Apply(
			lz4.CompressionLevelOption(lz4.Fast),
			lz4.ConcurrencyOption(1),
			lz4.BlockSizeOption(lz4.Block256Kb),
			lz4.ChecksumOption(false)); err != nil {
			b.Fatal(err)
		}
		return func(dst, src []byte) []byte {
			aw.b = dst
			w.Reset(aw)
			if _, err := w.Write(src); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			dst, aw.b = aw.b, nil
			return dst
		}
	}
	b.Fatalf("no floor for codec %s", bc.kind)
	return nil
}

type appendWriter struct{ b []byte }

var _ io.Writer = (*appendWriter)(nil)

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// benchFloor compresses the body buffers of every frame, one after another,
// into one reused buffer with one reused encoder.
func benchFloor(b *testing.B, frames []*data.Frame, bc benchCodec) {
	var bufs [][]byte
	for _, f := range frames {
		rec := toRecord(b, f)
		bufs = append(bufs, bodies(b, rec)...)
		defer rec.Release()
	}
	enc := newFloorEncoder(b, bc)
	// The floor's encoder must be pkg/codec's: the same bytes for every buffer.
	ce := bc.c.Encoder()
	for i, src := range bufs {
		if got, want := enc(nil, src), ce.Encode(nil, src); !bytes.Equal(got, want) {
			b.Fatalf("buffer %d: floor encoder writes %d bytes, pkg/codec %d: options differ", i, len(got), len(want))
		}
	}
	ce.Close()
	var out []byte
	compress := func() {
		out = out[:0]
		for _, src := range bufs {
			out = enc(out, src)
		}
	}
	compress()
	measure(b, compress)
	b.ReportMetric(float64(len(out)), "wire-B/op")
}
