//go:build sqlengines

package flightsql

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/sqlengine"
)

var mysqlSQL = sqlEngine{integer: "SIGNED", double: "DOUBLE", div: "DIV"}

// mysqlTables fills, on MariaDB, the tables of postgresTables: m with ts
// TIMESTAMP (an instant) and tsn DATETIME holding UTC, and old (DATETIME
// only: TIMESTAMP starts in 1970). TIMESTAMP values are written with
// FROM_UNIXTIME, which the engine reads in the session's zone and stores
// as the instant.
func mysqlTables(t *testing.T, srv *sqlengine.Server) {
	srv.Exec(t, `
		CREATE TABLE m (ts TIMESTAMP(3) NULL, tsn DATETIME(3), e BIGINT, em BIGINT, en BIGINT, host VARCHAR(8), v DOUBLE);
		INSERT INTO m SELECT FROM_UNIXTIME(1767218400 + seq * 37), DATE_ADD('2025-12-31 22:00:00', INTERVAL seq * 37 SECOND),
		       1767218400 + seq * 37, (1767218400 + seq * 37) * 1000, (1767218400 + seq * 37) * 1000000000,
		       CONCAT('h', seq % 3), (seq * 7) % 50
		FROM seq_0_to_971;
		CREATE TABLE old (tsn DATETIME(3), e BIGINT, host VARCHAR(8), v DOUBLE);
		INSERT INTO old SELECT DATE_ADD('1969-12-31 23:00:00', INTERVAL seq * 37 SECOND), -3600 + CAST(seq AS SIGNED) * 37,
		       CONCAT('h', seq % 3), (seq * 7) % 50
		FROM seq_0_to_194`)
}

// mysqlCases adds the schema macro (a MariaDB schema is its database).
var mysqlCases = []refCase{
	{"schema",
		"SELECT $__timeGroupAlias(tsn, 30m), avg(v) AS v FROM $__schema.m WHERE $__timeFilter(tsn) GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 1_800_000) + ", avg(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 2},
}

// TestMySQLMacros runs every macro the mysql dialect renders through the
// Source against MariaDB, in UTC and America/New_York (named zones: the
// engine's zone tables are loaded), with the dialect found by auto and set
// explicitly, and compares every frame point by point with MariaDB's own
// answer to the same aggregate written by hand. DATETIME columns in both
// zones; TIMESTAMP columns in UTC only, see TestMySQLTimestampSessionZone.
func TestMySQLMacros(t *testing.T) {
	engineRun{
		start: sqlengine.MySQL, tables: mysqlTables, dialect: settings.DialectMySQL, sql: mysqlSQL,
		configure: func(cfg *settings.FlightSQL, srv *sqlengine.Server) { cfg.Schema = srv.Database },
		// TIMESTAMP columns (ts) need a UTC session: docs/dialects.md,
		// TestMySQLTimestampSessionZone.
		cases: func(tz string) []refCase {
			cases := append(slices.Clone(commonCases), mysqlCases...)
			if tz != "UTC" {
				cases = zoneLess(cases)
			}
			return cases
		},
		cols: func(tz string) []string {
			if tz != "UTC" {
				return []string{"tsn"}
			}
			return []string{"ts", "tsn"}
		},
	}.run(t)
}

// TestMySQLSubSecondError: the mysql dialect has no bucket below a second;
// the query fails with the documented error naming the macro, the dialect
// and the interval, and nothing is sent to the engine.
func TestMySQLSubSecondError(t *testing.T) {
	srv := sqlengine.MySQL(t, "")
	mysqlTables(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	js, err := json.Marshal(map[string]string{"rawSql": "SELECT $__timeGroupAlias(tsn, 500ms), avg(v) AS v FROM m GROUP BY 1", "format": FormatTimeSeries})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Query(context.Background(), source.Query{RefID: "A", JSON: js, From: engineFrom, To: engineTo, Interval: time.Minute}, &frameSink{t: t})
	mustKind(t, err, source.KindQuery, "$__timeGroupAlias: the mysql SQL dialect has no rendering for an interval below whole seconds (500ms)")
}

// zoneLess drops the cases on the zoned column (ts).
func zoneLess(cases []refCase) []refCase {
	var out []refCase
	for _, c := range cases {
		if !strings.Contains(c.name, "zoned") {
			out = append(out, c)
		}
	}
	return out
}

// TestMySQLTimestampSessionZone is the documented limit of the mysql
// dialect: MariaDB writes a TIMESTAMP column in the session's zone and
// reads zone-less literals in it, so outside a UTC session a 00:00–01:00Z
// range selects the rows of 05:00–06:00Z in America/New_York (DATETIME
// columns, holding UTC, are right in every zone). If this test fails, the
// mysql section of docs/dialects.md is out of date.
func TestMySQLTimestampSessionZone(t *testing.T) {
	srv := sqlengine.MySQL(t, "America/New_York")
	mysqlTables(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	got := frameTimes(t, engineQuery(t, s, "SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) ORDER BY 1", FormatTable))
	var want []int64
	for _, r := range srv.Query(t, "SELECT e * 1000 FROM m WHERE e BETWEEN 1767243600 AND 1767247200 ORDER BY 1") {
		want = append(want, asInt(t, r[0]))
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("TIMESTAMP in America/New_York: selected %v…, want the rows of 05:00–06:00Z %v… (the documented shift)", head(got), head(want))
	}
}

// TestMySQLFractionBefore1970 is the other documented limit: MariaDB's
// TIMESTAMPDIFF(SECOND, …) truncates towards zero, so a DATETIME less than
// a second before a bucket's boundary, before 1970, lands in the next
// bucket (whole seconds are right: TestMySQLMacros). If this test fails,
// the mysql section of docs/dialects.md is out of date.
func TestMySQLFractionBefore1970(t *testing.T) {
	srv := sqlengine.MySQL(t, "")
	srv.Exec(t, `CREATE TABLE f (tsn DATETIME(1), v DOUBLE);
		INSERT INTO f VALUES ('1969-12-31 23:59:59.5', 1), ('1969-12-31 23:59:58', 2), ('1970-01-01 00:00:00.5', 4)`)
	s := newTestSource(t, baseConfig(srv.Addr))
	got := seriesOf(t, engineQuery(t, s, "SELECT $__timeGroupAlias(tsn, 5m), sum(v) AS v FROM f GROUP BY 1 ORDER BY 1", FormatTimeSeries))
	// Right would be {-300000 3} {0 4}: 23:59:59.5 goes with 00:00:00.5.
	want := map[string][]point{data.Labels{}.String(): {{-300_000, 2}, {0, 5}}}
	if !equalSeries(got, want) {
		t.Errorf("got %v, want the documented %v", got, want)
	}
}
