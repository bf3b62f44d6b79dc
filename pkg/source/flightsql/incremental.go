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

// A time-series or logs query whose SQL reads its time range only through one
// $__timeFilter (or an epoch filter) keeps its answer's rows in the
// source's result cache (resultcache.go). When the same query comes again
// (the same SQL before macros, format, interval, maxDataPoints, data
// source instance, tenant and forwarded user) for a range that starts no
// earlier and ends no earlier than the kept one, the server is asked only
// for the rows from cut on: the kept range's end (or the time it was
// asked, when that was earlier: a range ending in the future) less the
// overlap setting, rounded down to a whole second and to the query's time
// group. The answer, kept rows and new, is held to rowLimit and byteLimit
// as a full query's reads are. The
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
// A logs frame is one frame in the server's row order: the parts' rows
// are sorted by time again (logsBuilder.addSorted), so a logs query must not
// be ordered by anything but its time column first (incremental_sql.go).
//
// Anything else in the SQL that could make the answer for a range other
// than the union of its parts (a limit, a window function, a second
// SELECT, DISTINCT ON, the clock or a random source, without a time group
// any function but one of a row's values, the range used elsewhere) makes
// the query a full one, and
// its stats say why. What the SQL's words cannot show, the rows do: a row
// whose time is outside the range its query was given (the filter negated,
// in an OR, on another table's time) means the filter is not what selects
// rows by time, and such an answer is neither kept nor used (within).

// The reasons a query is answered in full that do not depend on its SQL.
const (
	whyOff        = "incremental queries are off (incrementalQueries setting)"
	whyQueryOff   = `incremental is off for this query ("incremental": false)`
	whyFormat     = "only the time_series, time_series_wide and logs formats are incremental"
	whyOrder      = "the logs are ordered by something other than their time column"
	whyNoEntry    = "no kept answer for this query yet"
	whyBackwards  = "the time range starts or ends before the kept answer's"
	whyTooFar     = "the time range starts after the kept answer's re-read window"
	whySchema     = "the result's columns differ from the kept answer's"
	whyTimeColumn = "the result's time column is not the column $__timeFilter filters"
	whyStore      = "the result cache could not be read"
	whyOutside    = "a row's time is outside the time filter's range: the SQL selects rows by more than that filter"
	whyLimit      = "the answer would pass rowLimit or byteLimit"
	whyNoticed    = "the new rows' read came with a notice (cut at rowLimit or byteLimit, or a value Grafana cannot read)"
)

// reasonCodes are the metrics' short names of the reasons above.
var reasonCodes = map[string]string{
	whyOff: "off", whyQueryOff: "query_off", whyFormat: "format", whyNoEntry: "no_entry", whyBackwards: "backwards",
	whyTooFar: "too_far", whySchema: "schema", whyTimeColumn: "time_column", whyStore: "store_error", whyOrder: "order",
	whyOutside: "outside", whyLimit: "limit", whyNoticed: "notice",
}

// reason is the metrics' name of why the query was full ("" when it was
// incremental): one of reasonCodes, "fallback" for an attempt given up,
// "sql" for what the SQL does.
func (in *incremental) reason() string {
	switch {
	case in.prev != nil:
		return ""
	case strings.HasPrefix(in.why, whyStore):
		return reasonCodes[whyStore] // followed by the store's error
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
	// Answered: one time-series or logs query, incremental or full (reason says
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

// cacheKey is the key of a query's kept answer: everything but its time
// range that its answer depends on. The source is one data source's
// instance (its settings), so they are not part of it. f is the zero
// Forwarded for a call without a forwarded identity.
func cacheKey(q source.Query, f source.Forwarded, rawSQL, format string, interval time.Duration) [sha256.Size]byte {
	h, n := sha256.New(), [8]byte{}
	for _, s := range []string{q.Scope, f.Authorization(), f.IDToken(), rawSQL, format, interval.String(),
		fmt.Sprint(q.MaxDataPoints, q.Limits.MaxSeries, q.Limits.MaxPoints)} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
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
	asOf     time.Time // when it was asked: a kept answer's end is no later
	cut      time.Time // the delta reads from here; kept rows before it
	u        timeUse   // its SQL's time filters and groups: u.width is its bucket's
	sql      string    // the expanded SQL the delta or full query sends
	order    sortOrder // of a logs query's rows

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

// notice is the stats as an info notice (the incrementalNotice setting):
// the panel header's icon, which opens Inspect → Stats.
func (in *incremental) notice() data.Notice {
	text := fmt.Sprintf("Incremental query: %d rows read from the server, %d served from the cache.", in.fromServer, in.fromCache)
	if in.prev == nil {
		text = fmt.Sprintf("Full query (%s): %d rows read from the server.", in.why, in.fromServer)
	}
	return data.Notice{Severity: data.NoticeSeverityInfo, Text: text, Inspect: data.InspectTypeStats}
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
	step := max(in.u.width, time.Second)
	overlap = max(overlap, 2*in.u.width) // a kept bucket before cut is whole
	cut := time.Unix(0, prev.to.Add(-overlap).UnixNano()/int64(step)*int64(step))
	if !cut.After(in.from) {
		in.why = whyTooFar
		return
	}
	in.prev, in.cut = prev, cut
}

// start is where the query's filter starts selecting rows: its range's
// start rounded down as the filter's literals round it (an epoch filter in
// seconds selects from the start's whole second). The kept rows are taken
// from there.
func (in *incremental) start() time.Time { return in.from.Truncate(max(in.u.unit, 1)) }

// within says whether every time of times is one a query's time filter
// over from – to lets through: from, less a time group's bucket (a row is
// labelled with its bucket's start) and a second (an epoch filter in whole
// seconds), to to and a second. A row outside is selected by something
// other than that filter (NOT, OR, a join on another table's time): such
// an answer is not the union of its parts, and is not kept.
func (in *incremental) within(times []arrow.Timestamp, from, to time.Time) bool {
	lo, hi := from.Add(-in.u.width-time.Second).UnixNano(), to.Add(time.Second).UnixNano()
	for _, t := range times {
		if int64(t) < lo || int64(t) > hi {
			return false
		}
	}
	return true
}

// partsOrder is the order of a logs answer's rows when it is made of parts
// (a delta), nil otherwise: the server's.
func (in *incremental) partsOrder() *sortOrder {
	if in.prev == nil {
		return nil
	}
	return &in.order
}
