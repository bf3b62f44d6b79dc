package frame_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
)

// sdkRecord converts f with the SDK's own conversion.
func sdkRecord(t testing.TB, f *data.Frame) arrow.RecordBatch {
	t.Helper()
	tbl, err := data.FrameToArrowTable(f)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	if !tr.Next() {
		t.Fatal("no record")
	}
	rec := tr.RecordBatch()
	rec.Retain()
	return rec
}

// An Input holds exactly one of a frame and a record.
func TestAppendInputChecked(t *testing.T) {
	e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0)
	f := seriesFrame(8)
	rec := sdkRecord(t, f)
	defer rec.Release()
	for name, in := range map[string]frame.Input{
		"neither": {},
		"both":    {Frame: f, Record: rec},
	} {
		out, st, err := e.Append([]byte("keep"), in, nil)
		if err == nil || string(out) != "keep" || st.Rows != 0 {
			t.Errorf("%s: Append = %q, %+v, %v; want dst unextended and an error", name, out, st, err)
		}
		if name == "both" && (err == nil || !strings.Contains(err.Error(), "both")) {
			t.Errorf("both: error %v does not say so", err)
		}
	}
}

// Append returns the stats of the body it wrote, and the frame carrying the
// query's stats adds exactly those to the others'.
func TestAppendReturnsBodyStats(t *testing.T) {
	e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0.1)
	f := seriesFrame(4096)
	rec := sdkRecord(t, f)
	defer rec.Release()
	others := frame.Summary{Frames: 2, RawBytes: 1000, WireBytes: 500, Encode: time.Millisecond}
	for name, in := range map[string]frame.Input{"frame": {Frame: f}, "record": {Record: rec}} {
		b, st, err := e.Append(nil, in, &others)
		if err != nil {
			t.Fatal(err)
		}
		batches, err := arrowipctest.Inspect(b)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != 4096 || st.RawBytes != 4096*16 || st.Buffers != batches[0].Buffers || st.Compressed != batches[0].Compressed {
			t.Errorf("%s: stats %+v, file %+v", name, st, batches[0])
		}
		got, err := data.UnmarshalArrowFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		stats := map[string]float64{}
		for _, s := range got.Meta.Stats {
			stats[s.DisplayName] = s.Value
		}
		if stats[frame.StatRawBytes] != float64(others.RawBytes+st.RawBytes) || stats[frame.StatWireBytes] != float64(others.WireBytes+st.WireBytes) {
			t.Errorf("%s: meta says raw %v wire %v; others plus this body are %d, %d", name,
				stats[frame.StatRawBytes], stats[frame.StatWireBytes], others.RawBytes+st.RawBytes, others.WireBytes+st.WireBytes)
		}
	}
}

// Steady state of the record path: a reused encoder writing a record of a
// size it has seen into a reused buffer allocates nothing.
func TestAppendRecordSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are checked without -race")
	}
	rec := sdkRecord(t, seriesFrame(256))
	defer rec.Release()
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3)} {
		e := newEncoder(t, c, 0.1)
		buf, _, err := e.Append(nil, frame.Input{Record: rec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			buf, _, err = e.Append(buf[:0], frame.Input{Record: rec}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs > 0 {
			t.Errorf("codec=%s: %.1f allocations per record in steady state, want 0", c, allocs)
		}
	}
}
