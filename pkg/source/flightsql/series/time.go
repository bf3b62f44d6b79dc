// The time column: which column it is, and its values as nanoseconds.

package series

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// TimeColumn finds the time column of a normalised schema: the column named
// "time" (in any case) if it is a timestamp, else the first timestamp
// column, else a column named "time" whose type may be the time column
// (types: integer Unix times, see EpochValues). ok is false when there is
// none.
func TimeColumn(s *arrow.Schema, types Types) (idx int, ok bool) {
	fields := s.Fields()
	named := slices.IndexFunc(fields, func(f arrow.Field) bool { return strings.EqualFold(f.Name, "time") })
	if named >= 0 && fields[named].Type.ID() == arrow.TIMESTAMP {
		return named, true
	}
	if i := slices.IndexFunc(fields, func(f arrow.Field) bool { return f.Type.ID() == arrow.TIMESTAMP }); i >= 0 {
		return i, true
	}
	if named >= 0 && types(fields[named].Type.ID()).Times != nil {
		return named, true
	}
	return 0, false
}

// epochNS reads an integer Unix time by its magnitude, as Grafana's SQL data
// sources do: below 1e11 seconds, below 1e14 milliseconds, below 1e17
// microseconds, nanoseconds beyond (the same bounds negated before 1970).
// ok is false when the time is outside what int64 nanoseconds hold
// (1677-09-21 to 2262-04-11; past 9223372036 seconds, say): the product
// would wrap to a wrong time.
func epochNS(v int64) (ns int64, ok bool) {
	var mul int64
	switch {
	case -1e11 < v && v < 1e11:
		mul = 1e9
	case -1e14 < v && v < 1e14:
		mul = 1e6
	case -1e17 < v && v < 1e17:
		mul = 1e3
	default:
		return v, true
	}
	if v > math.MaxInt64/mul || v < math.MinInt64/mul {
		return 0, false
	}
	return v * mul, true
}

// TimeValues reads a whole time column as nanoseconds: a timestamp[ns]
// column's own values (TimestampValues), or integer Unix times converted
// into dst (EpochValues). bad counts the integer times out of range (see
// epochNS); when it is not 0, valid is the column's validity (in the memory
// of valid) with those rows cleared. Null slots hold any value; check the
// column's validity. The types that may be a time column say so in their
// registration (Type.Times).
type TimeValues func(a arrow.Array, dst []arrow.Timestamp, valid []byte) (times []arrow.Timestamp, _ []byte, bad int)

// TimestampValues is the TimeValues of a timestamp column, normalised to
// nanoseconds: its own values.
func TimestampValues(a arrow.Array, _ []arrow.Timestamp, valid []byte) ([]arrow.Timestamp, []byte, int) {
	return a.(*array.Timestamp).Values(), valid, 0
}

// EpochValues is the TimeValues of integer Unix times of type T, read by
// their magnitude (seconds to nanoseconds) as Grafana's SQL data sources do
// (epochNS).
func EpochValues[T int32 | int64](a arrow.Array, dst []arrow.Timestamp, valid []byte) ([]arrow.Timestamp, []byte, int) {
	src := a.(interface{ Values() []T }).Values()
	dst = grow(dst, len(src))
	bad := 0
	for i, v := range src {
		ns, ok := epochNS(int64(v))
		dst[i] = arrow.Timestamp(ns)
		if ok || a.IsNull(i) {
			continue
		}
		if bad == 0 {
			valid = validityOf(a, valid)
		}
		bitutil.ClearBit(valid, i)
		bad++
	}
	return dst, valid, bad
}

// validityOf returns the validity bitmap of a from bit 0, in the memory of
// dst: a's own (at its offset), or every bit set when a has no nulls.
func validityOf(a arrow.Array, dst []byte) []byte {
	n := a.Len()
	dst = grow(dst, int(bitutil.BytesForBits(int64(n))))
	if a.NullN() == 0 {
		for i := range dst {
			dst[i] = 0xff
		}
		return dst
	}
	bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, dst, 0)
	return dst
}

// TimeReader reads the time column of each batch as nanoseconds, for the
// builders that take one time per row (series, and flightsql's logs), and
// counts the integer Unix times it could not read.
type TimeReader struct {
	field      arrow.Field // the time column, named in the notice
	values     TimeValues  // its type's
	epoch      []arrow.Timestamp
	valid      []byte
	outOfRange int64 // integer Unix times outside int64 nanoseconds, made null
}

// NewTimeReader returns the reader of time column f (found by TimeColumn
// with the same types).
func NewTimeReader(f arrow.Field, types Types) TimeReader {
	return TimeReader{field: f, values: types(f.Type.ID()).Times}
}

// Read returns the time column a of a batch as a column whose nulls are the
// rows without a time, and its values as nanoseconds (a null slot holds any
// value). A timestamp[ns] column, and integer Unix times all in range, keep
// a's validity (col is a); an integer Unix time out of range is null in col
// (Go memory, valid until the next read), never a wrapped time.
func (r *TimeReader) Read(a arrow.Array) (col arrow.Array, times []arrow.Timestamp) {
	times, valid, bad := r.values(a, r.epoch, r.valid)
	if a.DataType().ID() == arrow.TIMESTAMP {
		return a, times
	}
	r.epoch, r.valid = times, valid
	if bad == 0 {
		return a, times
	}
	r.outOfRange += int64(bad)
	return arrayOver(frame.Timestamp, times, valid, a.NullN()+bad), times
}

// Notices appends the notices of the rows left out for their time: leftOut
// rows had a null time in the columns Read returned, r.outOfRange of them
// for an integer Unix time out of range.
func (r *TimeReader) Notices(notices []data.Notice, leftOut int64) []data.Notice {
	if n := leftOut - r.outOfRange; n > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d rows with a null time were left out.", n)})
	}
	if r.outOfRange > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("Column %s (%s) has %d integer Unix times outside the timestamps Grafana reads (1677-09-21 to 2262-04-11 in nanoseconds): their rows were left out.", source.Quote(r.field.Name), r.field.Type, r.outOfRange)})
	}
	return notices
}
