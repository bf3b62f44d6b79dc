package flightsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/pkg/source"
)

// Resources serves the query editor's schema browser:
//
//	GET /tables?catalog=&schema=               {"tables":[{"catalog","schema","name"}]}
//	GET /columns?catalog=&schema=&table=       {"columns":[{"name","type"}]}
//	GET /dialect                               {"dialect","setting","identifierQuote"}
//
// catalog and schema default to the data source's catalog and schema
// settings. Errors are {"error": "..."} with status 400 (bad request) or
// 502 (upstream failure).
func (s *Source) Resources() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tables", s.handleTables)
	mux.HandleFunc("GET /columns", s.handleColumns)
	mux.HandleFunc("GET /dialect", s.handleDialect)
	// The catalog, schema and table asked for are text the user sent
	// (redact).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sent []string
		for _, vs := range r.URL.Query() {
			sent = append(sent, vs...)
		}
		mux.ServeHTTP(w, r.WithContext(withSent(r.Context(), strings.Join(sent, "\n"))))
	})
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

func (s *Source) handleDialect(w http.ResponseWriter, r *http.Request) {
	d, err := s.sqlDialect(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	// The dialect's quote function is the one home of its quoting; its
	// rendering of the empty name is the quote character twice.
	writeJSON(w, http.StatusOK, Dialect{Dialect: d.name, Setting: s.conn.dialect.setting, IdentifierQuote: d.quote("")[:1]})
}

func (s *Source) tablesOpts(r *http.Request) *flightsql.GetTablesOpts {
	q := r.URL.Query()
	opts := &flightsql.GetTablesOpts{}
	if c := paramOr(q.Get("catalog"), s.cfg.Catalog); c != "" {
		opts.Catalog = &c
	}
	if sc := paramOr(q.Get("schema"), s.cfg.Schema); sc != "" {
		opts.DbSchemaFilterPattern = &sc
	}
	return opts
}

func paramOr(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func (s *Source) handleTables(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.TimeoutDuration())
	defer cancel()
	tables := []Table{}
	err := s.readTables(ctx, s.tablesOpts(r), func(rec arrow.RecordBatch, i int) error {
		tables = append(tables, Table{
			Catalog: stringAt(rec, "catalog_name", i),
			Schema:  stringAt(rec, "db_schema_name", i),
			Name:    stringAt(rec, "table_name", i),
		})
		return nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tables": tables})
}

func (s *Source) handleColumns(w http.ResponseWriter, r *http.Request) {
	table := r.URL.Query().Get("table")
	if table == "" {
		writeError(w, source.BadQuery("flightsql: columns: the table parameter is required"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.TimeoutDuration())
	defer cancel()
	opts := s.tablesOpts(r)
	opts.TableNameFilterPattern = &table // a LIKE pattern: names are compared exactly below
	opts.IncludeSchema = true
	var cols []Column
	found := false
	err := s.readTables(ctx, opts, func(rec arrow.RecordBatch, i int) error {
		if found || stringAt(rec, "table_name", i) != table {
			return nil
		}
		idx := rec.Schema().FieldIndices("table_schema")
		if len(idx) == 0 {
			return errors.New("flightsql: columns: the server sent no table_schema")
		}
		bin, ok := rec.Column(idx[0]).(*array.Binary)
		if !ok {
			return fmt.Errorf("flightsql: columns: table_schema is %s, not binary", rec.Column(idx[0]).DataType())
		}
		sc, err := flight.DeserializeSchema(bin.Value(i), s.mem)
		if err != nil {
			return fmt.Errorf("flightsql: columns: reading the schema of %s: %w", source.Quote(table), err)
		}
		found = true
		cols = make([]Column, sc.NumFields())
		for j, f := range sc.Fields() {
			cols[j] = Column{Name: f.Name, Type: f.Type.String()}
		}
		return nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("flightsql: columns: table %s not found", source.Quote(table))})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"columns": cols})
}

// readTables calls GetTables and hands each row to fn.
func (s *Source) readTables(ctx context.Context, opts *flightsql.GetTablesOpts, fn func(rec arrow.RecordBatch, i int) error) error {
	return s.readInfo(ctx, "listing tables", func(ctx context.Context) (*flight.FlightInfo, error) {
		return s.conn.main.GetTables(ctx, opts)
	}, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			if err := fn(rec, i); err != nil {
				return err
			}
		}
		return nil
	})
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

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	if source.KindOf(err) == source.KindQuery {
		code = http.StatusBadRequest
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
