// Dates, times, timestamps and intervals: normalised for Grafana, and as
// text in DuckDB's forms. Over 400 lines: every temporal Arrow type, each
// with its text form, side by side.

package flightsql

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// civil returns the calendar date of a day number (days since 1970-01-01),
// valid for any int64 day count a date or timestamp can hold.
func civil(days int64) (year int64, month, day int) {
	// Howard Hinnant's days_from_civil inverse.
	z := days + 719468
	era := series.FloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, int(m), int(d)
}

func appendPadded(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for n := len(s); n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendDate writes YYYY-MM-DD; years before 1 as DuckDB does (0044-03-15 (BC)).
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civil(days)
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(m), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(d), 2)
	if bc {
		dst = append(dst, " (BC)"...)
	}
	return dst
}

// appendClock writes HH:MM:SS[.fraction] of ns nanoseconds (non-negative),
// the fraction without trailing zeros; hours may exceed 23.
func appendClock(dst []byte, ns int64) []byte {
	sec := ns / 1e9
	frac := ns % 1e9
	dst = appendPadded(dst, sec/3600, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec/60%60, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec%60, 2)
	if frac != 0 {
		dst = append(dst, '.')
		start := len(dst)
		dst = appendPadded(dst, frac, 9)
		for dst[len(dst)-1] == '0' && len(dst) > start {
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

func dateText(dst []byte, days, maxV int64) []byte {
	switch days {
	case maxV:
		return append(dst, "infinity"...)
	case -maxV:
		return append(dst, "-infinity"...)
	}
	return appendDate(dst, days)
}

func date32Text(dst []byte, a arrow.Array, i int) []byte {
	return dateText(dst, int64(a.(*array.Date32).Value(i)), math.MaxInt32)
}

func date64Text(dst []byte, a arrow.Array, i int) []byte {
	return dateText(dst, series.FloorDiv(int64(a.(*array.Date64).Value(i)), 86_400_000), math.MaxInt64)
}

// A timestamp type names its zone, which a query's SQL chooses (any text a
// cast accepts). The text of a nested timestamp (timestampText) reads it
// with arrow-go's TimestampType.GetZone, which loads it once per type, and
// a type is one stream's. GetZone cannot load a name the zone database
// lacks, nor an offset other than ±HH:MM, and tries again for every value:
// so toJSON replaces such a zone in the column's type (knownZones), once a
// query, before any value is written.

// knownZones returns dt with each timestamp zone GetZone cannot load
// replaced by the ±HH:MM offset it names (+0530, +05), else by UTC, that
// name added to unknown; dt itself when every zone loads. An extension
// type with such a zone in its storage becomes its storage type: the
// writers write an extension they do not name as its storage.
func knownZones(dt arrow.DataType, unknown *[]string) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		if _, err := t.GetZone(); err == nil {
			return t
		}
		if off, ok := parseOffset(t.TimeZone); ok {
			z := &arrow.TimestampType{Unit: t.Unit, TimeZone: offsetName(off)}
			if _, err := z.GetZone(); err == nil {
				return z
			}
		}
		*unknown = append(*unknown, t.TimeZone)
		return &arrow.TimestampType{Unit: t.Unit, TimeZone: "UTC"}
	case arrow.ExtensionType:
		if s := knownZones(t.StorageType(), unknown); s != t.StorageType() {
			return s
		}
	case *arrow.DictionaryType:
		if v := knownZones(t.ValueType, unknown); v != t.ValueType {
			return &arrow.DictionaryType{IndexType: t.IndexType, ValueType: v, Ordered: t.Ordered}
		}
	case arrow.NestedType:
		fields := slices.Clone(t.Fields())
		changed := false
		for i, f := range fields {
			if fields[i].Type = knownZones(f.Type, unknown); fields[i].Type != f.Type {
				changed = true
			}
		}
		if changed {
			return withFields(t, fields)
		}
	}
	return dt
}

// withFields returns nested type t with fields (knownZones').
func withFields(t arrow.NestedType, fields []arrow.Field) arrow.DataType {
	switch t := t.(type) {
	case *arrow.ListType:
		return arrow.ListOfField(fields[0])
	case *arrow.LargeListType:
		return arrow.LargeListOfField(fields[0])
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(t.Len(), fields[0])
	case *arrow.ListViewType:
		return arrow.ListViewOfField(fields[0])
	case *arrow.LargeListViewType:
		return arrow.LargeListViewOfField(fields[0])
	case *arrow.StructType:
		return arrow.StructOf(fields...)
	case *arrow.MapType:
		entries := fields[0].Type.(*arrow.StructType)
		m := arrow.MapOfFields(entries.Field(0), entries.Field(1))
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.SparseUnionType:
		return arrow.SparseUnionOf(fields, t.TypeCodes())
	case *arrow.DenseUnionType:
		return arrow.DenseUnionOf(fields, t.TypeCodes())
	case *arrow.RunEndEncodedType:
		r := arrow.RunEndEncodedOf(fields[0].Type, fields[1].Type)
		r.ValueNullable = t.ValueNullable
		return r
	}
	return t // a nested type arrow-go adds later: its zones as they are
}

// offsetName is GetZone's form of an offset of off seconds: ±HH:MM.
func offsetName(off int) string {
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return fmt.Sprintf("%s%02d:%02d", sign, off/3600, off%3600/60)
}

// parseOffset reads a zone written as an offset: +05:30, -08:00, +0100.
func parseOffset(s string) (int, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	if len(digits) != 2 && len(digits) != 4 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false
	}
	h, m := n, 0
	if len(digits) == 4 {
		h, m = n/100, n%100
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// timestampText writes YYYY-MM-DD HH:MM:SS[.fraction], and for a timestamp
// with a zone the local time there followed by its offset (+00, -05,
// +05:30), as DuckDB writes TIMESTAMPTZ; infinities as infinity, -infinity.
func timestampText(dst []byte, a arrow.Array, i int) []byte {
	tt := a.DataType().(*arrow.TimestampType)
	v := int64(a.(*array.Timestamp).Value(i))
	if isInfinity(v, math.MaxInt64) {
		if v > 0 {
			return append(dst, "infinity"...)
		}
		return append(dst, "-infinity"...)
	}
	per := unitNS(tt)
	perSec := 1e9 / per
	sec, sub := series.FloorDiv(v, perSec), v-series.FloorDiv(v, perSec)*perSec
	offset := 0
	if tt.TimeZone != "" {
		loc, _ := tt.GetZone() // UTC when it cannot: see knownZones
		_, offset = time.Unix(sec, 0).In(loc).Zone()
		sec += int64(offset)
	}
	days := series.FloorDiv(sec, 86400)
	dst = appendDate(dst, days) // "(BC)" after the date, as DuckDB writes it
	dst = append(dst, ' ')
	dst = appendClock(dst, (sec-days*86400)*1e9+sub*per)
	if tt.TimeZone != "" {
		dst = appendOffset(dst, int64(offset), false)
	}
	return dst
}

// appendOffset writes an offset of off seconds from UTC as DuckDB does:
// +00, -05, +05:30, and with seconds +05:30:15.
func appendOffset(dst []byte, off int64, seconds bool) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = appendPadded(append(dst, sign), off/3600, 2)
	if m, s := off/60%60, off%60; m != 0 || seconds && s != 0 {
		dst = appendPadded(append(dst, ':'), m, 2)
		if seconds && s != 0 {
			dst = appendPadded(append(dst, ':'), s, 2)
		}
	}
	return dst
}

func timeOfDayText[T arrow.Time32 | arrow.Time64, A valueArray[T]](dst []byte, a arrow.Array, i int) []byte {
	return appendClock(dst, int64(a.(A).Value(i))*unitNS(a.DataType()))
}

// intervalText writes an interval as DuckDB does: "1 year 2 months 3 days
// 04:05:06.5", "-1 day -01:00:00", "00:00:00" when it is zero.
func intervalText(dst []byte, months, days int32, ns int64) []byte {
	start := len(dst)
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 && v != -1 {
			dst = append(dst, 's')
		}
	}
	part(int64(months/12), "year")
	part(int64(months%12), "month")
	part(int64(days), "day")
	if ns != 0 {
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		u := uint64(ns)
		if ns < 0 {
			dst = append(dst, '-')
			u = uint64(-ns) // math.MinInt64 too: two's complement
		}
		dst = appendClock(dst, int64(min(u, math.MaxInt64))) // |math.MinInt64| as math.MaxInt64
	} else if len(dst) == start {
		dst = append(dst, "00:00:00"...)
	}
	return dst
}

func monthsText(dst []byte, a arrow.Array, i int) []byte {
	return intervalText(dst, int32(a.(*array.MonthInterval).Value(i)), 0, 0)
}

func monthDayNanoText(dst []byte, a arrow.Array, i int) []byte {
	v := a.(*array.MonthDayNanoInterval).Value(i)
	return intervalText(dst, v.Months, v.Days, v.Nanoseconds)
}

func dayTimeText(dst []byte, a arrow.Array, i int) []byte {
	v := a.(*array.DayTimeInterval).Value(i)
	return intervalText(dst, 0, v.Days, int64(v.Milliseconds)*1e6)
}

// durationText writes a duration as an interval of hours, minutes and
// seconds (DuckDB has no duration type).
func durationText(dst []byte, a arrow.Array, i int) []byte {
	d := a.(*array.Duration)
	v := int64(d.Value(i))
	per := unitNS(d.DataType())
	if v > math.MaxInt64/per || v < math.MinInt64/per {
		return append(dst, d.ValueStr(i)...) // beyond 292 years of nanoseconds
	}
	return intervalText(dst, 0, 0, v*per)
}

// unitNS is the nanoseconds of one unit of dt, a type with a time unit.
func unitNS(dt arrow.DataType) int64 {
	return int64(dt.(arrow.TemporalWithUnit).TimeUnit().Multiplier())
}

// unitName is the Grafana unit of a duration in each Arrow time unit.
var unitName = map[arrow.TimeUnit]string{arrow.Second: "s", arrow.Millisecond: "ms", arrow.Microsecond: "µs", arrow.Nanosecond: "ns"}

// normaliseTimestamp makes any timestamp nanoseconds without a time zone.
// Arrow stores timestamps as UTC instants whatever the zone says, so dropping
// the zone keeps the instant; Grafana renders it in the viewer's zone.
func normaliseTimestamp(_ string, dt arrow.DataType) conversion {
	return conversion{out: frame.Timestamp, convert: scaleToNS[arrow.Timestamp, *array.Timestamp](unitNS(dt))}
}

// normaliseDuration keeps the integer value and says its unit in the field
// config, so Grafana formats it as a duration.
func normaliseDuration(name string, dt arrow.DataType) conversion {
	return withUnit(arrow.PrimitiveTypes.Int64, retype(arrow.PrimitiveTypes.Int64), unitName[dt.(*arrow.DurationType).Unit])(name, dt)
}

// isInfinity tells DuckDB's infinity and -infinity of timestamps and dates
// (the largest value of the type, and its negation) and the type's minimum.
func isInfinity[T int32 | int64](v, maxV T) bool { return v == maxV || v == -maxV || v == -maxV-1 }

// hasInfinity says whether a value of vals is an infinity (isInfinity with
// maxV, T's largest value) in one pass without a branch per value: v −
// maxV, wrapping in T, is 0, 1 or 2 for exactly the three infinities
// (maxV, then T's smallest value and the one after it), so the least of
// those differences, read unsigned, tells. Four lanes, so that each step
// does not wait for the one before.
func hasInfinity[T ~int32 | ~int64](vals []T, maxV int64) bool {
	m := T(maxV)
	var d [4]uint64
	for k := range d {
		d[k] = math.MaxUint64
	}
	i := 0
	for ; i+4 <= len(vals); i += 4 {
		v := vals[i : i+4 : i+4]
		d[0] = min(d[0], uint64(int64(v[0]-m)))
		d[1] = min(d[1], uint64(int64(v[1]-m)))
		d[2] = min(d[2], uint64(int64(v[2]-m)))
		d[3] = min(d[3], uint64(int64(v[3]-m)))
	}
	for _, v := range vals[i:] {
		d[0] = min(d[0], uint64(int64(v-m)))
	}
	return min(d[0], d[1], d[2], d[3]) <= 2
}

// scaleToNS converts timestamps and dates to timestamp[ns]; a value outside
// what int64 nanoseconds hold, or an infinity, becomes null (outOfRange).
// Nanosecond timestamps without an infinity keep their buffers.
func scaleToNS[T arrow.Timestamp | arrow.Date32 | arrow.Date64, A valueArray[T]](mul int64) converter {
	return func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		src := a.(A)
		maxV := int64(math.MaxInt64)
		if a.DataType().ID() == arrow.DATE32 {
			maxV = math.MaxInt32
		}
		if mul == 1 {
			// The values slice, nulls' slots included: an infinity there
			// only sends the column to the careful loop below.
			if !hasInfinity(a.(interface{ Values() []T }).Values(), maxV) {
				return retype(frame.Timestamp)(mem, a)
			}
		}
		var f found
		out := eachValid(array.NewTimestampBuilder(mem, frame.Timestamp), a, func(b *array.TimestampBuilder, i int) {
			v := int64(src.Value(i))
			if v > math.MaxInt64/mul || v < math.MinInt64/mul || isInfinity(v, maxV) {
				b.AppendNull()
				f |= outOfRange
				return
			}
			b.UnsafeAppend(arrow.Timestamp(v * mul))
		})
		return out, f, nil
	}
}

// dayTimeToMS makes a day_time interval milliseconds, a day being 24 hours.
func dayTimeToMS(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	src := a.(*array.DayTimeInterval)
	return eachValid(array.NewInt64Builder(mem), a, func(b *array.Int64Builder, i int) {
		v := src.Value(i)
		b.UnsafeAppend(int64(v.Days)*86_400_000 + int64(v.Milliseconds))
	}), 0, nil
}
