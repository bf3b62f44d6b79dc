package series

import (
	"math"
	"testing"
	"time"
)

// TestEpochNSBounds: each unit's largest and smallest value that fits in
// int64 nanoseconds converts exactly; one past it is out of range, never a
// wrapped time.
func TestEpochNSBounds(t *testing.T) {
	for _, c := range []struct {
		v, ns int64
		ok    bool
	}{
		{0, 0, true},
		{1, 1e9, true},
		{-1, -1e9, true},
		// seconds: 2262-04-11T23:47:16Z is the last whole second.
		{9_223_372_036, 9_223_372_036_000_000_000, true},
		{9_223_372_037, 0, false},
		{-9_223_372_036, -9_223_372_036_000_000_000, true},
		{-9_223_372_037, 0, false},
		{99_999_999_999, 0, false}, // the largest read as seconds
		{-99_999_999_999, 0, false},
		// milliseconds
		{100_000_000_000, 100_000_000_000_000_000, true}, // the smallest read as ms
		{9_223_372_036_854, 9_223_372_036_854_000_000, true},
		{9_223_372_036_855, 0, false},
		{-9_223_372_036_854, -9_223_372_036_854_000_000, true},
		{-9_223_372_036_855, 0, false},
		// microseconds
		{100_000_000_000_000, 100_000_000_000_000_000, true},
		{9_223_372_036_854_775, 9_223_372_036_854_775_000, true},
		{9_223_372_036_854_776, 0, false},
		{-9_223_372_036_854_775, -9_223_372_036_854_775_000, true},
		{-9_223_372_036_854_776, 0, false},
		{99_999_999_999_999_999, 0, false},
		// nanoseconds: every value fits
		{100_000_000_000_000_000, 100_000_000_000_000_000, true},
		{math.MaxInt64, math.MaxInt64, true},
		{math.MinInt64, math.MinInt64, true},
	} {
		ns, ok := epochNS(c.v)
		if ok != c.ok || (ok && ns != c.ns) {
			t.Errorf("epochNS(%d) = %d, %v; want %d, %v", c.v, ns, ok, c.ns, c.ok)
		}
	}
	if got := time.Unix(9_223_372_036, 0).UTC().Format(time.RFC3339); got != "2262-04-11T23:47:16Z" {
		t.Errorf("last second: %s", got)
	}
}
