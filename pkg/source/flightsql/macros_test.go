package flightsql

import (
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/pkg/source"
)

func TestExpandMacros(t *testing.T) {
	env := macroEnv{
		from:     time.Date(2024, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("CET", 3600)),
		to:       time.Date(2024, 1, 2, 4, 4, 5, 0, time.UTC),
		interval: 5 * time.Minute, catalog: "cat", schema: "sch",
	}
	for _, tc := range []struct{ in, want string }{
		{"SELECT * FROM t WHERE $__timeFilter(ts)",
			"SELECT * FROM t WHERE (ts >= '2024-01-02 02:04:05.006' AND ts <= '2024-01-02 04:04:05.000')"},
		{"WHERE $__timeFilter( \"my col\" ) AND x", `WHERE ("my col" >= '2024-01-02 02:04:05.006' AND "my col" <= '2024-01-02 04:04:05.000') AND x`},
		{"$__timeFrom() $__timeTo $__timeTo()", "'2024-01-02 02:04:05.006' '2024-01-02 04:04:05.000' '2024-01-02 04:04:05.000'"},
		{"$__unixEpochFilter(t)", "(t >= 1704161045 AND t <= 1704168245)"},
		{"$__unixEpochMsFilter(t)", "(t >= 1704161045006 AND t <= 1704168245000)"},
		{"$__unixEpochNanoFilter(t)", "(t >= 1704161045006000000 AND t <= 1704168245000000000)"},
		{"$__unixEpochFrom() $__unixEpochTo() $__unixEpochMsFrom() $__unixEpochNanoTo()", "1704161045 1704168245 1704161045006 1704168245000000000"},
		{"$__interval $__interval_ms", "5m 300000"},
		{"$__timeGroup(ts, '1h')", "date_bin(INTERVAL '3600 seconds', ts, TIMESTAMP '1970-01-01 00:00:00')"},
		{"$__timeGroup(ts, $__interval)", "date_bin(INTERVAL '300 seconds', ts, TIMESTAMP '1970-01-01 00:00:00')"},
		{"$__timeGroupAlias(ts, 500ms)", `date_bin(INTERVAL '500 milliseconds', ts, TIMESTAMP '1970-01-01 00:00:00') AS "time"`},
		{"$__timeGroup(date_trunc('day', ts), \"1d\")", "date_bin(INTERVAL '86400 seconds', date_trunc('day', ts), TIMESTAMP '1970-01-01 00:00:00')"},
		{"$__unixEpochGroup(t, 1w)", "(floor(t / 604800) * 604800)"},
		{"FROM $__catalog.$__schema.t", "FROM cat.sch.t"},
		// Quoting-safe: nothing expands inside literals, identifiers or comments.
		{"SELECT '$__timeFilter(x)', 'it''s $__interval' FROM t", "SELECT '$__timeFilter(x)', 'it''s $__interval' FROM t"},
		{`SELECT "$__interval", ` + "`$__interval`" + ` FROM t`, `SELECT "$__interval", ` + "`$__interval`" + ` FROM t`},
		{"SELECT 1 -- $__nope(\n, $__interval_ms", "SELECT 1 -- $__nope(\n, 300000"},
		{"SELECT /* $__timeFilter( */ $__interval", "SELECT /* $__timeFilter( */ 5m"},
		{"SELECT 'unterminated $__interval", "SELECT 'unterminated $__interval"},
		{"SELECT $1, $__interval_ms*2", "SELECT $1, 300000*2"},
		{"$__interval(1)", "5m(1)"},
	} {
		got, err := expandMacros(tc.in, env)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestExpandMacrosErrors(t *testing.T) {
	env := macroEnv{from: time.Unix(0, 0), to: time.Unix(60, 0), interval: time.Second}
	for _, tc := range []struct{ in, want string }{
		{"$__nope", "unknown macro $__nope (known: $__catalog,"},
		{"$__timeFilter", "$__timeFilter needs 1 argument(s) in parentheses"},
		{"$__timeFilter()", "$__timeFilter takes 1 argument(s), got 0"},
		{"$__timeFilter(a, b)", "$__timeFilter takes 1 argument(s), got 2"},
		{"$__timeFilter(a", "$__timeFilter: missing ')'"},
		{"$__timeGroup(a, )", "$__timeGroup: argument 2 is empty"},
		{"$__timeGroup(a, 'soon')", "interval 'soon' is not a duration"},
		{"$__timeGroup(a, 0s)", "is not a duration"},
		{"$__timeGroup(a, 1h, NULL)", "$__timeGroup takes 2 argument(s), got 3"},
		{"$__unixEpochGroup(a, 1500ms)", "is not a whole number of seconds"},
		{"$__catalog", "no default catalog is configured (catalog setting)"},
		{"$__timeGroup(a, $__nope)", "unknown macro $__nope"},
	} {
		_, err := expandMacros(tc.in, env)
		mustKind(t, err, source.KindQuery, tc.want)
		if err != nil && !strings.HasPrefix(err.Error(), "flightsql: ") {
			t.Errorf("%s: %q lacks the package prefix", tc.in, err)
		}
	}
}

func TestFormatInterval(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Millisecond: "1ms", 1500 * time.Millisecond: "1500ms", time.Second: "1s", 90 * time.Second: "90s",
		time.Minute: "1m", time.Hour: "1h", 36 * time.Hour: "36h", 48 * time.Hour: "2d", 14 * 24 * time.Hour: "2w",
	} {
		if got := formatInterval(d); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}
