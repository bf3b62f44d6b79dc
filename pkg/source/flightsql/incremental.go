// Incremental queries: which queries may be answered from their previous
// answer and a query of what is new, and the plan of such a query.

package flightsql

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// A time-series query whose SQL reads its time range only through one
// $__timeFilter (or an epoch filter) keeps its answer's rows in the
// source's result cache (resultcache.go). When the same query comes again
// (the same SQL before macros, format, interval, maxDataPoints, data
// source instance, tenant and forwarded user) for a range that starts no
// earlier and ends no earlier than the kept one, the server is asked only
// for the rows from cut on: the kept range's end less the overlap setting,
// rounded down to a whole second and to the query's time group. The
// answer is the kept rows from the new start up to cut, and the new rows
// from cut on: the same rows as the full query, since the filter selects
// rows by the time the result is split by, and the two parts are disjoint
// in it. Rows that arrive later than the overlap with a time before cut are
// not seen until the kept answer is dropped (a new start before the kept
// one, a changed query, eviction).
//
// With a time group, a bucket's row is labelled with its start: the delta's
// rows labelled before cut are partial and dropped, and the kept ones
// labelled before cut are whole, because the overlap is made at least two
// buckets. The first bucket of the new range holds only its rows from the
// new start on (in the full query too): it is read again by a query of the
// new range's first bucket width, whose rows labelled before the start are
// that partial bucket.
//
// Anything else in the SQL that could make the answer for a range other
// than the union of its parts (a limit, a window function, a second
// SELECT, an aggregate without a time group, the range used elsewhere)
// makes the query a full one, and its stats say why.

// The reasons a query is answered in full that do not
// depend on its SQL.
const (
	whyOff        = "incremental queries are off (incrementalQueries setting)"
	whyQueryOff   = `incremental is off for this query ("incremental": false)`
	whyFormat     = "only the time_series and time_series_wide formats are incremental"
	whyNoEntry    = "no kept answer for this query yet"
	whyBackwards  = "the time range starts or ends before the kept answer's"
	whyTooFar     = "the time range starts after the kept answer's re-read window"
	whySchema     = "the result's columns differ from the kept answer's"
	whyTimeColumn = "the result's time column is not the column $__timeFilter filters"
	whyStore      = "the result cache could not be read"
)

// reasonCodes are the metrics' short names of the reasons above.
var reasonCodes = map[string]string{
	whyOff: "off", whyQueryOff: "query_off", whyFormat: "format", whyNoEntry: "no_entry", whyBackwards: "backwards",
	whyTooFar: "too_far", whySchema: "schema", whyTimeColumn: "time_column", whyStore: "store_error",
}

// reason is the metrics' name of why the query was full ("" when it was
// incremental): one of reasonCodes, "fallback" for an attempt given up,
// "sql" for what the SQL does.
func (in *incremental) reason() string {
	switch {
	case in.prev != nil:
		return ""
	case reasonCodes[in.why] != "":
		return reasonCodes[in.why]
	case in.fellBack:
		return "fallback"
	}
	return "sql"
}

// CacheObserver sees what incremental queries and the result cache do
// (the plugin's metrics). Its methods must be safe for concurrent use.
type CacheObserver interface {
	// Answered: one time-series query, incremental or full (reason says
	// why, see incremental.reason), and the rows read from the server and
	// served from the cache.
	Answered(reason string, fromServer, fromCache int64)
	// Stored: the bytes a store holds changed by delta, evicting evicted
	// entries.
	Stored(delta int64, evicted int)
	// StoreFailed: a store's get, put or delete failed.
	StoreFailed(op string)
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) Answered(string, int64, int64) {}
func (nopObserver) Stored(int64, int)             {}
func (nopObserver) StoreFailed(string)            {}

// sqlKeywordsFull are the SQL words after which a query's answer for a
// range need not be its answers for the range's parts, joined.
var sqlKeywordsFull = []string{"limit", "offset", "fetch", "top", "over", "window", "qualify", "sample", "tablesample", "union", "intersect", "except"}

// aggregates are the aggregate functions that, without a time group, make
// one row of the whole range (matched as a word followed by "(").
var aggregates = []string{
	"count", "sum", "avg", "min", "max", "mean", "median", "mode", "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp",
	"first", "last", "first_value", "last_value", "any_value", "arbitrary", "arg_max", "arg_min", "argmax", "argmin", "max_by", "min_by",
	"approx_count_distinct", "approx_quantile", "approx_percentile", "percentile_cont", "percentile_disc", "quantile", "quantile_cont", "quantile_disc",
	"string_agg", "array_agg", "list", "group_concat", "listagg", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "every",
	"corr", "covar_pop", "covar_samp", "histogram", "entropy", "kurtosis", "skewness", "product", "fsum", "favg", "sumkahan", "kahan_sum", "mad", "geomean", "geometric_mean",
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
	case len(u.groups) == 1 && !sameColumn(u.groups[0], u.filters[0]):
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
		for _, k := range sqlKeywordsFull {
			if w == k {
				return fmt.Sprintf("the SQL has %s", strings.ToUpper(k))
			}
		}
		if len(u.groups) == 0 && i+1 < len(words) && words[i+1] == "(" {
			for _, a := range aggregates {
				if w == a {
					return fmt.Sprintf("the SQL aggregates (%s) without a time group", w)
				}
			}
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

// sqlWords splits sql, outside literals, quoted names and comments, into
// lower-case words and the single characters "(" (other characters are
// dropped).
func sqlWords(sql string) []string {
	var words []string
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i)
			words = append(words, "?") // a name or a value, not a keyword
		case commentAt(sql, i):
			i = commentEnd(sql, i)
		case isNameByte(c) || c == '$':
			j := i + 1
			for j < len(sql) && isNameByte(sql[j]) {
				j++
			}
			words = append(words, strings.ToLower(sql[i:j]))
			i = j
		case c == '(':
			words = append(words, "(")
			i++
		default:
			i++
		}
	}
	return words
}

// sameColumn says whether the macro arguments a and b name the same column
// (compared without quotes, and with spaces and case folded).
func sameColumn(a, b string) bool { return columnKey(a) == columnKey(b) }

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
	short := col
	if i := strings.LastIndexByte(col, '.'); i >= 0 {
		short = col[i+1:]
	}
	// Every "… AS name" must rename the filtered column itself: a column
	// of that name made of anything else is not the one filtered, even
	// when the table has a column of that name too.
	renamed := false
	for _, before := range renamedFrom(flat, as) {
		if before != col && before != short {
			return false
		}
		renamed = true
	}
	return renamed || short == columnKey(name)
}

// renamedFrom returns, for each place sql (columnKey'd) holds as (" as
// name") with no name character after it, the identifier just before it
// ("" when something else is: an expression's parenthesis, a literal).
func renamedFrom(sql, as string) []string {
	var out []string
	for i := 0; ; {
		j := strings.Index(sql[i:], as)
		if j < 0 {
			return out
		}
		j += i
		i = j + 1
		if end := j + len(as); end < len(sql) && isNameByte(sql[end]) {
			continue
		}
		k := j
		for k > 0 && (isNameByte(sql[k-1]) || sql[k-1] == '.') {
			k--
		}
		out = append(out, sql[k:j])
	}
}

// containsWord says whether s holds w with no name character either side.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !isNameByte(s[j-1])) && (end == len(s) || !isNameByte(s[end])) {
			return true
		}
		i = j + 1
	}
}

// cacheKey is the key of a query's kept answer: everything but its time
// range that its answer depends on. The source is one data source's
// instance (its settings), so they are not part of it.
func cacheKey(q source.Query, f source.Forwarded, forwarded bool, rawSQL, format string, interval time.Duration) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(q.Scope)
	if forwarded {
		field(f.Authorization())
		field(f.IDToken())
	} else {
		field("")
		field("")
	}
	field(rawSQL)
	field(format)
	field(interval.String())
	field(fmt.Sprint(q.MaxDataPoints, q.Limits.MaxSeries, q.Limits.MaxPoints))
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// incremental is the plan of one query: full (why says why) or a delta.
type incremental struct {
	key  [sha256.Size]byte
	keep bool // the query's SQL allows keeping its answer
	why  string
	prev *entry // the kept answer a delta reads with, nil for a full query
	// fellBack: a delta was given up for a full query (why says why).
	fellBack bool

	from, to time.Time // the query's range
	cut      time.Time // the delta reads from here; kept rows before it
	width    time.Duration
	u        timeUse
	sql      string // the expanded SQL the delta or full query sends

	fromServer, fromCache int64 // rows
}

// stats are the query's incremental stats, for its first frame.
func (in *incremental) stats() []data.QueryStat {
	mode := "Incremental query"
	if in.prev == nil {
		mode = "Full query: " + in.why
	}
	return []data.QueryStat{
		{FieldConfig: data.FieldConfig{DisplayName: mode}, Value: 1},
		{FieldConfig: data.FieldConfig{DisplayName: "Rows read from the server"}, Value: float64(in.fromServer)},
		{FieldConfig: data.FieldConfig{DisplayName: "Rows served from the cache"}, Value: float64(in.fromCache)},
	}
}

// planDelta decides, for a query whose SQL allows it, whether prev (nil:
// none kept) answers the range [from, to] with a delta from cut.
func (in *incremental) planDelta(prev *entry, overlap time.Duration) {
	switch {
	case prev == nil:
		in.why = whyNoEntry
		return
	case in.from.Before(prev.from) || in.to.Before(prev.to):
		in.why = whyBackwards
		return
	}
	step := max(in.width, time.Second)
	overlap = max(overlap, 2*in.width) // a kept bucket before cut is whole
	cut := time.Unix(0, prev.to.Add(-overlap).UnixNano()/int64(step)*int64(step))
	if !cut.After(in.from) {
		in.why = whyTooFar
		return
	}
	in.prev, in.cut = prev, cut
}

// timeSchemaOK checks the result schema against what the query filters:
// its time column must be the filtered one.
func (in *incremental) timeSchemaOK(schema *arrow.Schema, timeIdx int) bool {
	return timeColumnFiltered(schema.Field(timeIdx).Name, in.sql, in.u)
}
