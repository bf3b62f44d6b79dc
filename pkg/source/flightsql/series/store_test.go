package series

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// flushSharedTimes takes the times of series cycling in time order, a flush
// beginning in the middle of a time included, and nothing else.
func TestFlushSharedTimes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pend   []arrow.Timestamp
		k      int
		seg    []arrow.Timestamp // nil: not shared
		starts []uint32
	}{
		{"from a time's first series", ts(5, 5, 5, 6, 6, 6, 7), 3, ts(5, 6, 7), []uint32{0, 0, 0}},
		{"from the middle of a time", ts(5, 6, 6, 6, 7, 7, 7, 8), 3, ts(5, 6, 7, 8), []uint32{0, 1, 1}},
		{"descending", ts(9, 9, 4, 4, 1, 1), 2, ts(9, 4, 1), []uint32{0, 0}},
		{"one series", ts(1, 2, 3), 1, ts(1, 2, 3), []uint32{0}},
		{"one time", ts(5, 5, 5), 3, ts(5), []uint32{0, 0, 0}},
		{"a time back again", ts(1, 2, 2, 1), 2, ts(1, 2, 1), []uint32{0, 1}},
		{"a cycle of two times", ts(5, 5, 6, 6, 6, 6), 3, nil, nil},
		{"a series a time behind", ts(5, 5, 4, 6, 6, 5, 7, 7, 6), 3, nil, nil},
		{"a time repeated in the next cycle", ts(5, 5, 5, 5), 2, nil, nil},
		{"fewer rows than series", ts(5), 2, nil, nil},
		{"a run broken at its end", ts(1, 1, 1, 2, 2, 3, 4, 4, 4), 3, nil, nil},
		{"a run broken at its start", ts(1, 1, 1, 2, 3, 3, 4, 4, 4), 3, nil, nil},
		{"the last run broken", ts(1, 1, 1, 2, 2, 2, 3, 4), 3, nil, nil},
		{"a short first run, then a whole one", ts(1, 1, 2, 2, 2), 3, ts(1, 2), []uint32{0, 0, 1}},
	} {
		// A flush before, shared, so that the scratch is reused.
		s := segments[arrow.Timestamp]{times: true, pend: ts(7, 7, 8, 8, 9, 9, 10, 10)}
		if _, ok := flushSharedTimes(&s, 2, nil); !ok {
			t.Fatal("the first flush is not shared")
		}
		first := s.segs[0]
		s.segs = nil
		s.pend = slices.Clone(tc.pend)
		starts, ok := flushSharedTimes(&s, tc.k, nil)
		if !slices.Equal(first, ts(7, 8, 9, 10)) {
			t.Errorf("%s: the flush before's segment became %v", tc.name, first)
		}
		if ok != (tc.seg != nil) {
			t.Errorf("%s: shared %v", tc.name, ok)
			continue
		}
		if !ok {
			if len(s.segs) != 0 || !slices.Equal(s.pend, tc.pend) {
				t.Errorf("%s: not shared, yet the pending times were moved", tc.name)
			}
			continue
		}
		if len(s.segs) != 1 || !slices.Equal(s.segs[0], tc.seg) || !slices.Equal(starts[:tc.k], tc.starts) || len(s.pend) != 0 {
			t.Errorf("%s: segment %v, starts %v", tc.name, s.segs, starts)
		}
		// Every series reads its own times back.
		for j := range tc.k {
			for i, x := 0, j; x < len(tc.pend); i, x = i+1, x+tc.k {
				if got := s.of(run{tstart: starts[j] + uint32(i), n: 1})[0]; got != tc.pend[x] {
					t.Errorf("%s: series %d row %d: time %d, want %d", tc.name, j, i, got, tc.pend[x])
				}
			}
		}
	}
}

// sameTimes finds a series' times equal to the last series' wherever its
// runs cut them, takes a run reading the same segment place at the same
// position as the same, and no other.
func TestSameTimes(t *testing.T) {
	b := &Builder{}
	b.times = segments[arrow.Timestamp]{times: true, segs: [][]arrow.Timestamp{ts(1, 2, 3, 4), ts(5, 6, 7, 8), ts(6, 9)}}
	b.lastRuns = []run{{seg: 0, tstart: 0, n: 2}, {seg: 1, tstart: 0, n: 2}}
	b.lastTimes = ts(1, 2, 5, 6)
	for _, tc := range []struct {
		name string
		runs []run
		want bool
	}{
		{"the same runs", []run{{seg: 0, n: 2}, {seg: 1, n: 2}}, true},
		{"cut elsewhere", []run{{seg: 0, n: 1}, {seg: 0, tstart: 1, n: 1}, {seg: 1, n: 2}}, true},
		// Run 1 reads the place of the last series' run 1, from another
		// position: [1 5 6 6] is not [1 2 5 6].
		{"a same run elsewhere", []run{{seg: 0, n: 1}, {seg: 1, n: 2}, {seg: 2, n: 1}}, false},
		{"shorter", []run{{seg: 0, n: 2}, {seg: 1, n: 1}}, false},
		{"longer", []run{{seg: 0, n: 2}, {seg: 1, n: 2}, {seg: 2, n: 1}}, false},
		{"other times", []run{{seg: 0, n: 2}, {seg: 1, tstart: 1, n: 2}}, false},
	} {
		if got := b.sameTimes(tc.runs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
