//go:build unix

package frame_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

// BenchmarkUpstreamWriter compares, in one run and on the same records,
// Quiver's writer (frame.Encoder on a Record, one encoder reused) with
// arrow-go's ipc.FileWriter as released with pooled zstd encoders (one
// writer per frame, WithZstdLevel, WithMinSpaceSavings at the settings'
// default), codec by codec, and what Grafana pays to read each:
//
//	side=plugin   writing every frame of the input (one op: a frame, or
//	              the 1000 frames of resp1000x256)
//	side=grafana  data.UnmarshalArrowFrame of every frame written
//
// Both writers are fed the record the SDK's own conversion builds
// (data.FrameToArrowTable), once, outside the timed loop; both outputs are
// checked to decode to the input frame first. Quiver's auto codec has no
// arrow-go counterpart: it chooses a codec per frame.
func BenchmarkUpstreamWriter(b *testing.B) {
	type row struct {
		name string
		c    codec.Codec  // Quiver's codec
		opts []ipc.Option // arrow-go's, nil for no arrow-go row
	}
	rows := []row{
		{name: "codec=auto", c: codec.MustNew(codec.Auto, 0)},
		{name: "codec=none", c: codec.MustNew(codec.None, 0), opts: []ipc.Option{}},
		{name: "codec=lz4", c: codec.MustNew(codec.LZ4, 0), opts: []ipc.Option{ipc.WithLZ4(), ipc.WithMinSpaceSavings(benchMinSavings)}},
	}
	for _, l := range []int{1, 3, 7} {
		rows = append(rows, row{name: fmt.Sprintf("codec=zstd/level=%d", l), c: codec.MustNew(codec.Zstd, l),
			opts: []ipc.Option{ipc.WithZstdLevel(l), ipc.WithMinSpaceSavings(benchMinSavings)}})
	}
	for _, in := range benchInputs() {
		if in.name == "ts65536" || in.name == "ts4096null" {
			continue // BenchmarkEncode has them; these four cover series, text and a response
		}
		recs := make([]arrow.RecordBatch, len(in.frames))
		for i, f := range in.frames {
			recs[i] = toRecord(b, f)
		}
		for _, r := range rows {
			quiver := upstreamQuiver(b, in.frames, recs, r.c)
			b.Run("frame="+in.name+"/side=plugin/enc=quiver/"+r.name, func(b *testing.B) { measureWrite(b, quiver) })
			b.Run("frame="+in.name+"/side=grafana/enc=quiver/"+r.name, func(b *testing.B) { measureDecode(b, quiver) })
			if r.opts == nil {
				continue
			}
			upstream := upstreamArrowGo(b, in.frames, recs, r.opts)
			b.Run("frame="+in.name+"/side=plugin/enc=arrowgo/"+r.name, func(b *testing.B) { measureWrite(b, upstream) })
			b.Run("frame="+in.name+"/side=grafana/enc=arrowgo/"+r.name, func(b *testing.B) { measureDecode(b, upstream) })
		}
		for _, r := range recs {
			r.Release()
		}
	}
}

// writer writes every frame of one input; files are the last write's
// frames, each a complete Arrow IPC file.
type writer struct {
	write func()
	files func() [][]byte
}

// upstreamQuiver writes recs with one reused frame.Encoder into one reused
// buffer, as the plugin writes a response.
func upstreamQuiver(b *testing.B, frames []*data.Frame, recs []arrow.RecordBatch, c codec.Codec) writer {
	e, err := frame.NewEncoder(arrowipc.Options{Codec: c, MinSavings: benchMinSavings})
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	ends := make([]int, len(recs))
	w := writer{
		write: func() {
			buf = buf[:0]
			for i, rec := range recs {
				if buf, _, err = e.Append(buf, frame.Input{Record: rec}, nil); err != nil {
					b.Fatal(err)
				}
				ends[i] = len(buf)
			}
		},
		files: func() [][]byte { return split(buf, ends) },
	}
	checkWriter(b, w, frames)
	return w
}

// upstreamArrowGo writes recs with one arrow-go FileWriter per frame into
// one reused buffer.
func upstreamArrowGo(b *testing.B, frames []*data.Frame, recs []arrow.RecordBatch, opts []ipc.Option) writer {
	var buf bytes.Buffer
	ends := make([]int, len(recs))
	w := writer{
		write: func() {
			buf.Reset()
			for i, rec := range recs {
				fw, err := ipc.NewFileWriter(&buf, append([]ipc.Option{ipc.WithSchema(rec.Schema())}, opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				if err := fw.Write(rec); err != nil {
					b.Fatal(err)
				}
				if err := fw.Close(); err != nil {
					b.Fatal(err)
				}
				ends[i] = buf.Len()
			}
		},
		files: func() [][]byte { return split(buf.Bytes(), ends) },
	}
	checkWriter(b, w, frames)
	return w
}

func split(buf []byte, ends []int) [][]byte {
	out := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		out[i], start = buf[start:end], end
	}
	return out
}

// checkWriter writes once and checks that every file decodes through the
// SDK to its frame: a benchmark of wrong bytes measures nothing.
func checkWriter(b *testing.B, w writer, frames []*data.Frame) {
	b.Helper()
	w.write()
	for i, f := range w.files() {
		got, err := data.UnmarshalArrowFrame(f)
		if err != nil {
			b.Fatalf("frame %d: %v", i, err)
		}
		if err := frametest.Equal(frames[i], got); err != nil {
			b.Fatalf("frame %d: %v", i, err)
		}
	}
}

func measureWrite(b *testing.B, w writer) {
	measure(b, w.write)
	b.ReportMetric(float64(wireLen(w.files())), "wire-B/op")
}

// measureDecode decodes the frames w wrote last with the SDK's decoder, as
// Grafana reads a response.
func measureDecode(b *testing.B, w writer) {
	files := w.files()
	measure(b, func() {
		for _, f := range files {
			if _, err := data.UnmarshalArrowFrame(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(wireLen(files)), "wire-B/op")
}

func wireLen(files [][]byte) int {
	n := 0
	for _, f := range files {
		n += len(f)
	}
	return n
}
