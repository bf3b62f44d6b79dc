//go:build sqlengines

package flightsql

import (
	"slices"
	"testing"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/tests/sqlengine"
)

var postgresSQL = sqlEngine{integer: "bigint", double: "float8", div: "/"}

// postgresTables fills, on PostgreSQL, table m (a row every 37 s for each
// of three hosts from 2025-12-31 22:00Z for ten hours: ts timestamptz, tsn
// timestamp holding UTC, e/em/en Unix seconds/ms/ns), table old (the same
// from 1969-12-31 23:00Z to 1970-01-01 01:00Z) and table sub (a row every
// 370 ms from 2026-01-01 00:00Z, for the buckets below a second). Values
// are small integers, so sums and averages are exact in float64.
func postgresTables(t *testing.T, srv *sqlengine.Server) {
	srv.Exec(t, `
		CREATE TABLE m AS
		SELECT timestamptz '2025-12-31 22:00:00+00' + i * interval '37 seconds' AS ts,
		       timestamp '2025-12-31 22:00:00' + i * interval '37 seconds' AS tsn,
		       1767218400 + i * 37::bigint AS e,
		       (1767218400 + i * 37::bigint) * 1000 AS em,
		       (1767218400 + i * 37::bigint) * 1000000000 AS en,
		       'h' || (i % 3) AS host,
		       ((i * 7) % 50)::float8 AS v
		FROM generate_series(0, 10 * 3600 / 37 - 1) i;
		CREATE TABLE old AS
		SELECT timestamptz '1969-12-31 23:00:00+00' + i * interval '37 seconds' AS ts,
		       timestamp '1969-12-31 23:00:00' + i * interval '37 seconds' AS tsn,
		       -3600 + i * 37::bigint AS e,
		       'h' || (i % 3) AS host,
		       ((i * 7) % 50)::float8 AS v
		FROM generate_series(0, 2 * 3600 / 37) i;
		CREATE TABLE sub AS
		SELECT timestamptz '2026-01-01 00:00:00+00' + i * interval '370 milliseconds' AS ts,
		       timestamp '2026-01-01 00:00:00' + i * interval '370 milliseconds' AS tsn,
		       1767225600000 + i * 370::bigint AS em,
		       ((i * 7) % 50)::float8 AS v
		FROM generate_series(0, 999) i`)
}

// postgresCases are the cases only PostgreSQL renders: timestamptz before
// 1970, buckets below a second, a catalog and schema.
var postgresCases = []refCase{
	{"timeGroup/zoned/7m/before 1970",
		"SELECT $__timeGroupAlias(ts, 7m), host, sum(v) AS v FROM old GROUP BY 1, 2 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 420_000) + ", host, sum(v) FROM old GROUP BY 1, 2", 18},
	{"timeGroup/zoned/500ms",
		"SELECT $__timeGroupAlias(ts, 500ms), min(v) AS v FROM sub WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("em", 1, 500) + ", min(v) FROM sub GROUP BY 1", 740},
	{"timeGroup/zone-less/100ms",
		"SELECT $__timeGroup(tsn, 100ms) AS time, max(v) AS v FROM sub WHERE $__timeFilter(tsn) GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("em", 1, 100) + ", max(v) FROM sub GROUP BY 1", 1000},
	{"timeGroup/zone-less/1500ms",
		"SELECT $__timeGroup(tsn, 1500ms) AS time, sum(v) AS v FROM sub GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("em", 1, 1500) + ", sum(v) FROM sub GROUP BY 1", 247},
	{"catalog+schema",
		"SELECT $__timeGroupAlias(ts, 30m), avg(v) AS v FROM $__catalog.$__schema.m WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
		"SELECT " + floorMs("e", 1000, 1_800_000) + ", avg(v) FROM m WHERE e " + refRangeSeconds + " GROUP BY 1", 2},
}

// TestPostgresMacros runs every macro the postgres dialect renders through
// the Source against PostgreSQL, in UTC and America/New_York, with the
// dialect found by auto (from GetSqlInfo) and set explicitly, and compares
// every frame point by point with PostgreSQL's own answer to the same
// aggregate written by hand.
func TestPostgresMacros(t *testing.T) {
	engineRun{
		start: sqlengine.Postgres, tables: postgresTables, dialect: settings.DialectPostgres, sql: postgresSQL,
		configure: func(cfg *settings.FlightSQL, srv *sqlengine.Server) { cfg.Catalog, cfg.Schema = srv.Database, "public" },
		cases:     func(string) []refCase { return append(slices.Clone(commonCases), postgresCases...) },
		cols:      func(string) []string { return []string{"ts", "tsn"} },
	}.run(t)
}

// TestPostgresANSITimeFilter: in the ansi dialect, the one auto falls back
// to for a server whose name it does not recognise, $__timeFilter selects
// exactly the rows of 00:00–01:00Z from timestamptz and zone-less timestamp
// columns alike, in UTC and America/New_York (a TIMESTAMP '…+00:00' literal
// is zone-less to PostgreSQL, which ignores the offset, and is read in the
// session zone against a timestamptz column).
func TestPostgresANSITimeFilter(t *testing.T) {
	for _, tz := range []string{"UTC", "America/New_York"} {
		srv := sqlengine.Postgres(t, tz)
		postgresTables(t, srv)
		cfg := baseConfig(srv.Addr)
		cfg.Dialect = settings.DialectANSI
		s := newTestSource(t, cfg)
		for _, col := range []string{"ts", "tsn"} {
			checkTimeFilterRows(t, s, srv, col)
		}
	}
}

// TestPostgresAutoBeforeHealth: auto picks postgres on the first query,
// before any health check, from what GetSqlInfo reports.
func TestPostgresAutoBeforeHealth(t *testing.T) {
	srv := sqlengine.Postgres(t, "America/New_York")
	postgresTables(t, srv)
	s := newTestSource(t, baseConfig(srv.Addr))
	runRefCases(t, s, postgresSQL, func(sql string) [][]any { return srv.Query(t, sql) }, commonCases[:1])
	d, err := s.sqlDialect(t.Context())
	if err != nil || d.name != settings.DialectPostgres {
		t.Fatalf("dialect %v, %v; want postgres", d, err)
	}
}
