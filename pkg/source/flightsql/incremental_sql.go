// Incremental queries: what a query's SQL does that decides whether its
// answer for a range is its answers for the range's parts, joined.

package flightsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// sqlKeywordsFull are the SQL words after which a query's answer for a
// range need not be its answers for the range's parts, joined.
var sqlKeywordsFull = []string{"limit", "offset", "fetch", "top", "over", "window", "qualify", "sample", "tablesample", "union", "intersect", "except"}

// rowFunctions are the functions that, without a time group, may be
// called (a word followed by "("): each maps one row to one value. Any
// other function may aggregate the whole range into one row (count,
// total, an engine's own) and makes the query a full one.
var rowFunctions = []string{
	"abs", "acos", "asin", "atan", "atan2", "cbrt", "ceil", "ceiling", "cos", "cot", "degrees", "exp", "floor", "ln", "log", "log10", "log2",
	"mod", "pi", "pow", "power", "radians", "round", "sign", "sin", "sqrt", "tan", "trunc", "truncate", "isnan", "isinf", "isfinite",
	"greatest", "least", "coalesce", "ifnull", "nullif", "nvl", "if", "iif", "cast", "try_cast", "convert",
	"lower", "upper", "lcase", "ucase", "length", "len", "char_length", "character_length", "octet_length", "strlen",
	"concat", "concat_ws", "substr", "substring", "left", "right", "trim", "ltrim", "rtrim", "btrim", "replace", "translate",
	"split_part", "lpad", "rpad", "repeat", "reverse", "position", "strpos", "instr", "starts_with", "ends_with", "contains",
	"regexp_replace", "regexp_extract", "regexp_matches", "regexp_like", "format", "printf", "to_char", "chr", "ascii", "md5", "sha256", "hash",
	"to_timestamp", "to_date", "date_trunc", "date_part", "datepart", "extract", "epoch", "epoch_ms", "epoch_us", "epoch_ns",
	"make_timestamp", "make_timestamptz", "make_date", "strftime", "strptime", "timezone", "date_add", "date_sub", "date_diff", "datediff", "dateadd",
	"from_unixtime", "to_unixtime", "unix_timestamp", "time_bucket", "date_bin",
	"to_milliseconds", "to_seconds", "to_minutes", "to_hours", "to_days",
	"json_extract", "json_extract_string", "json_extract_path", "json_extract_path_text", "json_value", "json_query",
	"struct_extract", "list_extract", "element_at", "array_length", "cardinality",
}

// clockWords are the SQL words (and the literals that name a time
// relative to now: 'now', 'today' …) that read the clock or a random
// source: an answer that uses them is not its parts' answers, which were
// asked at other times. So is a call of a function whose name starts with
// one of clockPrefixes (now64, random_normal …).
var clockWords = []string{
	"now", "'now'", "'today'", "'tomorrow'", "'yesterday'", "today", "current_timestamp", "current_date", "current_time", "localtime", "localtimestamp",
	"sysdate", "systimestamp", "getdate", "getutcdate", "utc_timestamp", "utc_date", "utc_time", "curdate", "curtime",
	"transaction_timestamp", "statement_timestamp", "clock_timestamp", "timeofday",
	"get_current_timestamp", "get_current_time", "current_localtimestamp", "current_localtime",
	"random", "rand", "uuid", "gen_random_uuid", "uuidv4", "uuid_generate_v4", "newid",
}

var clockPrefixes = []string{"now", "rand", "uuid"}

// readsClock says whether words[i] reads the clock or a random source
// (clockWords); a type after AS or "::" (UUID) does not.
func readsClock(words []string, i int) bool {
	w := words[i]
	switch {
	case i > 0 && (words[i-1] == "as" || words[i-1] == ":"):
		return false
	case slices.Contains(clockWords, w):
		return true
	case w == "unix_timestamp": // without an argument: now's
		return slices.Equal(words[i+1:min(i+3, len(words))], []string{"(", ")"})
	}
	return calls(words, i) && slices.ContainsFunc(clockPrefixes, func(p string) bool { return strings.HasPrefix(w, p) })
}

// notCalls are the SQL words a "(" may follow that are not functions.
var notCalls = []string{
	"select", "from", "where", "and", "or", "not", "in", "exists", "any", "all", "some", "as", "on", "using", "join", "values",
	"when", "then", "else", "case", "between", "like", "ilike", "is", "distinct", "filter", "within", "interval", "with", "lateral", "by", "having",
}

// sqlWhyFull says why the answer of sql (the query's SQL before macros),
// whose macros used u, cannot be made from parts ("" when it can).
func sqlWhyFull(sql string, u timeUse) string {
	switch {
	case len(u.filters) != 1:
		return fmt.Sprintf("the SQL has %d time filter macros ($__timeFilter or an epoch filter), not one", len(u.filters))
	case u.bounds > 0:
		return "the SQL uses $__timeFrom, $__timeTo or an epoch bound"
	case u.nested:
		return "a time macro is inside another macro's arguments"
	case len(u.groups) > 1:
		return "the SQL has more than one time group"
	case len(u.groups) == 1 && columnKey(u.groups[0]) != columnKey(u.filters[0]):
		return "the time group's column is not the time filter's"
	}
	words := sqlWords(sql)
	selects, grouped := 0, false
	for i, w := range words {
		switch w {
		case "select":
			selects++
		case "group":
			grouped = true
		}
		if slices.Contains(sqlKeywordsFull, w) {
			return fmt.Sprintf("the SQL has %s", strings.ToUpper(w))
		}
		if w == "distinct" && i+1 < len(words) && words[i+1] == "on" {
			return "the SQL has DISTINCT ON"
		}
		if readsClock(words, i) {
			return fmt.Sprintf("the SQL reads the clock or a random source (%s): its answer depends on when it is asked", strings.ToUpper(w))
		}
		if len(u.groups) == 0 && calls(words, i) && !slices.Contains(rowFunctions, w) {
			return fmt.Sprintf("the SQL calls %s() without a time group (only functions of one row's values qualify)", w)
		}
	}
	switch {
	case selects != 1:
		return "the SQL has more than one SELECT"
	case grouped && len(u.groups) == 0:
		return "the SQL has GROUP BY without a time group"
	}
	return ""
}

// calls says whether words[i] is a function called: a name followed by
// "(" that is neither a keyword (notCalls), a macro, nor a type after AS or
// "::" (DECIMAL(10, 2)).
func calls(words []string, i int) bool {
	w := words[i]
	switch {
	case i+1 >= len(words) || words[i+1] != "(":
		return false
	case !isNameByte(w[0]) && w[0] != '"' && w[0] != '`':
		return false // punctuation, a literal ("?"), a macro ($__…)
	case slices.Contains(notCalls, w):
		return false
	case i > 0 && (words[i-1] == "as" || words[i-1] == ":"):
		return false
	}
	return true
}

// sqlWords splits sql, outside comments, into lower-case words, quoted
// names (with their quotes), "?" for a literal (but for those in
// clockWords: 'now', 'today' …), and every other character but white
// space, one a word.
func sqlWords(sql string) []string {
	var words []string
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'':
			j := skipQuoted(sql, i)
			w := "?" // a value, not a keyword
			if lit := "'" + strings.ToLower(strings.TrimSpace(strings.Trim(sql[i:j], "'"))) + "'"; slices.Contains(clockWords, lit) {
				w = lit // names a time relative to now
			}
			words = append(words, w)
			i = j
		case c == '"' || c == '`':
			j := skipQuoted(sql, i)
			words = append(words, strings.ToLower(sql[i:j])) // a name, never a keyword
			i = j
		case commentAt(sql, i):
			i = commentEnd(sql, i)
		case isNameByte(c) || c == '$':
			j := i + 1
			for j < len(sql) && isNameByte(sql[j]) {
				j++
			}
			words = append(words, strings.ToLower(sql[i:j]))
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			words = append(words, sql[i:i+1])
			i++
		}
	}
	return words
}

// sortOrder is how a query's SQL orders its rows: by its ORDER BY's first
// term (outside parentheses), when it has one.
type sortOrder struct {
	has  bool
	term string // a name, dotted name or position; "" for an expression
	desc bool
}

// orderOf finds the ORDER BY of words (sqlWords) outside parentheses.
func orderOf(words []string) sortOrder {
	depth := 0
	for i, w := range words {
		switch w {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth != 0 || w != "order" || i+1 >= len(words) || words[i+1] != "by" {
			continue
		}
		o := sortOrder{has: true}
		term := words[i+2:]
		for len(term) > 0 && term[len(term)-1] == ";" {
			term = term[:len(term)-1]
		}
		if j := slices.Index(term, ","); j >= 0 {
			term = term[:j]
		}
	strip:
		for len(term) > 0 {
			switch term[len(term)-1] {
			case "desc":
				o.desc = true
			case "asc", "nulls", "first", "last":
			default:
				break strip
			}
			term = term[:len(term)-1]
		}
		// A name, or names joined by dots.
		for j, t := range term {
			if (j%2 == 1) != (t == ".") || len(t) == 1 && t != "." && !isNameByte(t[0]) {
				return o
			}
		}
		if len(term)%2 == 1 {
			o.term = strings.Join(term, "")
		}
		return o
	}
	return sortOrder{}
}

// byTime says whether o sorts a result whose time column, at index ti,
// is named name, by that column (or does not sort it). sql is the query's
// SQL: the filtered column's own name sorts by it only when no other
// column of the result is given that name ("… AS ts").
func (o sortOrder) byTime(name string, ti int, u timeUse, sql string) bool {
	if !o.has {
		return true
	}
	if o.term == "" {
		return false
	}
	t := columnKey(o.term)
	if t == strconv.Itoa(ti+1) || t == columnKey(name) {
		return true
	}
	col := columnKey(u.filters[0])
	if len(u.groups) > 0 || t != col && !strings.HasSuffix(col, "."+t) {
		return false
	}
	// t's last name part is col's: given to another column, it sorts by that.
	_, only := renamesOf(columnKey(sql), " as "+t[strings.LastIndexByte(t, '.')+1:], col)
	return only
}

// columnKey is s lower-cased, without quotes, its spaces one.
func columnKey(s string) string {
	s = strings.ToLower(strings.NewReplacer(`"`, "", "`", "").Replace(s))
	return strings.Join(strings.Fields(s), " ")
}

// timeColumnFiltered says whether the result's time column, name, holds
// the values the query's time filter compares, by the query's expanded SQL:
// the filtered column itself (by its last name part), that column renamed
// name ("col AS name"), or the time group of that column written as name.
func timeColumnFiltered(name, sql string, u timeUse) bool {
	flat, as := columnKey(sql), " as "+columnKey(name)
	if len(u.groups) == 1 {
		g := columnKey(u.grouped[0])
		return strings.HasSuffix(g, as) || containsWord(flat, g+as)
	}
	col := columnKey(u.filters[0])
	short := col[strings.LastIndexByte(col, '.')+1:]
	// Every "… AS name" must rename the filtered column itself: a column
	// of that name made of anything else is not the one filtered, even
	// when the table has a column of that name too.
	renamed, only := renamesOf(flat, as, col)
	if !only || renamed || short != columnKey(name) {
		return only && renamed
	}
	// The result's column has the filtered column's last name part: with
	// a qualified filter on one of several tables (a.ts), another table's
	// column of that name (b.ts) is not the one filtered, so the SELECT
	// must name the filtered one.
	words := sqlWords(sql)
	return short == col || !readsTables(words) || selects(words, col)
}

// readsTables says whether the FROM of words (sqlWords) reads more than one
// table: a JOIN, or a comma outside parentheses before its next clause.
func readsTables(words []string) bool {
	depth, from := 0, false
	for _, w := range words {
		switch {
		case w == "(":
			depth++
		case w == ")":
			depth--
		case w == "join":
			return true
		case depth != 0:
		case w == "from":
			from = true
		case w == "where" || w == "group" || w == "order" || w == "having":
			from = false
		case w == "," && from:
			return true
		}
	}
	return false
}

// selects says whether the select list of words (sqlWords, up to its FROM
// outside parentheses) names the column col (columnKey'd, dotted).
func selects(words []string, col string) bool {
	var list []string
	depth := 0
	start := slices.Index(words, "select") + 1
	for _, w := range words[start:] {
		if w == "(" {
			depth++
		} else if w == ")" {
			depth--
		} else if depth == 0 && w == "from" {
			break
		}
		list = append(list, columnKey(w))
	}
	name := strings.SplitAfter(col, ".")
	for i := range list {
		if strings.Join(list[i:min(i+2*len(name)-1, len(list))], "") == col && (i == 0 || list[i-1] != ".") {
			return true
		}
	}
	return false
}

// renamesOf says whether sql (columnKey'd) holds as (" as name") with no
// name character after it, and whether each time the identifier just before
// it is col or col's last name part (not another column, an expression's
// parenthesis or a literal).
func renamesOf(sql, as, col string) (renamed, only bool) {
	short := col[strings.LastIndexByte(col, '.')+1:]
	for j := indexFrom(sql, as, 0); j >= 0; j = indexFrom(sql, as, j+1) {
		if end := j + len(as); end < len(sql) && isNameByte(sql[end]) {
			continue
		}
		k := j
		for k > 0 && (isNameByte(sql[k-1]) || sql[k-1] == '.') {
			k--
		}
		if sql[k:j] != col && sql[k:j] != short {
			return true, false
		}
		renamed = true
	}
	return renamed, true
}

// containsWord says whether s holds w with no name character either side.
func containsWord(s, w string) bool {
	for j := indexFrom(s, w, 0); j >= 0; j = indexFrom(s, w, j+1) {
		end := j + len(w)
		if (j == 0 || !isNameByte(s[j-1])) && (end == len(s) || !isNameByte(s[end])) {
			return true
		}
	}
	return false
}

// indexFrom is the index in s of the first w at or after from, or -1.
func indexFrom(s, w string, from int) int {
	if j := strings.Index(s[from:], w); j >= 0 {
		return from + j
	}
	return -1
}
