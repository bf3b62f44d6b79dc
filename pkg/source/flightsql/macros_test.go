package flightsql

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// testEnv is the environment of the expansion tests, in dialect name.
func testEnv(name string) macroEnv {
	return macroEnv{
		from:     time.Date(2024, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("CET", 3600)),
		to:       time.Date(2024, 1, 2, 4, 4, 5, 0, time.UTC),
		interval: 5 * time.Minute, catalog: "cat", schema: "sch",
		dialect: func() (*dialect, error) { return dialects[name], nil },
	}
}

func expand(t testing.TB, sql string, env macroEnv) (expansion, error) {
	t.Helper()
	return expandMacros(context.Background(), sql, env)
}

// TestExpandMacrosAnyDialect covers what every dialect writes the same way.
func TestExpandMacrosAnyDialect(t *testing.T) {
	for _, name := range settings.Dialects[1:] {
		env := testEnv(name)
		for _, tc := range []struct{ in, want string }{
			{"$__unixEpochFilter(t)", "(t >= 1704161045 AND t <= 1704168245)"},
			{"$__unixEpochMsFilter(t)", "(t >= 1704161045006 AND t <= 1704168245000)"},
			{"$__unixEpochNanoFilter(t)", "(t >= 1704161045006000000 AND t <= 1704168245000000000)"},
			{"$__unixEpochFrom() $__unixEpochTo() $__unixEpochMsFrom() $__unixEpochNanoTo()", "1704161045 1704168245 1704161045006 1704168245000000000"},
			{"$__unixEpochMsTo() $__unixEpochNanoFrom()", "1704168245000 1704161045006000000"},
			{"$__interval $__interval_ms", "5m 300000"},
			{"FROM $__catalog.$__schema.t", "FROM cat.sch.t"},
			// Quoting-safe: nothing expands inside literals, identifiers or comments.
			{"SELECT '$__timeFilter(x)', 'it''s $__interval' FROM t", "SELECT '$__timeFilter(x)', 'it''s $__interval' FROM t"},
			{`SELECT "$__interval", ` + "`$__interval`" + ` FROM t`, `SELECT "$__interval", ` + "`$__interval`" + ` FROM t`},
			{"SELECT 1 -- $__nope(\n, $__interval_ms", "SELECT 1 -- $__nope(\n, 300000"},
			{"SELECT /* $__timeFilter( */ $__interval", "SELECT /* $__timeFilter( */ 5m"},
			{"SELECT 'unterminated $__interval", "SELECT 'unterminated $__interval"},
			{"SELECT $1, $__interval_ms*2", "SELECT $1, 300000*2"},
			{"$__interval(1)", "5m(1)"},
			{"$__unixEpochMsFilter($__unixEpochFrom())", "(1704161045 >= 1704161045006 AND 1704161045 <= 1704168245000)"},
			{"no macro at all", "no macro at all"},
			// A comment in a macro's arguments is left out of what the macro
			// writes, where it would hide the rest of its line; a parenthesis
			// or comma in it is not the list's.
			{"WHERE $__unixEpochFilter(\n  t -- event time\n) AND h = 'a'", "WHERE (t >= 1704161045 AND t <= 1704168245) AND h = 'a'"},
			{"WHERE $__unixEpochFilter(t /* ) */)", "WHERE (t >= 1704161045 AND t <= 1704168245)"},
			{"WHERE $__unixEpochFilter(t /* the column, in s */)", "WHERE (t >= 1704161045 AND t <= 1704168245)"},
			{"WHERE $__unixEpochFilter(t -- it's the time\n)", "WHERE (t >= 1704161045 AND t <= 1704168245)"},
			{"WHERE $__unixEpochFilter(t || '--not a comment')", "WHERE (t || '--not a comment' >= 1704161045 AND t || '--not a comment' <= 1704168245)"},
			// Each comment is one space; a -- comment's newline stays.
			{"$__unixEpochFilter(a/*x*/b-- y\n/**/c)", "(a b \n c >= 1704161045 AND a b \n c <= 1704168245)"},
			{"$__unixEpochFilter(f(a /* , */,'/*' -- )\n)--z\n)", "(f(a  ,'/*'  \n) >= 1704161045 AND f(a  ,'/*'  \n) <= 1704168245)"},
			{"$__unixEpochFrom(/* none */) $__unixEpochTo(--\n)", "1704161045 1704168245"},
		} {
			got, err := expand(t, tc.in, env)
			if err != nil {
				t.Errorf("%s: %s: %v", name, tc.in, err)
				continue
			}
			if got.SQL != tc.want || got.Fill != nil {
				t.Errorf("%s: %s:\n got %s (fill %v)\nwant %s", name, tc.in, got.SQL, got.Fill, tc.want)
			}
		}
	}
}

// TestExpandMacrosPerDialect pins the exact SQL of the dialect-dependent
// macros; docs/dialects.md shows the same text.
func TestExpandMacrosPerDialect(t *testing.T) {
	const bothFilters = "$__timeFilter(ts) $__timeFrom() $__timeTo"
	for _, tc := range []struct {
		dialect string
		cases   map[string]string
	}{
		{settings.DialectDataFusion, map[string]string{
			bothFilters:                                 "(ts >= '2024-01-02T02:04:05.006Z' AND ts <= '2024-01-02T04:04:05.000Z') '2024-01-02T02:04:05.006Z' '2024-01-02T04:04:05.000Z'",
			"$__timeGroup(ts, '1h')":                    "date_bin(INTERVAL '3600 seconds', ts)",
			"$__timeGroup(ts, $__interval)":             "date_bin(INTERVAL '300 seconds', ts)",
			"$__timeGroupAlias(ts, 500ms)":              `date_bin(INTERVAL '500 milliseconds', ts) AS "time"`,
			"$__timeGroup(ts, 7m)":                      "date_bin(INTERVAL '420 seconds', ts)",
			"$__unixEpochGroup(t, 1w)":                  "(t - ((t % 604800) + 604800) % 604800)",
			`$__timeGroup(date_trunc('day', ts), "1d")`: "date_bin(INTERVAL '86400 seconds', date_trunc('day', ts))",
			"$__unixEpochGroupAlias(t, 1w)":             `(t - ((t % 604800) + 604800) % 604800) AS "time"`,
			"$__unixEpochGroup(t, 5m, NULL)":            "(t - ((t % 300) + 300) % 300)",
			"$__time(ts)":                               `ts AS "time"`,
			"$__timeEpoch(ts)":                          `CAST(floor(extract(epoch from ts)) AS BIGINT) AS "time"`,
		}},
		{settings.DialectDuckDB, map[string]string{
			bothFilters:                    "(ts >= '2024-01-02 02:04:05.006+00' AND ts <= '2024-01-02 04:04:05.000+00') '2024-01-02 02:04:05.006+00' '2024-01-02 04:04:05.000+00'",
			"$__timeGroup(ts, '1h')":       "time_bucket(INTERVAL '3600 seconds', ts)",
			"$__timeGroupAlias(ts, 500ms)": `time_bucket(INTERVAL '500 milliseconds', ts) AS "time"`,
			// 2000-01-03 (time_bucket's origin) is 946857600 s after the
			// epoch: 360 s past a multiple of 420 s, 345600 s past one of a week.
			"$__timeGroup(ts, 7m)":     "time_bucket(INTERVAL '420 seconds', ts, INTERVAL '60 seconds')",
			"$__timeGroup(ts, 1w)":     "time_bucket(INTERVAL '604800 seconds', ts, INTERVAL '259200 seconds')",
			"$__timeGroup(ts, 1d)":     "time_bucket(INTERVAL '86400 seconds', ts)",
			"$__unixEpochGroup(t, 1w)": "(t - ((t % 604800) + 604800) % 604800)",
			// The alias after the whole expression, an expression argument
			// in parentheses; the fill leaves the SQL alone.
			"$__unixEpochGroupAlias(t + 30, 1m, previous)": `((t + 30) - (((t + 30) % 60) + 60) % 60) AS "time"`,
			"$__time(ts)":                     `ts AS "time"`,
			"$__time(ts + INTERVAL '1 hour')": `ts + INTERVAL '1 hour' AS "time"`,
			"$__timeEpoch(ts)":                `CAST(floor(epoch(ts)) AS BIGINT) AS "time"`,
		}},
		{settings.DialectPostgres, map[string]string{
			bothFilters:                    "(ts >= '2024-01-02 02:04:05.006+00' AND ts <= '2024-01-02 04:04:05.000+00') '2024-01-02 02:04:05.006+00' '2024-01-02 04:04:05.000+00'",
			"$__timeGroup(ts, '1h')":       "to_timestamp(floor(extract(epoch from ts) / 3600) * 3600)",
			"$__timeGroupAlias(ts, 500ms)": `to_timestamp(floor(extract(epoch from ts) / 0.5) * 0.5) AS "time"`,
			"$__timeGroup(ts, 1250ms)":     "to_timestamp(floor(extract(epoch from ts) / 1.25) * 1.25)",
			// Grafana writes $__interval in years past a year (1y: 365 days).
			"$__timeGroup(ts, 1y)":          "to_timestamp(floor(extract(epoch from ts) / 31536000) * 31536000)",
			"$__timeGroup(ts, '1M')":        "to_timestamp(floor(extract(epoch from ts) / 2592000) * 2592000)",
			"$__unixEpochGroup(t, 1w)":      "(t - ((t % 604800) + 604800) % 604800)",
			"$__unixEpochGroupAlias(t, 1w)": `(t - ((t % 604800) + 604800) % 604800) AS "time"`,
			"$__time(ts)":                   `ts AS "time"`,
			"$__timeEpoch(ts)":              `CAST(floor(extract(epoch from ts)) AS BIGINT) AS "time"`,
		}},
		{settings.DialectDremio, map[string]string{
			bothFilters:                        "(ts >= TIMESTAMP '2024-01-02 02:04:05.006' AND ts <= TIMESTAMP '2024-01-02 04:04:05.000') TIMESTAMP '2024-01-02 02:04:05.006' TIMESTAMP '2024-01-02 04:04:05.000'",
			"$__timeGroup(ts, '1h')":           "TO_TIMESTAMP(FLOOR(EXTRACT(EPOCH FROM ts) / 3600) * 3600)",
			"$__timeGroupAlias(ts, 5m)":        `TO_TIMESTAMP(FLOOR(EXTRACT(EPOCH FROM ts) / 300) * 300) AS "time"`,
			"$__unixEpochGroup(t, 1w)":         "(t - MOD(MOD(t, 604800) + 604800, 604800))",
			"$__unixEpochGroupAlias(t, 1w, 0)": `(t - MOD(MOD(t, 604800) + 604800, 604800)) AS "time"`,
			"$__time(ts)":                      `ts AS "time"`,
			"$__timeEpoch(ts)":                 `CAST(EXTRACT(EPOCH FROM ts) AS BIGINT) AS "time"`,
		}},
		{settings.DialectMySQL, map[string]string{
			bothFilters:                     "(ts >= '2024-01-02 02:04:05.006' AND ts <= '2024-01-02 04:04:05.000') '2024-01-02 02:04:05.006' '2024-01-02 04:04:05.000'",
			"$__timeGroup(ts, '1h')":        "DATE_ADD(CAST('1970-01-01 00:00:00' AS DATETIME), INTERVAL FLOOR(TIMESTAMPDIFF(SECOND, CAST('1970-01-01 00:00:00' AS DATETIME), ts) / 3600) * 3600 SECOND)",
			"$__timeGroupAlias(ts, 5m)":     "DATE_ADD(CAST('1970-01-01 00:00:00' AS DATETIME), INTERVAL FLOOR(TIMESTAMPDIFF(SECOND, CAST('1970-01-01 00:00:00' AS DATETIME), ts) / 300) * 300 SECOND) AS `time`",
			"$__unixEpochGroup(t, 1w)":      "(t - ((t % 604800) + 604800) % 604800)",
			"$__unixEpochGroupAlias(t, 1w)": "(t - ((t % 604800) + 604800) % 604800) AS `time`",
			"$__time(ts)":                   "ts AS `time`",
			"$__timeEpoch(ts)":              "TIMESTAMPDIFF(SECOND, CAST('1970-01-01 00:00:00' AS DATETIME), ts) AS `time`",
		}},
		{settings.DialectANSI, map[string]string{
			bothFilters:                           "(ts >= '2024-01-02 02:04:05.006+00:00' AND ts <= '2024-01-02 04:04:05.000+00:00') '2024-01-02 02:04:05.006+00:00' '2024-01-02 04:04:05.000+00:00'",
			"$__unixEpochGroup(t, 1w)":            "(t - ((t % 604800) + 604800) % 604800)",
			"$__unixEpochGroupAlias(t, 1w, NULL)": `(t - ((t % 604800) + 604800) % 604800) AS "time"`,
			"$__time(ts)":                         `ts AS "time"`,
		}},
	} {
		env := testEnv(tc.dialect)
		for in, want := range tc.cases {
			got, err := expand(t, in, env)
			if err != nil {
				t.Errorf("%s: %s: %v", tc.dialect, in, err)
				continue
			}
			if got.SQL != want {
				t.Errorf("%s: %s:\n got %s\nwant %s", tc.dialect, in, got.SQL, want)
			}
		}
	}
}

// TestDialectTable checks that every dialect the setting accepts has an
// entry, and every entry a name the setting accepts.
func TestDialectTable(t *testing.T) {
	for _, name := range settings.Dialects[1:] {
		d, ok := dialects[name]
		if !ok || d.name != name || d.timeLiteral == nil || d.epochGroup == nil || d.quote == nil || (d.timeGroup == nil) == (d.timeGroupWhy == "") || (d.timeEpoch == nil) == (d.timeEpochWhy == "") {
			t.Errorf("dialect %q: incomplete entry %+v", name, d)
		}
	}
	if len(dialects) != len(settings.Dialects)-1 {
		t.Errorf("%d dialects, the setting accepts %d besides auto", len(dialects), len(settings.Dialects)-1)
	}
}

func TestExpandMacrosErrors(t *testing.T) {
	env := macroEnv{from: time.Unix(0, 0), to: time.Unix(60, 0), interval: time.Second,
		dialect: func() (*dialect, error) { return dialects[settings.DialectDuckDB], nil }}
	for _, tc := range []struct{ in, want string }{
		{"$__nope", `unknown macro "$__nope" (known: $__catalog,`},
		{"$__", `unknown macro "$__" (known:`},
		{"$__timeFilter", "$__timeFilter needs 1 argument(s) in parentheses"},
		{"$__timeFilter()", "$__timeFilter takes 1 argument(s), got 0"},
		{"$__timeFilter(a, b)", "$__timeFilter takes 1 argument(s), got 2"},
		{"$__timeFilter(a", "$__timeFilter: missing ')'"},
		{"$__timeFilter(a /* ) */", "$__timeFilter: missing ')'"},
		{"$__timeFilter(a -- )", "$__timeFilter: missing ')'"},
		{"$__timeGroup(a)", "$__timeGroup takes 2 or 3 arguments, got 1"},
		{"$__timeGroup(a, )", "$__timeGroup: argument 2 is empty"},
		{"$__timeGroup(a, 'soon')", `interval "'soon'" is not a duration`},
		{"$__timeGroup(a, 0s)", "is not a duration"},
		{"$__timeGroup(a, 1h, NULL, 4)", "$__timeGroup takes 2 or 3 arguments, got 4"},
		{"$__timeGroup(a, 1h, sometimes)", `$__timeGroup: fill "sometimes" is not NULL, previous or a number`},
		{"$__timeGroup(a, 1h, 1e999)", `fill "1e999" is not NULL, previous or a number`},
		{"$__timeGroup(a, 1h, 0) $__timeGroup(a, 1h, NULL)", "$__timeGroup: fill NULL differs from the fill 0 given earlier in the query"},
		// The same fill at another interval: the message names the intervals
		// (it said "fill 0 differs from the fill 0").
		{"$__timeGroup(ts, 5m, 0), $__timeGroup(ts, 10m, 0)", "$__timeGroup: fill 0 at interval 10m differs from the fill 0 at interval 5m given earlier in the query"},
		{"$__timeGroup(ts, 5m, 0), $__timeGroup(ts, 1h, previous)", "$__timeGroup: fill previous at interval 1h differs from the fill 0 at interval 5m given earlier"},
		// More arguments than a macro takes are counted, not kept.
		{"$__timeGroup(a, 1h, 0, 4, 5)", "$__timeGroup takes 2 or 3 arguments, got 5"},
		{"$__timeFrom(a, b)", "$__timeFrom takes 0 argument(s), got 2"},
		{"$__unixEpochGroup(a, 1500ms)", "is not a whole number of seconds"},
		{"$__unixEpochGroupAlias(a, 1500ms, 0)", `$__unixEpochGroupAlias: interval "1500ms" is not a whole number of seconds`},
		{"$__unixEpochGroupAlias(a)", "$__unixEpochGroupAlias takes 2 or 3 arguments, got 1"},
		{"$__unixEpochGroup(a, 1h, NULL, 4)", "$__unixEpochGroup takes 2 or 3 arguments, got 4"},
		{"$__unixEpochGroup(a, 1h, sometimes)", `$__unixEpochGroup: fill "sometimes" is not NULL, previous or a number`},
		// One fill per query, whichever time group gives it.
		{"$__timeGroup(ts, 5m, 0) $__unixEpochGroup(t, 5m, NULL)", "$__unixEpochGroup: fill NULL differs from the fill 0 given earlier in the query"},
		{"$__unixEpochGroupAlias(t, 5m, 0) $__timeGroupAlias(ts, 10m, 0)", "$__timeGroupAlias: fill 0 at interval 10m differs from the fill 0 at interval 5m given earlier in the query"},
		{"$__time", "$__time needs 1 argument(s) in parentheses"},
		{"$__time()", "$__time takes 1 argument(s), got 0"},
		{"$__time(a, b)", "$__time takes 1 argument(s), got 2"},
		{"$__timeEpoch(a, 1s)", "$__timeEpoch takes 1 argument(s), got 2"},
		{"$__timeEpoch", "$__timeEpoch needs 1 argument(s) in parentheses"},
		{"$__catalog", "no default catalog is configured (catalog setting)"},
		{"$__timeGroup(a, $__nope)", `unknown macro "$__nope"`},
	} {
		_, err := expand(t, tc.in, env)
		mustKind(t, err, source.KindQuery, tc.want)
		if err != nil && !strings.HasPrefix(err.Error(), "flightsql: ") {
			t.Errorf("%s: %q lacks the package prefix", tc.in, err)
		}
	}
}

// What the user wrote is quoted in a macro's error at most
// source.QuoteMax bytes long, however long it is.
func TestExpandMacrosErrorsCapWhatTheUserWrote(t *testing.T) {
	env := macroEnv{from: time.Unix(0, 0), to: time.Unix(60, 0), interval: time.Second,
		dialect: func() (*dialect, error) { return dialects[settings.DialectDuckDB], nil }}
	long := strings.Repeat("x", 10_000)
	for _, in := range []string{
		"$__" + long,
		"$__timeGroup(a, '" + long + "')",
		"$__timeGroup(a, 1h, " + long + ")",
		"$__unixEpochGroup(a, 1500ms" + long + ")",
	} {
		_, err := expand(t, in, env)
		if err == nil {
			t.Fatalf("%.40s…: no error", in)
		}
		if len(err.Error()) > 1000 || strings.Contains(err.Error(), strings.Repeat("x", source.QuoteMax+1)) {
			t.Errorf("%.40s…: a %d-byte error quoting more than %d bytes of the query", in, len(err.Error()), source.QuoteMax)
		}
	}
}

// TestExpandMacrosNoRendering: a macro a dialect cannot write is a query
// error naming the macro and the dialect.
func TestExpandMacrosNoRendering(t *testing.T) {
	for _, tc := range []struct{ dialect, in, want string }{
		{settings.DialectANSI, "$__timeGroup(ts, 5m)", "flightsql: $__timeGroup: no rendering in the ansi SQL dialect: standard SQL has no time bucketing: set the dialect setting"},
		{settings.DialectANSI, "$__timeGroupAlias(ts, 5m)", "flightsql: $__timeGroupAlias: no rendering in the ansi SQL dialect"},
		{settings.DialectANSI, "$__timeEpoch(ts)", "flightsql: $__timeEpoch: no rendering in the ansi SQL dialect: standard SQL has no Unix epoch extraction: set the dialect setting"},
		{settings.DialectMySQL, "$__timeGroup(ts, 500ms)", "flightsql: $__timeGroup: the mysql SQL dialect has no rendering for an interval below whole seconds (500ms)"},
		{settings.DialectDremio, "$__timeGroup(ts, 1500ms)", "flightsql: $__timeGroup: the dremio SQL dialect has no rendering for an interval below whole seconds (1500ms)"},
	} {
		_, err := expand(t, tc.in, testEnv(tc.dialect))
		mustKind(t, err, source.KindQuery, tc.want)
	}
}

func TestExpandMacrosFill(t *testing.T) {
	env := testEnv(settings.DialectDataFusion)
	for in, want := range map[string]*series.FillSpec{
		"$__timeGroup(ts, 5m, NULL)":                        {Mode: series.FillNull, Interval: 5 * time.Minute},
		"$__timeGroup(ts, 5m, null)":                        {Mode: series.FillNull, Interval: 5 * time.Minute},
		"$__timeGroupAlias(ts, $__interval, previous)":      {Mode: series.FillPrevious, Interval: 5 * time.Minute},
		"$__timeGroup(ts, '1h', -2.5)":                      {Mode: series.FillValue, Value: -2.5, Interval: time.Hour},
		"$__timeGroup(ts, 1h, 0) x $__timeGroup(ts, 1h, 0)": {Mode: series.FillValue, Interval: time.Hour},
		"$__timeGroup(ts, 1h)":                              nil,
		// $__unixEpochGroup takes the fill as $__timeGroup does.
		"$__unixEpochGroup(t, 5m, NULL)":                             {Mode: series.FillNull, Interval: 5 * time.Minute},
		"$__unixEpochGroupAlias(t, $__interval, previous)":           {Mode: series.FillPrevious, Interval: 5 * time.Minute},
		"$__unixEpochGroupAlias(t, 1h, -2.5)":                        {Mode: series.FillValue, Value: -2.5, Interval: time.Hour},
		"$__timeGroup(ts, 1h, 0) x $__unixEpochGroupAlias(t, 1h, 0)": {Mode: series.FillValue, Interval: time.Hour},
		"$__unixEpochGroupAlias(t, 1h)":                              nil,
	} {
		got, err := expand(t, in, env)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if (got.Fill == nil) != (want == nil) || got.Fill != nil && *got.Fill != *want {
			t.Errorf("%s: fill %+v, want %+v", in, got.Fill, want)
		}
		if strings.Contains(got.SQL, "NULL") || strings.Contains(got.SQL, "previous") || strings.Contains(got.SQL, "2.5") {
			t.Errorf("%s: the fill argument reached the SQL: %s", in, got.SQL)
		}
	}
}

// TestExpandMacrosDialectAskedLazily: the dialect (a GetSqlInfo call for
// auto) is looked up only for the macros that depend on it, at most once,
// and a failure to find it comes back unchanged.
func TestExpandMacrosDialectAskedLazily(t *testing.T) {
	calls := 0
	env := testEnv(settings.DialectDuckDB)
	env.dialect = func() (*dialect, error) { calls++; return dialects[settings.DialectDuckDB], nil }
	if _, err := expand(t, "SELECT $__interval, $__unixEpochFilter(t), $__catalog", env); err != nil || calls != 0 {
		t.Fatalf("err %v, %d dialect lookups, want none", err, calls)
	}
	if _, err := expand(t, "$__timeFilter(a) $__timeGroup(a, 1m) $__timeFrom()", env); err != nil || calls != 1 {
		t.Fatalf("err %v, %d dialect lookups, want 1", err, calls)
	}
	want := source.Upstream(errors.New("flightsql: reading the server's name: unavailable"))
	env.dialect = func() (*dialect, error) { return nil, want }
	for _, sql := range []string{"$__timeFilter(a)", "$__unixEpochFilter($__timeFrom())"} {
		if _, err := expand(t, sql, env); err != want {
			t.Fatalf("%s: got %v, want the lookup's error as is", sql, err)
		}
	}
}

func TestExpandMacrosLimits(t *testing.T) {
	env := testEnv(settings.DialectDuckDB)
	long := "SELECT '" + strings.Repeat("x", maxQueryBytes) + "'"
	_, err := expand(t, long, env)
	mustKind(t, err, source.KindQuery, "flightsql: rawSql: the query is 1048585 bytes long; at most 1048576 (1 MiB) are accepted")

	// maxMacroDepth levels are fine, one more is refused.
	nest := func(open, close string, depth int) string {
		return strings.Repeat(open, depth) + "t" + strings.Repeat(close, depth)
	}
	if _, err := expand(t, nest("$__timeGroup(", ", 1m)", maxMacroDepth), env); err != nil {
		t.Fatalf("depth %d: %v", maxMacroDepth, err)
	}
	_, err = expand(t, nest("$__timeGroup(", ", 1m)", maxMacroDepth+1), env)
	mustKind(t, err, source.KindQuery, "flightsql: $__timeGroup: macros are nested more than 16 deep in macro arguments")

	// Doubling at each of 16 levels: refused by the output bound.
	_, err = expand(t, nest("$__unixEpochFilter(", ")", maxMacroDepth), env)
	mustKind(t, err, source.KindQuery, "flightsql: the expanded query would exceed")
}

// TestExpandMacrosCancelled: a cancelled context stops the expansion, also
// one cancelled while it runs.
func TestExpandMacrosCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	env := testEnv(settings.DialectDuckDB)
	env.dialect = func() (*dialect, error) { cancel(); return dialects[settings.DialectDuckDB], nil }
	sql := strings.Repeat("$__timeFilter(ts) ", 3*ctxEvery)
	_, err := expandMacros(ctx, sql, env)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "flightsql: macro expansion cancelled") {
		t.Fatalf("got %v", err)
	}
	if _, err := expandMacros(ctx, "SELECT 1", env); !errors.Is(err, context.Canceled) {
		t.Fatalf("already cancelled: got %v", err)
	}
}

// pathological are queries whose expansion was exponential in their
// nesting: nested $__timeFilter (each level repeats its argument twice) and
// nested $__timeGroup, both far deeper than allowed and at the allowed depth;
// a long argument nested less deep (each level's text was built before the
// output bound refused it: 200 MB for 1 MiB); and a macro given half a
// million arguments (each was kept before their count was checked: 86 MB).
func pathological() map[string]string {
	nest := func(open, close string, depth int, inner string) string {
		return strings.Repeat(open, depth) + inner + strings.Repeat(close, depth)
	}
	return map[string]string{
		"timeFilter/391B":         nest("$__timeFilter(", ")", 26, "ts"),
		"timeFilter/depth16":      nest("$__timeFilter(", ")", maxMacroDepth, "ts"),
		"timeGroup/720KB":         nest("$__timeGroup(", ", 1m)", 720<<10/18, "ts"),
		"timeGroup/depth16":       nest("$__timeGroup(", ", 1m)", maxMacroDepth, "ts"),
		"timeGroup/wide":          strings.Repeat(nest("$__timeGroup(", ", $__interval)", maxMacroDepth, "ts")+", ", 2000),
		"mixed/depth16":           nest("$__timeGroup($__timeFilter(", "), 1m)", maxMacroDepth/2, "ts"),
		"timeFilter/depth15/1MiB": nest("$__timeFilter(", ")", 15, strings.Repeat("x", 1<<20-300)),
		"timeFilter/args/1MiB":    "$__timeFilter(" + strings.Repeat("a,", 1<<19-16) + "a)",
	}
}

// TestExpandMacrosLinear bounds what expanding a pathological query
// allocates, in bytes and in allocations, by a multiple of its length.
func TestExpandMacrosLinear(t *testing.T) {
	env := testEnv(settings.DialectDuckDB)
	for name, sql := range pathological() {
		// Bytes: at most 2.5 × the output bound (a builder doubles its
		// buffer); a macro's text past the bound is never built (its bound
		// is charged first: built, the nested filters made 3.6 ×).
		bound := uint64(5 * (expandFactor*len(sql) + expandSlack) / 2)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out, err := expand(t, sql, env)
		runtime.ReadMemStats(&after)
		got := after.TotalAlloc - before.TotalAlloc
		if got > bound {
			t.Errorf("%s (%d bytes): allocated %d bytes, bound %d", name, len(sql), got, bound)
		}
		if err == nil && len(out.SQL) > expandFactor*len(sql)+expandSlack {
			t.Errorf("%s: output of %d bytes", name, len(out.SQL))
		}
		// Allocations: a few per macro at most.
		allocs := testing.AllocsPerRun(3, func() { _, _ = expand(t, sql, env) })
		macros := strings.Count(sql, "$__")
		if allocs > float64(16*macros+64) {
			t.Errorf("%s: %.0f allocations for %d macros", name, allocs, macros)
		}
		t.Logf("%s: %d bytes in, %d bytes and %.0f allocations for %d macros; err=%v", name, len(sql), got, allocs, macros, err)
	}
}

// FuzzExpandMacros: expansion never panics, its output stays within the
// linear bound, and SQL without a macro comes back as it is.
func FuzzExpandMacros(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM t WHERE $__timeFilter(ts)", "$__timeGroup(ts, $__interval, previous)", "'$__x' -- $__y\n/* $__z */",
		"$__timeFilter($__timeFilter($__timeFilter(x)))", `"a""b" $__unixEpochGroup(t, 1w)`, "$__timeGroupAlias(t, 1h, 3.5)",
		"$__timeGroup(a, 1h, 0) $__timeGroup(a, 1h, NULL)", "$__catalog.$__schema", "$__(", "$__timeFilter(')'",
	} {
		f.Add(s)
	}
	for _, s := range pathological() {
		if len(s) < 4096 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, sql string) {
		for _, name := range []string{settings.DialectDuckDB, settings.DialectANSI, settings.DialectMySQL} {
			out, err := expand(t, sql, testEnv(name))
			if err != nil {
				if source.KindOf(err) != source.KindQuery {
					t.Fatalf("%q: error of kind %d: %v", sql, source.KindOf(err), err)
				}
				continue
			}
			if len(out.SQL) > expandFactor*len(sql)+expandSlack {
				t.Fatalf("%q: %d bytes out", sql, len(out.SQL))
			}
			if !strings.Contains(sql, "$__") && out.SQL != sql {
				t.Fatalf("%q without macros became %q", sql, out.SQL)
			}
			if !strings.Contains(out.SQL, "$__") {
				again, err := expand(t, out.SQL, testEnv(name))
				if err != nil || again.SQL != out.SQL {
					t.Fatalf("%q: expanding the expansion %q again gave %q, %v", sql, out.SQL, again.SQL, err)
				}
			}
		}
	})
}

// TestParseInterval: the units Grafana writes an interval in, up to years
// ($__interval is "1y" for a range of several years; Grafana's gtime reads
// M and y), at their fixed lengths: a month is 30 days, a year 365.
func TestParseInterval(t *testing.T) {
	const day = 24 * time.Hour
	for in, want := range map[string]time.Duration{
		"500ms": 500 * time.Millisecond, "10s": 10 * time.Second, "5m": 5 * time.Minute, "1h": time.Hour,
		"1d": day, "2w": 14 * day, "1M": 30 * day, "'3M'": 90 * day, "1y": 365 * day, ` "2y" `: 730 * day,
		"292y": 292 * 365 * day,
	} {
		if got, err := parseInterval(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"y", "0y", "-1y", "1.5y", "1Y", "1yy", "293y", "1 y", "1m1y"} {
		if got, err := parseInterval(in); err == nil {
			t.Errorf("%q: read as %v", in, got)
		} else if !strings.Contains(err.Error(), "1d, 1w, 1M (30 days), 1y (365 days)") {
			t.Errorf("%q: the error %q does not list the units", in, err)
		}
	}
}

func TestFormatInterval(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Millisecond: "1ms", 1500 * time.Millisecond: "1500ms", time.Second: "1s", 90 * time.Second: "90s",
		time.Minute: "1m", time.Hour: "1h", 36 * time.Hour: "36h", 48 * time.Hour: "2d", 14 * 24 * time.Hour: "2w",
	} {
		if got := series.FormatInterval(d); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}

// TestMacroOutputBound: what each macro writes, in every dialect, is within
// the bound call charges before building it (macroText, plus repeats
// copies of its first argument); an argument long or short, with and
// without its optional arguments. Every macro is measured: each renders in
// some dialect, those of Grafana's SQL data sources among them.
func TestMacroOutputBound(t *testing.T) {
	measured := map[string]int{}
	for _, name := range settings.Dialects[1:] {
		env := testEnv(name)
		env.from, env.to = time.Date(-9999, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
		for _, col := range []string{"t", "t + " + strings.Repeat("x", 5000)} {
			for mname, m := range macros {
				// With its arguments, and with its optional ones too.
				for _, n := range []int{m.args, m.args + m.optional} {
					call := "$__" + mname
					if m.args >= 0 {
						call += "(" + strings.Join([]string{col, "1y", "previous"}[:n], ", ") + ")"
					}
					out, err := expand(t, call, env)
					if err != nil {
						continue // no rendering in this dialect
					}
					bound := macroText + len(env.catalog) + len(env.schema)
					if m.args > 0 {
						bound += m.repeats * len(col)
					}
					if len(out.SQL) > bound {
						t.Errorf("%s: %.40s…: %d bytes, over the bound %d", name, call, len(out.SQL), bound)
					}
					measured[mname]++
				}
			}
		}
	}
	want := []string{"time", "timeEpoch", "timeFilter", "timeGroup", "timeGroupAlias", "unixEpochGroup", "unixEpochGroupAlias"}
	for name := range macros {
		want = append(want, name)
	}
	for _, name := range want {
		if measured[name] == 0 {
			t.Errorf("$__%s: not measured (unknown, or no rendering in any dialect)", name)
		}
	}
}

// TestExpandMacrosTimeUse: $__unixEpochGroupAlias is a time group as its
// siblings are (timeUse.record): the incremental planner sees its column,
// its width and what it wrote, so a query grouped by it may be answered
// from parts and one that groups otherwise may not. $__time and
// $__timeEpoch neither read the range nor group by time: they record
// nothing, and the planner judges the column they select as it judges
// "col AS time" written out: $__time(ts) is the filtered column,
// $__timeEpoch(ts) (whole seconds) is not, so that query is a full one. A
// group written again (SELECT and GROUP BY) is one group.
func TestExpandMacrosTimeUse(t *testing.T) {
	env := testEnv(settings.DialectDuckDB)
	for _, tc := range []struct {
		sql      string
		groups   []string
		width    time.Duration
		why      string // what sqlWhyFull says ("": nothing)
		filtered bool   // timeColumnFiltered for the result's column "time" (when why is "")
	}{
		{"SELECT $__unixEpochGroupAlias(e, 10m), avg(v) FROM m WHERE $__unixEpochFilter(e) GROUP BY 1", []string{"e"}, 10 * time.Minute, "", true},
		{"SELECT $__unixEpochGroupAlias(e, 5m, previous), host, avg(v) FROM m WHERE $__unixEpochFilter(e) GROUP BY 1, 2", []string{"e"}, 5 * time.Minute, "", true},
		{"SELECT $__unixEpochGroup(e, 1h) AS time, avg(v) FROM m WHERE $__unixEpochFilter(e) GROUP BY 1", []string{"e"}, time.Hour, "", true},
		{"SELECT $__unixEpochGroupAlias(other, 10m), avg(v) FROM m WHERE $__unixEpochFilter(e) GROUP BY 1", []string{"other"}, 10 * time.Minute, "not the time filter's", false},
		{"SELECT $__unixEpochGroupAlias(e, 1m), $__unixEpochGroup(e, 1h), avg(v) FROM m WHERE $__unixEpochFilter(e) GROUP BY 1, 2", []string{"e", "e"}, time.Hour, "more than one time group", false},
		// The query builder's shape: one group in SELECT and GROUP BY.
		{`SELECT $__timeGroup("ts", 5m) AS "time", avg("v") AS "v" FROM m WHERE $__timeFilter("ts") GROUP BY $__timeGroup("ts", 5m)`, []string{`"ts"`}, 5 * time.Minute, "", true},
		{"SELECT $__timeGroupAlias(ts, 1m, 0), avg(v) FROM m WHERE $__timeFilter(ts) GROUP BY $__timeGroup(ts, 1m)", []string{"ts"}, time.Minute, "", true},
		{"SELECT $__timeGroupAlias(ts, 1m), $__unixEpochGroup(ts, 1m) AS e, avg(v) FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2", []string{"ts", "ts"}, time.Minute, "more than one time group", false},
		{"SELECT $__time($__unixEpochGroup(e, 1m)), avg(v) FROM m WHERE $__unixEpochFilter(e) GROUP BY 1", []string{"e"}, time.Minute, "inside another macro's arguments", false},
		{"SELECT $__time(ts), v FROM m WHERE $__timeFilter(ts)", nil, 0, "", true},
		{"SELECT $__timeEpoch(ts), v FROM m WHERE $__timeFilter(ts)", nil, 0, "", false},
	} {
		exp, err := expand(t, tc.sql, env)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		u := exp.Time
		if !slices.Equal(u.groups, tc.groups) || u.width != tc.width || len(u.grouped) != len(tc.groups) {
			t.Errorf("%s: groups %q (wrote %q), width %v; want %q, %v", tc.sql, u.groups, u.grouped, u.width, tc.groups, tc.width)
		}
		if why := sqlWhyFull(tc.sql, u); tc.why == "" && why != "" || tc.why != "" && !strings.Contains(why, tc.why) {
			t.Errorf("%s: sqlWhyFull %q, want %q", tc.sql, why, tc.why)
		}
		if got := timeColumnFiltered("time", exp.SQL, u); tc.why == "" && got != tc.filtered {
			t.Errorf("%s: the time column is the filtered one: %v, want %v (SQL %s)", tc.sql, got, tc.filtered, exp.SQL)
		}
	}
}
