// Dates, times, timestamps and intervals as text, in DuckDB's forms.

package flightsql

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civil returns the calendar date of a day number (days since 1970-01-01),
// valid for any int64 day count a date or timestamp can hold.
func civil(days int64) (year int64, month, day int) {
	// Howard Hinnant's days_from_civil inverse.
	z := days + 719468
	era := floorDiv(z, 146097)
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

// zones caches the time zones of timestamp types.
var zones sync.Map // name → *time.Location

func zone(name string) *time.Location {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		if off, ok := parseOffset(name); ok {
			l = time.FixedZone(name, off)
		} else {
			l = time.UTC // an unknown zone: the instant in UTC, still exact
		}
	}
	zones.Store(name, l)
	return l
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
	per := unitNS[tt.Unit]
	perSec := 1e9 / per
	sec, sub := floorDiv(v, perSec), v-floorDiv(v, perSec)*perSec
	offset := 0
	if tt.TimeZone != "" {
		_, offset = time.Unix(sec, 0).In(zone(tt.TimeZone)).Zone()
		sec += int64(offset)
	}
	days := floorDiv(sec, 86400)
	y, _, _ := civil(days)
	dst = appendDate(dst, days)
	if y <= 0 { // the (BC) mark goes after the time
		dst = dst[:len(dst)-len(" (BC)")]
	}
	dst = append(dst, ' ')
	dst = appendClock(dst, (sec-days*86400)*1e9+sub*per)
	if tt.TimeZone != "" {
		if offset < 0 {
			dst = append(dst, '-')
			offset = -offset
		} else {
			dst = append(dst, '+')
		}
		dst = appendPadded(dst, int64(offset/3600), 2)
		if m := offset % 3600 / 60; m != 0 {
			dst = append(dst, ':')
			dst = appendPadded(dst, int64(m), 2)
		}
	}
	if y <= 0 {
		dst = append(dst, " (BC)"...)
	}
	return dst
}

func time32Text(dst []byte, a arrow.Array, i int) []byte {
	t := a.(*array.Time32)
	return appendClock(dst, int64(t.Value(i))*unitNS[t.DataType().(*arrow.Time32Type).Unit])
}

func time64Text(dst []byte, a arrow.Array, i int) []byte {
	t := a.(*array.Time64)
	return appendClock(dst, int64(t.Value(i))*unitNS[t.DataType().(*arrow.Time64Type).Unit])
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
		dst = appendClockU(dst, u)
	} else if len(dst) == start {
		dst = append(dst, "00:00:00"...)
	}
	return dst
}

// appendClockU is appendClock for magnitudes up to 2^63 nanoseconds.
func appendClockU(dst []byte, ns uint64) []byte {
	if ns <= math.MaxInt64 {
		return appendClock(dst, int64(ns))
	}
	return appendClock(dst, math.MaxInt64) // only |math.MinInt64| gets here
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
	per := unitNS[d.DataType().(*arrow.DurationType).Unit]
	if v > math.MaxInt64/per || v < math.MinInt64/per {
		return append(dst, d.ValueStr(i)...) // beyond 292 years of nanoseconds
	}
	return intervalText(dst, 0, 0, v*per)
}
