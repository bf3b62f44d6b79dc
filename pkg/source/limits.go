// A query's limits, the arithmetic that stays within them, and the errors
// that name them.

package source

import (
	"errors"
	"fmt"
	"math"
)

// Limits bound what one query may produce. Zero means "no limit".
type Limits struct {
	MaxSeries int   // frames per query
	MaxPoints int64 // rows summed over all frames of a query
	// MaxBytes bounds the Arrow body bytes of all frames of a query (what
	// the frames weigh on the wire before compression). The plugin derives
	// it from MaxPoints (see PointBytes), so its errors name maxPoints.
	MaxBytes int64
}

// PointBytes is what one time-series point weighs in a frame body: an int64
// timestamp and a float64 value. A query may produce MaxPoints × PointBytes
// body bytes, whatever its rows are made of (a demo log line weighs about
// 15 points: docs/limits.md).
const PointBytes = 16

// Mul returns a × b, or math.MaxInt64 when the product of the non-negative
// a and b does not fit an int64: limit arithmetic saturates rather than
// wraps, so that a huge count stays above every limit.
func Mul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// Add returns a + b for non-negative a and b, saturating at math.MaxInt64.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Series is l's MaxSeries as its errors name it, counting unit ("series",
// "log streams (label sets)").
func (l Limits) Series(unit string) Limit {
	return Limit{Max: int64(l.MaxSeries), Unit: unit, Setting: "maxSeries"}
}

// Points is l's MaxPoints as its errors name it, counting unit ("points",
// "rows", "log lines").
func (l Limits) Points(unit string) Limit {
	return Limit{Max: l.MaxPoints, Unit: unit, Setting: "maxPoints"}
}

// LimitExceeded returns a KindLimit error with a formatted message. A limit
// that a setting controls is better named by Limit.Exceeded, whose wording
// every such error shares.
func LimitExceeded(format string, args ...any) error {
	return &Error{Kind: KindLimit, Err: fmt.Errorf(format, args...)}
}

// Limit is one of a query's limits as its error names it: its value, what
// it counts and the data-source setting that controls it.
type Limit struct {
	Max     int64  // the limit's value
	Unit    string // what it counts, plural: "points", "series", "rows"
	Setting string // the setting that controls it: "maxPoints"
	// Note, optional, says how the setting gives the limit or what counts
	// towards it: "a row of any scenario counts as a point".
	Note string
}

// Exceeded returns a KindLimit error saying that what went over l, in the
// wording every limit error shares:
//
//	<what> more than <Max> <Unit>, this data source's limit per query (setting <Setting>[; <Note>]); [<remedy>, or ]raise <Setting>
//
// what names what went over and reads on into "more than" ("flightsql: the
// query returns", "demo query: seriesCount 50000 is"); remedy, optional,
// says how to ask for less ("narrow the time range or aggregate").
func (l Limit) Exceeded(what, remedy string) error {
	setting := l.Setting
	if l.Note != "" {
		setting += "; " + l.Note
	}
	if remedy != "" {
		remedy += ", or "
	}
	return &Error{Kind: KindLimit, Setting: l.Setting, Err: fmt.Errorf("%s more than %d %s, this data source's limit per query (setting %s); %sraise %s",
		what, l.Max, l.Unit, setting, remedy, l.Setting)}
}

// SettingOf returns the setting whose limit err, or an error it wraps, hit
// (Error.Setting); "" for none.
func SettingOf(err error) string {
	for ; err != nil; err = errors.Unwrap(err) {
		if e, ok := err.(*Error); ok && e.Setting != "" { //nolint:errorlint // walks the chain itself
			return e.Setting
		}
	}
	return ""
}
