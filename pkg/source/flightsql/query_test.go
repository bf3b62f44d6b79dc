package flightsql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

var metricsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "host", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	{Name: "dc", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "cpu", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "reqs", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

type metricRow struct {
	ts   int64 // ms
	host string
	dc   *string
	cpu  float64
	reqs int64
}

// metricBatches writes rows into batches of size n.
func metricBatches(t *testing.T, rows []metricRow, n int) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	for len(rows) > 0 {
		k := min(n, len(rows))
		chunk := rows[:k]
		rows = rows[k:]
		out = append(out, batch(metricsSchema, func(b *array.RecordBuilder) {
			for _, r := range chunk {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
				if err := b.Field(1).(*array.BinaryDictionaryBuilder).AppendString(r.host); err != nil {
					t.Fatal(err)
				}
				if r.dc == nil {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.StringBuilder).Append(*r.dc)
				}
				b.Field(3).(*array.Float64Builder).Append(r.cpu)
				b.Field(4).(*array.Int64Builder).Append(r.reqs)
			}
		}))
	}
	return out
}

func TestTimeSeriesThousandSeriesUnsorted(t *testing.T) {
	const hosts, points = 1000, 5
	eu := "eu"
	var rows []metricRow
	for p := range points {
		for h := range hosts {
			var dc *string
			if h%2 == 0 {
				dc = &eu
			}
			rows = append(rows, metricRow{ts: 1_700_000_000_000 + int64(p)*1000, host: fmt.Sprintf("h%03d", h), dc: dc, cpu: float64(h) + float64(p)/10, reqs: int64(h*100 + p)})
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	srv := newMemServer()
	srv.set("metrics", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 333)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	sink, err := runQuery(t, s, "metrics", FormatTimeSeries, source.Limits{MaxSeries: 2000, MaxPoints: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != hosts*2 {
		t.Fatalf("%d frames, want %d", len(sink.frames), hosts*2)
	}
	seen := map[string]bool{}
	for i, f := range sink.frames {
		if len(f.Fields) != 2 || f.Fields[0].Name != "ts" || f.Fields[0].Type() != data.FieldTypeTime {
			t.Fatalf("frame %d: fields %v", i, f.Fields)
		}
		if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti {
			t.Fatalf("frame %d: meta %+v", i, f.Meta)
		}
		v := f.Fields[1]
		var h, p int
		if _, err := fmt.Sscanf(v.Labels["host"], "h%d", &h); err != nil {
			t.Fatalf("labels %v", v.Labels)
		}
		if (h%2 == 0) != (v.Labels["dc"] == "eu") || (h%2 == 1 && len(v.Labels) != 1) {
			t.Errorf("labels of host %d: %v", h, v.Labels)
		}
		key := v.Name + v.Labels.String()
		if seen[key] {
			t.Errorf("series %s twice", key)
		}
		seen[key] = true
		if f.Rows() != points {
			t.Fatalf("series %s has %d rows", key, f.Rows())
		}
		for p = range points {
			if got, want := f.Fields[0].At(p).(time.Time), time.UnixMilli(1_700_000_000_000+int64(p)*1000); !got.Equal(want) {
				t.Fatalf("series %s row %d: time %v, want %v (not sorted?)", key, p, got, want)
			}
			switch v.Name {
			case "cpu":
				if got := v.At(p).(float64); got != float64(h)+float64(p)/10 {
					t.Fatalf("series %s row %d: %v", key, p, got)
				}
			case "reqs":
				if got := v.At(p).(int64); got != int64(h*100+p) {
					t.Fatalf("series %s row %d: %v", key, p, got)
				}
			default:
				t.Fatalf("value field %q", v.Name)
			}
		}
		if v.Nullable() || f.Fields[0].Nullable() {
			t.Errorf("series %s: nullable fields without nulls", key)
		}
	}
}

func TestTimeSeriesLimits(t *testing.T) {
	var rows []metricRow
	for h := range 10 {
		rows = append(rows, metricRow{ts: 1_700_000_000_000, host: fmt.Sprintf("h%d", h), cpu: 1, reqs: 1})
	}
	srv := newMemServer()
	srv.set("metrics", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 3)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	_, err := runQuery(t, s, "metrics", FormatTimeSeries, source.Limits{MaxSeries: 19})
	mustKind(t, err, source.KindLimit, "more than 19 series", "maxSeries")
	_, err = runQuery(t, s, "metrics", FormatTimeSeries, source.Limits{MaxPoints: 15})
	mustKind(t, err, source.KindLimit, "more than 15 points", "maxPoints")
	_, err = runQuery(t, s, "metrics", FormatTable, source.Limits{MaxPoints: 9})
	mustKind(t, err, source.KindLimit, "more than 9 rows", "maxPoints")
	sink, err := runQuery(t, s, "metrics", FormatTimeSeries, source.Limits{MaxSeries: 20, MaxPoints: 20})
	if err != nil || len(sink.frames) != 20 {
		t.Fatalf("at the limits: %d frames, %v", len(sink.frames), err)
	}
}

func TestTimeSeriesNullTimeAndNeedsColumns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	rec := batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{3, 0, 1}, []bool{true, false, true})
		b.Field(1).(*array.Int32Builder).AppendValues([]int32{30, 0, 10}, []bool{true, true, false})
	})
	srv := newMemServer()
	srv.set("q", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{rec}}})
	noValues := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.FixedWidthTypes.Date32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	srv.set("novalues", &dataset{schema: noValues, endpoints: [][]arrow.RecordBatch{{}}})
	noTime := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	srv.set("notime", &dataset{schema: noTime, endpoints: [][]arrow.RecordBatch{{}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	sink, err := runQuery(t, s, "q", FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 1 || sink.frames[0].Rows() != 2 {
		t.Fatalf("frames %v", sink.frames)
	}
	f := sink.frames[0]
	if f.Fields[0].At(0).(time.Time).Unix() != 1 || f.Fields[1].At(0).(*int32) != nil || *f.Fields[1].At(1).(*int32) != 30 {
		t.Errorf("values: %v %v", f.Fields[0].At(0), f.Fields[1].At(1))
	}
	if f.Meta == nil || len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, "1 rows with a null time") {
		t.Errorf("meta %+v", f.Meta)
	}
	_, err = runQuery(t, s, "novalues", FormatTimeSeries, source.Limits{})
	mustKind(t, err, source.KindQuery, "needs at least one numeric value column", "s (utf8)")
	_, err = runQuery(t, s, "notime", FormatTimeSeries, source.Limits{})
	mustKind(t, err, source.KindQuery, "needs a timestamp column", "n (int64)", "format table")
	// Without a format: table when there is no time column.
	sink = &frameSink{t: t}
	if err := s.Query(context.Background(), source.Query{RefID: "B", JSON: []byte(`{"rawSql":"notime"}`)}, sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 1 || sink.frames[0].Fields[0].Name != "n" || sink.frames[0].RefID != "B" {
		t.Fatalf("auto format: %v", sink.frames)
	}
}

func TestTableAndLogs(t *testing.T) {
	eu := "eu"
	rows := []metricRow{{ts: 2000, host: "a", dc: &eu, cpu: 1.5, reqs: 1}, {ts: 1000, host: "b\"x", cpu: 2.5, reqs: 2}}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 1)}})
	logSchema := arrow.NewSchema([]arrow.Field{
		{Name: "level", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "message", Type: arrow.BinaryTypes.LargeString},
		{Name: "code", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	}, nil)
	logRec := batch(logSchema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.StringBuilder).AppendValues([]string{"error", "info"}, nil)
		b.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{5, 6}, nil)
		b.Field(2).(*array.LargeStringBuilder).AppendValues([]string{"disk full", "ok\n"}, nil)
		b.Field(3).(*array.Int16Builder).AppendValues([]int16{507, 0}, []bool{true, false})
	})
	srv.set("logs", &dataset{schema: logSchema, endpoints: [][]arrow.RecordBatch{{logRec}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	sink, err := runQuery(t, s, "m", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if len(sink.frames) != 1 || f.Rows() != 2 || len(f.Fields) != 5 || f.Meta == nil || f.Meta.ExecutedQueryString != "m" || len(f.Meta.Notices) != 0 {
		t.Fatalf("table: %d frames, %d rows, meta %+v", len(sink.frames), f.Rows(), f.Meta)
	}
	if f.Fields[1].At(1).(string) != `b"x` || f.Fields[2].At(1).(*string) != nil {
		t.Errorf("table values: %v %v", f.Fields[1].At(1), f.Fields[2].At(1))
	}
	if f.Fields[0].At(0).(time.Time).UnixMilli() != 2000 {
		t.Errorf("table keeps the order as returned: %v", f.Fields[0].At(0))
	}

	sink, err = runQuery(t, s, "logs", FormatLogs, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f = sink.frames[0]
	if f.Meta == nil || f.Meta.PreferredVisualization != data.VisTypeLogs || f.Meta.Type != data.FrameTypeLogLines {
		t.Fatalf("logs meta %+v", f.Meta)
	}
	// The logs data-plane contract: timestamp, body, severity, labels.
	if len(f.Fields) != 4 || f.Fields[0].Name != "timestamp" || f.Fields[1].Name != "body" || f.Fields[2].Name != "severity" || f.Fields[3].Name != "labels" {
		t.Fatalf("logs fields %v", f.Fields)
	}
	if f.Fields[2].At(0).(string) != "error" || f.Fields[2].At(1).(string) != "info" {
		t.Errorf("severity: %v %v", f.Fields[2].At(0), f.Fields[2].At(1))
	}
	if got := string(f.Fields[3].At(0).(json.RawMessage)); got != `{"code":"507"}` {
		t.Errorf("labels row 0: %s", got)
	}
	if got := string(f.Fields[3].At(1).(json.RawMessage)); got != `{}` {
		t.Errorf("labels row 1: %s", got)
	}
	if f.Fields[1].At(1).(string) != "ok\n" || f.Fields[0].At(0).(time.Time).UnixNano() != 5000 {
		t.Errorf("logs values: %q %v", f.Fields[1].At(1), f.Fields[0].At(0))
	}
}

func TestRowAndByteLimitsTruncateWithNotice(t *testing.T) {
	var rows []metricRow
	for i := range 100 {
		rows = append(rows, metricRow{ts: int64(i), host: "a", cpu: float64(i), reqs: int64(i)})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}, block: true})
	addr := startServer(t, srv, serverOpts{})

	cfg := baseConfig(addr)
	cfg.RowLimit = 25
	s := newTestSource(t, cfg)
	sink, err := runQuery(t, s, "m", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if f.Rows() != 25 || f.Meta == nil || len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, "truncated to 25 rows (rowLimit setting)") {
		t.Fatalf("rows %d meta %+v", f.Rows(), f.Meta)
	}
	if f.Meta.Notices[0].Severity != data.NoticeSeverityWarning {
		t.Errorf("severity %v", f.Meta.Notices[0].Severity)
	}

	// Exactly at the limit: nothing was dropped, so no notice.
	cfg.RowLimit = 100
	s = newTestSource(t, cfg)
	srv.set("m2", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}})
	sink, err = runQuery(t, s, "m2", FormatTable, source.Limits{})
	if err != nil || sink.frames[0].Rows() != 100 || len(sink.frames[0].Meta.Notices) != 0 {
		t.Fatalf("at the limit: %v %+v", err, sink.frames)
	}

	per := recordBytes(metricBatches(t, rows[:10], 10)[0])
	cfg = baseConfig(addr)
	cfg.ByteLimit = per*3 + per/2 // three and a half batches
	s = newTestSource(t, cfg)
	sink, err = runQuery(t, s, "m", FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Bytes are counted as the buffers read from the wire, which are a little
	// larger than the batches built here: between 2 and 3.5 batches are kept.
	if len(sink.frames) != 2 || sink.frames[0].Rows() < 20 || sink.frames[0].Rows() > 35 || sink.frames[0].Meta == nil ||
		!strings.Contains(fmt.Sprint(sink.frames[0].Meta.Notices), "byteLimit setting") {
		t.Fatalf("byte limit: %d frames, rows %d, meta %+v", len(sink.frames), sink.frames[0].Rows(), sink.frames[0].Meta)
	}
	if sink.frames[1].Meta.Notices != nil {
		t.Errorf("the notice belongs on the first frame only")
	}
	// The blocked server streams ended because the client went away.
	waitFor(t, func() bool { return srv.streamed.Load() >= 2 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEndpointsAndLocations(t *testing.T) {
	mk := func(from int) []arrow.RecordBatch {
		var rows []metricRow
		for i := range 4 {
			rows = append(rows, metricRow{ts: int64(from + i), host: "a", cpu: float64(from + i)})
		}
		return metricBatches(t, rows, 2)
	}
	srv, other := newMemServer(), newMemServer()
	addr := startServer(t, srv, serverOpts{})
	otherAddr := startServer(t, other, serverOpts{})
	d := &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{mk(0), mk(4), mk(8)},
		locations: []string{"", "grpc+tcp://" + otherAddr, "arrow-flight-reuse-connection://?"}}
	srv.set("m", d)
	other.set("m", d)
	s := newTestSource(t, baseConfig(addr))
	sink, err := runQuery(t, s, "m", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if f.Rows() != 12 {
		t.Fatalf("%d rows, want 12 from 3 endpoints", f.Rows())
	}
	for i := range 12 {
		if got := f.Fields[3].At(i).(float64); got != float64(i) {
			t.Fatalf("row %d: %v (endpoints out of order?)", i, got)
		}
	}
	if len(other.seenHeaders()) != 1 {
		t.Errorf("the located endpoint was read %d times from its location", len(other.seenHeaders()))
	}

	// A plaintext location is refused when TLS is on; an unknown scheme names itself.
	c := &conn{tls: nil, cfg: settings.FlightSQL{Address: addr}}
	if _, err := c.remote("http://x:1"); err == nil || !strings.Contains(err.Error(), `scheme "http" is not supported`) {
		t.Errorf("scheme: %v", err)
	}
	c.tls = newPKI(t).serverTLS(t, false)
	if _, err := c.remote("grpc://x:1"); err == nil || !strings.Contains(err.Error(), "refusing to send credentials without TLS") {
		t.Errorf("plaintext: %v", err)
	}
}

func TestFailureAfterBatchesIsAnError(t *testing.T) {
	var rows []metricRow
	for i := range 50 {
		rows = append(rows, metricRow{ts: int64(i), host: "a", cpu: 1})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}, failAfter: 3})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, format := range []string{FormatTable, FormatTimeSeries, FormatLogs} {
		sink, err := runQuery(t, s, "m", format, source.Limits{})
		mustKind(t, err, source.KindUpstream, "disk on fire", "endpoint 1 of 1")
		if len(sink.frames) != 0 {
			t.Errorf("%s: %d frames sent despite the failure", format, len(sink.frames))
		}
	}
}

func TestSinkErrorPropagatesUnchanged(t *testing.T) {
	var rows []metricRow
	for h := range 3 {
		rows = append(rows, metricRow{ts: 1, host: fmt.Sprint(h), cpu: 1})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 2)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, format := range []string{FormatTable, FormatTimeSeries, FormatLogs} {
		sink := &frameSink{t: t, err: errSink}
		err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"m","format":"` + format + `"}`)}, sink)
		if err != errSink { //nolint:errorlint // the very same error is the contract
			t.Errorf("%s: got %v, want the sink's error unchanged", format, err)
		}
	}
}

func TestBadQueries(t *testing.T) {
	srv := newMemServer()
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, tc := range []struct{ js, want string }{
		{`{`, "not valid JSON"},
		{`{"rawSql":"  "}`, "rawSql: the query has no SQL"},
		{`{"rawSql":"x","format":"graph"}`, `format: "graph" is not one of "time_series", "time_series_wide", "table", "logs"`},
		{`{"rawSql":"select $__nope"}`, `unknown macro "$__nope"`},
	} {
		err := s.Query(context.Background(), source.Query{JSON: []byte(tc.js)}, &frameSink{t: t})
		mustKind(t, err, source.KindQuery, tc.want)
	}
	// The server's own message for a query it rejects.
	_, err := runQuery(t, s, "SELEC 1", FormatTable, source.Limits{})
	mustKind(t, err, source.KindUpstream, "executing the query", `syntax error near "SELEC 1"`, `(SQL sent: "SELEC 1")`)
}

// TestMetadataAsTheSDKWritesIt decodes our frames with the SDK, marshals
// them again with the SDK and compares every metadata key and flag.
func TestMetadataAsTheSDKWritesIt(t *testing.T) {
	eu := "eu"
	rows := []metricRow{{ts: 2000, host: "a", dc: &eu, cpu: 1.5, reqs: 1}, {ts: 1000, host: "b", cpu: 2.5, reqs: 2}}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 1)}})
	dur := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Duration_s}}, nil)
	srv.set("dur", &dataset{schema: dur, endpoints: [][]arrow.RecordBatch{{batch(dur, func(b *array.RecordBuilder) { b.Field(0).(*array.DurationBuilder).Append(3) })}}})
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.RowLimit = 1 // a notice in the meta
	s := newTestSource(t, cfg)
	for _, q := range []struct{ sql, format string }{{"m", FormatTimeSeries}, {"m", FormatTable}, {"m", FormatLogs}, {"dur", FormatTable}} {
		sink, err := runQuery(t, s, q.sql, q.format, source.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range sink.frames {
			b, err := f.MarshalArrow()
			if err != nil {
				t.Fatal(err)
			}
			r, err := ipc.NewFileReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			sdk := r.Schema()
			ours := sink.schemas[i]
			_ = r.Close()
			if !sdk.Metadata().Equal(ours.Metadata()) {
				t.Errorf("%s/%s: schema metadata\nours %v\nsdk  %v", q.sql, q.format, ours.Metadata(), sdk.Metadata())
			}
			for j, fo := range ours.Fields() {
				fs := sdk.Field(j)
				if fo.Name != fs.Name || !arrow.TypeEqual(fo.Type, fs.Type) || fo.Nullable != fs.Nullable || !fo.Metadata.Equal(fs.Metadata) {
					t.Errorf("%s/%s field %d:\nours %v\nsdk  %v", q.sql, q.format, j, fo, fs)
				}
			}
		}
	}
}

func TestCancelMidStream(t *testing.T) {
	var rows []metricRow
	for i := range 20 {
		rows = append(rows, metricRow{ts: int64(i), host: "a", cpu: 1})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}, block: true})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Query(ctx, source.Query{RefID: "A", JSON: []byte(`{"rawSql":"m","format":"table"}`)}, &frameSink{t: t})
	}()
	<-srv.doGets // the server sent every batch and now holds the stream open
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "query cancelled") {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Query did not return after cancellation")
	}
	waitFor(t, func() bool { return srv.streamed.Load() == 1 })
}

func TestTimeout(t *testing.T) {
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{nil}, block: true})
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.Timeout = 1
	s := newTestSource(t, cfg)
	start := time.Now()
	_, err := runQuery(t, s, "m", FormatTable, source.Limits{})
	mustKind(t, err, source.KindTimeout, "timed out after 1s", "timeout setting")
	if time.Since(start) > 10*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}
}

// TestNoGoroutineLeak runs finished, failed, truncated and cancelled queries
// and checks that closing the Source leaves no goroutine of its own behind.
func TestNoGoroutineLeak(t *testing.T) {
	var rows []metricRow
	for i := range 40 {
		rows = append(rows, metricRow{ts: int64(i), host: fmt.Sprint(i % 4), cpu: 1})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}})
	srv.set("fail", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}, failAfter: 2})
	srv.set("block", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}, block: true})
	addr := startServer(t, srv, serverOpts{})
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()

	cfg := baseConfig(addr)
	cfg.RowLimit = 15
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"m", "fail", "block", "nope"} {
		_, _ = runQuery(t, s, q, FormatTimeSeries, source.Limits{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-srv.doGets; cancel() }()
	for len(srv.doGets) > 0 {
		<-srv.doGets
	}
	cfg.RowLimit = 1000
	s2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = s2.Query(ctx, source.Query{JSON: []byte(`{"rawSql":"block","format":"table"}`)}, &frameSink{t: t})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seriesRows is hosts × points rows, every host in every point, the two dc
// values alternating; dc is null for every third host.
func seriesRows(hosts, points int) []metricRow {
	eu, us := "eu", "us"
	var rows []metricRow
	for p := range points {
		for h := range hosts {
			var dc *string
			switch h % 3 {
			case 0:
				dc = &eu
			case 1:
				dc = &us
			}
			rows = append(rows, metricRow{ts: 1_700_000_000_000 + int64(p)*1000, host: fmt.Sprintf("h%03d", h), dc: dc,
				cpu: float64(h) + float64(p)/10, reqs: int64(h*100 + p)})
		}
	}
	return rows
}

// TestExecutedQueryStringOnEveryFrame: every frame of every format carries
// the SQL after macros.
func TestExecutedQueryStringOnEveryFrame(t *testing.T) {
	const sent = "SELECT * FROM m WHERE x > 60000"
	srv := newMemServer()
	srv.set(sent, &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, seriesRows(3, 2), 4)}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, format := range []string{FormatTimeSeries, FormatTimeSeriesWide, FormatTable, FormatLogs} {
		sink, err := runQuery(t, s, "SELECT * FROM m WHERE x > $__interval_ms", format, source.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(sink.frames) == 0 {
			t.Fatalf("%s: no frames", format)
		}
		for i, f := range sink.frames {
			if f.Meta == nil || f.Meta.ExecutedQueryString != sent {
				t.Errorf("%s frame %d: meta %+v", format, i, f.Meta)
			}
		}
	}
}

// TestUpstreamErrorShowsShortenedSQL: the SQL sent is in the error, as
// sent, cut after source.QuoteMax bytes at a character boundary.
func TestUpstreamErrorShowsShortenedSQL(t *testing.T) {
	srv := newMemServer()
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	long := "SELECT " + strings.Repeat("é", 400) + " FROM nowhere"
	sink := &frameSink{t: t}
	err := s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"rawSql":%q,"format":"table"}`, long))}, sink)
	mustKind(t, err, source.KindUpstream, "executing the query", `(SQL sent: "SELECT ééé`)
	_, shown, _ := strings.Cut(err.Error(), "(SQL sent: ")
	if want := source.Quote(long) + ")"; shown != want {
		t.Errorf("shown SQL %q, want %q", shown, want)
	}
	if !strings.HasSuffix(shown, fmt.Sprintf("… (%d bytes))", len(long))) {
		t.Errorf("shown SQL is not cut: %q", shown)
	}
}

// reservingSink is a frameSink with the budget's capability: it records
// each reservation and how many frames it had been handed by then, and
// fails a reservation past limit with errBudgetFull.
type reservingSink struct {
	*frameSink
	reserved     int64
	beforeFrames []int
	limit        int64
}

var errBudgetFull = errors.New("the budget is full")

func (s *reservingSink) Reserve(ctx context.Context, n int64) error {
	if s.limit > 0 && s.reserved+n > s.limit {
		return errBudgetFull
	}
	s.reserved += n
	s.beforeFrames = append(s.beforeFrames, len(s.frames))
	return nil
}

// A series or logs result, kept until its stream ends, is reserved batch
// by batch as it is received, before any of its frames is handed over; a
// refused reservation ends the query with the budget's error, unchanged,
// and releases what was received.
func TestKeptResultsAreReservedAsReceived(t *testing.T) {
	var rows []metricRow
	for p := range 50 {
		for h := range 40 {
			rows = append(rows, metricRow{ts: 1_700_000_000_000 + int64(p)*1000, host: fmt.Sprint("h", h), cpu: float64(p), reqs: int64(h)})
		}
	}
	batches := metricBatches(t, rows, 100)
	var received int64
	for _, b := range batches {
		received += recordBytes(b)
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{batches}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	q := func(format string) source.Query {
		return source.Query{RefID: "A", JSON: []byte(`{"rawSql":"m","format":"` + format + `"}`), Limits: source.Limits{MaxSeries: 1000, MaxPoints: 100_000}}
	}
	for _, format := range []string{FormatTimeSeries, FormatTimeSeriesWide, FormatLogs} {
		sink := &reservingSink{frameSink: &frameSink{t: t}}
		if err := s.Query(context.Background(), q(format), sink); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		// What arrives weighs what was sent, give or take the buffers' padding
		// and the dictionary's as the client reads it.
		if len(sink.beforeFrames) != len(batches) || sink.reserved < received*9/10 || sink.reserved > received*11/10 {
			t.Errorf("%s: %d reservations of %d bytes in all, want one per batch received (%d) of about %d bytes", format, len(sink.beforeFrames), sink.reserved, len(batches), received)
		}
		for i, n := range sink.beforeFrames {
			if n != 0 {
				t.Errorf("%s: reservation %d came after %d frames were handed over", format, i, n)
			}
		}
		if len(sink.frames) == 0 {
			t.Errorf("%s: no frames", format)
		}

		refused := &reservingSink{frameSink: &frameSink{t: t}, limit: received / 2}
		if err := s.Query(context.Background(), q(format), refused); err != errBudgetFull { //nolint:errorlint // the very same error is the contract
			t.Errorf("%s with half the budget: %v, want the budget's error unchanged", format, err)
		}
		if len(refused.frames) != 0 {
			t.Errorf("%s with half the budget: %d frames handed over", format, len(refused.frames))
		}
	}
	// A table is handed over part by part as it comes: it reserves nothing
	// of its own (each part is held in the budget when handed over).
	sink := &reservingSink{frameSink: &frameSink{t: t}}
	if err := s.Query(context.Background(), q(FormatTable), sink); err != nil {
		t.Fatal(err)
	}
	if sink.reserved != 0 {
		t.Errorf("table: reserved %d bytes, want none", sink.reserved)
	}
}

// stallingSink waits, as a full memory budget or a client that does not
// read would make it, in every method that may wait, until the context it
// is handed is done.
type stallingSink struct{ *frameSink }

func (s stallingSink) Reserve(ctx context.Context, _ int64) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

func (s stallingSink) Parts(*arrow.Schema) (source.FrameWriter, error) { return stallingParts{}, nil }

type stallingParts struct{}

func (stallingParts) Part(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Release()
	<-ctx.Done()
	return context.Cause(ctx)
}

func (stallingParts) Close(ctx context.Context, _ arrow.Metadata) error { return ctx.Err() }
func (stallingParts) Abort()                                            {}

// A wait while the query reads (a series result's reservation, a table's
// part) ends with the query's timeout, as the read itself does, not only
// with the request.
func TestWaitsWhileReadingEndWithTheTimeout(t *testing.T) {
	var rows []metricRow
	for p := range 20_000 {
		rows = append(rows, metricRow{ts: 1_700_000_000_000 + int64(p)*1000, host: "h", cpu: float64(p)})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10_000)}})
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.Timeout = 1
	s := newTestSource(t, cfg)
	for _, format := range []string{FormatTimeSeries, FormatTable} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		q := source.Query{RefID: "A", JSON: []byte(`{"rawSql":"m","format":"` + format + `"}`), Limits: source.Limits{MaxSeries: 1000, MaxPoints: 1_000_000}}
		start := time.Now()
		err := s.Query(ctx, q, stallingSink{&frameSink{t: t}})
		cancel()
		mustKind(t, err, source.KindTimeout, "timed out after 1s", "timeout setting")
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s: the wait ended after %v", format, took)
		}
	}
}
