package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

type collect struct{ frames []*data.Frame }

func (c *collect) Frame(ctx context.Context, f *data.Frame) error {
	c.frames = append(c.frames, f)
	return nil
}
func (c *collect) Record(context.Context, arrow.RecordBatch) error {
	return errors.New("demo must hand over data.Frames")
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func query(js string) source.Query {
	return source.Query{RefID: "A", JSON: []byte(js), From: t0.Add(-time.Hour), To: t0, Interval: 15 * time.Second, MaxDataPoints: 1000,
		Limits: source.Limits{MaxSeries: 100, MaxPoints: 100_000}}
}

func run(t *testing.T, q source.Query) ([]*data.Frame, error) {
	t.Helper()
	var c collect
	err := New().Query(context.Background(), q, &c)
	return c.frames, err
}

func TestRandomWalk(t *testing.T) {
	frames, err := run(t, query(`{"scenario":"random_walk","seriesCount":7,"seed":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 7 {
		t.Fatalf("%d frames, want 7", len(frames))
	}
	hosts := map[string]bool{}
	for _, f := range frames {
		if f.RefID != "A" || len(f.Fields) != 2 || f.Fields[0].Type() != data.FieldTypeTime || f.Fields[1].Type() != data.FieldTypeFloat64 {
			t.Fatalf("frame shape: %d fields", len(f.Fields))
		}
		// 1 h at 15 s steps: 240 intervals, both ends included.
		if f.Rows() != 241 {
			t.Errorf("%d rows, want 241", f.Rows())
		}
		l := f.Fields[1].Labels
		if l["host"] == "" || l["region"] == "" || l["job"] == "" {
			t.Errorf("labels %v", l)
		}
		hosts[l["host"]] = true
	}
	if len(hosts) != 7 {
		t.Errorf("%d distinct hosts, want 7", len(hosts))
	}
	again, _ := run(t, query(`{"scenario":"random_walk","seriesCount":7,"seed":3}`))
	other, _ := run(t, query(`{"scenario":"random_walk","seriesCount":7,"seed":4}`))
	if frames[3].At(1, 100) != again[3].At(1, 100) {
		t.Error("same query, different values")
	}
	if frames[3].At(1, 100) == other[3].At(1, 100) {
		t.Error("different seeds, same values")
	}
}

func TestMaxDataPointsWidensTheStep(t *testing.T) {
	q := query(`{"seriesCount":1}`)
	q.MaxDataPoints = 100
	q.Interval = time.Second
	frames, err := run(t, q)
	if err != nil {
		t.Fatal(err)
	}
	if n := frames[0].Rows(); n > 100 || n < 90 {
		t.Errorf("%d points for maxDataPoints 100", n)
	}
}

// A step below a millisecond is rounded up, so that the points still
// reach the end of the range: rounded to the nearest, 1.43 ms became 1 ms
// and 700 points ended 301 ms before it.
func TestTimelineReachesTheEndOfTheRange(t *testing.T) {
	for _, tc := range []struct {
		span      time.Duration
		maxPoints int64
	}{{time.Second, 700}, {140 * time.Second, MaxPointsPerSeries + 1}, {time.Hour, 1000}} {
		q := query(`{"seriesCount":1}`)
		q.From, q.Interval, q.MaxDataPoints = q.To.Add(-tc.span), 0, tc.maxPoints
		frames, err := run(t, q)
		if err != nil {
			t.Fatal(err)
		}
		f := frames[0]
		first, last := f.Fields[0].At(0).(time.Time), f.Fields[0].At(f.Rows()-1).(time.Time)
		step := f.Fields[0].At(1).(time.Time).Sub(first)
		if gap := q.To.Sub(last); gap < 0 || gap >= step || int64(f.Rows()) > min(tc.maxPoints, MaxPointsPerSeries) {
			t.Errorf("%s in at most %d points: %d points %s apart, the last %s before the end", tc.span, tc.maxPoints, f.Rows(), step, gap)
		}
	}
}

func TestLogsAndTable(t *testing.T) {
	frames, err := run(t, query(`{"scenario":"logs","seriesCount":3}`))
	if err != nil {
		t.Fatal(err)
	}
	f := frames[0]
	if len(frames) != 1 || f.Meta.PreferredVisualization != data.VisTypeLogs || f.Meta.Type != data.FrameTypeLogLines {
		t.Fatalf("logs frame meta %+v", f.Meta)
	}
	if f.Rows() != 3*200 {
		t.Errorf("%d lines, want 600", f.Rows())
	}
	line := f.Fields[1].At(0).(string)
	if !strings.Contains(line, "level=") || len(line) < 80 {
		t.Errorf("unrealistic line %q", line)
	}
	frames, err = run(t, query(`{"scenario":"table","seriesCount":12}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].Rows() != 12 || len(frames[0].Fields) != 7 {
		t.Fatalf("table: %d frames", len(frames))
	}
}

func TestBadQueriesAndLimits(t *testing.T) {
	for js, want := range map[string]string{
		`{"scenario":"sine"}`: `scenario "sine" is not one of`,
		`{"seriesCount":0}`:   "seriesCount 0 must be at least 1",
		`{"seriesCount":"x"}`: "demo query",
		`not json`:            "demo query",
	} {
		_, err := run(t, query(js))
		if err == nil || !strings.Contains(err.Error(), want) || source.KindOf(err) != source.KindQuery {
			t.Errorf("%s: %v (kind %d), want a query error saying %q", js, err, source.KindOf(err), want)
		}
	}
	_, err := run(t, query(`{"seriesCount":101}`))
	if source.KindOf(err) != source.KindLimit || !strings.Contains(err.Error(), "maxSeries") {
		t.Errorf("series limit: %v", err)
	}
	_, err = run(t, query(`{"seriesCount":100}`)) // 100 × 241 points > 100 000? no: 24 100
	if err != nil {
		t.Errorf("within limits: %v", err)
	}
	q := query(`{"seriesCount":100}`)
	q.Limits.MaxPoints = 1000
	_, err = run(t, q)
	if source.KindOf(err) != source.KindLimit || !strings.Contains(err.Error(), "maxPoints") {
		t.Errorf("points limit: %v", err)
	}
	q = query(`{}`)
	q.To = q.From
	if _, err := run(t, q); source.KindOf(err) != source.KindQuery {
		t.Errorf("empty range: %v", err)
	}
}

func TestCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var c collect
	err := New().Query(ctx, query(`{"seriesCount":50}`), &c)
	if !errors.Is(err, context.Canceled) || len(c.frames) != 0 {
		t.Errorf("cancelled query: %v, %d frames", err, len(c.frames))
	}
}

// reserving records what the source reserves before it produces.
type reserving struct {
	collect
	reserved []int64
}

func (r *reserving) Reserve(ctx context.Context, n int64) error {
	r.reserved = append(r.reserved, n)
	return nil
}

// The hostile queries of the issue: refused before anything is allocated,
// with a message naming the setting, whatever the arithmetic.
func TestHostileQueriesAreRefusedCheaply(t *testing.T) {
	defaults := source.Limits{MaxSeries: 10_000, MaxPoints: 10_000_000, MaxBytes: 10_000_000 * source.PointBytes}
	six := func(js string) source.Query {
		q := query(js)
		q.From, q.Interval, q.Limits = t0.Add(-6*time.Hour), time.Minute, defaults
		return q
	}
	for js, want := range map[string]string{
		`{"scenario":"logs","seriesCount":50000}`:                "seriesCount 50000 is more than 10000 log streams (label sets), this data source's limit per query (setting maxSeries)",
		`{"scenario":"logs","seriesCount":9000}`:                 "(setting maxPoints; 10000000 points × 16 bytes, one of these log lines weighing about 15 points)",
		`{"scenario":"logs","seriesCount":9223372036854775807}`:  "setting maxSeries",
		`{"scenario":"table","seriesCount":9223372036854775807}`: "9223372036854775807 rows are more than 10000000 points, this data source's limit per query (setting maxPoints",
		`{"scenario":"table","seriesCount":5000000}`:             "more than 160000000 bytes, this data source's limit per query (setting maxPoints; 10000000 points × 16 bytes",
		`{"seriesCount":9223372036854775807}`:                    "setting maxSeries",
	} {
		var r reserving
		err := New().Query(context.Background(), six(js), &r)
		if source.KindOf(err) != source.KindLimit || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a limit error saying %q", js, err, want)
		}
		if len(r.frames) != 0 || len(r.reserved) != 0 {
			t.Errorf("%s: produced or reserved before refusing", js)
		}
	}
	// Without a series limit, the product saturates instead of wrapping.
	q := six(`{"scenario":"logs","seriesCount":9223372036854775807}`)
	q.Limits.MaxSeries = 0
	if err := New().Query(context.Background(), q, &reserving{}); !strings.Contains(fmt.Sprint(err), "9223372036854775807 log lines") {
		t.Errorf("saturated logs: %v", err)
	}
	long := strings.Repeat("s", 10<<20)
	for js, want := range map[string]string{
		`{"scenario":"` + long + `"}`:                         `scenario "sssss`,
		`{"scenario":"` + "\xff\xfe" + long + `"}`:            "not one of",
		`{"seriesCount":"` + long + `"}`:                      "seriesCount",
		`{"seriesCount":1` + strings.Repeat("0", 1<<20) + `}`: "seriesCount",
	} {
		err := New().Query(context.Background(), six(js), &reserving{})
		if source.KindOf(err) != source.KindQuery || !strings.Contains(err.Error(), want) || len(err.Error()) > 300 {
			t.Errorf("%.30q: %d-byte error %.300v, want a short query error saying %q", js, len(fmt.Sprint(err)), err, want)
		}
	}
}

func TestReservesBeforeProducing(t *testing.T) {
	for js, want := range map[string]int64{
		`{"seriesCount":10}`:                      10 * (241*16 + frameMemOverhead),
		`{"scenario":"logs","seriesCount":3}`:     600*logLineMemBytes + frameMemOverhead,
		`{"scenario":"table","seriesCount":1000}`: 1000*tableRowMemBytes + frameMemOverhead,
	} {
		var r reserving
		if err := New().Query(context.Background(), query(js), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.reserved) != 1 || r.reserved[0] != want {
			t.Errorf("%s: reserved %v, want [%d]", js, r.reserved, want)
		}
	}
}
