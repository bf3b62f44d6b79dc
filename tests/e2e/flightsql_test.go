package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/tests/harness"
)

// checkWindow checks, value by value, the frames of a time_series query
// over points first to first+window-1 of startSQLite's table of hosts.
func checkWindow(base time.Time, hosts, window, first int, frames data.Frames) error {
	if len(frames) != hosts {
		return fmt.Errorf("%d frames, want %d", len(frames), hosts)
	}
	for h, f := range frames {
		if f.Rows() != window || f.Fields[1].Labels["host"] != fmt.Sprintf("host-%04d", h) {
			return fmt.Errorf("frame %d: %d rows, labels %v", h, f.Rows(), f.Fields[1].Labels)
		}
		for i := range window {
			p := first + i
			if tm := f.Fields[0].At(i).(time.Time); !tm.Equal(base.Add(time.Duration(p) * time.Minute)) {
				return fmt.Errorf("host %d row %d: time %v", h, i, tm)
			}
			if v := f.Fields[1].At(i).(float64); v != float64(h*1000+p) {
				return fmt.Errorf("host %d row %d: value %v, want %d", h, i, v, h*1000+p)
			}
		}
	}
	return nil
}

// framesOfChunks decodes a chunked answer's frames, each placed by its id
// (chunks come as frames are encoded).
func framesOfChunks(chunks []*pluginv2.QueryChunkedDataResponse) (data.Frames, error) {
	frames := make(data.Frames, len(chunks))
	for _, c := range chunks {
		i, err := strconv.Atoi(c.FrameId)
		if c.Error != "" || err != nil || i < 0 || i >= len(frames) {
			return nil, fmt.Errorf("chunk %q of %d: %s", c.FrameId, len(chunks), c.Error)
		}
		if frames[i], err = data.UnmarshalArrowFrame(c.Frame); err != nil {
			return nil, err
		}
	}
	return frames, nil
}

// startSQLite serves arrow-go's SQLite example Flight SQL server on
// 127.0.0.1 with a metrics table of hosts × points: time INTEGER (Unix
// milliseconds), host TEXT, region TEXT, value REAL.
func startSQLite(t *testing.T, hosts, points int, base time.Time) string {
	t.Helper()
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE metrics (time INTEGER, host TEXT, region TEXT, value REAL)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := tx.Prepare(`INSERT INTO metrics VALUES (?, ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	// Points newest first, hosts interleaved: the server returns rows
	// unsorted and unsplit.
	for p := points - 1; p >= 0; p-- {
		for h := range hosts {
			ts := base.Add(time.Duration(p) * time.Minute).UnixMilli()
			if _, err := stmt.Exec(ts, fmt.Sprintf("host-%04d", h), []string{"eu", "us", "ap"}[h%3], float64(h*1000+p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	srv, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	return serveFlightSQL(t, srv)
}

// serveFlightSQL serves srv on 127.0.0.1 until the test ends and returns
// its address.
func serveFlightSQL(tb testing.TB, srv flightsql.Server) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := flight.NewServerWithMiddleware([]flight.ServerMiddleware{{Unary: recoverUnary, Stream: recoverStream}})
	s.InitListener(lis)
	s.RegisterFlightService(flightsql.NewFlightServer(srv))
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve() }()
	tb.Cleanup(func() { s.Shutdown(); <-done })
	return lis.Addr().String()
}

// The example server panics on some column types; a panic fails the call.
func recoverUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	return h(ctx, req)
}

func recoverStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	return h(srv, ss)
}

func TestFlightSQLThroughTheBinary(t *testing.T) {
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	addr := startSQLite(t, 1000, 10, base)
	pc := instance(fmt.Sprintf(`{"upstream":"flightsql","address":%q,"codec":"zstd","level":3}`, addr), nil)

	res, err := plug.Health(ctx(t), pc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != pluginv2.CheckHealthResponse_OK || !strings.Contains(res.Message, addr) {
		t.Fatalf("health: %v %q", res.Status, res.Message)
	}

	q := harness.Query("A", map[string]string{
		"rawSql": "SELECT time, host, region, value FROM metrics WHERE $__unixEpochMsFilter(time)",
		"format": "time_series",
	}, base, base.Add(time.Hour), time.Minute, 1000)
	bad := harness.Query("B", map[string]string{"rawSql": "SELECT nope FROM missing", "format": "table"}, base, base.Add(time.Hour), time.Minute, 1000)
	resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, q, bad)
	if err != nil {
		t.Fatal(err)
	}
	frames := decode(t, resp.Responses["A"], "zstd")
	if len(frames) != 1000 {
		t.Fatalf("%d frames, want one per host (1000)", len(frames))
	}
	seen := map[string]bool{}
	for i, f := range frames {
		v := f.Fields[1]
		host := v.Labels["host"]
		var h int
		if _, err := fmt.Sscanf(host, "host-%d", &h); err != nil || seen[host] {
			t.Fatalf("labels %v", v.Labels)
		}
		seen[host] = true
		// Frames are ordered by label set (host sorts before region).
		if h != i {
			t.Fatalf("frame %d is %s: frames not ordered by labels", i, host)
		}
		if f.Meta == nil || !strings.HasPrefix(f.Meta.ExecutedQueryString, "SELECT time, host, region, value FROM metrics WHERE ") || strings.Contains(f.Meta.ExecutedQueryString, "$__") {
			t.Fatalf("%s: executedQueryString %+v", host, f.Meta)
		}
		if v.Labels["region"] != []string{"eu", "us", "ap"}[h%3] {
			t.Fatalf("%s: region %q", host, v.Labels["region"])
		}
		if f.Rows() != 10 || f.Fields[0].Type() != data.FieldTypeTime {
			t.Fatalf("%s: %d rows", host, f.Rows())
		}
		for p := range 10 {
			if tm := f.Fields[0].At(p).(time.Time); !tm.Equal(base.Add(time.Duration(p) * time.Minute)) {
				t.Fatalf("%s row %d: time %v, want sorted by time", host, p, tm)
			}
			if got := v.At(p).(float64); got != float64(h*1000+p) {
				t.Fatalf("%s row %d: value %v", host, p, got)
			}
		}
	}
	if dr := resp.Responses["B"]; dr.Error == "" || dr.ErrorSource != "downstream" || len(dr.Frames) != 0 {
		t.Errorf("bad SQL: %q (%s)", dr.Error, dr.ErrorSource)
	}

	// Table and logs results carry text (and the logs labels JSON) columns:
	// the plugin sizes and encodes their records like any other.
	table := harness.Query("T", map[string]string{
		"rawSql": "SELECT host, region, value FROM metrics WHERE $__unixEpochMsFilter(time) ORDER BY host, time LIMIT 25",
		"format": "table",
	}, base, base.Add(time.Hour), time.Minute, 1000)
	logs := harness.Query("L", map[string]string{
		"rawSql": "SELECT time, host || ' says ' || value AS body, region AS level, host FROM metrics WHERE $__unixEpochMsFilter(time) ORDER BY time LIMIT 30",
		"format": "logs",
	}, base, base.Add(time.Hour), time.Minute, 1000)
	resp, err = plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, table, logs)
	if err != nil {
		t.Fatal(err)
	}
	tf := decode(t, resp.Responses["T"], "zstd")
	if len(tf) != 1 || tf[0].Rows() != 25 || tf[0].Fields[0].Name != "host" || tf[0].Fields[0].At(0) != "host-0000" {
		st, _ := tf[0].StringTable(5, 5)
		t.Fatalf("table frames: %d\n%s", len(tf), st)
	}
	// A table of many batches (the example server sends 1024 rows a batch)
	// is streamed: one frame of several record batches (the received ones
	// joined 8192 rows at a time), decoding to every row in order.
	whole := harness.Query("W", map[string]string{
		"rawSql": "SELECT host, time, value FROM metrics ORDER BY host, time",
		"format": "table",
	}, base, base.Add(time.Hour), time.Minute, 1000)
	wresp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, whole)
	if err != nil {
		t.Fatal(err)
	}
	wf := decode(t, wresp.Responses["W"], "zstd")
	if len(wf) != 1 || wf[0].Rows() != 10000 {
		t.Fatalf("whole table: %d frames, %d rows", len(wf), wf[0].Rows())
	}
	if batches, err := arrowipctest.Inspect(wresp.Responses["W"].Frames[0]); err != nil || len(batches) < 2 {
		t.Errorf("whole table: %d record batches (%v), want several", len(batches), err)
	}
	for r := range 10000 {
		h, p := r/10, r%10
		if host, value := wf[0].Fields[0].At(r), wf[0].Fields[2].At(r); host != fmt.Sprintf("host-%04d", h) || value != float64(h*1000+p) {
			t.Fatalf("whole table row %d: %v %v, want host-%04d %d", r, host, value, h, h*1000+p)
		}
	}

	lf := decode(t, resp.Responses["L"], "zstd")
	if len(lf) != 1 || lf[0].Rows() != 30 {
		t.Fatalf("logs frames: %d %v", len(lf), lf)
	}
	byName := map[string]*data.Field{}
	for _, f := range lf[0].Fields {
		byName[f.Name] = f
	}
	if byName["timestamp"] == nil || byName["body"] == nil || byName["severity"] == nil || byName["labels"] == nil ||
		!strings.Contains(byName["body"].At(0).(string), " says ") {
		t.Fatalf("logs frame fields: %v", lf[0].Fields)
	}

	// Schema browsing for the query editor goes through the resources.
	stream, err := plug.Resource.CallResource(ctx(t), &pluginv2.CallResourceRequest{PluginContext: pc, Path: "tables", Method: "GET", Url: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 200 || !strings.Contains(string(r.Body), `"metrics"`) {
		t.Errorf("tables: %d %s", r.Code, r.Body)
	}
}

func TestFlightSQLServerDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	pc := instance(fmt.Sprintf(`{"upstream":"flightsql","address":%q,"timeout":5}`, addr), nil)
	res, err := plug.Health(ctx(t), pc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != pluginv2.CheckHealthResponse_ERROR || !strings.Contains(strings.ToLower(res.Message), "refused") {
		t.Errorf("health against a closed port: %v %q", res.Status, res.Message)
	}
}

// Series frames of several runs are lent to the plugin's sink from memory
// that goes back to a pool once gRPC has written them out, for a later
// query to write its series into. Queries running at once, each over its
// own time range (so its own values), through QueryData and
// QueryChunkedData, each frame checked value by value: none ever sees
// another's values or a reused buffer.
func TestFlightSQLLentSeriesConcurrent(t *testing.T) {
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	const hosts, points, window = 100, 1000, 700 // 70 000 rows a query: two flushes, every series in two runs
	addr := startSQLite(t, hosts, points, base)
	// The SQLite server converts row by row (slow under the race
	// detector): a timeout of its own.
	pc := instance(fmt.Sprintf(`{"upstream":"flightsql","address":%q,"codec":"none","timeout":300}`, addr), nil)
	check := func(first int, frames data.Frames) error { return checkWindow(base, hosts, window, first, frames) }
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 4 {
		wg.Go(func() {
			for round := range 2 {
				first := (g*2 + round) * 25
				from := base.Add(time.Duration(first) * time.Minute)
				q := harness.Query("A", map[string]string{
					"rawSql": "SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time) ORDER BY time, host",
					"format": "time_series",
				}, from, from.Add((window-1)*time.Minute), time.Minute, window)
				var frames data.Frames
				if g%2 == 0 {
					resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, q)
					if err != nil {
						errs <- err
						return
					}
					if dr := resp.Responses["A"]; dr.Error != "" {
						errs <- errors.New(dr.Error)
						return
					}
					frames, err = data.UnmarshalArrowFrames(resp.Responses["A"].Frames)
					if err != nil {
						errs <- err
						return
					}
				} else {
					chunks, err := plug.QueryChunked(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, q)
					if err != nil {
						errs <- err
						return
					}
					if frames, err = framesOfChunks(chunks); err != nil {
						errs <- err
						return
					}
				}
				if err := check(first, frames); err != nil {
					errs <- fmt.Errorf("query from point %d: %w", first, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
