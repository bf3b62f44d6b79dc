//go:build duckdb

package flightsql

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/engine"
)

// engineHosts serves DuckDB with a cpu table of 3 hosts × 4 minutes inside
// runQuery's time range and one row outside it, and deploy events with a
// list of tags.
func engineHosts(t *testing.T) *engine.Server {
	t.Helper()
	e := engine.Start(t, "")
	e.Exec(t, `CREATE TABLE cpu AS
		SELECT TIMESTAMP '2023-11-14 22:13:20' + INTERVAL (m) MINUTE AS time,
		       'host-' || h AS host, CASE WHEN h = 3 THEN 'us' ELSE 'eu' END AS region, h * 10.0 + m AS usage
		FROM range(1, 4) hs(h), range(0, 4) ms(m)`)
	e.Exec(t, `INSERT INTO cpu VALUES (TIMESTAMP '2020-01-01 00:00:00', 'host-old', 'eu', 0)`)
	e.Exec(t, `CREATE TABLE deploys (time TIMESTAMP, time_end TIMESTAMP, text VARCHAR, tags VARCHAR[])`)
	e.Exec(t, `INSERT INTO deploys VALUES
		(TIMESTAMP '2023-11-14 22:20:00', NULL, 'api v2', ['deploy', 'api']),
		(TIMESTAMP '2023-11-14 22:30:00', TIMESTAMP '2023-11-14 22:45:00', 'outage', ['incident']),
		(TIMESTAMP '2020-01-01 00:00:00', NULL, 'too old', [])`)
	return e
}

func TestEngineVariableQueries(t *testing.T) {
	s := newTestSource(t, baseConfig(engineHosts(t).Addr))
	for _, tc := range []struct {
		name, sql, field string
		want             []string
	}{
		{"first column in the time range", `SELECT DISTINCT host FROM cpu WHERE $__timeFilter(time) ORDER BY 1`, "host", []string{"host-1", "host-2", "host-3"}},
		{"every row", `SELECT DISTINCT host FROM cpu ORDER BY 1`, "host", []string{"host-1", "host-2", "host-3", "host-old"}},
		{"chained on a multi-value region", `SELECT DISTINCT host FROM cpu WHERE region IN ('us') ORDER BY 1`, "host", []string{"host-3"}},
		{"All of two regions", `SELECT DISTINCT host FROM cpu WHERE region IN ('eu','us') AND $__timeFilter(time) ORDER BY 1`, "host", []string{"host-1", "host-2", "host-3"}},
		{"search filter", `SELECT DISTINCT host FROM cpu WHERE host LIKE 'host-o%' ORDER BY 1`, "host", []string{"host-old"}},
		{"__value and __text", `SELECT DISTINCT host AS __text, upper(host) AS __value FROM cpu WHERE $__timeFilter(time) ORDER BY 1`, "__value", []string{"HOST-1", "HOST-2", "HOST-3"}},
		{"numbers", `SELECT DISTINCT CAST(usage AS INTEGER) // 10 AS tens FROM cpu WHERE $__timeFilter(time) ORDER BY 1`, "tens", []string{"1", "2", "3"}},
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

func TestEngineVariableLimitsAndErrors(t *testing.T) {
	e := engineHosts(t)
	cfg := baseConfig(e.Addr)
	cfg.RowLimit = 2
	s := newTestSource(t, cfg)
	sink, err := runQuery(t, s, `SELECT DISTINCT host FROM cpu ORDER BY 1`, FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if got := fieldText(t, f, "host"); !slices.Equal(got, []string{"host-1", "host-2"}) {
		t.Errorf("hosts %v", got)
	}
	if f.Meta == nil || len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, "rowLimit setting") {
		t.Errorf("meta %+v", f.Meta)
	}
	s = newTestSource(t, baseConfig(e.Addr))
	_, err = runQuery(t, s, `SELECT DISTINCT hostname FROM cpu`, FormatTable, source.Limits{})
	mustKind(t, err, source.KindUpstream, "hostname")
}

func TestEngineAnnotationQuery(t *testing.T) {
	s := newTestSource(t, baseConfig(engineHosts(t).Addr))
	sink, err := runQuery(t, s, `SELECT time, time_end AS timeEnd, text, tags FROM deploys WHERE $__timeFilter(time) ORDER BY time`, FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 1 {
		t.Fatalf("%d frames", len(sink.frames))
	}
	f := sink.frames[0]
	for name, want := range map[string][]string{
		"time":    {"2023-11-14 22:20:00 +0000 UTC", "2023-11-14 22:30:00 +0000 UTC"},
		"timeEnd": {"<null>", "2023-11-14 22:45:00 +0000 UTC"},
		"text":    {"api v2", "outage"},
		// a list arrives as JSON, which the frontend reads as a list of tags
		"tags": {`["deploy","api"]`, `["incident"]`},
	} {
		if got := fieldText(t, f, name); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestEngineDialectResource(t *testing.T) {
	s := newTestSource(t, baseConfig(engineHosts(t).Addr))
	rec := httptest.NewRecorder()
	s.Resources().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/dialect", nil))
	var d Dialect
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if d != (Dialect{Dialect: "duckdb", Setting: "auto", IdentifierQuote: `"`}) {
		t.Errorf("dialect %+v", d)
	}
}
