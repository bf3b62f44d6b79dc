package flightsql

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// zoneEntries counts what the zone cache holds.
func zoneEntries() int {
	n := 0
	zones.m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Many distinct zone names (a query's SQL chooses them) leave at most
// zoneCacheMax in the cache, from one goroutine or many, and every name
// still gets its zone.
func TestZoneCacheBounded(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				name := fmt.Sprintf("Nowhere/%d-%d", g, i)
				if l := zone(name); l != time.UTC {
					t.Errorf("%s: %v, want UTC", name, l)
					return
				}
				if off := fmt.Sprintf("+%02d:%02d", i%24, (g*7+i)%60); zone(off) == time.UTC && off != "+00:00" {
					t.Errorf("%s: UTC", off)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := zoneEntries(); n > zoneCacheMax || int64(n) != zones.n.Load() {
		t.Errorf("the cache holds %d zones (counted %d), want at most %d", n, zones.n.Load(), zoneCacheMax)
	}
	// Still right after evictions.
	if _, off := time.Unix(0, 0).In(zone("+05:30")).Zone(); off != 5*3600+30*60 {
		t.Errorf("+05:30 is %d s", off)
	}
	ny := zone("America/New_York")
	if _, off := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC).In(ny).Zone(); off != -5*3600 {
		t.Errorf("America/New_York in January is %d s", off)
	}
}

// A name longer than any zone's is an unknown zone, neither looked up nor
// kept.
func TestZoneLongNameNotKept(t *testing.T) {
	long := strings.Repeat("Z", zoneNameMax+1)
	if zone(long) != time.UTC {
		t.Error("a long name is not UTC")
	}
	if _, ok := zones.m.Load(long); ok {
		t.Error("a long name is kept")
	}
}
