//go:build duckdb

package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/quiverdata/quiver/tests/engine"
	"github.com/quiverdata/quiver/tests/sqlrows"
)

// read runs query through a plain arrow-go Flight SQL client.
func read(t *testing.T, addr, query string) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	info, err := cl.Execute(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var recs []arrow.RecordBatch
	var schema *arrow.Schema
	for _, ep := range info.GetEndpoint() {
		rdr, err := cl.DoGet(ctx, ep.GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		schema = rdr.Schema()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return schema, recs
}

func TestEngineServesDuckDB(t *testing.T) {
	s := engine.Start(t, "America/New_York")
	s.Exec(t, `CREATE TABLE m AS SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL (i) MINUTE AS ts, i::DOUBLE AS v, 'h' || (i % 3) AS host FROM range(120) t(i)`)

	schema, recs := read(t, s.Addr, `SELECT ts, v, host FROM m ORDER BY ts`)
	if got := schema.Field(0).Type.String(); got != "timestamp[us, tz=America/New_York]" {
		t.Errorf("ts column type %s, want DuckDB's timestamp[us, tz=America/New_York]", got)
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows != 120 {
		t.Fatalf("read %d rows, want 120", rows)
	}
	first := recs[0].Column(0).(*array.Timestamp).Value(0)
	if want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(); int64(first) != want {
		t.Errorf("first ts %d µs, want %d", first, want)
	}

	// The session zone is the one asked for: a literal without an offset is
	// read in it (the trap the source's macros must avoid).
	got := s.Query(t, `SELECT count(*) FROM m WHERE ts >= '2026-01-01 00:00:00' AND ts < '2026-01-01 01:00:00'`)
	if n := got[0][0].(int64); n != 0 {
		t.Errorf("a zone-less literal selected %d rows in America/New_York, want 0 (05:00Z is past the data)", n)
	}
	if s.Version == "" {
		t.Error("no engine version")
	}
}

func TestEngineSqlInfoNamesDuckDB(t *testing.T) {
	s := engine.Start(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := flightsql.NewClient(s.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if name, version := sqlrows.ServerInfo(t, ctx, cl); name != "DuckDB" || version != s.Version {
		t.Errorf("GetSqlInfo = %s %s, want DuckDB %s", name, version, s.Version)
	}
}
