//go:build unix

package frame_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
)

// BenchmarkChoice measures, in one run, what each codec setting costs on
// both sides of the wire: op=encode is the plugin's frame.Encoder.Append
// (one encoder reused, as the plugin reuses its pooled encoders, so the
// skip's history is in its steady state), op=decode Grafana's
// data.UnmarshalArrowFrame of those bytes. skip=off tries every buffer
// (arrowipc.Options.AlwaysTry), for the skip's cost and bytes. One op is
// one frame, or the whole response for resp1000x256 and q200x1080s20 (the
// query of 200 series × 1080 points at a 20 s step). Its figures are the
// constants of codec auto's model (docs/compression.md).
func BenchmarkChoice(b *testing.B) {
	settings := []struct {
		name string
		o    arrowipc.Options
	}{
		{"codec=auto/pref=cpu", arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), Preference: codec.Preferences[0]}},
		{"codec=auto/pref=bytes", arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), Preference: codec.Preferences[1]}},
	}
	for _, bc := range quiverCodecs {
		settings = append(settings, struct {
			name string
			o    arrowipc.Options
		}{bc.name(), arrowipc.Options{Codec: bc.c}})
	}
	for _, in := range choiceInputs() {
		for _, s := range settings {
			for _, always := range []bool{false, true} {
				o := s.o
				o.MinSavings, o.AlwaysTry = benchMinSavings, always
				skip := "on"
				if always {
					skip = "off"
				}
				name := fmt.Sprintf("frame=%s/%s/skip=%s", in.name, s.name, skip)
				b.Run(name+"/op=encode", func(b *testing.B) {
					e, err := frame.NewEncoder(o)
					if err != nil {
						b.Fatal(err)
					}
					var buf []byte
					var st arrowipc.BodyStats
					wire, tried, packed := 0, 0, 0
					measure(b, func() {
						wire, tried, packed = 0, 0, 0
						for _, f := range in.frames {
							buf, st, err = e.Append(buf[:0], frame.Input{Frame: f}, nil)
							if err != nil {
								b.Fatal(err)
							}
							wire += len(buf)
							t, p := triedBytes(&st, o.Codec.Kind())
							tried, packed = tried+t, packed+p
						}
					})
					b.ReportMetric(float64(wire), "wire-B/op")
					b.ReportMetric(float64(tried), "tried-B/op")
					b.ReportMetric(float64(packed), "packed-B/op")
				})
				if always {
					continue // the bytes differ by under 1 %: decode once
				}
				b.Run(name+"/op=decode", func(b *testing.B) {
					wires := encodeAll(b, o, in.frames)
					measure(b, func() {
						for _, w := range wires {
							if _, err := data.UnmarshalArrowFrame(w); err != nil {
								b.Fatal(err)
							}
						}
					})
				})
			}
		}
	}
}

// triedBytes returns the raw bytes of the buffers of a batch the codec was
// asked to compress (stored compressed or, having saved too little, raw;
// a fixed-width buffer of 8 KiB or more stored raw may have been judged by
// its first KiB only) and of those stored compressed. Under codec none
// (k, the setting's codec) nothing is tried.
func triedBytes(st *arrowipc.BodyStats, k codec.Kind) (tried, packed int) {
	if k == codec.None {
		return 0, 0
	}
	for _, pb := range st.PerBuffer {
		switch pb.Outcome {
		case arrowipc.BufferCompressed:
			tried += pb.RawBytes
			packed += pb.RawBytes
		case arrowipc.BufferRaw:
			tried += pb.RawBytes
		}
	}
	return tried, packed
}

// encodeAll encodes frames with a fresh encoder after a warm-up pass, so
// that the bytes are those of the encoder's steady state.
func encodeAll(b *testing.B, o arrowipc.Options, frames []*data.Frame) [][]byte {
	e, err := frame.NewEncoder(o)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	for range 2 {
		out = out[:0]
		for _, f := range frames {
			w, _, err := e.Append(nil, frame.Input{Frame: f}, nil)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, w)
		}
	}
	return out
}

var choiceInputs = sync.OnceValue(func() []benchInput {
	resp := make([]*data.Frame, 1000)
	for i := range resp {
		resp[i] = stepSeries(256, 84*time.Second, uint64(i+1), false)
	}
	q200 := make([]*data.Frame, 200)
	for i := range q200 {
		q200[i] = stepSeries(1080, 20*time.Second, uint64(i+1), false)
	}
	return []benchInput{
		{"ts1000s1", []*data.Frame{stepSeries(1000, time.Second, 1, false)}},
		{"ts256s1", []*data.Frame{stepSeries(256, time.Second, 7, false)}},
		{"ts1080s20", []*data.Frame{stepSeries(1080, 20*time.Second, 8, false)}},
		{"ts1000s20", []*data.Frame{stepSeries(1000, 20*time.Second, 2, false)}},
		{"ts1000s60", []*data.Frame{stepSeries(1000, 60*time.Second, 3, false)}},
		{"ts1000null", []*data.Frame{stepSeries(1000, 20*time.Second, 4, true)}},
		{"logs4096", []*data.Frame{benchLogs(4096, 5)}},
		{"table1000", []*data.Frame{benchTable(1000, 6)}},
		{"resp1000x256", resp},
		{"q200x1080s20", q200},
	}
})

// stepSeries is benchSeries at another step.
func stepSeries(rows int, step time.Duration, seed uint64, nullable bool) *data.Frame {
	f := benchSeries(rows, seed, int(seed), nullable)
	ts := make([]time.Time, rows)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range ts {
		ts[i] = t0.Add(time.Duration(i) * step)
	}
	f.Fields[0] = data.NewField("time", nil, ts)
	return f
}

// benchTable is a SQL table answer: a time, a host name of a few hundred,
// a status code, a byte count and a latency.
func benchTable(rows int, seed uint64) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x7ab1e))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ts, hosts := make([]time.Time, rows), make([]string, rows)
	codes, sizes, lat := make([]int64, rows), make([]int64, rows), make([]float64, rows)
	for i := range rows {
		ts[i] = t0.Add(time.Duration(r.IntN(3_600_000)) * time.Millisecond)
		hosts[i] = fmt.Sprintf("host-%04d.prod.example.net", r.IntN(300))
		codes[i] = []int64{200, 200, 200, 204, 404, 500}[r.IntN(6)]
		sizes[i] = r.Int64N(1 << 20)
		lat[i] = r.ExpFloat64() * 0.05
	}
	f := data.NewFrame("requests",
		data.NewField("time", nil, ts), data.NewField("host", nil, hosts),
		data.NewField("status", nil, codes), data.NewField("bytes", nil, sizes),
		data.NewField("latency", nil, lat))
	f.RefID = "A"
	return f
}
