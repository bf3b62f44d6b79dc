//go:build sqlengines

package flightsql

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/tests/sqlengine"
)

// TestMain stops the PostgreSQL and MariaDB servers the real-engine tests
// started (tests/sqlengine runs one of each per test binary).
func TestMain(m *testing.M) {
	code := m.Run()
	if err := sqlengine.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// sqlEngine is what the reference queries write differently per engine.
type sqlEngine struct {
	integer string // the CAST target of a 64-bit integer
	double  string // the CAST target of a float64
	div     string // integer division (of non-negative integers)
}

func (e sqlEngine) sql(s string) string {
	return strings.NewReplacer("{int}", e.integer, "{double}", e.double, "{div}", e.div).Replace(s)
}

// refCase is one macro query through the Source and the same aggregate
// written by hand in the engine's SQL: integer arithmetic on the Unix
// seconds (e) or milliseconds (em) stored beside every time, no time
// function and no macro rendering. ref returns (ms, [host,] value).
type refCase struct {
	name, sql, ref string
	buckets        int // distinct times the reference must have (a check that it is not empty)
}

// floorMs is the hand-written bucket of col (a Unix time in units of unit
// ms) at width ms, in milliseconds: floor division, right before 1970 too.
func floorMs(col string, unit, width int64) string {
	return fmt.Sprintf("CAST(FLOOR(%s / %d.0) AS {int}) * %d", col, width/unit, width)
}

// The reference bounds of the dashboard range in Unix seconds.
const refRangeSeconds = "BETWEEN 1767225600 AND 1767229200"

// commonCases run on both engines against table m (see the engine's
// table function) and table old (1969-12-31 23:00Z to 1970-01-01 01:00Z).
var commonCases = []refCase{
	{"timeGroupAlias+timeFilter/zoned/5m",
		"SELECT $__timeGroupAlias(ts, 5m), host, avg(v) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 300_000) + ", host, avg(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1, 2", 12},
	{"timeGroupAlias+timeFilter/zone-less/7m",
		"SELECT $__timeGroupAlias(tsn, 7m), host, sum(v) AS v FROM m WHERE $__timeFilter(tsn) GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 420_000) + ", host, sum(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1, 2", 9},
	// 7 minutes do not divide the 22:00 hour the table starts in: the
	// buckets must count from the epoch, not from an hour or a day.
	{"timeGroup/zoned/7m (aligned on the epoch)",
		"SELECT $__timeGroup(ts, 7m) AS time, CAST(count(*) AS {double}) AS v FROM m GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 420_000) + ", CAST(count(*) AS {double}) FROM m GROUP BY 1", 87},
	{"timeGroup/zone-less/7m (aligned on the epoch)",
		"SELECT $__timeGroup(tsn, 7m) AS time, CAST(count(*) AS {double}) AS v FROM m GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 420_000) + ", CAST(count(*) AS {double}) FROM m GROUP BY 1", 87},
	{"timeGroup+interval/zoned",
		"SELECT $__timeGroup(ts, $__interval) AS time, max(v) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 60_000) + ", max(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 60},
	{"timeGroup/zoned/1d (buckets in UTC, not the session zone)",
		"SELECT $__timeGroupAlias(ts, 1d), CAST(count(*) AS {double}) AS v FROM m GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 86_400_000) + ", CAST(count(*) AS {double}) FROM m GROUP BY 1", 2},
	{"timeGroup/zone-less/1w (aligned on the epoch, a Thursday)",
		"SELECT $__timeGroupAlias(tsn, 1w), CAST(count(*) AS {double}) AS v FROM m GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 604_800_000) + ", CAST(count(*) AS {double}) FROM m GROUP BY 1", 2},
	{"timeFrom+timeTo/zoned/10m",
		"SELECT $__timeGroupAlias(ts, 10m), host, avg(v) AS v FROM m WHERE ts >= $__timeFrom() AND ts < $__timeTo() GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 600_000) + ", host, avg(v) FROM m WHERE e >= 1767225600 AND e < 1767229200 GROUP BY 1, 2", 6},
	{"timeFrom+timeTo/zone-less/15m",
		"SELECT $__timeGroupAlias(tsn, 15m), avg(v) AS v FROM m WHERE tsn BETWEEN $__timeFrom() AND $__timeTo() GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 900_000) + ", avg(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 4},
	{"unixEpochGroup+unixEpochFilter",
		"SELECT $__unixEpochGroup(e, 10m) AS time, host, sum(v) AS v FROM m WHERE $__unixEpochFilter(e) GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 600_000) + ", host, sum(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1, 2", 6},
	{"unixEpochGroup+unixEpochFrom/To",
		"SELECT $__unixEpochGroup(e, 1h) AS time, avg(v) AS v FROM m WHERE e >= $__unixEpochFrom() AND e <= $__unixEpochTo() GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 3_600_000) + ", avg(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 1},
	{"interval_ms+unixEpochMsFilter",
		"SELECT em {div} $__interval_ms * $__interval_ms AS time, host, max(v) AS v FROM m WHERE $__unixEpochMsFilter(em) GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 60_000) + ", host, max(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1, 2", 60},
	{"unixEpochMsFrom/To",
		"SELECT em {div} 300000 * 300000 AS time, avg(v) AS v FROM m WHERE em >= $__unixEpochMsFrom() AND em <= $__unixEpochMsTo() GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 300_000) + ", avg(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 12},
	{"unixEpochNanoFilter+NanoFrom/To",
		"SELECT $__unixEpochGroup(e, 5m) AS time, sum(v) AS v FROM m WHERE $__unixEpochNanoFilter(en) AND en >= $__unixEpochNanoFrom() AND en <= $__unixEpochNanoTo() GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 300_000) + ", sum(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 12},
	// Before 1970: integer and zone-less groups round down, not towards 0.
	{"unixEpochGroup/before 1970",
		"SELECT $__unixEpochGroup(e, 5m) AS time, sum(v) AS v FROM old GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 300_000) + ", sum(v) FROM old GROUP BY 1", 24},
	{"timeGroup/zone-less/7m/before 1970",
		"SELECT $__timeGroupAlias(tsn, 7m), host, sum(v) AS v FROM old GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 420_000) + ", host, sum(v) FROM old GROUP BY 1, 2", 18},
}

// runRefCases runs every case through s (time_series format) and compares
// each frame point by point with the reference rows from query.
func runRefCases(t *testing.T, s *Source, eng sqlEngine, query func(string) [][]any, cases []refCase) {
	t.Helper()
	for _, tc := range cases {
		ref := refSeries(t, query(eng.sql(tc.ref)))
		if n := distinctTimes(ref); n != tc.buckets {
			t.Errorf("%s: the reference has %d distinct times, want %d", tc.name, n, tc.buckets)
			continue
		}
		got := seriesOf(t, engineQuery(t, s, eng.sql(tc.sql), FormatTimeSeries))
		if !equalSeries(got, ref) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, ref)
		}
	}
}

// refSeries reads the engine's own answer, rows of (milliseconds, [host,]
// value), as series keyed the way Grafana labels them.
func refSeries(t *testing.T, rows [][]any) map[string][]point {
	t.Helper()
	out := map[string][]point{}
	for _, r := range rows {
		key := data.Labels{}.String()
		if len(r) == 3 {
			key = data.Labels{"host": driverText(r[1])}.String()
		}
		out[key] = append(out[key], point{asInt(t, r[0]), asFloat(t, r[len(r)-1])})
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b point) int { return int(a.ms - b.ms) })
	}
	return out
}

// driverText, asInt and asFloat read a driver value: pgx gives Go values,
// MariaDB's text protocol bytes.
func driverText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

func asInt(t *testing.T, v any) int64 {
	t.Helper()
	if n, ok := v.(int64); ok {
		return n
	}
	n, err := strconv.ParseInt(driverText(v), 10, 64)
	if err != nil {
		t.Fatalf("reference value %v (%T): %v", v, v, err)
	}
	return n
}

func asFloat(t *testing.T, v any) float64 {
	t.Helper()
	if f, ok := v.(float64); ok {
		return f
	}
	f, err := strconv.ParseFloat(driverText(v), 64)
	if err != nil {
		t.Fatalf("reference value %v (%T): %v", v, v, err)
	}
	return f
}

// checkTimeFilterRows reads col raw through s (table format) with
// $__timeFilter and wants exactly the rows of 00:00–01:00Z, by e.
func checkTimeFilterRows(t *testing.T, s *Source, srv *sqlengine.Server, col string) {
	t.Helper()
	got := frameTimes(t, engineQuery(t, s, fmt.Sprintf("SELECT %s AS time, v FROM m WHERE $__timeFilter(%s) ORDER BY 1", col, col), FormatTable))
	var want []int64
	for _, r := range srv.Query(t, "SELECT e * 1000 FROM m WHERE e "+refRangeSeconds+" ORDER BY 1") {
		want = append(want, asInt(t, r[0]))
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("%s: selected %d rows %v…, want the %d rows of 00:00–01:00Z %v…", col, len(got), head(got), len(want), head(want))
	}
}

// engineRun is how one engine's macro test runs: in UTC and
// America/New_York, with the dialect found by auto (from GetSqlInfo) and
// set explicitly, every reference case and the raw rows $__timeFilter
// selects from each time column.
type engineRun struct {
	start   func(t testing.TB, tz string) *sqlengine.Server
	tables  func(t *testing.T, srv *sqlengine.Server)
	dialect string
	sql     sqlEngine
	// configure sets the catalog and schema settings for srv's database.
	configure func(cfg *settings.FlightSQL, srv *sqlengine.Server)
	// cases and cols: the cases and time columns for the session zone tz.
	cases func(tz string) []refCase
	cols  func(tz string) []string
}

func (r engineRun) run(t *testing.T) {
	for _, tz := range []string{"UTC", "America/New_York"} {
		srv := r.start(t, tz)
		r.tables(t, srv)
		query := func(sql string) [][]any { return srv.Query(t, sql) }
		for _, setting := range []string{settings.DialectAuto, r.dialect} {
			t.Run(tz+"/"+setting, func(t *testing.T) {
				cfg := baseConfig(srv.Addr)
				cfg.Dialect = setting
				r.configure(&cfg, srv)
				s := newTestSource(t, cfg)
				checkHealth(t, s, healthWant(srv, r.dialect, setting == settings.DialectAuto))
				runRefCases(t, s, r.sql, query, r.cases(tz))
				for _, col := range r.cols(tz) {
					checkTimeFilterRows(t, s, srv, col)
				}
			})
		}
	}
}

// healthWant is the health report for a server the Source found by auto
// or was told by the dialect setting.
func healthWant(srv *sqlengine.Server, dialect string, auto bool) string {
	how := "dialect setting"
	if auto {
		how = "auto"
	}
	return fmt.Sprintf("Connected to %s %s at %s; SQL dialect %s (%s)", srv.Name, srv.Version, srv.Addr, dialect, how)
}

func checkHealth(t *testing.T, s *Source, want string) {
	t.Helper()
	if got, err := s.HealthReport(context.Background()); err != nil || got != want {
		t.Fatalf("health: %q, %v; want %q", got, err, want)
	}
}
