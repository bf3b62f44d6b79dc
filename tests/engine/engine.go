//go:build duckdb

// Package engine serves a real SQL engine, DuckDB (through duckdb-go, cgo),
// over Apache Arrow Flight SQL on 127.0.0.1, so that the Flight SQL source is
// tested against an engine's own SQL, time zones and Arrow types rather than
// only against servers of our own. It is compiled only with the build tags
// duckdb and duckdb_arrow (duckdb-go's Arrow interface), and is imported by
// tests only: the shipped plugin stays CGO_ENABLED=0.
//
// Statements run through GetFlightInfoStatement/DoGetStatement and are
// answered with DuckDB's own Arrow output; GetSqlInfo names the server
// "DuckDB" with the engine's version, as a DuckDB-based Flight SQL server
// would.
package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/tests/sqlrows"
)

// Options configure a Server.
type Options struct {
	// TimeZone is every connection's session time zone ("" = "UTC").
	TimeZone string
	// Settings are run as SET name = value on every connection (for
	// example "arrow_lossless_conversion": "true").
	Settings map[string]string
}

// Server is one in-memory DuckDB database served over Flight SQL.
type Server struct {
	Addr    string  // host:port on 127.0.0.1
	DB      *sql.DB // the engine itself, for setup and for reference answers
	Version string  // the engine's version, e.g. "v1.5.6"
	close   func()
}

// Start serves a fresh in-memory DuckDB database whose session time zone is
// tz ("" = "UTC"). The server stops when t's test ends.
func Start(t testing.TB, tz string) *Server {
	t.Helper()
	return StartWith(t, Options{TimeZone: tz})
}

// StartWith is Start with every option.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Serve("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Serve serves a fresh in-memory DuckDB database on addr (host:port) until
// Close; tests use Start, which listens on 127.0.0.1.
func Serve(addr string, o Options) (*Server, error) {
	if o.TimeZone == "" {
		o.TimeZone = "UTC"
	}
	init := []string{fmt.Sprintf("SET TimeZone = %s", quote(o.TimeZone))}
	for k, v := range o.Settings {
		init = append(init, fmt.Sprintf("SET %s = %s", k, quote(v)))
	}
	connector, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
		for _, stmt := range init {
			if _, err := ex.ExecContext(context.Background(), stmt, nil); err != nil {
				return fmt.Errorf("engine: %s: %w", stmt, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("engine: opening DuckDB: %w", err)
	}
	db := sql.OpenDB(connector)
	closeDB := func() { _ = db.Close(); _ = connector.Close() }
	var version string
	if err := db.QueryRow("SELECT version()").Scan(&version); err != nil {
		closeDB()
		return nil, fmt.Errorf("engine: %w", err)
	}

	srv := &server{db: db, mem: memory.DefaultAllocator}
	srv.Alloc = srv.mem
	for id, v := range map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:         "DuckDB",
		flightsql.SqlInfoFlightSqlServerVersion:      version,
		flightsql.SqlInfoFlightSqlServerArrowVersion: "18",
		flightsql.SqlInfoFlightSqlServerReadOnly:     false,
	} {
		if err := srv.RegisterSqlInfo(id, v); err != nil {
			closeDB()
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	fs := flight.NewServerWithMiddleware(nil)
	fs.RegisterFlightService(flightsql.NewFlightServer(srv))
	if err := fs.Init(addr); err != nil {
		closeDB()
		return nil, fmt.Errorf("engine: listen: %w", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = fs.Serve() }()
	return &Server{Addr: fs.Addr().(*net.TCPAddr).String(), DB: db, Version: version, close: func() {
		fs.Shutdown()
		<-done
		srv.wg.Wait()
		closeDB()
	}}, nil
}

// Close stops the server and closes the database.
func (s *Server) Close() { s.close() }

// Exec runs statements on the engine directly; it fails t on error.
func (s *Server) Exec(t testing.TB, stmts string) {
	t.Helper()
	sqlrows.Exec(t, "engine", s.DB, stmts)
}

// Query runs query on the engine directly and returns every row, each value
// as the driver returns it.
func (s *Server) Query(t testing.TB, query string, args ...any) [][]any {
	t.Helper()
	return sqlrows.All(t, "engine", s.DB, query, args...)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// server implements the Flight SQL statements and metadata calls the
// source uses, on DuckDB.
type server struct {
	flightsql.BaseServer
	db  *sql.DB
	mem memory.Allocator
	wg  sync.WaitGroup // streams still being written
}

func (s *server) GetFlightInfoStatement(_ context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return sqlrows.StatementInfo(cmd, desc)
}

func (s *server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.stream(ctx, string(tkt.GetStatementHandle()))
}

// stream runs query on its own connection and streams DuckDB's record
// batches as they come.
func (s *server) stream(ctx context.Context, query string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, nil, status.Error(codes.Unavailable, err.Error())
	}
	var rdr array.RecordReader
	err = conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rdr, err = ar.QueryContext(ctx, query)
		return err
	})
	if err != nil {
		_ = conn.Close()
		return nil, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ch := make(chan flight.StreamChunk)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ch)
		defer conn.Close()
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			select {
			case ch <- flight.StreamChunk{Data: rec}:
			case <-ctx.Done():
				rec.Release()
				return
			}
		}
		if err := rdr.Err(); err != nil && !errors.Is(err, context.Canceled) {
			select {
			case ch <- flight.StreamChunk{Err: err}:
			case <-ctx.Done():
			}
		}
	}()
	return rdr.Schema(), ch, nil
}
