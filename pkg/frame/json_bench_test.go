package frame_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
)

// jsonBenchFrames are the frames BenchmarkAppendJSON writes: a time series
// (1 series × 256 points, float64 and time, labels, the shared meta of a
// multi-series query), a table of 1000 rows (strings, nullable ints with
// nulls, floats, bools) and 1000 log lines (time, body, severity, labels as
// JSON).
func jsonBenchFrames() []struct {
	name string
	f    *data.Frame
} {
	series := seriesFrame(256)
	series.RefID = "A"
	series.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}

	r := rand.New(rand.NewPCG(1, 2))
	const rows = 1000
	host, region := make([]string, rows), make([]string, rows)
	mem := make([]*int64, rows)
	cpu := make([]float64, rows)
	up := make([]bool, rows)
	for i := range rows {
		host[i], region[i] = fmt.Sprintf("host-%04d.example.net", i), []string{"eu-west", "us-east", "ap-south"}[i%3]
		if i%7 != 3 {
			m := int64(256+r.IntN(32768)) << 20
			mem[i] = &m
		}
		cpu[i] = float64(r.IntN(10000)) / 100
		up[i] = r.IntN(20) != 0
	}
	table := data.NewFrame("hosts", data.NewField("host", nil, host), data.NewField("region", nil, region),
		data.NewField("memory", nil, mem), data.NewField("cpu %", nil, cpu), data.NewField("up", nil, up))
	table.RefID = "T"

	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ts, body, sev := make([]time.Time, rows), make([]string, rows), make([]string, rows)
	lbls := make([]json.RawMessage, rows)
	for i := range rows {
		ts[i] = t0.Add(-time.Duration(i) * 1234567 * time.Microsecond)
		sev[i] = []string{"info", "info", "debug", "warn", "error"}[r.IntN(5)]
		body[i] = fmt.Sprintf(`ts=%s level=%s msg="query executed" method=GET path=/api/v1/query status=200 duration_ms=%d trace_id=%016x host=host-%d`,
			ts[i].Format(time.RFC3339Nano), sev[i], 1+r.IntN(900), r.Uint64(), i%21)
		lbls[i] = json.RawMessage(fmt.Sprintf(`{"host":"host-%d","job":"api","region":"eu-west"}`, i%21))
	}
	logs := data.NewFrame("logs", data.NewField("timestamp", nil, ts), data.NewField("body", nil, body),
		data.NewField("severity", nil, sev), data.NewField("labels", nil, lbls))
	logs.RefID = "L"
	logs.Meta = &data.FrameMeta{Type: data.FrameTypeLogLines, PreferredVisualization: data.VisTypeLogs}
	return []struct {
		name string
		f    *data.Frame
	}{{"series-256", series}, {"table-1000", table}, {"logs-1000", logs}}
}

// BenchmarkAppendJSON: one frame as data-frame JSON, from a data.Frame and
// from its Arrow record, by this package's JSONWriter (into a reused
// buffer; copy= adds a copy into memory of exactly its size, as the
// pipeline makes one: copy=join) and, the anchor, by the SDK (MarshalJSON; for a record,
// data.FromArrowRecord first, as the JSON path did before).
//
//	go test -tags arrow_json_stdlib -run '^$' -bench AppendJSON -count 6 ./pkg/frame
func BenchmarkAppendJSON(b *testing.B) {
	for _, c := range jsonBenchFrames() {
		rec := sdkRecord(b, c.f)
		defer rec.Release()
		size := len(sdkFrameJSON(b, c.f))
		b.Run("frame="+c.name+"/input=frame/impl=sdk", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for range b.N {
				if _, err := c.f.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("frame="+c.name+"/input=frame/impl=quiver", func(b *testing.B) {
			benchJSONWriter(b, frame.Input{Frame: c.f}, size, nil)
		})
		b.Run("frame="+c.name+"/input=frame/impl=quiver/copy=make", func(b *testing.B) {
			benchJSONWriter(b, frame.Input{Frame: c.f}, size, copyMake)
		})
		b.Run("frame="+c.name+"/input=frame/impl=quiver/copy=join", func(b *testing.B) {
			benchJSONWriter(b, frame.Input{Frame: c.f}, size, copyJoin)
		})
		b.Run("frame="+c.name+"/input=record/impl=sdk", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for range b.N {
				f, err := data.FromArrowRecord(rec)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("frame="+c.name+"/input=record/impl=quiver", func(b *testing.B) {
			benchJSONWriter(b, frame.Input{Record: rec}, size, nil)
		})
	}
}

var sink []byte

// The copies into memory of exactly the frame's size: make (cleared) and
// bytes.Join of two pieces (not cleared; what the pipeline does).
var (
	copyMake = func(b []byte) []byte { out := make([]byte, len(b)); copy(out, b); return out }
	copyJoin = func(b []byte) []byte { return bytes.Join([][]byte{b, nil}, nil) }
)

func benchJSONWriter(b *testing.B, in frame.Input, size int, copyOut func([]byte) []byte) {
	var w frame.JSONWriter
	var buf []byte
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for range b.N {
		var err error
		if buf, err = w.Append(buf[:0], in); err != nil {
			b.Fatal(err)
		}
		if copyOut != nil {
			sink = copyOut(buf)
		}
	}
}
