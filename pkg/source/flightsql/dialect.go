// This file is over 400 lines: the table of SQL dialects, each written out
// in full, and how a server's dialect is detected.

package flightsql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// dialect is how one family of SQL engines writes what the macros produce.
// docs/dialects.md shows the exact SQL of each.
type dialect struct {
	name string
	// timeLiteral writes an instant so that the engine compares it with its
	// timestamp columns as that instant whatever its session time zone.
	timeLiteral func(t time.Time) string
	// timeGroup writes col rounded down to a multiple of d counted from the
	// Unix epoch (UTC); d is a whole number of milliseconds. nil: the dialect
	// has no rendering (timeGroupWhy says why).
	timeGroup    func(col string, d time.Duration) (string, error)
	timeGroupWhy string
	// epochGroup writes an integer column of Unix seconds rounded down to a
	// multiple of n seconds, as an integer.
	epochGroup func(col string, n int64) string
	// timeEpoch writes the Unix seconds of timestamp column col as an
	// integer, rounded down ($__timeEpoch). nil: the dialect has no
	// rendering (timeEpochWhy says why).
	timeEpoch    func(col string) string
	timeEpochWhy string
	// quote writes an identifier (the alias of $__timeGroupAlias).
	quote func(name string) string
}

// dialects is the table of SQL dialects, by the name the dialect setting uses.
var dialects = map[string]*dialect{
	settings.DialectDataFusion: {
		name:        settings.DialectDataFusion,
		timeLiteral: layoutLiteral("'2006-01-02T15:04:05.000Z'"),
		// Two arguments: the origin defaults to 1970-01-01T00:00:00Z, which
		// suits both zoned and zone-less timestamp columns.
		timeGroup: func(col string, d time.Duration) (string, error) {
			return fmt.Sprintf("date_bin(INTERVAL '%s', %s)", sqlInterval(d), col), nil
		},
		epochGroup: modFloorGroup,
		// extract(epoch) is a Float64 of seconds, the instant for zoned
		// columns and the UTC value for zone-less ones.
		timeEpoch: floorEpochSeconds("extract(epoch from %s)"),
		quote:     doubleQuote,
	},
	settings.DialectDuckDB: {
		name: settings.DialectDuckDB,
		// An untyped literal with an offset takes the column's type: DuckDB
		// reads the offset for TIMESTAMPTZ and TIMESTAMP columns alike. (A
		// TIMESTAMPTZ literal would turn a TIMESTAMP column into TIMESTAMPTZ
		// in the session's zone, shifting zone-less UTC values.)
		timeLiteral: layoutLiteral("'2006-01-02 15:04:05.000+00'"),
		timeGroup:   duckDBTimeGroup,
		epochGroup:  modFloorGroup,
		// epoch() is a DOUBLE of seconds: of the instant for TIMESTAMPTZ,
		// of the value as UTC for TIMESTAMP; no session zone involved.
		timeEpoch: floorEpochSeconds("epoch(%s)"),
		quote:     doubleQuote,
	},
	settings.DialectPostgres: {
		name: settings.DialectPostgres,
		// Untyped: PostgreSQL reads the offset for timestamptz columns and
		// ignores it for timestamp columns, whose values are taken as UTC.
		timeLiteral: layoutLiteral("'2006-01-02 15:04:05.000+00'"),
		// Epoch arithmetic: extract(epoch) of a timestamp counts it as UTC,
		// of a timestamptz as the instant, so neither depends on the session
		// zone (date_bin's origin would be read in it). The result is a
		// timestamptz.
		timeGroup: func(col string, d time.Duration) (string, error) {
			s := secondsText(d)
			return fmt.Sprintf("to_timestamp(floor(extract(epoch from %s) / %s) * %s)", col, s, s), nil
		},
		epochGroup: modFloorGroup,
		// As timeGroup: extract(epoch) counts a timestamp as UTC, a
		// timestamptz as its instant (a numeric since PostgreSQL 14).
		timeEpoch: floorEpochSeconds("extract(epoch from %s)"),
		quote:     doubleQuote,
	},
	settings.DialectDremio: {
		name: settings.DialectDremio,
		// Dremio's timestamps have no zone and hold UTC.
		timeLiteral: layoutLiteral("TIMESTAMP '2006-01-02 15:04:05.000'"),
		timeGroup: func(col string, d time.Duration) (string, error) {
			if d%time.Second != 0 {
				return "", fmt.Errorf("the dremio SQL dialect has no rendering for an interval below whole seconds (%s): EXTRACT(EPOCH) counts whole seconds", series.FormatInterval(d))
			}
			n := int64(d / time.Second)
			return fmt.Sprintf("TO_TIMESTAMP(FLOOR(EXTRACT(EPOCH FROM %s) / %d) * %d)", col, n, n), nil
		},
		epochGroup: modFuncFloorGroup,
		// EXTRACT(EPOCH) counts whole seconds already.
		timeEpoch: func(col string) string { return "CAST(EXTRACT(EPOCH FROM " + col + ") AS BIGINT)" },
		quote:     doubleQuote,
	},
	settings.DialectMySQL: {
		name: settings.DialectMySQL,
		// DATETIME has no zone: its values are taken as UTC.
		timeLiteral: layoutLiteral("'2006-01-02 15:04:05.000'"),
		// Arithmetic on the zone-less value: no session zone involved
		// (UNIX_TIMESTAMP / FROM_UNIXTIME would read it in the session zone).
		timeGroup: func(col string, d time.Duration) (string, error) {
			if d%time.Second != 0 {
				return "", fmt.Errorf("the mysql SQL dialect has no rendering for an interval below whole seconds (%s)", series.FormatInterval(d))
			}
			n := int64(d / time.Second)
			return fmt.Sprintf("DATE_ADD(CAST('1970-01-01 00:00:00' AS DATETIME), INTERVAL FLOOR(TIMESTAMPDIFF(SECOND, CAST('1970-01-01 00:00:00' AS DATETIME), %s) / %d) * %d SECOND)", col, n, n), nil
		},
		epochGroup: modFloorGroup,
		// As timeGroup, on the zone-less value (Grafana's MySQL data source
		// writes UNIX_TIMESTAMP, which reads it in the session zone).
		timeEpoch: func(col string) string {
			return "TIMESTAMPDIFF(SECOND, CAST('1970-01-01 00:00:00' AS DATETIME), " + col + ")"
		},
		quote: func(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" },
	},
	settings.DialectANSI: {
		name: settings.DialectANSI,
		// The engine is unknown: an untyped literal with a UTC offset takes
		// the type of the column it is compared with and is the same
		// instant for zoned and zone-less (UTC) columns, whatever the
		// session zone (DuckDB, PostgreSQL, DataFusion: see duckdb and
		// postgres). No typed literal is: TIMESTAMP '…+00:00' is zone-less
		// to DuckDB and PostgreSQL, so a zoned column reads it in the
		// session zone (the wrong hour, silently), and the standard's WITH
		// TIME ZONE reads a zone-less column in the session zone. An engine
		// that does not compare text with timestamps refuses the query.
		timeLiteral:  layoutLiteral("'2006-01-02 15:04:05.000+00:00'"),
		timeGroupWhy: "standard SQL has no time bucketing: set the dialect setting to the server's (datafusion, duckdb, postgres, dremio, mysql), or group an integer column with $__unixEpochGroup",
		epochGroup:   modFloorGroup,
		timeEpochWhy: "standard SQL has no Unix epoch extraction: set the dialect setting to the server's (datafusion, duckdb, postgres, dremio, mysql), or select the timestamp column itself with $__time",
		quote:        doubleQuote,
	},
}

func layoutLiteral(layout string) func(time.Time) string {
	return func(t time.Time) string { return t.UTC().Format(layout) }
}

func doubleQuote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// floorEpochSeconds writes the Unix seconds of a column as an integer,
// rounded down (before 1970 too), from epoch, the dialect's fractional
// seconds of the column (a format with one %s).
func floorEpochSeconds(epoch string) func(col string) string {
	return func(col string) string { return "CAST(floor(" + fmt.Sprintf(epoch, col) + ") AS BIGINT)" }
}

// modFloorGroup rounds down to a multiple of n in integer arithmetic:
// col minus its remainder made non-negative. It is exact for nanosecond
// epochs (a float division would not be), and rounds times before 1970 down
// too (integer division truncates towards zero, and "%" keeps the sign of
// col on every engine here). col is an operand (operand).
func modFloorGroup(col string, n int64) string {
	col = operand(col)
	return fmt.Sprintf("(%s - ((%s %% %d) + %d) %% %d)", col, col, n, n, n)
}

// modFuncFloorGroup is modFloorGroup with the MOD function, for engines
// whose SQL has no "%" operator.
func modFuncFloorGroup(col string, n int64) string {
	col = operand(col)
	return fmt.Sprintf("(%s - MOD(MOD(%s, %d) + %d, %d))", col, col, n, n, n)
}

// operand writes expr, a macro's argument, as an operand of arithmetic:
// in parentheses unless it is a (qualified) name or a number, so that an
// expression is taken whole ("tms + 30 % 60" takes the remainder of 30).
func operand(expr string) string {
	for i := range len(expr) {
		if !isNameByte(expr[i]) && expr[i] != '.' {
			return "(" + expr + ")"
		}
	}
	return expr
}

// sqlInterval writes d as an SQL interval string: seconds, or milliseconds
// when d is not whole seconds.
func sqlInterval(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + " seconds"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + " milliseconds"
}

// secondsText writes d in seconds, exactly (d is whole milliseconds).
func secondsText(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if ms := (d % time.Second).Milliseconds(); ms != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%03d", ms), "0")
	}
	return s
}

// duckDBOrigin is time_bucket's default origin, 2000-01-03 00:00:00 UTC, in
// milliseconds since the Unix epoch.
const duckDBOrigin = 946_857_600_000

// duckDBTimeGroup uses time_bucket with an offset that moves its default
// origin back onto the Unix epoch, so buckets of any width line up with the
// other dialects'. The offset is an INTERVAL, which binds for TIMESTAMP and
// TIMESTAMPTZ columns alike (an origin literal would need the column's
// type). Widths given in seconds are micros-based, so TIMESTAMPTZ values are
// bucketed in UTC, not in the session's zone.
func duckDBTimeGroup(col string, d time.Duration) (string, error) {
	w := d.Milliseconds()
	off := (w - duckDBOrigin%w) % w
	if off == 0 {
		return fmt.Sprintf("time_bucket(INTERVAL '%s', %s)", sqlInterval(d), col), nil
	}
	return fmt.Sprintf("time_bucket(INTERVAL '%s', %s, INTERVAL '%s')", sqlInterval(d), col, sqlInterval(time.Duration(off)*time.Millisecond)), nil
}

// detectRules map what a server reports as its name (then, when the name
// says nothing, its version: GizmoSQL reports "duckdb v1.x" there) to a
// dialect; the first of the rules' names that is contained, ignoring case,
// wins.
var detectRules = []struct{ dialect, names string }{
	{settings.DialectDuckDB, "duckdb"},
	// InfluxDB 3 reports "InfluxDB IOx".
	{settings.DialectDataFusion, "influx iox datafusion greptime cnosdb datalayers seafowl ballista"},
	{settings.DialectDremio, "dremio"},
	{settings.DialectPostgres, "postgres"},
	{settings.DialectMySQL, "doris starrocks mysql mariadb"},
	{settings.DialectANSI, "sqlite"},
}

// detectDialect picks the dialect of a server from its name and version;
// ok is false when nothing matched (the result is then ansi).
func detectDialect(name, version string) (d string, ok bool) {
	for _, s := range []string{name, version} {
		s = strings.ToLower(s)
		for _, r := range detectRules {
			for text := range strings.FieldsSeq(r.names) {
				if strings.Contains(s, text) {
					return r.dialect, true
				}
			}
		}
	}
	return settings.DialectANSI, false
}

// serverInfo is what GetSqlInfo told about the server.
type serverInfo struct {
	name, version string
}

// serverText is a name or version the server reports, as the health check
// shows it: as it is when it is a short line of printable text, else
// quoted and cut (source.Quote), so that a server cannot fill the message
// or add lines to it.
func serverText(s string) string {
	if len(s) <= source.QuoteMax && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return source.Quote(s)
}

// dialectState is the SQL dialect of one connection: the one the dialect
// setting names, or (auto) the one picked from the server's name, asked
// once and kept until the next health check asks again. What is kept is
// learnt from a call any user would get the same answer to: a health check,
// or a call made with the data source's own credentials; never from a call
// that forwards one user's identity (oauthPassThru), a health check
// included, whose answer (or failure) may be that user's alone.
type dialectState struct {
	setting string

	mu sync.Mutex
	d  *dialect // nil until auto has kept one
}

func newDialectState(setting string) *dialectState {
	if setting == "" {
		setting = settings.DialectAuto
	}
	return &dialectState{setting: setting}
}

// learn picks the dialect for what GetSqlInfo told (err != nil: the server
// answers, but not GetSqlInfo), says how it was picked ("dialect setting",
// or "auto" and why when auto fell back to ansi) and, with keep, keeps it.
func (st *dialectState) learn(info serverInfo, err error, keep bool) (*dialect, string) {
	if st.setting != settings.DialectAuto {
		return dialects[st.setting], "dialect setting"
	}
	name, ok := detectDialect(info.name, info.version)
	how := "auto"
	switch {
	case err != nil:
		how += ": the server does not tell its name (GetSqlInfo)" + fallbackAdvice
	case !ok:
		how += ": server name " + source.Quote(info.name) + " not recognised" + fallbackAdvice
	}
	if keep {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.d = dialects[name]
	}
	return dialects[name], how
}

// fallbackAdvice says, after why auto fell back to ansi, what ansi does and
// which settings would do better.
const fallbackAdvice = ": times are written as UTC literals and $__timeGroup and $__timeEpoch are not available; set the dialect setting to datafusion, duckdb, postgres, dremio or mysql, whichever the server speaks"

// sqlDialect returns the dialect the macros render in. For auto it asks the
// server once per connection (GetSqlInfo FLIGHT_SQL_SERVER_NAME and
// _VERSION); a server that does not implement GetSqlInfo gets ansi.
// Connection failures are returned and not kept, so the next query asks again.
// A call that forwards a user's identity uses the answer it got and keeps
// nothing (see dialectState): until a health check has run, or a call with
// the data source's own credentials, each such call asks.
func (s *Source) sqlDialect(ctx context.Context) (*dialect, error) {
	st := s.conn.dialect
	if st.setting != settings.DialectAuto {
		return dialects[st.setting], nil
	}
	st.mu.Lock()
	d := st.d
	st.mu.Unlock()
	if d != nil {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TimeoutDuration())
	defer cancel()
	info, err := s.serverInfo(ctx, "reading the server's name for the dialect setting (auto)")
	if err != nil && !fallbackWorthy(err) {
		return nil, err
	}
	d, _ = st.learn(info, err, !s.conn.forwards(ctx))
	return d, nil
}

// serverInfo asks the server for its name and version (GetSqlInfo).
func (s *Source) serverInfo(ctx context.Context, what string) (serverInfo, error) {
	vals := map[uint32]string{}
	err := s.readInfo(ctx, what, func(ctx context.Context) (*flight.FlightInfo, error) {
		return s.conn.main.GetSqlInfo(ctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerVersion})
	}, func(rec arrow.RecordBatch) error {
		sqlInfoStrings(rec, vals)
		return nil
	})
	return serverInfo{
		name:    strings.TrimSpace(vals[uint32(flightsql.SqlInfoFlightSqlServerName)]),
		version: strings.TrimSpace(vals[uint32(flightsql.SqlInfoFlightSqlServerVersion)]),
	}, err
}

// sqlInfoStrings adds the string values of a GetSqlInfo batch (info_name
// uint32, value dense_union) to into; other value kinds are skipped.
func sqlInfoStrings(rec arrow.RecordBatch, into map[uint32]string) {
	if rec.NumCols() < 2 {
		return
	}
	names, ok := rec.Column(0).(*array.Uint32)
	vals, ok2 := rec.Column(1).(*array.DenseUnion)
	if !ok || !ok2 {
		return
	}
	// A malformed answer is skipped, never read out of range.
	for i := range min(names.Len(), vals.Len()) {
		id := vals.ChildID(i)
		if id < 0 || id >= vals.NumFields() {
			continue
		}
		if str, ok := vals.Field(id).(*array.String); ok {
			if off := int(vals.ValueOffset(i)); off >= 0 && off < str.Len() && str.IsValid(off) {
				into[names.Value(i)] = str.Value(off)
			}
		}
	}
}

// HealthReport connects and asks the server for its name and version
// (GetSqlInfo), which also picks the SQL dialect when the dialect setting is
// auto; when the server does not implement GetSqlInfo, it runs SELECT 1
// instead. It says what it found: the server's name and version, and the
// SQL dialect the macros use. Failures are described in words the
// administrator can act on and carry no secret.
func (s *Source) HealthReport(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TimeoutDuration())
	defer cancel()
	info, err := s.serverInfo(ctx, "health check")
	if err != nil {
		if !fallbackWorthy(err) {
			return "", err
		}
		if ferr := s.readInfo(ctx, "health check (SELECT 1)", func(ctx context.Context) (*flight.FlightInfo, error) {
			return s.conn.main.Execute(ctx, "SELECT 1")
		}, func(arrow.RecordBatch) error { return nil }); ferr != nil {
			return "", ferr
		}
	}
	// A forwarded user's answer may be theirs alone (dialectState).
	d, how := s.conn.dialect.learn(info, err, !s.conn.forwards(ctx))
	server := s.cfg.Address
	if info.name != "" {
		server = strings.TrimSpace(serverText(info.name)+" "+serverText(info.version)) + " at " + s.cfg.Address
	}
	msg := fmt.Sprintf("Connected to %s; SQL dialect %s (%s)", server, d.name, how)
	if rule := s.conn.passThruRule(); rule != "" {
		msg += "; " + rule
	}
	return s.conn.redact(ctx, msg, true), nil // the name and version are the server's words
}
