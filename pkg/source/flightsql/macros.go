// This file is over 400 lines: the macro table, the scanner that skips
// literals, identifiers and comments, and the bounded expander share the
// limits that keep expansion linear.

package flightsql

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// Limits of macro expansion (doc.go, "Macros"). Expansion is linear in the
// query's length whatever the nesting: every level is scanned once, and
// the text produced, summed over all levels, is bounded.
const (
	// maxQueryBytes: a longer query is refused.
	maxQueryBytes = 1 << 20
	// maxMacroDepth: macros nested deeper in macro arguments are refused.
	maxMacroDepth = 16
	// The text produced at every nesting level, summed, may be at most
	// expandFactor × the query's length + expandSlack bytes; a macro whose
	// argument holds a macro that repeats its own argument ($__timeFilter)
	// would otherwise double the text at each level.
	expandFactor = 32
	expandSlack  = 256 << 10
	// ctxEvery: expansion checks for cancellation every ctxEvery macros.
	ctxEvery = 64
	// macroText bounds what a macro writes besides copies of its first
	// argument (macro.repeats): its SQL in the wordiest dialect, with its
	// literals and numbers.
	macroText = 256
)

// macroEnv is what macros expand from.
type macroEnv struct {
	from, to        time.Time
	interval        time.Duration
	catalog, schema string
	// dialect returns the SQL dialect; called only by macros that depend
	// on it (so a query without them never asks the server for its name).
	dialect func() (*dialect, error)
}

// expansion is the result of expanding a query's macros.
type expansion struct {
	SQL string
	// Fill is the fill of a $__timeGroup / $__timeGroupAlias /
	// $__unixEpochGroup / $__unixEpochGroupAlias third argument, nil without
	// one. The time_series frames of the query are to be filled with it
	// (series.Fill).
	Fill *series.FillSpec
	// Time is what the query does with its time range (incremental.go).
	Time timeUse
}

// timeUse records the macros that read the time range or group by time.
type timeUse struct {
	filters []string      // the column argument of each time filter
	unit    time.Duration // to which the last filter's literals round the range down (set by the filter)
	bounds  int           // $__timeFrom, $__timeTo and the epoch bounds
	nested  bool          // one of these inside another macro's arguments
	groups  []string      // the column argument of each time group
	grouped []string      // what each time group wrote
	first   [3]string     // the first time group's macro, column and interval
	width   time.Duration // the widest time group's interval
}

// record notes the call of macro name, at nesting level depth, with args,
// which wrote out. $__time and $__timeEpoch are not noted: they neither
// read the range nor group by time, and the column they select is judged
// as "col AS time" written out (timeColumnFiltered).
func (u *timeUse) record(name string, depth int, args []string, out string) {
	switch name {
	case "timeFilter", "unixEpochFilter", "unixEpochMsFilter", "unixEpochNanoFilter":
		u.filters = append(u.filters, args[0])
	case "timeFrom", "timeTo", "unixEpochFrom", "unixEpochTo", "unixEpochMsFrom", "unixEpochMsTo", "unixEpochNanoFrom", "unixEpochNanoTo":
		u.bounds++
	case "timeGroup", "timeGroupAlias", "unixEpochGroup", "unixEpochGroupAlias":
		// The first group again (as in SELECT and GROUP BY, with or without
		// its alias or fill) is that group; a second one makes the query a
		// full one, however many follow.
		group := [3]string{strings.TrimSuffix(name, "Alias"), args[0], args[1]}
		if len(u.groups) == 0 {
			u.first = group
		} else if group == u.first {
			break
		}
		iv, _ := parseInterval(args[1]) // parsed without error by the macro
		u.groups, u.grouped, u.width = append(u.groups, args[0]), append(u.grouped, out), max(u.width, iv)
	default:
		return
	}
	u.nested = u.nested || depth > 1
}

type macro struct {
	args     int // number of arguments; -1: none and no parentheses needed
	optional int // further optional arguments
	// repeats: how many times expand writes its first argument, for the
	// bound of its output charged before it is built (expander.call).
	repeats int
	expand  func(x *expander, args []string) (string, error)
}

// macros is the table of supported macros; docs/dialects.md shows
// what each writes in each SQL dialect.
var macros = map[string]macro{
	"timeFilter": {1, 0, 2, withDialect(func(x *expander, d *dialect, a []string) (string, error) {
		x.time.unit = time.Millisecond // every dialect's literal has milliseconds
		// Concatenated: one allocation of the text, which may be long.
		return "(" + a[0] + " >= " + d.timeLiteral(x.env.from) + " AND " + a[0] + " <= " + d.timeLiteral(x.env.to) + ")", nil
	})},
	"timeFrom": {0, 0, 0, timeBound(true)},
	"timeTo":   {0, 0, 0, timeBound(false)},

	"unixEpochFilter":     {1, 0, 2, epochFilter(time.Second)},
	"unixEpochMsFilter":   {1, 0, 2, epochFilter(time.Millisecond)},
	"unixEpochNanoFilter": {1, 0, 2, epochFilter(time.Nanosecond)},
	"unixEpochFrom":       {0, 0, 0, epochBound(time.Second, true)},
	"unixEpochTo":         {0, 0, 0, epochBound(time.Second, false)},
	"unixEpochMsFrom":     {0, 0, 0, epochBound(time.Millisecond, true)},
	"unixEpochMsTo":       {0, 0, 0, epochBound(time.Millisecond, false)},
	"unixEpochNanoFrom":   {0, 0, 0, epochBound(time.Nanosecond, true)},
	"unixEpochNanoTo":     {0, 0, 0, epochBound(time.Nanosecond, false)},

	"interval": {-1, 0, 0, func(x *expander, _ []string) (string, error) { return series.FormatInterval(x.env.interval), nil }},
	"interval_ms": {-1, 0, 0, func(x *expander, _ []string) (string, error) {
		return strconv.FormatInt(x.env.interval.Milliseconds(), 10), nil
	}},

	"timeGroup":           {2, 1, 1, timeGroup(false, false)},
	"timeGroupAlias":      {2, 1, 1, timeGroup(false, true)},
	"unixEpochGroup":      {2, 1, 2, timeGroup(true, false)},
	"unixEpochGroupAlias": {2, 1, 2, timeGroup(true, true)},

	// As Grafana's PostgreSQL data source writes them: the column named
	// time, and its Unix seconds named time (whole seconds here: an
	// integer is what the series builder reads as a Unix time).
	"time": {1, 0, 1, withDialect(func(_ *expander, d *dialect, a []string) (string, error) {
		return a[0] + " AS " + d.quote("time"), nil
	})},
	"timeEpoch": {1, 0, 1, withDialect(func(_ *expander, d *dialect, a []string) (string, error) {
		if d.timeEpoch == nil {
			return "", fmt.Errorf("no rendering in the %s SQL dialect: %s", d.name, d.timeEpochWhy)
		}
		return d.timeEpoch(a[0]) + " AS " + d.quote("time"), nil
	})},

	"catalog": {-1, 0, 0, func(x *expander, _ []string) (string, error) {
		if x.env.catalog == "" {
			return "", errors.New("no default catalog is configured (catalog setting)")
		}
		return x.env.catalog, nil
	}},
	"schema": {-1, 0, 0, func(x *expander, _ []string) (string, error) {
		if x.env.schema == "" {
			return "", errors.New("no default schema is configured (schema setting)")
		}
		return x.env.schema, nil
	}},
}

// knownMacros lists the macros for the "unknown macro" error.
var knownMacros = "$__" + strings.Join(slices.Sorted(maps.Keys(macros)), ", $__")

// withDialect is a macro written by f in the query's SQL dialect.
func withDialect(f func(x *expander, d *dialect, a []string) (string, error)) func(*expander, []string) (string, error) {
	return func(x *expander, a []string) (string, error) {
		d, err := x.dialect()
		if err != nil {
			return "", err
		}
		return f(x, d, a)
	}
}

// bound is the range's start (from) or end.
func (env *macroEnv) bound(from bool) time.Time {
	if from {
		return env.from
	}
	return env.to
}

func timeBound(from bool) func(*expander, []string) (string, error) {
	return withDialect(func(x *expander, d *dialect, _ []string) (string, error) {
		return d.timeLiteral(x.env.bound(from)), nil
	})
}

func epochFilter(unit time.Duration) func(*expander, []string) (string, error) {
	return func(x *expander, a []string) (string, error) {
		x.time.unit = unit
		from, to := strconv.FormatInt(epoch(x.env.from, unit), 10), strconv.FormatInt(epoch(x.env.to, unit), 10)
		return "(" + a[0] + " >= " + from + " AND " + a[0] + " <= " + to + ")", nil // as timeFilter
	}
}

func epochBound(unit time.Duration, from bool) func(*expander, []string) (string, error) {
	return func(x *expander, _ []string) (string, error) {
		return strconv.FormatInt(epoch(x.env.bound(from), unit), 10), nil
	}
}

// timeGroup renders $__timeGroup(col, interval[, fill]) and, with epoch,
// $__unixEpochGroup (col integer Unix seconds, the interval whole seconds);
// with alias, the result is named "time". The fill is the same for both:
// the series builder reads an integer column named time as Unix times
// (series.TimeColumn), so an epoch group aliased time is filled as a
// timestamp bucket is.
func timeGroup(epoch, alias bool) func(*expander, []string) (string, error) {
	return func(x *expander, a []string) (string, error) {
		iv, err := parseInterval(a[1])
		if err != nil {
			return "", err
		}
		if epoch && iv%time.Second != 0 {
			return "", fmt.Errorf("interval %s is not a whole number of seconds", source.Quote(a[1]))
		}
		d, err := x.dialect()
		if err != nil {
			return "", err
		}
		if !epoch && d.timeGroup == nil {
			return "", fmt.Errorf("no rendering in the %s SQL dialect: %s", d.name, d.timeGroupWhy)
		}
		if len(a) == 3 {
			if err := x.setFill(a[2], iv); err != nil {
				return "", err
			}
		}
		var out string
		if epoch {
			out = d.epochGroup(a[0], int64(iv/time.Second))
		} else if out, err = d.timeGroup(a[0], iv); err != nil {
			return "", err
		}
		if alias {
			out += " AS " + d.quote("time")
		}
		return out, nil
	}
}

// setFill reads fill, the third argument of a time group of interval iv,
// as the query's fill: a query has one (the same fill at the same interval
// may be given again).
func (x *expander) setFill(fill string, iv time.Duration) error {
	f, err := series.ParseFill(fill, iv)
	if err != nil {
		return err
	}
	if x.fill != nil && *x.fill != *f {
		if f.Interval != x.fill.Interval { // the fill's points are at the interval
			return fmt.Errorf("fill %s at interval %s differs from the fill %s at interval %s given earlier in the query: a query has one fill, at one interval",
				f, series.FormatInterval(f.Interval), x.fill, series.FormatInterval(x.fill.Interval))
		}
		return fmt.Errorf("fill %s differs from the fill %s given earlier in the query: a query has one fill", f, x.fill)
	}
	x.fill = f
	return nil
}

// expander expands the macros of one query.
type expander struct {
	env    macroEnv
	budget int // bytes the expansion may still produce
	calls  int // macros expanded so far
	d      *dialect
	// dialectErr is the failure to find the dialect (an upstream failure,
	// as a rule): expandMacros returns it unchanged, not as a BadQuery.
	dialectErr error
	fill       *series.FillSpec
	time       timeUse
}

// errBudget is returned when the expanded text would exceed its bound.
var errBudget = errors.New("budget")

func (x *expander) spend(n int) error {
	if x.budget -= n; x.budget < 0 {
		return errBudget
	}
	return nil
}

func (x *expander) dialect() (*dialect, error) {
	if x.d == nil && x.dialectErr == nil {
		x.d, x.dialectErr = x.env.dialect()
	}
	return x.d, x.dialectErr
}

// expandMacros replaces $__name and $__name(args) outside string literals,
// quoted identifiers ("x", `x`) and comments (-- …, /* … */). Literals use
// standard SQL escaping: a quote inside is doubled. Arguments may hold macros
// themselves ($__timeGroup(ts, $__interval)), up to maxMacroDepth levels.
// Time and memory are linear in len(sql) (see the limits above); ctx is
// checked every ctxEvery macros. Errors in the query are BadQuery errors; a
// failure to find the SQL dialect and cancellation are returned as they are.
func expandMacros(ctx context.Context, sql string, env macroEnv) (expansion, error) {
	if len(sql) > maxQueryBytes {
		return expansion{}, source.BadQuery("flightsql: rawSql: the query is %d bytes long; at most %d (1 MiB) are accepted", len(sql), maxQueryBytes)
	}
	if err := ctx.Err(); err != nil {
		return expansion{}, fmt.Errorf("flightsql: macro expansion cancelled: %w", err)
	}
	limit := expandFactor*len(sql) + expandSlack
	x := &expander{env: env, budget: limit}
	out, err := x.expand(ctx, sql, 0)
	switch {
	case err == nil:
		return expansion{SQL: out, Fill: x.fill, Time: x.time}, nil
	case x.dialectErr != nil: // every error ends the expansion, so err carries it
		return expansion{}, x.dialectErr
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return expansion{}, fmt.Errorf("flightsql: macro expansion cancelled: %w", err)
	case errors.Is(err, errBudget):
		return expansion{}, source.BadQuery("flightsql: the expanded query would exceed %d bytes (%d × the query's length + %d KiB, counted at every nesting level): macros nested in macro arguments repeat them; nest fewer", limit, expandFactor, expandSlack>>10)
	}
	return expansion{}, source.BadQuery("flightsql: %w", err)
}

// expand expands the macros of sql, which sits at nesting level depth
// (0: the query itself, n: in the arguments of a level-n macro).
func (x *expander) expand(ctx context.Context, sql string, depth int) (string, error) {
	var b strings.Builder
	start := 0 // of the text not yet written to b
	for i := 0; i < len(sql); {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i)
		case commentAt(sql, i):
			i = commentEnd(sql, i)
		case c == '$' && strings.HasPrefix(sql[i:], "$__"):
			if b.Cap() == 0 && depth == 0 {
				b.Grow(len(sql)) // nested levels grow as needed: their text is short as a rule
			}
			if err := x.spend(i - start); err != nil {
				return "", err
			}
			b.WriteString(sql[start:i])
			out, n, err := x.call(ctx, sql[i:], depth+1)
			if err != nil {
				return "", err
			}
			if err := x.spend(len(out)); err != nil {
				return "", err
			}
			b.WriteString(out)
			i += n
			start = i
		default:
			i++
		}
	}
	if err := x.spend(len(sql) - start); err != nil {
		return "", err
	}
	if start == 0 {
		return sql, nil // no macro: the text itself
	}
	b.WriteString(sql[start:])
	return b.String(), nil
}

// isNameByte reports whether c may be part of a macro name.
func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// call expands the macro at the start of s, a macro of nesting level
// depth, and returns how many bytes of s it used.
func (x *expander) call(ctx context.Context, s string, depth int) (string, int, error) {
	if x.calls++; x.calls%ctxEvery == 0 {
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
	}
	n := 3
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	name := s[3:n]
	m, ok := macros[name]
	if !ok {
		return "", 0, fmt.Errorf("unknown macro %s (known: %s)", source.Quote("$__"+name), knownMacros)
	}
	var args []string
	want := max(m.args, 0)
	if m.args >= 0 && n < len(s) && s[n] == '(' {
		if depth > maxMacroDepth {
			return "", 0, fmt.Errorf("$__%s: macros are nested more than %d deep in macro arguments", name, maxMacroDepth)
		}
		// Only as many arguments as m takes are kept (one at least: an
		// empty list is one empty argument); more are counted and refused
		// unexpanded.
		end, raw, count, err := splitArgs(s, n, max(want+m.optional, 1))
		if err != nil {
			return "", 0, fmt.Errorf("$__%s: %w", name, err)
		}
		if count > len(raw) {
			return "", 0, fmt.Errorf("$__%s takes %s, got %d", name, argCount(m), count)
		}
		for _, a := range raw {
			ea, err := x.expand(ctx, a, depth)
			if err != nil {
				return "", 0, err
			}
			args = append(args, strings.TrimSpace(ea))
		}
		if len(args) == 1 && args[0] == "" {
			args = nil
		}
		n = end
	} else if m.args > 0 {
		return "", 0, fmt.Errorf("$__%s needs %s in parentheses", name, argCount(m))
	}
	if len(args) < want || len(args) > want+m.optional {
		return "", 0, fmt.Errorf("$__%s takes %s, got %d", name, argCount(m), len(args))
	}
	for i, a := range args {
		if a == "" {
			return "", 0, fmt.Errorf("$__%s: argument %d is empty", name, i+1)
		}
	}
	// The bound of the output is charged before it is built, so that a
	// text over the budget is never made (a nested $__timeFilter built
	// each level's text, doubling, before the output bound refused it);
	// the caller charges what it is. $__catalog and $__schema write a
	// setting, counted as it is.
	bound := macroText + len(x.env.catalog) + len(x.env.schema)
	if len(args) > 0 {
		bound += m.repeats * len(args[0])
	}
	if err := x.spend(bound); err != nil {
		return "", 0, err
	}
	out, err := m.expand(x, args)
	if err != nil {
		return "", 0, fmt.Errorf("$__%s: %w", name, err)
	}
	x.budget += bound
	x.time.record(name, depth, args, out)
	return out, n, nil
}

// argCount describes how many arguments m takes.
func argCount(m macro) string {
	n := max(m.args, 0)
	if m.optional > 0 {
		return fmt.Sprintf("%d or %d arguments", n, n+m.optional)
	}
	return fmt.Sprintf("%d argument(s)", n)
}

// intervalUnits are the interval suffixes time.ParseDuration does not read.
var intervalUnits = map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "M": 30 * 24 * time.Hour,
	"y": 365 * 24 * time.Hour}

// parseInterval reads a Grafana interval: 500ms, 10s, 5m, 1h, 1d, 1w, 1M,
// 1y, also quoted ('5m'); at least 1ms. A month is 30 days and a year 365,
// as Grafana counts them when it writes $__interval ("1y" past a year).
func parseInterval(s string) (time.Duration, error) {
	t := strings.Trim(strings.TrimSpace(s), `'"`)
	var d time.Duration // 0 for a bad number of days, weeks, months or years: refused below
	var err error
	if unit := intervalUnits[t[max(len(t)-1, 0):]]; unit == 0 {
		d, err = time.ParseDuration(t)
	} else if n, perr := strconv.ParseInt(t[:len(t)-1], 10, 64); perr == nil && n > 0 && n <= math.MaxInt64/int64(unit) {
		d = time.Duration(n) * unit
	}
	if err != nil || d < time.Millisecond || d%time.Millisecond != 0 {
		return 0, fmt.Errorf("interval %s is not a duration of whole milliseconds such as 500ms, 10s, 5m, 1h, 1d, 1w, 1M (30 days), 1y (365 days)", source.Quote(s))
	}
	return d, nil
}

func epoch(t time.Time, unit time.Duration) int64 {
	switch unit {
	case time.Second:
		return t.Unix()
	case time.Millisecond:
		return t.UnixMilli()
	default:
		return t.UnixNano()
	}
}

// commentAt says whether a comment (-- … or /* … */) starts at sql[i].
func commentAt(sql string, i int) bool {
	return strings.HasPrefix(sql[i:], "--") || strings.HasPrefix(sql[i:], "/*")
}

// commentEnd returns the index after the comment starting at sql[i]: the
// line's end for --, after */ for /* (the end of sql when not closed).
func commentEnd(sql string, i int) int {
	end, past := "\n", 0 // the newline itself is text
	if sql[i] == '/' {
		end, past = "*/", 2
	}
	if j := strings.Index(sql[i+2:], end); j >= 0 {
		return i + 2 + j + past
	}
	return len(sql)
}

// skipQuoted returns the index after the quoted text starting at sql[i]
// (the end of sql when it is not closed).
func skipQuoted(sql string, i int) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		if sql[j] == q {
			if j+1 < len(sql) && sql[j+1] == q { // doubled quote
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// splitArgs reads the parenthesised argument list starting at s[open] and
// returns the index after ')', the first keep top-level comma-separated
// arguments, and how many there are. A parenthesis or comma in a comment or
// a literal is not one of the list's. In a kept argument, each comment is
// made one space: a macro writes its arguments into the SQL, where a
// comment would hide what follows it on the line (a -- comment ends before
// its newline, which stays).
func splitArgs(s string, open, keep int) (int, []string, int, error) {
	depth, start, count := 0, open+1, 0 // start: of the argument's text not yet in args or b
	var args []string
	var b strings.Builder // the argument up to its last comment, once it has one
	arg := func(end int) {
		if count++; len(args) < keep {
			a := s[start:end]
			if b.Len() > 0 {
				b.WriteString(a)
				a = b.String()
				b.Reset()
			}
			args = append(args, a)
		}
		start = end + 1
	}
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'', '"', '`':
			i = skipQuoted(s, i) - 1
		case '-', '/':
			if commentAt(s, i) {
				if len(args) < keep {
					b.WriteString(s[start:i])
					b.WriteByte(' ')
				}
				start = commentEnd(s, i)
				i = start - 1
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				arg(i)
				return i + 1, args, count, nil
			}
		case ',':
			if depth == 1 {
				arg(i)
			}
		}
	}
	return 0, nil, 0, fmt.Errorf("missing ')'")
}
