//go:build sqlengines

package sqlengine_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/quiverdata/quiver/tests/sqlengine"
	"github.com/quiverdata/quiver/tests/sqlrows"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := sqlengine.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// client is a plain arrow-go Flight SQL client of addr, closed when the
// test ends, and a bounded context for its calls.
func client(t *testing.T, addr string) (context.Context, *flightsql.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return ctx, cl
}

// read runs query through a plain arrow-go Flight SQL client and returns
// the schema and every row, each value as the Arrow array's ValueStr.
func read(t *testing.T, addr, query string) (*arrow.Schema, [][]string) {
	t.Helper()
	ctx, cl := client(t, addr)
	info, err := cl.Execute(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	rdr, err := cl.DoGet(ctx, info.GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rdr.Release()
	var rows [][]string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var row []string
			for _, col := range rec.Columns() {
				row = append(row, col.ValueStr(i))
			}
			rows = append(rows, row)
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return rdr.Schema(), rows
}

// sqlInfo reads the server name and version GetSqlInfo reports.
func sqlInfo(t *testing.T, addr string) (name, version string) {
	t.Helper()
	ctx, cl := client(t, addr)
	return sqlrows.ServerInfo(t, ctx, cl)
}

type typeCase struct {
	expr, typ, val string // an SQL expression, its Arrow type, its value's ValueStr
}

func checkTypes(t *testing.T, s *sqlengine.Server, cases []typeCase) {
	t.Helper()
	for _, c := range cases {
		schema, rows := read(t, s.Addr, "SELECT "+c.expr+" AS c")
		if got := schema.Field(0).Type.String(); got != c.typ {
			t.Errorf("%s: type %s, want %s", c.expr, got, c.typ)
		}
		if len(rows) != 1 || rows[0][0] != c.val {
			t.Errorf("%s: rows %q, want [[%s]]", c.expr, rows, c.val)
		}
	}
}

func TestPostgresTypes(t *testing.T) {
	s := sqlengine.Postgres(t, "America/New_York")
	if name, version := sqlInfo(t, s.Addr); name != "PostgreSQL" || version != s.Version || version == "" {
		t.Errorf("GetSqlInfo %q %q, want PostgreSQL %q", name, version, s.Version)
	}
	checkTypes(t, s, []typeCase{
		{"timestamptz '2026-01-01 00:00:00.123456+00'", "timestamp[ns, tz=UTC]", "2026-01-01T00:00:00.123456Z"},
		{"timestamptz '2026-01-01 00:00:00-05'", "timestamp[ns, tz=UTC]", "2026-01-01T05:00:00Z"},
		// A timestamp without zone keeps its wall clock, whatever the session zone.
		{"timestamp '2026-01-01 00:00:00'", "timestamp[ns]", "2026-01-01T00:00:00"},
		{"timestamp '1969-12-31 23:59:59.5'", "timestamp[ns]", "1969-12-31T23:59:59.5"},
		{"date '2026-03-04'", "date32", "2026-03-04"},
		{"1::int2", "int16", "1"},
		{"-2::int4", "int32", "-2"},
		{"9007199254740993::int8", "int64", "9007199254740993"},
		{"1.5::float4", "float32", "1.5"},
		{"0.1::float8", "float64", "0.1"},
		{"12.34::numeric(5,2)", "decimal(5, 2)", "12.34"},
		{"(SELECT sum(x) FROM (VALUES (0.1), (0.2)) v(x))", "utf8", "0.3"},
		{"'é'::text", "utf8", "é"},
		{"'ab'::varchar(4)", "utf8", "ab"},
		{"true", "bool", "true"},
		{"NULL::int8", "int64", "(null)"},
	})
	// A statement the engine refuses is the engine's own error.
	ctx, cl := client(t, s.Addr)
	info, err := cl.Execute(ctx, "SELECT nope FROM nowhere")
	if err == nil {
		_, err = cl.DoGet(ctx, info.GetEndpoint()[0].GetTicket())
	}
	if err == nil {
		t.Fatal("no error for a missing table")
	}
}

func TestMySQLTypes(t *testing.T) {
	s := sqlengine.MySQL(t, "America/New_York")
	if name, version := sqlInfo(t, s.Addr); name != "MariaDB" || version != s.Version || version == "" {
		t.Errorf("GetSqlInfo %q %q, want MariaDB %q", name, version, s.Version)
	}
	s.Exec(t, "CREATE TABLE x (ts TIMESTAMP(3) NULL, dt DATETIME(3))")
	s.Exec(t, "INSERT INTO x VALUES (FROM_UNIXTIME(1767225600.25), '2026-01-01 00:00:00.250')")
	_, rows := read(t, s.Addr, "SELECT ts, dt, @@session.time_zone FROM x")
	// TIMESTAMP is the instant (written in the session zone, read back in
	// it); DATETIME keeps its wall clock.
	if len(rows) != 1 || rows[0][0] != "2026-01-01T00:00:00.25Z" || rows[0][1] != "2026-01-01T00:00:00.25" || rows[0][2] != "America/New_York" {
		t.Errorf("TIMESTAMP, DATETIME, zone: %q", rows)
	}
	checkTypes(t, s, []typeCase{
		{"CAST('2026-01-01 00:00:00' AS DATETIME)", "timestamp[ns]", "2026-01-01T00:00:00"},
		{"CAST('1969-07-20 20:17:40.5' AS DATETIME(1))", "timestamp[ns]", "1969-07-20T20:17:40.5"},
		{"CAST('2026-03-04' AS DATE)", "date32", "2026-03-04"},
		{"CAST(9007199254740993 AS SIGNED)", "int64", "9007199254740993"},
		{"CAST(18446744073709551615 AS UNSIGNED)", "uint64", "18446744073709551615"},
		{"CAST(1.5 AS DOUBLE)", "float64", "1.5"},
		{"CAST(12.34 AS DECIMAL(5,2))", "decimal(5, 2)", "12.34"},
		{"'é'", "utf8", "é"},
		{"TRUE", "int32", "1"},
		{"NULL", "utf8", "(null)"},
	})
}
