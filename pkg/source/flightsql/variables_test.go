package flightsql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// Variable and annotation queries reach the backend as table queries with
// the SQL the frontend interpolated (lists quoted as 'a','b', $__searchFilter
// as a LIKE pattern); these tests run such SQL against the SQLite example
// server and check what the frontend reads: the first column, or __value and
// __text, and the annotation columns time, timeEnd, text and tags.

// fieldText returns the values of the field named name as text.
func fieldText(t *testing.T, f *data.Frame, name string) []string {
	t.Helper()
	for _, fl := range f.Fields {
		if fl.Name == name {
			out := make([]string, fl.Len())
			for i := range out {
				v, ok := fl.ConcreteAt(i)
				if !ok {
					out[i] = "<null>"
					continue
				}
				if raw, ok := v.(json.RawMessage); ok {
					out[i] = string(raw)
					continue
				}
				out[i] = fmt.Sprint(v)
			}
			return out
		}
	}
	t.Fatalf("no field %q in %v", name, f.Fields)
	return nil
}

func TestSQLiteVariableQueries(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	for _, tc := range []struct {
		name, sql string
		field     string
		want      []string
	}{
		{"first column", `SELECT DISTINCT host FROM metrics ORDER BY host`, "host", []string{"h0", "h1", "h2"}},
		{"multi-value IN", `SELECT DISTINCT host FROM metrics WHERE host IN ('h0','h2') ORDER BY host`, "host", []string{"h0", "h2"}},
		{"search filter", `SELECT DISTINCT host FROM metrics WHERE host LIKE 'h1%' ORDER BY host`, "host", []string{"h1"}},
		{"empty search filter", `SELECT DISTINCT host FROM metrics WHERE host LIKE '%' ORDER BY host`, "host", []string{"h0", "h1", "h2"}},
		{"macros", `SELECT DISTINCT host FROM metrics WHERE $__unixEpochMsFilter(time) AND value < 2 ORDER BY host`, "host", []string{"h0", "h1"}},
		{"__value", `SELECT DISTINCT host AS __value, 'Host ' || host AS __text FROM metrics ORDER BY 1`, "__value", []string{"h0", "h1", "h2"}},
		{"__text", `SELECT DISTINCT host AS __value, 'Host ' || host AS __text FROM metrics ORDER BY 1`, "__text", []string{"Host h0", "Host h1", "Host h2"}},
		{"numbers", `SELECT DISTINCT CAST(value AS INTEGER) % 3 AS n FROM metrics ORDER BY n`, "n", []string{"0", "1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink, err := runQuery(t, s, tc.sql, FormatTable, source.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sink.frames) != 1 {
				t.Fatalf("%d frames, want one table", len(sink.frames))
			}
			if got := fieldText(t, sink.frames[0], tc.field); !slices.Equal(got, tc.want) {
				t.Errorf("%s = %v, want %v", tc.field, got, tc.want)
			}
		})
	}
}

func TestSQLiteVariableLimitsAndErrors(t *testing.T) {
	addr := startSQLite(t)
	cfg := baseConfig(addr)
	cfg.RowLimit = 2
	s := newTestSource(t, cfg)
	sink, err := runQuery(t, s, `SELECT DISTINCT host FROM metrics ORDER BY host`, FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if got := fieldText(t, f, "host"); !slices.Equal(got, []string{"h0", "h1"}) {
		t.Errorf("hosts %v", got)
	}
	if f.Meta == nil || len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, "truncated to 2 rows (rowLimit setting)") {
		t.Errorf("meta %+v", f.Meta)
	}

	s = newTestSource(t, baseConfig(addr))
	_, err = runQuery(t, s, `SELECT DISTINCT hostname FROM metrics`, FormatTable, source.Limits{})
	mustKind(t, err, source.KindUpstream, "no such column: hostname")
	_, err = runQuery(t, s, `SELECT host FROM metrics WHERE $__nope(host)`, FormatTable, source.Limits{})
	mustKind(t, err, source.KindQuery, "$__nope")
	_, err = runQuery(t, s, `  `, FormatTable, source.Limits{})
	mustKind(t, err, source.KindQuery, "rawSql")
}

func TestSQLiteAnnotationQuery(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	sql := `SELECT time, CASE WHEN value = 0 THEN time + 120000 ELSE time END AS timeEnd,
		'deploy on ' || host AS text, 'deploy,' || host AS tags
		FROM metrics WHERE $__unixEpochMsFilter(time) AND value < 2 ORDER BY time`
	sink, err := runQuery(t, s, sql, FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 1 {
		t.Fatalf("%d frames", len(sink.frames))
	}
	f := sink.frames[0]
	// value i was inserted at minute 29-i for host h(i%3): values 1 and 0.
	checks := map[string][]string{
		"time":    {"1700001680000", "1700001740000"},
		"timeEnd": {"1700001680000", "1700001860000"},
		"text":    {"deploy on h1", "deploy on h0"},
		"tags":    {"deploy,h1", "deploy,h0"},
	}
	for name, want := range checks {
		if got := fieldText(t, f, name); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
