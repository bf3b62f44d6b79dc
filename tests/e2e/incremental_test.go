//go:build duckdb && sqlengines

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/tests/engine"
	"github.com/quiverdata/quiver/tests/harness"
	"github.com/quiverdata/quiver/tests/redisserver"
)

// The refreshing dashboard of the incremental tests and benchmark: 24 h of
// four hosts' points every 5 s in DuckDB, and six panels over them, asked
// again every 10 s of new data.
const (
	dashPoint   = 5 * time.Second
	dashHosts   = 4
	dashRange   = 24 * time.Hour
	dashRefresh = 10 * time.Second
)

type panel struct{ sql, format string }

var dashPanels = []panel{
	{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts) ORDER BY 1", "time_series"},
	{"SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)", "time_series_wide"},
	{"SELECT $__timeGroupAlias(ts, 1m), host, avg(v) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2", "time_series"},
	{"SELECT $__timeGroupAlias(ts, 2m, 0), host, max(v) AS v FROM m WHERE $__timeFilter(ts) AND host <> 'h3' GROUP BY 1, 2", "time_series_wide"},
	{"SELECT em AS time, host, v FROM m WHERE $__unixEpochMsFilter(em)", "time_series"},
	{"SELECT $__timeGroupAlias(ts, $__interval), avg(v) AS v, count(*) AS n FROM m WHERE $__timeFilter(ts) GROUP BY 1", "time_series"},
}

// logPanels are a logs dashboard's panels on the same rows: every point
// as a line, newest first, and the spikes.
var logPanels = []panel{
	{"SELECT ts AS time, host, 'v=' || round(v, 2)::VARCHAR AS message FROM m WHERE $__timeFilter(ts) ORDER BY ts DESC, host", "logs"},
	{"SELECT ts, 'spike on ' || host AS body FROM m WHERE $__timeFilter(ts) AND v > 9 ORDER BY 1 DESC, body", "logs"},
}

// dashboard is DuckDB behind Flight SQL holding the dashboard's rows, up
// to now.
type dashboard struct {
	srv *engine.Server
	now time.Time
	n   int // refreshes so far
}

func newDashboard(tb testing.TB) *dashboard {
	tb.Helper()
	d := &dashboard{srv: engine.Start(tb, "UTC"), now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	d.srv.Exec(tb, `CREATE TABLE m (ts TIMESTAMPTZ, em BIGINT, host VARCHAR, v DOUBLE)`)
	d.insert(tb, d.now.Add(-dashRange-time.Hour), d.now)
	return d
}

func (d *dashboard) insert(tb testing.TB, from, to time.Time) {
	tb.Helper()
	d.srv.Exec(tb, fmt.Sprintf(`INSERT INTO m SELECT t, epoch_ms(t), 'h' || h::VARCHAR, sin(epoch(t) / 600 + h) * 10 + h
		FROM (SELECT make_timestamptz(%d::BIGINT) + i * INTERVAL '%d seconds' AS t FROM range(0, %d) r(i)), range(0, %d) hs(h)`,
		from.UnixMicro(), int(dashPoint/time.Second), int(to.Sub(from)/dashPoint), dashHosts))
}

// refresh lets dashRefresh of rows arrive (and one late row, 60 s back,
// every fifth time).
func (d *dashboard) refresh(tb testing.TB) {
	tb.Helper()
	next := d.now.Add(dashRefresh)
	d.insert(tb, d.now, next)
	if d.n%5 == 4 {
		late := d.now.Add(-time.Minute + 2*time.Second)
		d.srv.Exec(tb, fmt.Sprintf(`INSERT INTO m VALUES (make_timestamptz(%d::BIGINT), %d, 'h0', 99)`, late.UnixMicro(), late.UnixMilli()))
	}
	d.now, d.n = next, d.n+1
}

// query asks every panel of the dashboard on p for the last 24 h.
func (d *dashboard) query(ctx context.Context, p *harness.Plugin, pc *pluginv2.PluginContext) (*pluginv2.QueryDataResponse, error) {
	return d.queryPanels(ctx, p, pc, dashPanels)
}

// queryPanels asks panels on p for the last 24 h.
func (d *dashboard) queryPanels(ctx context.Context, p *harness.Plugin, pc *pluginv2.PluginContext, panels []panel) (*pluginv2.QueryDataResponse, error) {
	var qs []*pluginv2.DataQuery
	for i, panel := range panels {
		qs = append(qs, harness.Query(fmt.Sprintf("P%d", i), map[string]string{"rawSql": panel.sql, "format": panel.format},
			d.now.Add(-dashRange), d.now, 90*time.Second, 1000))
	}
	return p.QueryData(ctx, pc, pluginv2.DataFrameFormat_ARROW, qs...)
}

// dashboardSource is the jsonData of a Flight SQL data source on the
// dashboard's server, with extra settings.
func dashboardSource(d *dashboard, extra string) string {
	return fmt.Sprintf(`{"upstream":"flightsql","address":%q,"dialect":"duckdb"%s}`, d.srv.Addr, extra)
}

// panelSeries reads each panel's frames as series: labels and field name
// to their (time, value) points.
func panelSeries(resp *pluginv2.QueryDataResponse) (map[string]map[string][][2]float64, map[string]map[string]float64, error) {
	out, st := map[string]map[string][][2]float64{}, map[string]map[string]float64{}
	for ref, dr := range resp.Responses {
		if dr.Error != "" {
			return nil, nil, fmt.Errorf("%s: %s", ref, dr.Error)
		}
		frames, err := data.UnmarshalArrowFrames(dr.Frames)
		if err != nil {
			return nil, nil, err
		}
		series := map[string][][2]float64{}
		for _, f := range frames {
			for _, fl := range f.Fields[1:] {
				key := fl.Name + fl.Labels.String()
				for i := range fl.Len() {
					t, _ := f.Fields[0].ConcreteAt(i)
					v, ok := fl.NullableFloatAt(i)
					p := [2]float64{float64(t.(time.Time).UnixMilli()), -1e300}
					if ok == nil && v != nil {
						p[1] = *v
					}
					series[key] = append(series[key], p)
				}
			}
		}
		out[ref] = series
		if len(frames) > 0 && frames[0].Meta != nil {
			st[ref] = map[string]float64{}
			for _, s := range frames[0].Meta.Stats {
				st[ref][s.DisplayName] = s.Value
			}
		}
	}
	return out, st, nil
}

func sameSeries(a, b map[string][][2]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, pa := range a {
		pb := b[k]
		if len(pa) != len(pb) {
			return false
		}
		for i := range pa {
			if pa[i] != pb[i] {
				return false
			}
		}
	}
	return true
}

// TestIncrementalThroughTheBinary refreshes the dashboard 12 times through
// two plugin processes (two Grafana replicas) and three data sources: one
// incremental in memory, one sharing Redis (the replicas take turns), one
// full. Every panel's incremental answer equals the full one at the same
// moment; from the second refresh on, each reads at most 1 % of the rows
// the full query reads; the second replica serves the first's kept
// answers; the plugin's metrics count it.
func TestIncrementalThroughTheBinary(t *testing.T) {
	d := newDashboard(t)
	rs := redisserver.Start(t)
	second, err := harness.Start(binary, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	replicas := []*harness.Plugin{plug, second}
	memory := harness.Context(7101, dashboardSource(d, ""), nil)
	redis := harness.Context(7102, dashboardSource(d, fmt.Sprintf(`,"redisAddress":%q`, rs.Addr)), nil)
	full := harness.Context(7103, dashboardSource(d, `,"incrementalQueries":false`), nil)
	ctx := context.Background()
	before, err := plug.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 12 {
		d.refresh(t)
		wantResp, err := d.query(ctx, plug, full)
		if err != nil {
			t.Fatal(err)
		}
		want, wantStats, err := panelSeries(wantResp)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			p    *harness.Plugin
			pc   *pluginv2.PluginContext
		}{{"memory", plug, memory}, {"redis", replicas[r%2], redis}} {
			resp, err := d.query(ctx, c.p, c.pc)
			if err != nil {
				t.Fatal(err)
			}
			got, st, err := panelSeries(resp)
			if err != nil {
				t.Fatal(err)
			}
			for ref := range want {
				if !sameSeries(got[ref], want[ref]) {
					t.Fatalf("refresh %d, %s, %s: the answer differs from the full query's", r, c.name, ref)
				}
				if r == 0 {
					continue
				}
				read, fullRead := st[ref]["Rows read from the server"], wantStats[ref]["Rows read from the server"]
				if st[ref]["Incremental query"] != 1 || read > fullRead/100 {
					t.Errorf("refresh %d, %s, %s: %v rows read against %v in full; stats %v", r, c.name, ref, read, fullRead, st[ref])
				}
			}
		}
	}
	after, err := plug.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inc := `quiver_incremental_queries_total{reason="",result="incremental"}`
	if n := after[inc] - before[inc]; n < 11*float64(len(dashPanels)) {
		t.Errorf("the metrics count %v incremental queries on the first replica, want at least %d", n, 11*len(dashPanels))
	}
	if after["quiver_result_cache_bytes"] <= 0 {
		t.Errorf("quiver_result_cache_bytes = %v", after["quiver_result_cache_bytes"])
	}
	// The in-memory cache is counted in the memory budget: once the last
	// reply's buffers are freed, the budget holds exactly the cache.
	for i := 0; ; i++ {
		m, err := plug.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		used, cached := m["quiver_memory_budget_used_bytes"], m["quiver_result_cache_bytes"]
		if used == cached {
			break
		}
		if i == 100 {
			t.Fatalf("the memory budget holds %v bytes with no query in flight, the result cache %v", used, cached)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name := range after {
		if strings.HasPrefix(name, "quiver_result_cache_errors_total") {
			t.Errorf("%s = %v", name, after[name])
		}
	}
}

// BenchmarkIncrementalDashboard refreshes the six-panel, 24 h dashboard 60
// times (10 s of new rows each) through the binary, each op on a new data
// source (an empty cache): store=memory and store=redis keep answers and
// read the rest incrementally, anchor=full reads every panel in full each
// time; the ",panels=logs" pair does the same with the two logs panels
// (69 120 and about 11 500 lines). Reported per refresh after the first: rows read from the server,
// that as a percentage of the rows the answer holds, the plugin's CPU and
// the engine's (DuckDB serving Flight SQL in this process, with the gRPC
// client that reads the replies); and the bytes the cache holds at the end.
func BenchmarkIncrementalDashboard(b *testing.B) {
	d := newDashboard(b)
	rs := redisserver.Start(b)
	ctx := context.Background()
	const refreshes = 60
	id := int64(7200)
	for _, c := range []struct {
		name, extra string
		panels      []panel
	}{
		{"anchor=full", `,"incrementalQueries":false`, dashPanels},
		{"store=memory", "", dashPanels},
		{"store=redis", fmt.Sprintf(`,"redisAddress":%q`, rs.Addr), dashPanels},
		{"anchor=full,panels=logs", `,"incrementalQueries":false`, logPanels},
		{"store=memory,panels=logs", "", logPanels},
	} {
		b.Run(c.name, func(b *testing.B) {
			var cpu, engineCPU time.Duration
			var cacheBytes float64
			var rows, rowsFull float64
			cacheBefore := func() float64 {
				m, err := plug.Metrics(ctx)
				if err != nil {
					b.Fatal(err)
				}
				return m["quiver_result_cache_bytes"]
			}
			for range b.N {
				b.StopTimer()
				rs.Do("flushall")
				held := cacheBefore() // other data sources' kept answers
				b.StartTimer()
				id++
				pc := harness.Context(id, dashboardSource(d, c.extra), nil)
				if _, err := d.queryPanels(ctx, plug, pc, c.panels); err != nil { // fills the cache
					b.Fatal(err)
				}
				for range refreshes {
					b.StopTimer()
					d.refresh(b)
					b.StartTimer()
					c0, err := procCPU(plug.Pid)
					if err != nil {
						b.Fatal(err)
					}
					s0 := selfCPU(b)
					resp, err := d.queryPanels(ctx, plug, pc, c.panels)
					if err != nil {
						b.Fatal(err)
					}
					c1, err := procCPU(plug.Pid)
					if err != nil {
						b.Fatal(err)
					}
					cpu += c1 - c0
					engineCPU += selfCPU(b) - s0
					_, st, err := panelSeries(resp)
					if err != nil {
						b.Fatal(err)
					}
					for _, s := range st {
						rows += s["Rows read from the server"]
						rowsFull += s["Rows read from the server"] + s["Rows served from the cache"]
					}
				}
				switch {
				case strings.HasPrefix(c.name, "store=memory"):
					cacheBytes += cacheBefore() - held
				case strings.HasPrefix(c.name, "store=redis"):
					cacheBytes += redisBytes(b, rs)
				}
			}
			n := float64(b.N * refreshes)
			b.ReportMetric(rows/n, "rows-read/refresh")
			b.ReportMetric(100*rows/rowsFull, "read-%-of-answer")
			b.ReportMetric(float64(cpu.Microseconds())/1e3/n, "plugin-cpu-ms/refresh")
			// DuckDB's scan and Flight SQL server, with the bench's gRPC
			// client reading the replies (this process).
			b.ReportMetric(float64(engineCPU.Microseconds())/1e3/n, "engine-cpu-ms/refresh")
			b.ReportMetric(cacheBytes/float64(b.N), "cache-bytes")
		})
	}
}

// redisBytes is the bytes of the values Redis holds under quiver's prefix.
func redisBytes(b *testing.B, rs *redisserver.Server) float64 {
	c := rs.Client()
	defer c.Close()
	keys, err := c.Keys(context.Background(), "quiver:*").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, k := range keys {
		l, err := c.StrLen(context.Background(), k).Result()
		if err != nil {
			b.Fatal(err)
		}
		n += l
	}
	return float64(n)
}
