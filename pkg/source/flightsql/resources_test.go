package flightsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/source"
)

// patternServer is the SQLite example server, recording the table-name
// patterns GetTables is asked for.
type patternServer struct {
	*example.SQLiteFlightSQLServer
	mu       sync.Mutex
	patterns []string
}

func (s *patternServer) GetFlightInfoTables(ctx context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	s.mu.Lock()
	if p := cmd.GetTableNameFilterPattern(); p != nil {
		s.patterns = append(s.patterns, *p)
	}
	s.mu.Unlock()
	return s.SQLiteFlightSQLServer.GetFlightInfoTables(ctx, cmd, desc)
}

func (s *patternServer) lastPattern() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.patterns) == 0 {
		return ""
	}
	return s.patterns[len(s.patterns)-1]
}

// startNamedTables serves the SQLite example server with tables whose
// names are Flight SQL pattern characters or differ from another only where
// a pattern character is: "aXb" (created first, so listed first) and "a_b",
// "%" and "x", and "wide", each with a column saying which it is.
func startNamedTables(t *testing.T) (*patternServer, string) {
	t.Helper()
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, name := range []string{"aXb", "a_b", "%", "x", "wide"} {
		col := "is_" + strings.NewReplacer("%", "percent", "_", "underscore").Replace(name)
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE "%s" (%s INTEGER)`, name, col)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	ps := &patternServer{SQLiteFlightSQLServer: srv}
	return ps, startServer(t, ps, serverOpts{})
}

// getResource serves path on s's resources with ctx and decodes the answer.
func getResource(t *testing.T, ctx context.Context, s *Source, path string) (int, map[string]json.RawMessage) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Resources().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %v: %s", path, err, rec.Body)
	}
	return rec.Code, body
}

func errorOf(body map[string]json.RawMessage) string {
	var e string
	_ = json.Unmarshal(body["error"], &e)
	return e
}

// table is matched literally: "%" and "_" are names, not patterns; the
// server is asked for a pattern that matches names of the table's length
// only, never for every table's schema.
func TestColumnsMatchTheTableLiterally(t *testing.T) {
	srv, addr := startNamedTables(t)
	s := newTestSource(t, baseConfig(addr))
	ctx := context.Background()
	for _, tc := range []struct{ table, column, pattern string }{
		{"a_b", "is_aunderscoreb", "a_b"},
		{"aXb", "is_aXb", "aXb"},
		{"%", "is_percent", "_"},
		{"x", "is_x", "x"},
	} {
		code, body := getResource(t, ctx, s, "/columns?table="+urlQuery(tc.table))
		var cols []Column
		if err := json.Unmarshal(body["columns"], &cols); err != nil || code != http.StatusOK || len(cols) != 1 || cols[0].Name != tc.column {
			t.Errorf("table %q: %d %s, want the column %s", tc.table, code, body, tc.column)
		}
		if p := srv.lastPattern(); p != tc.pattern {
			t.Errorf("table %q: the server was asked for %q, want %q", tc.table, p, tc.pattern)
		}
	}
	for _, table := range []string{"a%", "_", "w%", "%%%%"} {
		code, body := getResource(t, ctx, s, "/columns?table="+urlQuery(table))
		if want := fmt.Sprintf("table %q not found", table); code != http.StatusNotFound || errorOf(body) != "flightsql: columns: "+want {
			t.Errorf("table %q: %d %s, want 404 %s", table, code, body, want)
		}
	}
}

func urlQuery(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "#", "%23", "+", "%2B", " ", "%20").Replace(s)
}

// The 404 quotes at most 64 bytes of the table it did not find.
func TestColumnsNotFoundEchoIsBounded(t *testing.T) {
	_, addr := startNamedTables(t)
	s := newTestSource(t, baseConfig(addr))
	long := strings.Repeat("t", 4000)
	code, body := getResource(t, context.Background(), s, "/columns?table="+long)
	msg := errorOf(body)
	if code != http.StatusNotFound || !strings.Contains(msg, "(4000 bytes)") || len(msg) > 160 {
		t.Errorf("%d %q (%d bytes), want a 404 quoting 64 bytes of the name", code, msg, len(msg))
	}
}

// A listing past the rows or the bytes bound fails naming the bound;
// within them it answers.
func TestResourceBounds(t *testing.T) {
	_, addr := startNamedTables(t)
	s := newTestSource(t, baseConfig(addr))
	ctx := context.Background()
	if code, body := getResource(t, ctx, s, "/tables"); code != http.StatusOK {
		t.Fatalf("within the bounds: %d %s", code, body)
	}
	s.bounds.rows = 3
	code, body := getResource(t, ctx, s, "/tables")
	if msg := errorOf(body); code != http.StatusBadRequest || !strings.Contains(msg, "more than 3 tables, the schema browser's bound") {
		t.Errorf("rows: %d %q", code, msg)
	}
	s.bounds = defaultResourceBounds()
	s.bounds.bytes = 100
	code, body = getResource(t, ctx, s, "/tables")
	if msg := errorOf(body); code != http.StatusBadRequest || !strings.Contains(msg, "more than 100 B, the schema browser's bound") {
		t.Errorf("bytes: %d %q", code, msg)
	}
	// /columns reads only the tables its pattern matches: of the five,
	// "%" and "x" for the table "%".
	s.bounds.bytes = defaultResourceBounds().bytes
	s.bounds.rows = 2
	if code, body := getResource(t, ctx, s, "/columns?table=%25"); code != http.StatusOK {
		t.Errorf("columns of %%: %d %s", code, body)
	}
	if code, _ := getResource(t, ctx, s, "/tables"); code != http.StatusBadRequest {
		t.Errorf("tables past 2 rows: %d", code)
	}
}

// recordingReserver is a memory budget that records what it is asked for,
// or refuses with err.
type recordingReserver struct {
	reserved int64
	calls    int
	err      error
}

func (r *recordingReserver) Reserve(ctx context.Context, n int64) error {
	if r.err != nil {
		return r.err
	}
	r.calls++
	r.reserved += n
	return nil
}

// What a resource call receives and keeps is reserved in the caller's budget; a refusal
// is the answer, with the status it carries.
func TestResourcesReserveInTheBudget(t *testing.T) {
	_, addr := startNamedTables(t)
	s := newTestSource(t, baseConfig(addr))
	r := &recordingReserver{}
	code, body := getResource(t, source.WithReserver(context.Background(), r), s, "/tables")
	var tables []Table
	if err := json.Unmarshal(body["tables"], &tables); err != nil || code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var want int64
	for _, tb := range tables {
		want += int64(len(tb.Catalog) + len(tb.Schema) + len(tb.Name) + resourceRowBytes)
	}
	if r.calls == 0 || r.reserved <= want {
		t.Errorf("reserved %d bytes in %d calls, want the batches received besides the %d kept", r.reserved, r.calls, want)
	}
	busy := &recordingReserver{err: source.WithStatus(http.StatusTooManyRequests, errors.New("Quiver is busy: test"))}
	code, body = getResource(t, source.WithReserver(context.Background(), busy), s, "/columns?table=x")
	if msg := errorOf(body); code != http.StatusTooManyRequests || !strings.Contains(msg, "Quiver is busy") {
		t.Errorf("budget refused: %d %q", code, msg)
	}
}

// stallingTables never answers GetTables.
type stallingTables struct{ flightsql.BaseServer }

func (stallingTables) GetFlightInfoTables(ctx context.Context, _ flightsql.GetTables, _ *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A server that does not answer: the call ends at its bound, a 504 naming
// it.
func TestResourceTimeout(t *testing.T) {
	s := newTestSource(t, baseConfig(startServer(t, &stallingTables{}, serverOpts{})))
	s.bounds.timeout = 50 * time.Millisecond
	code, body := getResource(t, context.Background(), s, "/tables")
	if msg := errorOf(body); code != http.StatusGatewayTimeout || !strings.Contains(msg, "no answer within 50ms, the schema browser's bound (the timeout setting, at most 50ms)") {
		t.Errorf("%d %q", code, msg)
	}
}

// stillRunning is a context whose deadline has come but whose timer has not
// fired yet: what a resource call sees when gRPC reports the deadline first.
type stillRunning struct{ context.Context }

func (stillRunning) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A timeout reported before the call's own context says so is still the
// schema browser's bound.
func TestResourceTimeoutBeforeItsTimer(t *testing.T) {
	s := newTestSource(t, baseConfig(startServer(t, &stallingTables{}, serverOpts{})))
	s.bounds.timeout = 50 * time.Millisecond
	ctx := stillRunning{context.Background()}
	if ctx.Err() != nil || !deadlinePassed(ctx) {
		t.Fatal("the test context")
	}
	rec := httptest.NewRecorder()
	s.writeResourceError(rec, ctx, "tables", &source.Error{Kind: source.KindTimeout, Err: context.DeadlineExceeded})
	if !strings.Contains(rec.Body.String(), "no answer within 50ms, the schema browser's bound") || rec.Code != http.StatusGatewayTimeout {
		t.Errorf("%d %s", rec.Code, rec.Body.String())
	}
}

// An unknown resource or a method other than GET is answered in the same
// {"error"} JSON as every other failure, naming what was asked for.
func TestResourcesUnknownPathAndMethod(t *testing.T) {
	_, addr := startNamedTables(t)
	s := newTestSource(t, baseConfig(addr))
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{http.MethodGet, "/tabels", http.StatusNotFound, `no resource "tabels": there are tables, columns and dialect`},
		{http.MethodPost, "/tables", http.StatusMethodNotAllowed, `tables: use GET, not "POST"`},
	} {
		rec := httptest.NewRecorder()
		s.Resources().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		var body map[string]json.RawMessage
		err := json.Unmarshal(rec.Body.Bytes(), &body)
		if msg := errorOf(body); err != nil || rec.Code != tc.status || !strings.Contains(msg, tc.want) || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %q (%v), want %d saying %q", tc.method, tc.path, rec.Code, rec.Body, err, tc.status, tc.want)
		}
	}
}

// bigCatalog answers GetTables with one batch of n tables, each name of
// nameLen bytes.
type bigCatalog struct {
	flightsql.BaseServer
	n, nameLen int
}

func (b *bigCatalog) GetFlightInfoTables(_ context.Context, _ flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc, Schema: flight.SerializeSchema(schema_ref.Tables, memory.DefaultAllocator),
		TotalRecords: -1, TotalBytes: -1,
	}, nil
}

func (b *bigCatalog) DoGetTables(context.Context, flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema_ref.Tables)
	defer bld.Release()
	pad := strings.Repeat("t", b.nameLen)
	for i := range b.n {
		bld.Field(0).(*array.StringBuilder).AppendNull()
		bld.Field(1).(*array.StringBuilder).AppendNull()
		bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%s%08d", pad, i))
		bld.Field(3).(*array.StringBuilder).Append("table")
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: bld.NewRecordBatch()}
	close(ch)
	return schema_ref.Tables, ch, nil
}

// A metadata call receives no message larger than the schema browser's
// bytes bound (plus its framing): a 39 MiB listing in one batch had been
// received whole, within the 320 MiB a query's batch may take, before the
// bound refused it. A batch within it is reserved in the caller's budget
// as it arrives, not only what is kept of it.
func TestResourceMessagesAreBounded(t *testing.T) {
	s := newTestSource(t, baseConfig(startServer(t, &bigCatalog{n: 40_000, nameLen: 1000}, serverOpts{})))
	code, body := getResource(t, context.Background(), s, "/tables")
	if msg := errorOf(body); code != http.StatusBadRequest || !strings.Contains(msg, "the server sent a message of more than 9 MiB, the bound of metadata calls") {
		t.Errorf("%d %q, want a 400 naming the bound of metadata calls", code, msg)
	}
	s = newTestSource(t, baseConfig(startServer(t, &bigCatalog{n: 2000, nameLen: 1000}, serverOpts{})))
	r := &recordingReserver{}
	code, body = getResource(t, source.WithReserver(context.Background(), r), s, "/tables")
	if r.reserved < 2*2000*1000 || code != http.StatusOK {
		t.Errorf("%d %q: reserved %d bytes for 2 MB of names received and kept", code, errorOf(body), r.reserved)
	}
}
