//go:build duckdb

package flightsql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/engine"
)

// The tests below query DuckDB through the Source (table format) and compare
// every value of every column with the engine's own text or JSON of the same
// value (CAST(x AS VARCHAR), to_json(x), base64(x)), run on the engine
// directly.

// engineColumn is one column of the comparison: its SQL, and how the frame's
// value is checked against the engine's reference.
type engineColumn struct {
	name string
	ref  string // the reference expression; "" = CAST(name AS VARCHAR)
	kind refKind
}

type refKind int

const (
	refNumber refKind = iota // a float64 field: strconv.ParseFloat of the text, exactly
	refText                  // a string field: the text exactly
	refTime                  // a time field: the instant the text names, null when Grafana cannot hold it
	refJSON                  // a JSON field: to_json's value, compared as JSON
)

// engineRows runs query on the engine and returns its rows as text; a NULL
// is nil.
func engineRows(t *testing.T, srv *engine.Server, query string) [][]*string {
	t.Helper()
	var out [][]*string
	for _, r := range srv.Query(t, query) {
		row := make([]*string, len(r))
		for i, v := range r {
			switch v := v.(type) {
			case nil:
			case string:
				row[i] = &v
			default:
				s := fmt.Sprint(v)
				row[i] = &s
			}
		}
		out = append(out, row)
	}
	return out
}

// compareWithEngine runs SELECT cols FROM table ORDER BY id through the
// Source and the references through the engine, and compares value by value.
func compareWithEngine(t *testing.T, srv *engine.Server, s *Source, table string, cols []engineColumn) *data.Frame {
	t.Helper()
	names := make([]string, len(cols))
	refs := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
		refs[i] = c.ref
		switch {
		case refs[i] != "":
		case c.kind == refJSON:
			refs[i] = fmt.Sprintf("CAST(to_json(%s) AS VARCHAR)", c.name)
		default:
			refs[i] = fmt.Sprintf("CAST(%s AS VARCHAR)", c.name)
		}
	}
	sql := fmt.Sprintf("SELECT %s FROM %s ORDER BY id", strings.Join(names, ", "), table)
	sink, err := runQuery(t, s, sql, FormatTable, source.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(sink.frames) != 1 {
		t.Fatalf("%d frames", len(sink.frames))
	}
	f := sink.frames[0]
	want := engineRows(t, srv, fmt.Sprintf("SELECT %s FROM %s ORDER BY id", strings.Join(refs, ", "), table))
	if f.Rows() != len(want) {
		t.Fatalf("%d rows, the engine has %d", f.Rows(), len(want))
	}
	for c, col := range cols {
		fld := f.Fields[c]
		if fld.Name != col.name {
			t.Fatalf("field %d is %q, want %q", c, fld.Name, col.name)
		}
		for r := range want {
			got, ok := fld.ConcreteAt(r)
			ref := want[r][c]
			if err := checkValue(col.kind, got, ok, ref); err != nil {
				t.Errorf("%s row %d (%s): %v", col.name, r, fld.Type(), err)
			}
		}
	}
	return f
}

func checkValue(kind refKind, got any, ok bool, ref *string) error {
	if ref == nil {
		if ok {
			return fmt.Errorf("got %v, the engine has NULL", got)
		}
		return nil
	}
	switch kind {
	case refNumber:
		want, err := strconv.ParseFloat(*ref, 64)
		if err != nil {
			return err
		}
		if g, isFloat := got.(float64); !ok || !isFloat || math.Float64bits(g) != math.Float64bits(want) && !(g == 0 && want == 0) {
			return fmt.Errorf("got %#v, want %v (the engine's %s)", got, want, *ref)
		}
	case refText:
		if g, isString := got.(string); !ok || !isString || g != *ref {
			return fmt.Errorf("got %#v, the engine's text is %q", got, *ref)
		}
	case refTime:
		want, inRange, err := engineInstant(*ref)
		if err != nil {
			return err
		}
		if !inRange {
			if ok {
				return fmt.Errorf("got %v for %q, want null (outside nanoseconds)", got, *ref)
			}
			return nil
		}
		if g, isTime := got.(time.Time); !ok || !isTime || !g.Equal(want) {
			return fmt.Errorf("got %v, the engine's value is %q", got, *ref)
		}
	case refJSON:
		g, isJSON := got.(json.RawMessage)
		if !ok || !isJSON {
			return fmt.Errorf("got %#v, want JSON %s", got, *ref)
		}
		if err := sameJSON(g, []byte(*ref)); err != nil {
			return fmt.Errorf("%s, the engine's to_json is %s: %w", g, *ref, err)
		}
	}
	return nil
}

// engineInstant reads DuckDB's text of a timestamp or date; inRange says
// whether int64 nanoseconds hold it.
func engineInstant(text string) (time.Time, bool, error) {
	if text == "infinity" || text == "-infinity" {
		return time.Time{}, false, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07", "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if v, err := time.Parse(layout, text); err == nil {
			lo, hi := time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64-1)
			return v, !v.Before(lo) && !v.After(hi), nil
		}
	}
	return time.Time{}, false, fmt.Errorf("cannot read the engine's time %q", text)
}

// sameJSON compares two JSON values; numbers are equal when they are the
// same decimal or the same float64 (DuckDB writes decimals through double).
func sameJSON(a, b []byte) error {
	var va, vb any
	for _, p := range []struct {
		b []byte
		v *any
	}{{a, &va}, {b, &vb}} {
		d := json.NewDecoder(bytes.NewReader(p.b))
		d.UseNumber()
		if err := d.Decode(p.v); err != nil {
			return err
		}
	}
	return sameValue(va, vb, "$")
}

func sameValue(a, b any, path string) error {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return fmt.Errorf("%s: %v is not a number", path, b)
		}
		ra, _ := new(big.Rat).SetString(a.String())
		rb, _ := new(big.Rat).SetString(bn.String())
		fa, _ := strconv.ParseFloat(a.String(), 64)
		fb, _ := strconv.ParseFloat(bn.String(), 64)
		if (ra == nil || rb == nil || ra.Cmp(rb) != 0) && fa != fb {
			return fmt.Errorf("%s: %s ≠ %s", path, a, bn)
		}
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(bm) != len(a) {
			return fmt.Errorf("%s: %v ≠ %v", path, a, b)
		}
		for k, v := range a {
			if err := sameValue(v, bm[k], path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		bl, ok := b.([]any)
		if !ok || len(bl) != len(a) {
			return fmt.Errorf("%s: %v ≠ %v", path, a, b)
		}
		for i := range a {
			if err := sameValue(a[i], bl[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if a != b {
			return fmt.Errorf("%s: %#v ≠ %#v", path, a, b)
		}
	}
	return nil
}

func engineSource(t *testing.T, srv *engine.Server) *Source {
	t.Helper()
	return newTestSource(t, baseConfig(srv.Addr))
}

// randomDecimal returns the text of a decimal with at most prec digits, scale
// of them after the point; short values as often as full-width ones.
func randomDecimal(rng *rand.Rand, prec, scale int) string {
	digits := 1 + rng.IntN(prec)
	var b strings.Builder
	if rng.IntN(2) == 0 {
		b.WriteByte('-')
	}
	ds := make([]byte, prec)
	for i := range ds {
		ds[i] = '0'
	}
	for i := prec - digits; i < prec; i++ {
		ds[i] = byte('0' + rng.IntN(10))
	}
	b.Write(ds[:prec-scale])
	if scale > 0 {
		b.WriteByte('.')
		b.Write(ds[prec-scale:])
	}
	return b.String()
}

func TestEngineDecimals(t *testing.T) {
	srv := engine.Start(t, "")
	s := engineSource(t, srv)
	srv.Exec(t, `CREATE TABLE dec (id INTEGER, d42 DECIMAL(4,2), d51 DECIMAL(5,1), d183 DECIMAL(18,3), d380 DECIMAL(38,0), d3810 DECIMAL(38,10), h HUGEINT, small DECIMAL(38,0))`)
	rng := rand.New(rand.NewPCG(5, 6))
	var rows []string
	for i := range 3000 {
		rows = append(rows, fmt.Sprintf("(%d, '%s', '%s', '%s', '%s', '%s', '%s', '%d')", i,
			randomDecimal(rng, 4, 2), randomDecimal(rng, 5, 1), randomDecimal(rng, 18, 3), randomDecimal(rng, 38, 0),
			randomDecimal(rng, 38, 10), randomDecimal(rng, 38, 0), rng.Int64N(1<<53)-1<<52))
	}
	rows = append(rows, "(3000, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", "(3001, '0.30', '0.3', '0.300', '9007199254740993', '0.3', '170141183460469231731687303715884105727', '0')")
	srv.Exec(t, "INSERT INTO dec VALUES "+strings.Join(rows, ", "))
	cols := []engineColumn{{"d42", "", refNumber}, {"d51", "", refNumber}, {"d183", "", refNumber}, {"d380", "", refNumber},
		{"d3810", "", refNumber}, {"h", "", refNumber}, {"small", "", refNumber}}
	f := compareWithEngine(t, srv, s, "dec", cols)
	// Notices: only the columns holding values a float64 cannot keep.
	var noticed []string
	if f.Meta != nil {
		for _, n := range f.Meta.Notices {
			noticed = append(noticed, n.Text)
		}
	}
	text := strings.Join(noticed, "\n")
	for _, c := range []string{"d183", "d380", "d3810", "h"} {
		if !strings.Contains(text, fmt.Sprintf("Column %q", c)) {
			t.Errorf("no precision notice for %s: %s", c, text)
		}
	}
	for _, c := range []string{"d42", "d51", "small"} {
		if strings.Contains(text, fmt.Sprintf("Column %q", c)) {
			t.Errorf("a notice for %s, whose values all fit a float64: %s", c, text)
		}
	}

	// DuckDB types sum(BIGINT) as DECIMAL(38,0) (HUGEINT); small sums are exact.
	srv.Exec(t, `CREATE TABLE nums AS SELECT i AS id, i::BIGINT AS x FROM range(1000) t(i)`)
	sink, err := runQuery(t, s, "SELECT sum(x) AS total, avg(x) AS mean FROM nums", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := sink.frames[0]
	if v, _ := got.Fields[0].ConcreteAt(0); v != float64(499500) {
		t.Errorf("sum: %#v", v)
	}
	if got.Meta != nil && len(got.Meta.Notices) > 0 {
		t.Errorf("notices for an exact sum: %+v", got.Meta.Notices)
	}
}

func TestEngineTimesAndIntervals(t *testing.T) {
	srv := engine.Start(t, "")
	s := engineSource(t, srv)
	srv.Exec(t, `CREATE TABLE times (id INTEGER, ts TIMESTAMP, tz TIMESTAMPTZ, ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS, ts_ns TIMESTAMP_NS, d DATE, tm TIME, iv INTERVAL);
	INSERT INTO times VALUES
	 (1, '2024-01-02 03:04:05.5', '2024-01-02 03:04:05.123456+00', '2024-01-02 03:04:05', '2024-01-02 03:04:05.123', '2024-01-02 03:04:05.123456789', '2024-02-29', '01:02:03.5', INTERVAL '1 month 2 days 03:04:05.5'),
	 (2, 'infinity', 'infinity', 'infinity', 'infinity', 'infinity', 'infinity', '00:00:00', INTERVAL '-13 months -1 day -1 hour'),
	 (3, '-infinity', '-infinity', '-infinity', '-infinity', '-infinity', '-infinity', '23:59:59.999999', INTERVAL '0 seconds'),
	 (4, '1000-01-01 00:00:00', '3000-06-01 12:00:00+00', '1600-01-01 00:00:00', '2300-01-01 00:00:00', '1677-09-22 00:00:00', '1500-01-01', '12:00:00', INTERVAL '100 hours'),
	 (5, '1677-09-22 00:00:00', '2262-04-10 00:00:00+00', '1970-01-01 00:00:00', '1969-12-31 23:59:59.999', '2262-04-10 00:00:00', '1970-01-01', '00:00:00.000001', INTERVAL '1 microsecond'),
	 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	 (7, '2024-03-10 02:30:00', '2024-03-10 07:30:00+00', '2024-03-10 02:30:00', '2024-03-10 02:30:00', '2024-03-10 02:30:00', '2262-04-11', '13:14:15.16', INTERVAL '2 years 3 months 4 days -05:06:07.000008')`)
	cols := []engineColumn{{"ts", "", refTime}, {"tz", "", refTime}, {"ts_s", "", refTime}, {"ts_ms", "", refTime}, {"ts_ns", "", refTime},
		{"d", "", refTime}, {"tm", "", refText}, {"iv", "", refText}}
	f := compareWithEngine(t, srv, s, "times", cols)
	if f.Meta == nil {
		t.Fatal("no notices for the infinities")
	}
	var text []string
	for _, n := range f.Meta.Notices {
		text = append(text, n.Text)
	}
	for _, c := range []string{"ts", "tz", "ts_s", "ts_ms", "ts_ns", "d"} {
		if !strings.Contains(strings.Join(text, "\n"), fmt.Sprintf("Column %q", c)) {
			t.Errorf("no out-of-range notice for %s: %q", c, text)
		}
	}
}

func TestEngineTextTypes(t *testing.T) {
	for _, lossless := range []bool{false, true} {
		t.Run(fmt.Sprintf("arrow_lossless_conversion=%v", lossless), func(t *testing.T) {
			srv := engine.StartWith(t, engine.Options{Settings: map[string]string{"arrow_lossless_conversion": strconv.FormatBool(lossless)}})
			s := engineSource(t, srv)
			srv.Exec(t, `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
			CREATE TABLE txt (id INTEGER, u UUID, e mood, b BLOB, v VARCHAR, j JSON, h HUGEINT, uh UHUGEINT, n INTEGER, dn DECIMAL(10,2));
			INSERT INTO txt VALUES
			 (1, '0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9', 'happy', '\x00\x01ab'::BLOB, 'héllo "q"', '{"a": [1, 2.5, null]}', 170141183460469231731687303715884105727, 170141183460469231731687303715884105727, NULL, NULL),
			 (2, 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'sad', ''::BLOB, '', '[]', -170141183460469231731687303715884105727, 0, NULL, NULL),
			 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			 (4, '00000000-0000-0000-0000-000000000000', 'ok', 'xyz'::BLOB, 'x', '"s"', 42, 9007199254740993, NULL, NULL)`)
			cols := []engineColumn{{"u", "", refText}, {"e", "", refText}, {"b", "base64(b)", refText}, {"v", "", refText},
				{"h", "", refNumber}, {"uh", "", refNumber}, {"n", "", refText}, {"dn", "", refNumber}}
			if lossless { // arrow.json: a JSON field
				cols = append(cols, engineColumn{"j", "CAST(j AS VARCHAR)", refJSON})
			} else {
				cols = append(cols, engineColumn{"j", "", refText})
			}
			compareWithEngine(t, srv, s, "txt", cols)
		})
	}
}

// TestEngineLosslessOpaque: with arrow_lossless_conversion DuckDB marks
// TIMETZ, BIT and BIGNUM arrow.opaque; the first two are its text, the last
// base64 with a notice naming the column.
func TestEngineLosslessOpaque(t *testing.T) {
	srv := engine.StartWith(t, engine.Options{Settings: map[string]string{"arrow_lossless_conversion": "true"}})
	s := engineSource(t, srv)
	// UHUGEINT above 2^127 needs the lossless form: DuckDB's default export
	// (decimal(38,0)) wraps it to a negative number.
	srv.Exec(t, `CREATE TABLE op (id INTEGER, ttz TIMETZ, bits BIT, big BIGNUM, uh UHUGEINT);
	INSERT INTO op VALUES (1, '01:02:03+05', '101', 123456789012345678901234567890, 340282366920938463463374607431768211455),
	 (2, '23:59:59.5-05:30', '0', -1, 18446744073709551616), (3, '00:00:00+00', '1111000011', 0, 1), (4, NULL, NULL, NULL, NULL)`)
	compareWithEngine(t, srv, s, "op", []engineColumn{{"ttz", "", refText}, {"bits", "", refText}, {"uh", "", refNumber}})
	sink, err := runQuery(t, s, "SELECT big FROM op ORDER BY id", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fr := sink.frames[0]
	if fr.Fields[0].Type() != data.FieldTypeNullableString || fr.Meta == nil || len(fr.Meta.Notices) != 1 ||
		!strings.Contains(fr.Meta.Notices[0].Text, `Column "big"`) || !strings.Contains(fr.Meta.Notices[0].Text, "base64") {
		t.Errorf("bignum: %s, %+v", fr.Fields[0].Type(), fr.Meta)
	}
}

func TestEngineNested(t *testing.T) {
	for _, tz := range []string{"UTC", "America/New_York"} {
		t.Run(tz, func(t *testing.T) {
			srv := engine.Start(t, tz)
			s := engineSource(t, srv)
			srv.Exec(t, `CREATE TABLE nest (id INTEGER,
			  l INTEGER[], ld DECIMAL(10,2)[], arr INTEGER[3], ll VARCHAR[][],
			  m MAP(INTEGER, VARCHAR), md MAP(VARCHAR, DECIMAL(5,2)),
			  st STRUCT(a DECIMAL(5,2), b INTEGER[], t TIMESTAMP, tz TIMESTAMPTZ, d DATE, iv INTERVAL, u UUID, f DOUBLE, e VARCHAR),
			  un UNION(num INTEGER, str VARCHAR),
			  ls STRUCT(k VARCHAR, v DECIMAL(18,3))[], lm MAP(VARCHAR, INTEGER)[], nd DECIMAL(38,10)[]);
			INSERT INTO nest VALUES
			 (1, [1, NULL, 3], [1.50, -0.05, NULL], [7, 8, 9], [['a', 'b"'], [], NULL],
			  MAP {1: 'one', 2: NULL}, MAP {'x': 1.25},
			  {'a': 123.45, 'b': [1, 2], 't': '2024-01-02 03:04:05.5', 'tz': '2024-01-02 03:04:05.5+00', 'd': '2024-02-29', 'iv': INTERVAL '1 month 2 days 00:00:03', 'u': '0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9', 'f': 1.5, 'e': 'x'},
			  union_value(num := 2), [{'k': 'a', 'v': 1.125}, {'k': 'b', 'v': NULL}], [MAP {'p': 1}, MAP {}], [12345678901234.5678, 0.0000000001]),
			 (2, [], [], [NULL, NULL, NULL], [], MAP {}, MAP {}, NULL, union_value(str := 'text'), [], [], []),
			 (3, NULL, NULL, NULL, NULL, NULL, NULL,
			  {'a': NULL, 'b': NULL, 't': 'infinity', 'tz': '-infinity', 'd': 'infinity', 'iv': NULL, 'u': NULL, 'f': 1e300, 'e': NULL},
			  NULL, NULL, NULL, NULL),
			 (4, [2147483647], [99999999.99], [1, 2, 3], [['x']], MAP {-5: 'neg'}, MAP {'y': -999.99},
			  {'a': -0.01, 'b': [], 't': '1000-01-01 00:00:00', 'tz': '2024-07-01 12:00:00+00', 'd': '1500-01-01', 'iv': INTERVAL '-1 hour', 'u': 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'f': 1e-7, 'e': ''},
			  union_value(num := -1), [{'k': '', 'v': 999999999999999.999}], [MAP {'q': NULL}], [NULL]),
			 (5, NULL, NULL, NULL, NULL, NULL, NULL,
			  {'a': NULL, 'b': NULL, 't': '0044-03-15 (BC) 12:00:00', 'tz': '0044-03-15 (BC) 12:00:00+00', 'd': '0044-03-15 (BC)', 'iv': NULL, 'u': NULL, 'f': NULL, 'e': NULL},
			  NULL, NULL, NULL, NULL)`)
			cols := []engineColumn{{"l", "", refJSON}, {"ld", "", refJSON}, {"arr", "", refJSON}, {"ll", "", refJSON},
				{"m", "", refJSON}, {"md", "", refJSON}, {"st", "", refJSON}, {"un", "", refJSON},
				{"ls", "", refJSON}, {"lm", "", refJSON}, {"nd", "", refJSON}}
			compareWithEngine(t, srv, s, "nest", cols)
		})
	}
}

// TestEngineNullOnlyColumns: a column of nothing but NULLs (typed or not)
// reaches Grafana as nulls.
func TestEngineNullOnlyColumns(t *testing.T) {
	srv := engine.Start(t, "")
	s := engineSource(t, srv)
	srv.Exec(t, `CREATE TABLE nulls AS SELECT i AS id, NULL AS n, NULL::DECIMAL(10,2) AS d, NULL::INTERVAL AS iv, NULL::TIMESTAMP AS ts,
	  NULL::INTEGER[] AS l, NULL::MAP(INTEGER, INTEGER) AS m, NULL::UNION(a INTEGER, b VARCHAR) AS u FROM range(3) t(i)`)
	compareWithEngine(t, srv, s, "nulls", []engineColumn{{"n", "", refText}, {"d", "", refNumber}, {"iv", "", refText},
		{"ts", "", refTime}, {"l", "", refJSON}, {"m", "", refJSON}, {"u", "", refJSON}})
}
