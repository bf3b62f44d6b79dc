//go:build linux

// This file is over 400 lines: one benchmark of the plugin process on the
// Flight SQL path (its server, its raw-client anchors in the benchmark
// process and in a child process, the meters read from /proc, and the
// checks of what the plugin answered), whose rows are compared with each
// other in docs/journal/benchmarks.md.

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/tests/harness"
	"github.com/quiverdata/quiver/tests/walks"
)

// benchResult is a result built once and what its answer must hold.
type benchResult struct {
	batches       []arrow.RecordBatch
	hosts, points int
	rows          int64
	arrowBytes    int64   // the batches' buffer bytes
	sum           float64 // of every value, for the checks
}

// buildResult builds hosts × points rows of the benchmarks' result
// (tests/walks) and what its answer must hold.
func buildResult(hosts, points, batchRows int) *benchResult {
	r := &benchResult{batches: walks.Batches(hosts, points, batchRows), hosts: hosts, points: points}
	for _, rec := range r.batches {
		r.rows += rec.NumRows()
		for _, c := range rec.Columns() {
			for _, buf := range c.Data().Buffers() {
				if buf != nil {
					r.arrowBytes += int64(buf.Len())
				}
			}
		}
		for _, v := range rec.Column(2).(*array.Float64).Float64Values() {
			r.sum += v
		}
	}
	return r
}

// resultServer is a Flight SQL server that answers walks.SQL with pre-built
// batches, so that it only serialises them.
type resultServer struct {
	flightsql.BaseServer
	res *benchResult
}

func (s *resultServer) GetFlightInfoStatement(_ context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetQuery() != walks.SQL {
		return nil, status.Errorf(codes.InvalidArgument, "unknown query %q", cmd.GetQuery())
	}
	tkt, err := flightsql.CreateStatementQueryTicket([]byte("cpu"))
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{FlightDescriptor: desc, TotalRecords: -1, TotalBytes: -1,
		Schema:   flight.SerializeSchema(walks.Schema, memory.DefaultAllocator),
		Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}}}, nil
}

func (s *resultServer) DoGetStatement(ctx context.Context, _ flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk)
	go func() {
		defer close(ch)
		for _, b := range s.res.batches {
			b.Retain() // the server releases each chunk it wrote
			select {
			case ch <- flight.StreamChunk{Data: b}:
			case <-ctx.Done():
				b.Release()
				return
			}
		}
	}()
	return walks.Schema, ch, nil
}

// serveResult serves res on 127.0.0.1 and returns the address.
func serveResult(tb testing.TB, res *benchResult) string {
	srv := &resultServer{res: res}
	srv.Alloc = memory.DefaultAllocator
	return serveFlightSQL(tb, srv)
}

// rawScan runs walks.SQL through arrow-go's Flight SQL client and reads every
// batch, nothing else: the anchor.
func rawScan(ctx context.Context, client *flightsql.Client) (int64, error) {
	info, err := client.Execute(ctx, walks.SQL)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ep := range info.GetEndpoint() {
		rdr, err := client.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return n, err
		}
		for rdr.Next() {
			n += rdr.RecordBatch().NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func rawClient(addr string) (*flightsql.Client, error) {
	return flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// envRawScan, when set to a server's address, makes the test binary a raw
// client process (rawScanMain) instead of running tests: the anchor whose
// CPU and memory are read from /proc like the plugin's.
const envRawScan = "QUIVER_BENCH_RAW_SCAN"

func init() {
	if addr := os.Getenv(envRawScan); addr != "" {
		os.Exit(rawScanMain(addr, os.Stdin, os.Stdout))
	}
}

// rawScanMain scans the result once per line read from in and writes the
// rows read (or "error: …") as one line to out, until in ends.
func rawScanMain(addr string, in io.Reader, out io.Writer) int {
	client, err := rawClient(addr)
	if err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return 1
	}
	defer client.Close()
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		n, err := rawScan(context.Background(), client)
		if err != nil {
			fmt.Fprintf(out, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Fprintf(out, "%d\n", n)
	}
	return 0
}

// rawProcess is a running raw client process.
type rawProcess struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	idle  int64 // VmRSS once ready, before any scan
	scans int
	first meter // of the first scan
}

func startRawProcess(addr string) (*rawProcess, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envRawScan+"="+addr)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the raw client process: %w", err)
	}
	p := &rawProcess{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
		_ = p.close()
		return nil, fmt.Errorf("raw client process: %q, %v", line, err)
	}
	if p.idle, _, err = procMemory(p.pid()); err != nil {
		_ = p.close()
		return nil, err
	}
	return p, nil
}

func (p *rawProcess) pid() int { return p.cmd.Process.Pid }

func (p *rawProcess) scan() (int64, error) {
	if _, err := io.WriteString(p.in, "scan\n"); err != nil {
		return 0, err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("raw client process: %w", err)
	}
	line = strings.TrimSpace(line)
	n, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("raw client process: %s", line)
	}
	return n, nil
}

func (p *rawProcess) close() error {
	p.in.Close()
	return p.cmd.Wait()
}

// procCPU is the CPU time process pid has used, every thread included (the
// process's CPUCLOCK_SCHED clock, in nanoseconds, as
// clock_gettime(CLOCK_PROCESS_CPUTIME_ID) reads it for the process itself).
func procCPU(pid int) (time.Duration, error) {
	clock := (^uintptr(pid))<<3 | 2 // MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, fmt.Errorf("clock_gettime of process %d: %w", pid, e)
	}
	return time.Duration(ts.Nano()), nil
}

// procMemory is the process's resident set now and its high-water mark
// (VmRSS, VmHWM of /proc/<pid>/status), in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %q", pid, line)
		}
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS or VmHWM", pid)
	}
	return rss, hwm, nil
}

// resetPeak resets the process's VmHWM to its VmRSS (Linux ≥ 4.0).
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// meter measures one call made on behalf of process pid: its CPU time, and
// its resident set before and at most during the call.
type meter struct {
	cpu       time.Duration
	wall      time.Duration
	rssBefore int64
	hwm       int64
}

func measure(pid int, call func() error) (meter, error) {
	var m meter
	if err := resetPeak(pid); err != nil {
		return m, fmt.Errorf("resetting the peak RSS of process %d: %w", pid, err)
	}
	rss, _, err := procMemory(pid)
	if err != nil {
		return m, err
	}
	c0, err := procCPU(pid)
	if err != nil {
		return m, err
	}
	t0 := time.Now()
	if err := call(); err != nil {
		return m, err
	}
	m.wall = time.Since(t0)
	c1, err := procCPU(pid)
	if err != nil {
		return m, err
	}
	_, hwm, err := procMemory(pid)
	if err != nil {
		return m, err
	}
	m.cpu, m.rssBefore, m.hwm = c1-c0, rss, hwm
	return m, nil
}

// checkAnswer decodes the plugin's answer with the SDK and checks that it
// holds the result: every row, every series once, the sum of the values.
func checkAnswer(dr *pluginv2.DataResponse, format string, res *benchResult) error {
	if dr.Error != "" {
		return fmt.Errorf("%s: query error: %s", format, dr.Error)
	}
	frames, err := decodeFrames(dr.Format, dr.Frames)
	if err != nil {
		return fmt.Errorf("%s: frames do not decode: %w", format, err)
	}
	hosts := map[string]bool{}
	var rows int64
	var sum float64
	addValues := func(f *data.Field) error {
		if f.Type() != data.FieldTypeFloat64 {
			return fmt.Errorf("%s: value field %q is %s, want float64", format, f.Name, f.Type())
		}
		for i := range f.Len() {
			sum += f.At(i).(float64)
		}
		rows += int64(f.Len())
		return nil
	}
	switch format {
	case "time_series":
		for _, f := range frames {
			if len(f.Fields) != 2 {
				return fmt.Errorf("%s: frame of %d fields", format, len(f.Fields))
			}
			hosts[f.Fields[1].Labels["host"]] = true
			if err := addValues(f.Fields[1]); err != nil {
				return err
			}
		}
		if len(frames) != res.hosts {
			return fmt.Errorf("%s: %d frames, want %d", format, len(frames), res.hosts)
		}
	case "time_series_wide":
		if len(frames) != 1 || len(frames[0].Fields) != res.hosts+1 || frames[0].Rows() != res.points {
			return fmt.Errorf("%s: %d frames, want one of %d fields and %d rows", format, len(frames), res.hosts+1, res.points)
		}
		for _, f := range frames[0].Fields[1:] {
			hosts[f.Labels["host"]] = true
			if err := addValues(f); err != nil {
				return err
			}
		}
	case "table":
		if len(frames) != 1 || len(frames[0].Fields) != 3 {
			return fmt.Errorf("%s: %d frames, want one of 3 fields", format, len(frames))
		}
		hf := frames[0].Fields[1]
		if hf.Type() != data.FieldTypeString {
			return fmt.Errorf("%s: host field is %s", format, hf.Type())
		}
		for i := range hf.Len() {
			hosts[hf.At(i).(string)] = true
		}
		if err := addValues(frames[0].Fields[2]); err != nil {
			return err
		}
	default:
		return fmt.Errorf("no check for format %q", format)
	}
	delete(hosts, "")
	if rows != res.rows || len(hosts) != res.hosts {
		return fmt.Errorf("%s: %d rows of %d series, want %d of %d", format, rows, len(hosts), res.rows, res.hosts)
	}
	if math.Abs(sum-res.sum) > 1e-9*math.Max(1, math.Abs(res.sum)) {
		return fmt.Errorf("%s: the values sum to %v, want %v", format, sum, res.sum)
	}
	return nil
}

// envPluginEnv holds extra environment variables for the plugin process
// (space-separated, e.g. "GOGC=50"), for experiments with the Go runtime.
const envPluginEnv = "QUIVER_BENCH_PLUGIN_ENV"

// envPoints sets the points per series of the result (walks.Points when
// unset): a larger result of the same shape, for the memory the plugin
// takes per byte of result once its idle process is a small part of it.
const envPoints = "QUIVER_BENCH_POINTS"

// benchPoints is the points per series the benchmark's result has.
func benchPoints(b *testing.B) int {
	v := os.Getenv(envPoints)
	if v == "" {
		return walks.Points
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 20*walks.Points {
		b.Fatalf("%s=%q: want a number of points per series, 1 to %d", envPoints, v, 20*walks.Points)
	}
	return n
}

// BenchmarkFlightSQLThroughTheBinary serves the 1,000,000-row,
// 1000-series result from a Flight SQL server in this process and reads it
// through the built gpx_quiver binary (a data-source instance pointing at
// the server, QueryData as Grafana sends it, the answer decoded with the
// SDK and checked: rows, series, the values' sum), in each format at codec
// default (auto) and none, and through QueryChunkedData (call=chunked:
// each frame sent as its own chunk once encoded) for time_series and table
// at codec default. Every iteration also scans the result with a raw
// arrow-go Flight SQL client in a child process (the anchor; nothing else
// runs meanwhile), so each ratio is of the same moment. Metrics:
//
//   - plugin-cpu-ns/row, raw-cpu-ns/row: process CPU time (every thread)
//     of the plugin during QueryData and of the raw client during its scan;
//     raw/plugin-cpu is their ratio (the target: ≥ 0.7 for
//     time_series, ≥ 0.8 for table);
//   - rows/s, raw-rows/s, raw/plugin-wall: wall clock, the plugin's
//     including its answer's transfer to this process;
//   - peak-rss/arrow: the plugin's VmHWM during the query (reset before it
//     through /proc/<pid>/clear_refs) over the result's Arrow size (the
//     target: ≤ 1.5), and peak-growth/arrow the same above its VmRSS
//     before the query, the most of the iterations; rss-before-MiB the
//     least VmRSS before a query;
//   - grafana-decode-cpu-ns/row: this process's CPU decoding each answer
//     as Grafana does, by the format it declares (decodeFrames: the SDK's
//     UnmarshalArrowFrames, or json.Unmarshal of each JSON frame);
//   - wire/arrow: the answer's frame bytes over the result's Arrow size;
//   - rss-idle-MiB: the process's VmRSS once started, before any query;
//     first-peak-rss/arrow and first-growth/arrow: the peak of its first
//     query (a process that has held nothing yet), absolute and above
//     rss-idle.
//
// anchor=raw_client/in=bench is the raw client in this process, whose CPU
// (getrusage of the process, during the scan only) holds the server's too;
// anchor=raw_client/in=child reports the child's own memory, as
// server-cpu-ns/row this process's CPU during the child's scan (the
// server's), and arrow-MB, the result's Arrow size. A fresh plugin process
// serves each sub-benchmark; QUIVER_BENCH_PLUGIN_ENV adds environment
// variables to it, and QUIVER_BENCH_POINTS makes the series longer (the
// same 1000 series; 4000 points: a 4,000,000-row result).
//
//	go test -tags arrow_json_stdlib -run '^$' -bench FlightSQLThroughTheBinary -benchtime 3x -count 6 ./tests/e2e
func BenchmarkFlightSQLThroughTheBinary(b *testing.B) {
	res := buildResult(walks.Hosts, benchPoints(b), walks.BatchRows)
	addr := serveResult(b, res)
	benchThroughTheBinary(b, res, addr, strings.Fields(os.Getenv(envPluginEnv)))
}

func benchThroughTheBinary(b *testing.B, res *benchResult, addr string, env []string) {
	raw, err := startRawProcess(addr)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := raw.close(); err != nil {
			b.Errorf("raw client process: %v", err)
		}
	}()
	rawOnce := func() (meter, error) {
		var n int64
		m, err := measure(raw.pid(), func() (err error) {
			n, err = raw.scan()
			return err
		})
		if err == nil && n != res.rows {
			err = fmt.Errorf("raw client process read %d rows, want %d", n, res.rows)
		}
		if raw.scans++; raw.scans == 1 {
			raw.first = m
		}
		return m, err
	}
	rows := float64(res.rows)
	arrowSize := float64(res.arrowBytes)

	b.Run("anchor=raw_client/in=bench", func(b *testing.B) {
		client, err := rawClient(addr)
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		var cpu time.Duration
		for b.Loop() {
			c0 := selfCPU(b)
			n, err := rawScan(context.Background(), client)
			if err != nil || n != res.rows {
				b.Fatalf("raw scan: %d rows, %v", n, err)
			}
			cpu += selfCPU(b) - c0
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/rows, "cpu-ns/row")
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("anchor=raw_client/in=child", func(b *testing.B) {
		var cpu, server time.Duration
		var growth, peak int64
		for b.Loop() {
			s0 := selfCPU(b)
			m, err := rawOnce()
			if err != nil {
				b.Fatal(err)
			}
			server += selfCPU(b) - s0
			cpu += m.cpu
			growth, peak = max(growth, m.hwm-m.rssBefore), max(peak, m.hwm)
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/rows, "cpu-ns/row")
		b.ReportMetric(float64(server.Nanoseconds())/float64(b.N)/rows, "server-cpu-ns/row")
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(peak)/arrowSize, "peak-rss/arrow")
		b.ReportMetric(float64(growth)/arrowSize, "peak-growth/arrow")
		b.ReportMetric(float64(raw.idle)/(1<<20), "rss-idle-MiB")
		b.ReportMetric(arrowSize/1e6, "arrow-MB")
		b.ReportMetric(float64(raw.first.hwm)/arrowSize, "first-peak-rss/arrow")
		b.ReportMetric(float64(raw.first.hwm-raw.idle)/arrowSize, "first-growth/arrow")
	})

	b.Run("anchor=sdk_json/format=table", func(b *testing.B) { benchSDKTableJSON(b, res) })

	rowLimit := "" // the default, which a longer result (envPoints) passes
	if res.rows > settings.DefaultFlightSQLRowLimit {
		rowLimit = fmt.Sprintf(`,"rowLimit":%d`, res.rows)
	}
	codecs := []struct{ name, settings string }{
		{"default", ""},
		{"none", `,"codec":"none"`},
	}
	type benchCase struct {
		format  string
		codec   int  // index in codecs
		chunked bool // QueryChunkedData (each frame a chunk, sent once encoded)
		json    bool // Grafana asks for JSON and replyFormat requested answers in JSON (frame.JSONWriter)
	}
	var cases []benchCase
	for _, format := range []string{"time_series", "time_series_wide", "table"} {
		for ci := range codecs {
			cases = append(cases, benchCase{format: format, codec: ci})
		}
	}
	cases = append(cases, benchCase{format: "time_series", chunked: true}, benchCase{format: "table", chunked: true},
		benchCase{format: "time_series", json: true}, benchCase{format: "table", json: true})
	for _, bc := range cases {
		format, ci, c := bc.format, bc.codec, codecs[bc.codec]
		name := "format=" + format + "/codec=" + c.name
		if bc.chunked {
			name += "/call=chunked"
		}
		reply, asked := "", pluginv2.DataFrameFormat_ARROW
		if bc.json {
			name += "/reply=json"
			reply, asked = `,"replyFormat":"requested"`, pluginv2.DataFrameFormat_JSON
		}
		b.Run(name, func(b *testing.B) {
			plugin, err := harness.Start(binary, os.Stderr, env...)
			if err != nil {
				b.Fatal(err)
			}
			defer plugin.Close()
			pc := harness.Context(int64(9000+ci), fmt.Sprintf(`{"upstream":"flightsql","address":%q,"dialect":"ansi"%s%s%s}`, addr, c.settings, rowLimit, reply), nil)
			now := time.Now()
			q := harness.Query("A", map[string]string{"rawSql": walks.SQL, "format": format}, now.Add(-time.Hour), now, time.Second, 1000)
			ctx := context.Background()
			query := func() (*pluginv2.DataResponse, error) {
				if bc.chunked {
					return queryChunked(ctx, plugin, pc, q)
				}
				resp, err := plugin.QueryData(ctx, pc, asked, q)
				if err != nil {
					return nil, err
				}
				return resp.Responses["A"], nil
			}
			idle, _, err := procMemory(plugin.Pid)
			if err != nil {
				b.Fatal(err)
			}
			// The first query (the instance, its connection, the pools)
			// on a process that has held nothing yet, checked.
			var dr *pluginv2.DataResponse
			first, err := measure(plugin.Pid, func() (err error) {
				dr, err = query()
				return err
			})
			if err == nil {
				err = checkAnswer(dr, format, res)
			}
			if err == nil && !bc.chunked && dr.Format != asked {
				err = fmt.Errorf("%s: answered in %v, asked for %v", name, dr.Format, asked)
			}
			if err != nil {
				b.Fatal(err)
			}
			var (
				cpu, rawCPU, rawWall, decode time.Duration
				growth, peak, wire           int64
				before                       int64 = math.MaxInt64
			)
			for b.Loop() {
				b.StopTimer()
				r, err := rawOnce()
				if err != nil {
					b.Fatal(err)
				}
				rawCPU += r.cpu
				rawWall += r.wall
				b.StartTimer()
				m, err := measure(plugin.Pid, func() (err error) {
					dr, err = query()
					return err
				})
				b.StopTimer()
				if err == nil { // Grafana's side: the answer decoded by the format it declares
					d0 := selfCPU(b)
					_, err = decodeFrames(dr.Format, dr.Frames)
					decode += selfCPU(b) - d0
				}
				if err == nil {
					err = checkAnswer(dr, format, res)
				}
				if err != nil {
					b.Fatal(err)
				}
				wire = 0
				for _, f := range dr.Frames {
					wire += int64(len(f))
				}
				dr = nil
				cpu += m.cpu
				growth, peak, before = max(growth, m.hwm-m.rssBefore), max(peak, m.hwm), min(before, m.rssBefore)
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(cpu.Nanoseconds())/n/rows, "plugin-cpu-ns/row")
			b.ReportMetric(float64(rawCPU.Nanoseconds())/n/rows, "raw-cpu-ns/row")
			b.ReportMetric(float64(decode.Nanoseconds())/n/rows, "grafana-decode-cpu-ns/row")
			b.ReportMetric(float64(rawCPU)/float64(cpu), "raw/plugin-cpu")
			b.ReportMetric(rows*n/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(rows*n/rawWall.Seconds(), "raw-rows/s")
			b.ReportMetric(float64(rawWall)/float64(b.Elapsed()), "raw/plugin-wall")
			b.ReportMetric(float64(peak)/arrowSize, "peak-rss/arrow")
			b.ReportMetric(float64(growth)/arrowSize, "peak-growth/arrow")
			b.ReportMetric(float64(before)/(1<<20), "rss-before-MiB")
			b.ReportMetric(float64(idle)/(1<<20), "rss-idle-MiB")
			b.ReportMetric(float64(wire)/arrowSize, "wire/arrow")
			b.ReportMetric(float64(first.hwm)/arrowSize, "first-peak-rss/arrow")
			b.ReportMetric(float64(first.hwm-idle)/arrowSize, "first-growth/arrow")
		})
	}
}

// queryChunked runs q through QueryChunkedData and gathers its chunks
// (one frame each here) into a DataResponse.
func queryChunked(ctx context.Context, p *harness.Plugin, pc *pluginv2.PluginContext, q *pluginv2.DataQuery) (*pluginv2.DataResponse, error) {
	chunks, err := p.QueryChunked(ctx, pc, pluginv2.DataFrameFormat_ARROW, q)
	if err != nil {
		return nil, err
	}
	dr := &pluginv2.DataResponse{}
	for _, c := range chunks {
		if c.Error != "" {
			dr.Error = c.Error
		}
		if len(c.Frame) > 0 {
			dr.Frames = append(dr.Frames, c.Frame)
		}
	}
	return dr, nil
}

// TestThroughTheBinaryMeters checks what the benchmark above reads from
// /proc, on a small result through the binary: the plugin's answer passes
// the checks and a wrong one does not, the peak resets, the CPU clock of
// another process counts.
func TestThroughTheBinaryMeters(t *testing.T) {
	res := buildResult(20, 50, 64)
	addr := serveResult(t, res)
	pc := instance(fmt.Sprintf(`{"upstream":"flightsql","address":%q,"dialect":"ansi"}`, addr), nil)
	for _, format := range []string{"time_series", "time_series_wide", "table"} {
		q := harness.Query("A", map[string]string{"rawSql": walks.SQL, "format": format}, from, t0, time.Second, 1000)
		var dr *pluginv2.DataResponse
		m, err := measure(plug.Pid, func() error {
			resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, q)
			if err == nil {
				dr = resp.Responses["A"]
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := checkAnswer(dr, format, res); err != nil {
			t.Fatal(err)
		}
		if m.cpu <= 0 || m.hwm < m.rssBefore {
			t.Errorf("%s: plugin CPU %v, RSS %d before and %d at most", format, m.cpu, m.rssBefore, m.hwm)
		}
		// The same answer for a result of one more host, or other values, fails.
		other := *res
		other.hosts++
		if err := checkAnswer(dr, format, &other); err == nil {
			t.Errorf("%s: the check passes an answer with a series missing", format)
		}
		other = *res
		other.sum++
		if err := checkAnswer(dr, format, &other); err == nil {
			t.Errorf("%s: the check passes an answer with other values", format)
		}
	}

	// The plugin's CPU clock agrees with its utime + stime (10 ms ticks).
	c0, err := procCPU(plug.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ticks, err := plug.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	c1, err := procCPU(plug.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if ticks < c0-20*time.Millisecond || ticks > c1+20*time.Millisecond {
		t.Errorf("plugin CPU: clock %v–%v, /proc stat %v", c0, c1, ticks)
	}

	// The high-water mark of a child process falls back to its RSS when
	// reset, and its CPU clock moves with the work it does.
	raw, err := startRawProcess(addr)
	if err != nil {
		t.Fatal(err)
	}
	m, err := measure(raw.pid(), func() error {
		n, err := raw.scan()
		if err == nil && n != res.rows {
			err = fmt.Errorf("raw client process read %d rows, want %d", n, res.rows)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.cpu <= 0 {
		t.Errorf("raw client process: CPU %v", m.cpu)
	}
	if err := resetPeak(raw.pid()); err != nil {
		t.Fatal(err)
	}
	rss, hwm, err := procMemory(raw.pid())
	if err != nil {
		t.Fatal(err)
	}
	// A page or so may be touched between the reset and the read.
	if hwm-rss > 1<<20 {
		t.Errorf("after clear_refs: VmHWM %d, VmRSS %d", hwm, rss)
	}
	if err := raw.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := procCPU(raw.pid()); err == nil {
		t.Errorf("the CPU clock of an ended process reads")
	}
}
