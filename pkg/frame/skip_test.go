package frame_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

// autoCodecs are codec auto under each preference, as encoder options.
func autoOptions() []arrowipc.Options {
	var opts []arrowipc.Options
	for _, p := range codec.Preferences {
		opts = append(opts, arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), Preference: p, MinSavings: 0.1})
	}
	return opts
}

// The skip (and codec auto's choice) never changes what Grafana decodes:
// random frames, whose columns turn compressible and incompressible from
// one frame to the next so that every slot's history is exercised, go
// through one long-lived encoder per codec and must decode through the
// SDK's data.UnmarshalArrowFrame to exactly the input.
func TestSkipNeverChangesDecodedValues(t *testing.T) {
	opts := autoOptions()
	for _, c := range codecs {
		opts = append(opts, arrowipc.Options{Codec: c, MinSavings: 0.1})
	}
	r := rand.New(rand.NewPCG(7, 11))
	// Under the race detector (a single goroutine here: nothing for it to
	// find) fewer frames; CI runs the full count without it (Magefile).
	iters := 150
	switch {
	case raceEnabled:
		iters = 10
	case testing.Short():
		iters = 30
	}
	for _, o := range opts {
		e, err := frame.NewEncoder(o)
		if err != nil {
			t.Fatal(err)
		}
		var skipped, compressed int
		for it := range iters {
			in := randomFrame(r)
			b, st, err := e.Append(nil, frame.Input{Frame: in}, nil)
			if err != nil {
				t.Fatalf("%s/%s frame %d: %v", o.Codec, o.Preference.Name, it, err)
			}
			skipped += st.Skipped
			compressed += st.Compressed
			got, err := data.UnmarshalArrowFrame(b)
			if err != nil {
				t.Fatalf("%s/%s frame %d does not decode: %v", o.Codec, o.Preference.Name, it, err)
			}
			if err := frametest.Equal(in, got); err != nil {
				t.Fatalf("%s/%s frame %d: %v", o.Codec, o.Preference.Name, it, err)
			}
		}
		if o.Codec.Kind() != codec.None && (skipped == 0 || compressed == 0) {
			t.Errorf("%s/%s: %d buffers skipped, %d compressed: the test did not exercise both", o.Codec, o.Preference.Name, skipped, compressed)
		}
	}
}

// randomFrame picks some of frametest.AllTypes' fields and adds two whose
// compressibility is drawn per frame: counting integers or random ones,
// repeated log lines or random words.
func randomFrame(r *rand.Rand) *data.Frame {
	rows := r.IntN(700)
	all := frametest.AllTypes(rows, r.Uint64())
	var fields []*data.Field
	for _, f := range all.Fields {
		if r.IntN(3) == 0 {
			fields = append(fields, f)
		}
	}
	counts, words := make([]int64, rows), make([]string, rows)
	regular := r.IntN(2) == 0
	for i := range rows {
		if regular {
			counts[i] = int64(i) * 1000
			words[i] = "GET /api/health 200 " + strings.Repeat("ok ", i%4)
		} else {
			counts[i] = int64(r.Uint64())
			words[i] = fmt.Sprintf("%x", r.Uint64())
		}
	}
	fields = append(fields, data.NewField("counts", nil, counts), data.NewField("words", nil, words))
	f := data.NewFrame("random", fields...)
	f.RefID = "A"
	return f
}

// Codec auto sends a frame none of whose buffers compress uncompressed, and
// 4096 log lines as zstd under either preference (zstd's savings over lz4
// on them pay for Grafana's decompression at the default's byte price). The
// stats name the one codec a query's frames went with, or count the frames
// by codec when there were several.
func TestAutoChoosesPerFrame(t *testing.T) {
	const rows = 4096
	logs := make([]string, rows)
	for i := range logs {
		logs[i] = fmt.Sprintf("level=info ts=2026-12-01T10:%02d:%02dZ msg=\"request served\" path=/api/v1/query status=200 took=%dms", i/60%60, i%60, i%97)
	}
	logFrame := data.NewFrame("logs", data.NewField("body", nil, logs))
	r := rand.New(rand.NewPCG(5, 6))
	noise := make([]float64, rows)
	for i := range noise {
		noise[i] = r.NormFloat64()
	}
	noiseFrame := data.NewFrame("noise", data.NewField("value", nil, noise))
	z, err := frame.NewEncoder(arrowipc.Options{Codec: codec.MustNew(codec.Zstd, 3), MinSavings: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	zstd3, _, err := z.Append(nil, frame.Input{Frame: logFrame}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range autoOptions() {
		e, err := frame.NewEncoder(o)
		if err != nil {
			t.Fatal(err)
		}
		auto := frame.StatCodec + "auto/" + o.Preference.Name
		logWire, logSt, err := e.Append(nil, frame.Input{Frame: logFrame}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if logSt.Codec != codec.Zstd || logSt.WireBytes*2 > logSt.RawBytes {
			t.Errorf("%s: 4096 log lines sent as %v, %d of %d bytes", o.Preference.Name, logSt.Codec, logSt.WireBytes, logSt.RawBytes)
		}
		// What Grafana receives is then zstd 3's frame, byte for byte.
		if string(logWire) != string(zstd3) {
			t.Errorf("%s: the log frame (%d bytes) is not zstd 3's (%d bytes)", o.Preference.Name, len(logWire), len(zstd3))
		}
		// A query of one frame, which goes uncompressed.
		var others frame.Summary
		b, st, err := e.Append(nil, frame.Input{Frame: noiseFrame}, &others)
		if err != nil {
			t.Fatal(err)
		}
		if st.Codec != codec.None || st.Compressed != 0 {
			t.Errorf("%s: random floats sent as %v, %d buffers compressed", o.Preference.Name, st.Codec, st.Compressed)
		}
		stats := decodedStats(t, b)
		if v, ok := stats[auto+" (none)"]; !ok || v != 0 || len(stats) != 9 {
			t.Errorf("%s: stats %v, want %q and no frame counts", o.Preference.Name, stats, auto+" (none)")
		}
		// A query of the log frame and the noise: two codecs.
		others.Add(logSt, time.Millisecond)
		if b, _, err = e.Append(nil, frame.Input{Frame: noiseFrame}, &others); err != nil {
			t.Fatal(err)
		}
		stats = decodedStats(t, b)
		_, lz4 := stats[frame.StatFramesAs+"lz4"]
		if _, ok := stats[auto]; !ok || stats[frame.StatFramesAs+"none"] != 1 || stats[frame.StatFramesAs+"zstd"] != 1 || lz4 {
			t.Errorf("%s: stats %v, want %q, one frame sent as none and one as zstd", o.Preference.Name, stats, auto)
		}
	}
}

// decodedStats decodes a frame and returns its meta's stats by name.
func decodedStats(t *testing.T, b []byte) map[string]float64 {
	t.Helper()
	got, err := data.UnmarshalArrowFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]float64{}
	if got.Meta != nil {
		for _, s := range got.Meta.Stats {
			stats[s.DisplayName] = s.Value
		}
	}
	return stats
}

// A small frame of text goes as lz4 under either preference: zstd saves a
// hundred bytes more than lz4 on it, less than its decoder's setup costs
// Grafana even at the bytes preference's price. A 500-point series at a
// 20 s step, whose timestamps zstd compresses by ~1.9 KB and lz4 not at
// all, goes uncompressed when Grafana values CPU (saving that little does
// not pay for a zstd batch's decoding) and as zstd when it values bytes.
func TestAutoFollowsThePreference(t *testing.T) {
	lines := make([]string, 64)
	for i := range lines {
		lines[i] = fmt.Sprintf("level=info msg=\"request served\" path=/api/v1/query status=200 took=%dms", i%7)
	}
	text := data.NewFrame("logs", data.NewField("body", nil, lines))
	times := make([]time.Time, 500)
	for i := range times {
		times[i] = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 20 * time.Second)
	}
	r := rand.New(rand.NewPCG(8, 9))
	values := make([]float64, len(times))
	for i := range values {
		values[i] = r.NormFloat64()
	}
	series := data.NewFrame("series", data.NewField("time", nil, times), data.NewField("value", nil, values))
	for _, tc := range []struct {
		f    *data.Frame
		want map[string]codec.Kind
	}{
		{text, map[string]codec.Kind{"cpu": codec.LZ4, "bytes": codec.LZ4}},
		{series, map[string]codec.Kind{"cpu": codec.None, "bytes": codec.Zstd}},
	} {
		for _, o := range autoOptions() {
			e, err := frame.NewEncoder(o)
			if err != nil {
				t.Fatal(err)
			}
			b, st, err := e.Append(nil, frame.Input{Frame: tc.f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Codec != tc.want[o.Preference.Name] {
				t.Errorf("%s: frame %s of %d bytes sent as %v (%d wire bytes), want %v", o.Preference.Name, tc.f.Name, st.RawBytes, st.Codec, st.WireBytes, tc.want[o.Preference.Name])
			}
			got, err := data.UnmarshalArrowFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := frametest.Equal(tc.f, got); err != nil {
				t.Error(err)
			}
		}
	}
}

// Under codec auto a query's stats are no longer than under an explicit
// codec, so that a response nothing in which compresses is no larger than
// lz4's: 200 series of 256 points at a one-minute step (neither codec
// compresses their timestamps or random values), the first frame carrying
// the query's stats. The other frames are the same bytes under both.
func TestAutoStatsNoLongerThanExplicit(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	frames := make([]*data.Frame, 200)
	for i := range frames {
		times, values := make([]time.Time, 256), make([]float64, 256)
		for j := range times {
			times[j] = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(j) * time.Minute)
			values[j] = r.NormFloat64()
		}
		frames[i] = data.NewFrame("series", data.NewField("time", nil, times),
			data.NewField("value", data.Labels{"host": fmt.Sprintf("host-%d", i)}, values))
	}
	// statsLen is the length of the stats as names and values, but for the
	// encode time, which differs from run to run.
	statsLen := func(o arrowipc.Options) (int, [][]byte, map[string]float64) {
		e, err := frame.NewEncoder(o)
		if err != nil {
			t.Fatal(err)
		}
		var wires [][]byte
		var sum frame.Summary
		for range 2 { // the second pass is the skip's steady state
			wires, sum = wires[:0], frame.Summary{}
			for _, f := range frames[1:] {
				b, st, err := e.Append(nil, frame.Input{Frame: f}, nil)
				if err != nil {
					t.Fatal(err)
				}
				sum.Add(st, time.Millisecond)
				wires = append(wires, b)
			}
		}
		b, _, err := e.Append(nil, frame.Input{Frame: frames[0]}, &sum)
		if err != nil {
			t.Fatal(err)
		}
		stats := decodedStats(t, b)
		n := 0
		for name, v := range stats {
			if name != frame.StatEncode {
				n += len(name) + len(fmt.Sprint(v))
			}
		}
		return n, wires, stats
	}
	auto, autoWires, autoStats := statsLen(arrowipc.Options{Codec: codec.MustNew(codec.Auto, 0), MinSavings: 0.1})
	lz4, lz4Wires, lz4Stats := statsLen(arrowipc.Options{Codec: codec.MustNew(codec.LZ4, 0), MinSavings: 0.1})
	if auto > lz4 {
		t.Errorf("auto's stats take %d bytes, lz4's %d:\nauto %v\nlz4  %v", auto, lz4, autoStats, lz4Stats)
	}
	if _, ok := autoStats[frame.StatCodec+"auto/"+codec.DefaultPreference+" (none)"]; !ok {
		t.Errorf("auto's stats %v do not say it sent every frame uncompressed", autoStats)
	}
	for i := range autoWires {
		if string(autoWires[i]) != string(lz4Wires[i]) {
			t.Fatalf("frame %d: auto's bytes differ from lz4's", i+1)
		}
	}
}
