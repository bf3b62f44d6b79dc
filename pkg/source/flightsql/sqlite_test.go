package flightsql

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// startSQLite serves arrow-go's SQLite example Flight SQL server with a
// metrics table: time INTEGER (Unix milliseconds), host TEXT, value REAL.
func startSQLite(t *testing.T) string {
	t.Helper()
	_, addr := startSQLiteDB(t)
	return addr
}

// startSQLiteDB is startSQLite, with the database the server reads.
func startSQLiteDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE metrics (time INTEGER, host TEXT, value REAL, note TEXT)`); err != nil {
		t.Fatal(err)
	}
	base := int64(1_700_000_000_000)
	for i := range 30 {
		// Inserted newest first, so the result is unsorted unless ordered.
		ts := base + int64(29-i)*60_000
		if _, err := db.Exec(`INSERT INTO metrics VALUES (?, ?, ?, ?)`, ts, fmt.Sprintf("h%d", i%3), float64(i), "n"); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	return db, startServer(t, srv, serverOpts{})
}

func TestSQLiteTimeSeries(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	// The range covers minutes 0..19 of the 30 inserted (runQuery's range
	// is 1_700_000_000 s + 1 h); cut it to the first 20 minutes.
	sql := `SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time) AND time < 1700000000000 + 20*60000`
	sink, err := runQuery(t, s, sql, FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 3 {
		t.Fatalf("%d frames, want one per host", len(sink.frames))
	}
	total := 0
	for _, f := range sink.frames {
		v := f.Fields[1]
		if v.Name != "value" || len(v.Labels) != 1 || !strings.HasPrefix(v.Labels["host"], "h") {
			t.Fatalf("field %s labels %v", v.Name, v.Labels)
		}
		if f.Fields[0].Type() != data.FieldTypeTime {
			t.Fatalf("time field is %s", f.Fields[0].Type())
		}
		for i := range f.Rows() {
			tm := f.Fields[0].At(i).(time.Time)
			if i > 0 && !tm.After(f.Fields[0].At(i-1).(time.Time)) {
				t.Fatalf("not sorted at row %d", i)
			}
			minute := (tm.UnixMilli() - 1_700_000_000_000) / 60_000
			if minute < 0 || minute >= 20 {
				t.Fatalf("row outside the range: %v", tm)
			}
			// value i was inserted at minute 29-i for host h(i%3).
			if want := float64(29 - minute); v.At(i) != want || v.Labels["host"] != fmt.Sprintf("h%d", int(want)%3) {
				t.Fatalf("minute %d: value %v host %s", minute, v.At(i), v.Labels["host"])
			}
		}
		total += f.Rows()
	}
	if total != 20 {
		t.Fatalf("%d rows, want 20", total)
	}
}

// TestSQLiteTimeFilter: the ansi dialect auto picks for SQLite writes time
// literals SQLite reads (a TIMESTAMP '…' literal is a syntax error there),
// and $__timeFilter compares them with times stored as ISO text. The range
// is 2023-11-14 22:13:20Z – 23:13:20Z.
// firstColumn is the values of the first frame's first field, as text.
func firstColumn(sink *frameSink) []string {
	var got []string
	for i := range sink.frames[0].Rows() {
		v, _ := sink.frames[0].Fields[0].ConcreteAt(i)
		got = append(got, fmt.Sprint(v))
	}
	return got
}

func TestSQLiteTimeFilter(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	const sql = `SELECT at FROM (SELECT '2023-11-14 22:13:00' AS at UNION ALL SELECT '2023-11-14 22:30:00'
		UNION ALL SELECT '2023-11-14 23:13:00' UNION ALL SELECT '2023-11-14 23:14:00')
		WHERE $__timeFilter(at) AND at < $__timeTo() ORDER BY at`
	sink, err := runQuery(t, s, sql, FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := firstColumn(sink)
	if !slices.Equal(got, []string{"2023-11-14 22:30:00", "2023-11-14 23:13:00"}) {
		t.Fatalf("selected %q, want 22:30 and 23:13", got)
	}
}

func TestSQLiteTableAndHealth(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	check(t, s)
	sink, err := runQuery(t, s, `SELECT host, count(*) AS n FROM metrics GROUP BY host ORDER BY host`, FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if f.Rows() != 3 || f.Fields[0].Name != "host" || fmt.Sprint(f.Fields[1].ConcreteAt(0)) != "10 true" {
		t.Fatalf("table %v rows %d", f.Fields, f.Rows())
	}
	_, err = runQuery(t, s, `SELECT nope FROM metrics`, FormatTable, source.Limits{})
	mustKind(t, err, source.KindUpstream, "no such column: nope")
}

func TestSQLiteResources(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	h := s.Resources()
	get := func(path string) (int, map[string]json.RawMessage) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var body map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.Body)
		}
		return rec.Code, body
	}
	code, body := get("/tables")
	var tables []Table
	if err := json.Unmarshal(body["tables"], &tables); err != nil || code != http.StatusOK {
		t.Fatalf("tables: %d %s", code, body)
	}
	names := map[string]bool{}
	for _, tb := range tables {
		names[tb.Name] = true
	}
	if !names["metrics"] || !names["intTable"] {
		t.Fatalf("tables %v", tables)
	}

	code, body = get("/columns?table=metrics")
	var cols []Column
	if err := json.Unmarshal(body["columns"], &cols); err != nil || code != http.StatusOK {
		t.Fatalf("columns: %d %s", code, body)
	}
	if got := fmt.Sprint(cols); got != "[{time int64} {host utf8} {value float64} {note utf8}]" {
		t.Errorf("columns %s", got)
	}
	if code, body = get("/columns"); code != http.StatusBadRequest || !strings.Contains(string(body["error"]), "the table parameter is required") {
		t.Errorf("no table: %d %s", code, body)
	}
	if code, body = get("/columns?table=nope"); code != http.StatusNotFound || !strings.Contains(string(body["error"]), `table \"nope\" not found`) {
		t.Errorf("unknown table: %d %s", code, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/tables", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /tables: %d", rec.Code)
	}
}

func TestSQLiteDialectResource(t *testing.T) {
	addr := startSQLite(t)
	get := func(s *Source) (int, Dialect, string) {
		rec := httptest.NewRecorder()
		s.Resources().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/dialect", nil))
		var d Dialect
		_ = json.Unmarshal(rec.Body.Bytes(), &d)
		return rec.Code, d, rec.Body.String()
	}
	// SQLite names itself "db_name": auto picks ansi, which quotes with ".
	code, d, body := get(newTestSource(t, baseConfig(addr)))
	if code != http.StatusOK || d != (Dialect{Dialect: "ansi", Setting: "auto", IdentifierQuote: `"`}) {
		t.Errorf("auto: %d %s", code, body)
	}
	cfg := baseConfig(addr)
	cfg.Dialect = "mysql"
	code, d, body = get(newTestSource(t, cfg))
	if code != http.StatusOK || d != (Dialect{Dialect: "mysql", Setting: "mysql", IdentifierQuote: "`"}) {
		t.Errorf("mysql setting: %d %s", code, body)
	}
	// auto against a server that cannot be reached: an upstream error.
	cfg = baseConfig("127.0.0.1:1")
	cfg.Timeout = 2
	code, _, body = get(newTestSource(t, cfg))
	if code != http.StatusBadGateway || !strings.Contains(body, "dialect setting (auto)") {
		t.Errorf("unreachable: %d %s", code, body)
	}
}

// Two columns of one name are two labels, in series and in logs: the later
// one renamed, with a notice, where one value overwrote the other.
func TestSQLiteLabelsOfOneName(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	sink, err := runQuery(t, s, `SELECT time, host AS x, 'n' || host AS x, value FROM metrics WHERE $__unixEpochMsFilter(time) AND time < 1700000000000 + 20*60000`, FormatTimeSeries, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 3 {
		t.Fatalf("%d frames, want one per host", len(sink.frames))
	}
	for _, f := range sink.frames {
		l := f.Fields[1].Labels
		if len(l) != 2 || l["x_2"] != "n"+l["x"] {
			t.Errorf("labels %v", l)
		}
	}
	if n := sink.frames[0].Meta.Notices; len(n) != 1 || !strings.Contains(n[0].Text, `"x" as "x_2"`) {
		t.Errorf("notices %v", n)
	}
	sink, err = runQuery(t, s, `SELECT time, 'line' AS body, host AS x, 'n' || host AS x FROM metrics WHERE $__unixEpochMsFilter(time)`, FormatLogs, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	labels := sink.frames[0].Fields[0]
	for _, f := range sink.frames[0].Fields {
		if f.Name == "labels" {
			labels = f
		}
	}
	var l map[string]string
	if err := json.Unmarshal(labels.At(0).(json.RawMessage), &l); err != nil || len(l) != 2 || l["x_2"] != "n"+l["x"] {
		t.Errorf("logs labels %v (%v)", l, err)
	}
	if n := sink.frames[0].Meta.Notices; len(n) != 1 || !strings.Contains(n[0].Text, `"x" as "x_2"`) {
		t.Errorf("logs notices %v", n)
	}
}
