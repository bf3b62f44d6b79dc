//go:build duckdb

package flightsql

import (
	"strings"
	"testing"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/engine"
)

// A JSON value null (arrow.json, DuckDB's lossless export) is the JSON
// value null, not SQL NULL: the engine's CAST(j AS VARCHAR) is "null".
// TestEngineJSONNullValue: JSON's null (DuckDB's JSON as arrow.json under
// arrow_lossless_conversion) is a value, not a missing one.
func TestEngineJSONNullValue(t *testing.T) {
	srv := engine.StartWith(t, engine.Options{Settings: map[string]string{"arrow_lossless_conversion": "true"}})
	s := engineSource(t, srv)
	srv.Exec(t, `CREATE TABLE jn (id INTEGER, j JSON);
	INSERT INTO jn VALUES (1, 'null'), (2, NULL), (3, '{"a": null}'), (4, '[null]')`)
	compareWithEngine(t, srv, s, "jn", []engineColumn{{"j", "CAST(j AS VARCHAR)", refJSON}})
}

// An opaque type the plugin does not read (DuckDB's BIGNUM) inside a list
// or struct is written as base64 in the JSON: the column gets the notice
// naming it and the vendor's type, as a top-level one does.
// TestEngineNestedOpaqueNotice: a vendor type the plugin cannot read,
// inside a list or a struct, is written in base64 with the notice a column
// of it gets.
func TestEngineNestedOpaqueNotice(t *testing.T) {
	srv := engine.Start(t, "")
	s := engineSource(t, srv)
	for _, sql := range []string{
		"SELECT [123456789012345678901234567890::BIGNUM] AS big",
		"SELECT {'b': (-1)::BIGNUM} AS big",
	} {
		sink, err := runQuery(t, s, sql, FormatTable, source.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f := sink.frames[0]
		var notices []string
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				notices = append(notices, n.Text)
			}
		}
		text := strings.Join(notices, "\n")
		if !strings.Contains(text, `Column "big"`) || !strings.Contains(text, `"bignum"`) {
			v, _ := f.Fields[0].ConcreteAt(0)
			t.Errorf("%s: got %s with notices %q, want a notice naming the column and its type", sql, v, notices)
		}
	}
}

// DuckDB's lossless export with arrow_large_buffer_size stores BIT in an
// arrow.opaque of large_binary: it is still DuckDB's text.
// TestEngineLosslessBitLargeBuffers: BIT over large_binary
// (arrow_large_buffer_size) is written as its digits, as over binary.
func TestEngineLosslessBitLargeBuffers(t *testing.T) {
	srv := engine.StartWith(t, engine.Options{Settings: map[string]string{"arrow_lossless_conversion": "true", "arrow_large_buffer_size": "true"}})
	s := engineSource(t, srv)
	srv.Exec(t, `CREATE TABLE lb (id INTEGER, bits BIT, lbits BIT[]);
	INSERT INTO lb VALUES (1, '101', ['1111000011', '0']), (2, '0', []), (3, NULL, NULL)`)
	compareWithEngine(t, srv, s, "lb", []engineColumn{{"bits", "", refText}, {"lbits", "", refJSON}})
}
