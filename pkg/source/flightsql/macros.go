package flightsql

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/quiverdata/quiver/pkg/source"
)

// macroEnv is what macros expand from.
type macroEnv struct {
	from, to        time.Time
	interval        time.Duration
	catalog, schema string
}

type macro struct {
	args   int // number of arguments; -1: none and no parentheses needed
	expand func(env macroEnv, args []string) (string, error)
}

// macros is the table of supported macros; doc.go says which SQL dialects
// each one targets.
var macros = map[string]macro{
	"timeFilter": {1, func(e macroEnv, a []string) (string, error) {
		return fmt.Sprintf("(%s >= %s AND %s <= %s)", a[0], sqlTime(e.from), a[0], sqlTime(e.to)), nil
	}},
	"timeFrom": {0, func(e macroEnv, _ []string) (string, error) { return sqlTime(e.from), nil }},
	"timeTo":   {0, func(e macroEnv, _ []string) (string, error) { return sqlTime(e.to), nil }},

	"unixEpochFilter":     {1, epochFilter(time.Second)},
	"unixEpochMsFilter":   {1, epochFilter(time.Millisecond)},
	"unixEpochNanoFilter": {1, epochFilter(time.Nanosecond)},
	"unixEpochFrom":       {0, epochBound(time.Second, true)},
	"unixEpochTo":         {0, epochBound(time.Second, false)},
	"unixEpochMsFrom":     {0, epochBound(time.Millisecond, true)},
	"unixEpochMsTo":       {0, epochBound(time.Millisecond, false)},
	"unixEpochNanoFrom":   {0, epochBound(time.Nanosecond, true)},
	"unixEpochNanoTo":     {0, epochBound(time.Nanosecond, false)},

	"interval": {-1, func(e macroEnv, _ []string) (string, error) { return formatInterval(e.interval), nil }},
	"interval_ms": {-1, func(e macroEnv, _ []string) (string, error) {
		return strconv.FormatInt(e.interval.Milliseconds(), 10), nil
	}},

	"timeGroup":      {2, timeGroup("")},
	"timeGroupAlias": {2, timeGroup(` AS "time"`)},
	"unixEpochGroup": {2, func(_ macroEnv, a []string) (string, error) {
		d, err := parseInterval(a[1])
		if err != nil {
			return "", err
		}
		if d%time.Second != 0 {
			return "", fmt.Errorf("interval %s is not a whole number of seconds", a[1])
		}
		n := int64(d / time.Second)
		return fmt.Sprintf("(floor(%s / %d) * %d)", a[0], n, n), nil
	}},

	"catalog": {-1, func(e macroEnv, _ []string) (string, error) {
		if e.catalog == "" {
			return "", fmt.Errorf("no default catalog is configured (catalog setting)")
		}
		return e.catalog, nil
	}},
	"schema": {-1, func(e macroEnv, _ []string) (string, error) {
		if e.schema == "" {
			return "", fmt.Errorf("no default schema is configured (schema setting)")
		}
		return e.schema, nil
	}},
}

// sqlTime is a UTC timestamp as a plain string literal, the form that
// DataFusion, Dremio, Doris/StarRocks and DuckDB all compare with timestamps.
func sqlTime(t time.Time) string { return t.UTC().Format("'2006-01-02 15:04:05.000'") }

func epochFilter(unit time.Duration) func(macroEnv, []string) (string, error) {
	return func(e macroEnv, a []string) (string, error) {
		return fmt.Sprintf("(%s >= %d AND %s <= %d)", a[0], epoch(e.from, unit), a[0], epoch(e.to, unit)), nil
	}
}

func epochBound(unit time.Duration, from bool) func(macroEnv, []string) (string, error) {
	return func(e macroEnv, _ []string) (string, error) {
		if from {
			return strconv.FormatInt(epoch(e.from, unit), 10), nil
		}
		return strconv.FormatInt(epoch(e.to, unit), 10), nil
	}
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

func timeGroup(alias string) func(macroEnv, []string) (string, error) {
	return func(_ macroEnv, a []string) (string, error) {
		d, err := parseInterval(a[1])
		if err != nil {
			return "", err
		}
		iv := fmt.Sprintf("%d seconds", d/time.Second)
		if d%time.Second != 0 {
			iv = fmt.Sprintf("%d milliseconds", d/time.Millisecond)
		}
		return fmt.Sprintf("date_bin(INTERVAL '%s', %s, TIMESTAMP '1970-01-01 00:00:00')%s", iv, a[0], alias), nil
	}
}

// parseInterval reads a Grafana interval: 500ms, 10s, 5m, 1h, 1d, 1w, also
// quoted ('5m'); at least 1ms.
func parseInterval(s string) (time.Duration, error) {
	t := strings.Trim(strings.TrimSpace(s), `'"`)
	var d time.Duration
	var err error
	switch {
	case strings.HasSuffix(t, "d") || strings.HasSuffix(t, "w"):
		n, perr := strconv.ParseInt(t[:len(t)-1], 10, 64)
		unit := 24 * time.Hour
		if strings.HasSuffix(t, "w") {
			unit *= 7
		}
		if perr != nil || n <= 0 || n > math.MaxInt64/int64(unit) {
			err = fmt.Errorf("bad number")
		}
		d = time.Duration(n) * unit
	default:
		d, err = time.ParseDuration(t)
	}
	if err != nil || d < time.Millisecond || d%time.Millisecond != 0 {
		return 0, fmt.Errorf("interval %s is not a duration of whole milliseconds such as 500ms, 10s, 5m, 1h, 1d", s)
	}
	return d, nil
}

// formatInterval writes d the way Grafana writes $__interval (1m, 30s, 500ms).
func formatInterval(d time.Duration) string {
	for _, u := range []struct {
		d time.Duration
		s string
	}{{7 * 24 * time.Hour, "w"}, {24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d >= u.d && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.s
		}
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// expandMacros replaces $__name and $__name(args) outside string literals,
// quoted identifiers ("x", `x`) and comments (-- …, /* … */). Literals use
// standard SQL escaping: a quote inside is doubled. Arguments may hold macros
// themselves ($__timeGroup(ts, $__interval)). Errors are BadQuery errors.
func expandMacros(sql string, env macroEnv) (string, error) {
	var b strings.Builder
	b.Grow(len(sql))
	for i := 0; i < len(sql); {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			j := skipQuoted(sql, i)
			b.WriteString(sql[i:j])
			i = j
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			b.WriteString(sql[i : i+j])
			i += j
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			end := len(sql)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(sql[i:end])
			i = end
		case strings.HasPrefix(sql[i:], "$__"):
			out, n, err := expandOne(sql[i:], env)
			if err != nil {
				return "", source.BadQuery("flightsql: %w", err)
			}
			b.WriteString(out)
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
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

// expandOne expands the macro at the start of s and returns how many bytes
// of s it used.
func expandOne(s string, env macroEnv) (string, int, error) {
	n := 3
	for n < len(s) && (s[n] == '_' || unicode.IsLetter(rune(s[n])) || unicode.IsDigit(rune(s[n]))) {
		n++
	}
	name := s[3:n]
	m, ok := macros[name]
	if !ok {
		known := make([]string, 0, len(macros))
		for k := range macros {
			known = append(known, "$__"+k)
		}
		slices.Sort(known)
		return "", 0, fmt.Errorf("unknown macro $__%s (known: %s)", name, strings.Join(known, ", "))
	}
	var args []string
	if m.args >= 0 && n < len(s) && s[n] == '(' {
		end, raw, err := splitArgs(s, n)
		if err != nil {
			return "", 0, fmt.Errorf("$__%s: %w", name, err)
		}
		for _, a := range raw {
			ea, err := expandMacros(a, env)
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
		return "", 0, fmt.Errorf("$__%s needs %d argument(s) in parentheses", name, m.args)
	}
	if want := max(m.args, 0); len(args) != want {
		return "", 0, fmt.Errorf("$__%s takes %d argument(s), got %d", name, want, len(args))
	}
	for i, a := range args {
		if a == "" {
			return "", 0, fmt.Errorf("$__%s: argument %d is empty", name, i+1)
		}
	}
	out, err := m.expand(env, args)
	if err != nil {
		return "", 0, fmt.Errorf("$__%s: %w", name, err)
	}
	return out, n, nil
}

// splitArgs reads the parenthesised argument list starting at s[open] and
// returns the index after ')' and the top-level comma-separated arguments.
func splitArgs(s string, open int) (int, []string, error) {
	depth, start := 0, open+1
	var args []string
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'', '"', '`':
			i = skipQuoted(s, i) - 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1, append(args, s[start:i]), nil
			}
		case ',':
			if depth == 1 {
				args = append(args, s[start:i])
				start = i + 1
			}
		}
	}
	return 0, nil, fmt.Errorf("missing ')'")
}
