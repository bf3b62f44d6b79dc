package flightsql

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// Resources serves the query editor's schema browser:
//
//	GET /tables?catalog=&schema=               {"tables":[{"catalog","schema","name"}]}
//	GET /columns?catalog=&schema=&table=       {"columns":[{"name","type"}]}
//	GET /dialect                               {"dialect","setting","identifierQuote"}
//
// catalog and schema default to the data source's catalog and schema
// settings. For /tables, schema is a Flight SQL filter pattern ("%" any
// text, "_" any character); for /columns, schema and table are names,
// matched exactly. Every call is bounded (resourceBounds) and holds what it
// keeps in the caller's memory budget (source.ReserveIn). Errors are
// {"error": "..."} with status 400 (bad request, a bound hit), 404 (no such
// table or resource), 405 (not GET), 429 (the memory budget is busy), 502
// (upstream failure) or 504 (no answer in time).
func (s *Source) Resources() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tables", s.resource("tables", s.listTables))
	mux.HandleFunc("GET /columns", s.resource("columns", s.listColumns))
	mux.HandleFunc("GET /dialect", s.resource("dialect", func(ctx context.Context, _ url.Values) (any, error) {
		d, err := s.sqlDialect(ctx)
		if err != nil {
			return nil, err
		}
		// The dialect's quote function is the one home of its quoting; its
		// rendering of the empty name is the quote character twice.
		return Dialect{Dialect: d.name, Setting: s.conn.dialect.setting, IdentifierQuote: d.quote("")[:1]}, nil
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch name := strings.TrimPrefix(r.URL.Path, "/"); name {
		case "tables", "columns", "dialect":
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "flightsql: " + name + ": use GET, not " + source.Quote(r.Method)})
		default:
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "flightsql: no resource " + source.Quote(name) + ": there are tables, columns and dialect"})
		}
	})
	// The catalog, schema and table asked for are text the user sent
	// (redact).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent := slices.Concat(slices.Collect(maps.Values(r.URL.Query()))...)
		mux.ServeHTTP(w, r.WithContext(withSent(r.Context(), strings.Join(sent, "\n"))))
	})
}

// Bounds of one schema-browsing call: the rows (tables) it reads from the
// server, the bytes of their names and schemas, and its time, the data
// source's timeout setting up to resourceTimeout. A call that reaches one
// fails naming it; the query editor then offers no hints, queries still
// run.
const (
	resourceMaxRows  = 10_000
	resourceMaxBytes = 8 << 20
	resourceTimeout  = 30 * time.Second
	// resourceRowBytes is what a table entry of an answer weighs beyond its
	// text (the Go strings' headers, JSON's punctuation): counted against
	// resourceMaxBytes and the memory budget.
	resourceRowBytes = 64
)

// resourceBounds are the bounds of one Source's resource calls; tests
// lower them.
type resourceBounds struct {
	rows    int
	bytes   int64
	timeout time.Duration
}

func defaultResourceBounds() resourceBounds {
	return resourceBounds{rows: resourceMaxRows, bytes: resourceMaxBytes, timeout: resourceTimeout}
}

// Table is one entry of GET /tables.
type Table struct {
	Catalog string `json:"catalog"`
	Schema  string `json:"schema"`
	Name    string `json:"name"`
}

// Column is one entry of GET /columns; Type is the Arrow type the server
// declares.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Dialect is the answer of GET /dialect: the SQL dialect the macros render
// in (for the auto setting, the one picked from the server's name) and the
// character that quotes an identifier in it (an inner one is doubled), so
// that the query builder writes the SQL the macros expect.
type Dialect struct {
	Dialect         string `json:"dialect"`
	Setting         string `json:"setting"`
	IdentifierQuote string `json:"identifierQuote"`
}

// resource serves one schema-browsing call: what answer returns within the
// call's deadline, or its error.
func (s *Source) resource(what string, answer func(ctx context.Context, q url.Values) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.resourceTimeout())
		defer cancel()
		v, err := answer(ctx, r.URL.Query())
		if err != nil {
			s.writeResourceError(w, ctx, what, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// resourceTimeout is the deadline of one resource call: the timeout
// setting, at most the bound.
func (s *Source) resourceTimeout() time.Duration {
	return min(s.cfg.TimeoutDuration(), s.bounds.timeout)
}

func (s *Source) tablesOpts(q url.Values) *flightsql.GetTablesOpts {
	opts := &flightsql.GetTablesOpts{}
	if c := cmp.Or(q.Get("catalog"), s.cfg.Catalog); c != "" {
		opts.Catalog = &c
	}
	if sc := cmp.Or(q.Get("schema"), s.cfg.Schema); sc != "" {
		opts.DbSchemaFilterPattern = &sc
	}
	return opts
}

// literalPattern returns a Flight SQL filter pattern that matches name and
// as little else as the protocol allows: Flight SQL defines "%" (any text)
// and "_" (any one character) but no escape (a server may tell one in
// GetSqlInfo SQL_SEARCH_STRING_ESCAPE, or not, and may not honour it in
// GetTables), so every "%" becomes "_", which matches the "%" itself and
// keeps the match to names of name's length. The caller compares the names
// of the answer with name exactly.
func literalPattern(name string) string {
	return strings.ReplaceAll(name, "%", "_")
}

func (s *Source) listTables(ctx context.Context, q url.Values) (any, error) {
	tables := []Table{}
	err := s.readTables(ctx, "tables", s.tablesOpts(q), func(rec arrow.RecordBatch, i int) (int64, error) {
		t := Table{
			Catalog: stringAt(rec, "catalog_name", i),
			Schema:  stringAt(rec, "db_schema_name", i),
			Name:    stringAt(rec, "table_name", i),
		}
		tables = append(tables, t)
		return int64(len(t.Catalog) + len(t.Schema) + len(t.Name) + resourceRowBytes), nil
	})
	return map[string]any{"tables": tables}, err
}

func (s *Source) listColumns(ctx context.Context, q url.Values) (any, error) {
	table := q.Get("table")
	if table == "" {
		return nil, source.BadQuery("flightsql: columns: the table parameter is required")
	}
	opts := s.tablesOpts(q)
	schema := cmp.Or(q.Get("schema"), s.cfg.Schema)
	if schema != "" {
		p := literalPattern(schema)
		opts.DbSchemaFilterPattern = &p
	}
	pattern := literalPattern(table)
	opts.TableNameFilterPattern = &pattern
	opts.IncludeSchema = true
	var cols []Column // nil until the table is found
	err := s.readTables(ctx, "columns", opts, func(rec arrow.RecordBatch, i int) (int64, error) {
		if cols != nil || stringAt(rec, "table_name", i) != table || (schema != "" && stringAt(rec, "db_schema_name", i) != schema) {
			return 0, nil
		}
		idx := rec.Schema().FieldIndices("table_schema")
		if len(idx) == 0 {
			return 0, errors.New("flightsql: columns: the server sent no table_schema")
		}
		bin, ok := rec.Column(idx[0]).(*array.Binary)
		if !ok {
			return 0, fmt.Errorf("flightsql: columns: table_schema is %s, not binary", rec.Column(idx[0]).DataType())
		}
		sc, err := flight.DeserializeSchema(bin.Value(i), s.mem)
		if err != nil {
			return 0, fmt.Errorf("flightsql: columns: reading the schema of %s: %w", source.Quote(table), err)
		}
		cols = make([]Column, sc.NumFields())
		kept := int64(0)
		for j, f := range sc.Fields() {
			cols[j] = Column{Name: f.Name, Type: f.Type.String()}
			kept += int64(len(cols[j].Name) + len(cols[j].Type) + resourceRowBytes)
		}
		return kept, nil
	})
	if err == nil && cols == nil {
		err = source.WithStatus(http.StatusNotFound, errors.New("flightsql: columns: table "+source.Quote(table)+" not found"))
	}
	return map[string]any{"columns": cols}, err
}

// readTables calls GetTables and hands each row to fn, which returns the
// bytes of the answer it kept from it. It stops at the call's bounds: rows
// read, and bytes read (the row's names and schema) and kept; each batch
// received and what is kept of it are reserved in the caller's memory
// budget.
func (s *Source) readTables(ctx context.Context, what string, opts *flightsql.GetTablesOpts, fn func(rec arrow.RecordBatch, i int) (int64, error)) error {
	rows, read := 0, int64(0)
	return s.readInfo(ctx, "listing tables", func(ctx context.Context) (*flight.FlightInfo, error) {
		return s.conn.main.GetTables(ctx, opts)
	}, func(rec arrow.RecordBatch) error {
		// The batch received, until the call ends, and what is kept of it.
		if err := source.ReserveIn(ctx, recordBytes(rec)); err != nil {
			return err
		}
		var kept int64
		for i := range int(rec.NumRows()) {
			if rows++; rows > s.bounds.rows {
				return source.LimitExceeded("flightsql: %s: the server lists more than %d tables, the schema browser's bound; narrow the listing with the catalog and schema settings", what, s.bounds.rows)
			}
			read += rowBytes(rec, i)
			n, err := fn(rec, i)
			if err != nil {
				return err
			}
			kept += n
			if read+kept > s.bounds.bytes {
				return source.LimitExceeded("flightsql: %s: the server's table names and schemas are more than %s, the schema browser's bound; narrow the listing with the catalog and schema settings", what, settings.FormatBytes(s.bounds.bytes))
			}
		}
		return source.ReserveIn(ctx, kept)
	})
}

// rowBytes is what row i of a GetTables answer weighs: its names and its
// serialized schema.
func rowBytes(rec arrow.RecordBatch, i int) int64 {
	var n int64
	for _, col := range rec.Columns() {
		if col.IsNull(i) {
			continue
		}
		switch a := col.(type) {
		case *array.String:
			n += int64(a.ValueLen(i))
		case *array.Binary:
			n += int64(a.ValueLen(i))
		}
	}
	return n
}

// writeResourceError writes err of resource what, with the HTTP status of
// its kind; a deadline of the call's own says which bound it hit.
func (s *Source) writeResourceError(w http.ResponseWriter, ctx context.Context, what string, err error) {
	if source.KindOf(err) == source.KindTimeout && deadlinePassed(ctx) {
		err = &source.Error{Kind: source.KindTimeout, Err: fmt.Errorf("flightsql: %s: no answer within %s, the schema browser's bound (the timeout setting, at most %s): %w", what, s.resourceTimeout(), s.bounds.timeout, err)}
	}
	code := http.StatusBadGateway
	switch source.KindOf(err) {
	case source.KindQuery, source.KindLimit:
		code = http.StatusBadRequest
	case source.KindTimeout:
		code = http.StatusGatewayTimeout
	}
	writeJSON(w, source.StatusOf(err, code), map[string]string{"error": err.Error()})
}

// deadlinePassed reports whether ctx's deadline has come, whether or not
// its timer has fired yet: gRPC may see a call's deadline first, and report
// it, while ctx.Err() is still nil.
func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || ok && !time.Now().Before(dl)
}

// stringAt returns a copy of the text in column name, row i ("" when null or
// absent).
func stringAt(rec arrow.RecordBatch, name string, i int) string {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return ""
	}
	a := rec.Column(idx[0])
	if a.IsNull(i) {
		return ""
	}
	if s, ok := a.(*array.String); ok {
		return strings.Clone(s.Value(i))
	}
	return a.ValueStr(i)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
