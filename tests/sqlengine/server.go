//go:build sqlengines

package sqlengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/tests/sqlrows"
)

// batchRows is how many rows each record batch of an answer holds.
const batchRows = 1024

// Server is one fresh database on an engine, served over Flight SQL.
type Server struct {
	Addr     string  // host:port on 127.0.0.1
	DB       *sql.DB // the database itself, same session zone, for setup and reference answers
	Name     string  // what GetSqlInfo reports: "PostgreSQL", "MariaDB"
	Version  string  // the engine's version as it reports it
	Database string  // the database's name (PostgreSQL's catalog)
}

var databases atomic.Int64

// Postgres serves a fresh database on the test binary's PostgreSQL server,
// every connection's TimeZone set to tz ("" = "UTC"). It stops when t's
// test ends; the engine runs until Stop.
func Postgres(t testing.TB, tz string) *Server {
	t.Helper()
	if tz == "" {
		tz = "UTC"
	}
	return serve(t, PostgreSQL, tz, pgTypes)
}

// MySQL serves a fresh database on the test binary's MariaDB server, every
// connection's time_zone set to tz ("" = "+00:00"): an offset such as
// "-05:00", or a zone name the engine's zone tables hold (UTC,
// America/New_York).
func MySQL(t testing.TB, tz string) *Server {
	t.Helper()
	if tz == "" {
		tz = "+00:00"
	}
	return serve(t, MariaDB, tz, mysqlTypes)
}

func serve(t testing.TB, k Kind, tz string, types map[string]kind) *Server {
	t.Helper()
	session, err := location(tz)
	if err != nil {
		t.Fatal(err)
	}
	e, err := get(k)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("quiver_%d", databases.Add(1))
	if _, err := e.admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("sqlengine: %v", err)
	}
	driver, dsn := e.dsn(name, tz)
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("sqlengine: %v", err)
	}
	t.Cleanup(func() {
		_ = db.Close()
		drop := "DROP DATABASE " + name
		if k == PostgreSQL {
			drop += " WITH (FORCE)"
		}
		if _, err := e.admin.Exec(drop); err != nil {
			t.Errorf("sqlengine: %v", err)
		}
	})
	if err := db.Ping(); err != nil {
		t.Fatalf("sqlengine: session time zone %q: %v", tz, err)
	}

	srv := &server{db: db, types: types, session: session, mem: memory.DefaultAllocator}
	srv.Alloc = srv.mem
	for id, v := range map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:         e.name,
		flightsql.SqlInfoFlightSqlServerVersion:      e.version,
		flightsql.SqlInfoFlightSqlServerArrowVersion: "18",
		flightsql.SqlInfoFlightSqlServerReadOnly:     false,
	} {
		if err := srv.RegisterSqlInfo(id, v); err != nil {
			t.Fatalf("sqlengine: %v", err)
		}
	}
	fs := flight.NewServerWithMiddleware(nil)
	fs.RegisterFlightService(flightsql.NewFlightServer(srv))
	if err := fs.Init("127.0.0.1:0"); err != nil {
		t.Fatalf("sqlengine: listen: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = fs.Serve() }()
	t.Cleanup(func() {
		fs.Shutdown()
		<-done
		srv.wg.Wait()
	})
	return &Server{Addr: fs.Addr().(*net.TCPAddr).String(), DB: db, Name: e.name, Version: e.version, Database: name}
}

// location is the Go location of a session zone: an offset (±hh:mm) or
// a zone name.
func location(tz string) (*time.Location, error) {
	if len(tz) == 6 && (tz[0] == '+' || tz[0] == '-') && tz[3] == ':' {
		off, err := time.Parse("-07:00", tz)
		if err != nil {
			return nil, fmt.Errorf("sqlengine: time zone %q: %w", tz, err)
		}
		_, secs := off.Zone()
		return time.FixedZone(tz, secs), nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("sqlengine: time zone %q: %w", tz, err)
	}
	return loc, nil
}

// Exec runs statements on the database directly; it fails t on error.
func (s *Server) Exec(t testing.TB, stmts string) {
	t.Helper()
	sqlrows.Exec(t, "sqlengine", s.DB, stmts)
}

// Query runs query on the database directly and returns every row, each
// value as the driver returns it ([]byte from MariaDB's text protocol).
func (s *Server) Query(t testing.TB, query string, args ...any) [][]any {
	t.Helper()
	return sqlrows.All(t, "sqlengine", s.DB, query, args...)
}

// server implements the Flight SQL statement calls on a database.
type server struct {
	flightsql.BaseServer
	db      *sql.DB
	types   map[string]kind
	session *time.Location
	mem     memory.Allocator
	wg      sync.WaitGroup // streams still being written
}

func (s *server) GetFlightInfoStatement(_ context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return sqlrows.StatementInfo(cmd, desc)
}

// DoGetStatement runs the statement and streams its rows in batches of
// batchRows, typed from the engine's column types.
func (s *server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	query := string(tkt.GetStatementHandle())
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cts, err := rows.ColumnTypes()
	if err != nil {
		_ = rows.Close()
		return nil, nil, status.Error(codes.Internal, err.Error())
	}
	fields := make([]arrow.Field, len(cts))
	readers := make([]reader, len(cts))
	dests := make([]any, len(cts))
	for i, ct := range cts {
		k, ok := s.types[ct.DatabaseTypeName()]
		if !ok {
			_ = rows.Close()
			return nil, nil, status.Errorf(codes.Unimplemented, "sqlengine: column %s: engine type %s has no Arrow type here", ct.Name(), ct.DatabaseTypeName())
		}
		typ, r := k(ct, s.session)
		nullable, known := ct.Nullable()
		fields[i] = arrow.Field{Name: ct.Name(), Type: typ, Nullable: nullable || !known}
		readers[i], dests[i] = r, r.dest
	}
	schema := arrow.NewSchema(fields, nil)
	ch := make(chan flight.StreamChunk)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ch)
		defer rows.Close()
		send := func(c flight.StreamChunk) bool {
			select {
			case ch <- c:
				return true
			case <-ctx.Done():
				if c.Data != nil {
					c.Data.Release()
				}
				return false
			}
		}
		b := array.NewRecordBuilder(s.mem, schema)
		defer b.Release()
		n := 0
		for rows.Next() {
			if err := rows.Scan(dests...); err != nil {
				send(flight.StreamChunk{Err: status.Error(codes.Internal, err.Error())})
				return
			}
			for i, r := range readers {
				if err := r.put(b.Field(i)); err != nil {
					send(flight.StreamChunk{Err: status.Error(codes.Internal, "sqlengine: "+err.Error())})
					return
				}
			}
			if n++; n == batchRows {
				if !send(flight.StreamChunk{Data: b.NewRecordBatch()}) {
					return
				}
				n = 0
			}
		}
		if err := rows.Err(); err != nil {
			if !errors.Is(err, context.Canceled) {
				send(flight.StreamChunk{Err: status.Error(codes.InvalidArgument, err.Error())})
			}
			return
		}
		if n > 0 {
			send(flight.StreamChunk{Data: b.NewRecordBatch()})
		}
	}()
	return schema, ch, nil
}
