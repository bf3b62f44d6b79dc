package demo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// Scenarios.
const (
	RandomWalk = "random_walk"
	Logs       = "logs"
	Table      = "table"
)

// Bounds of the query model.
const (
	DefaultSeriesCount = 10
	DefaultSeed        = 1
	// MaxPointsPerSeries caps the points of one series whatever
	// maxDataPoints asks for.
	MaxPointsPerSeries = 100_000
	// DefaultMaxDataPoints is used when the request carries none.
	DefaultMaxDataPoints = 1000
	// logLinesPerSource is how many lines each source of the logs scenario
	// writes over the time range, at most.
	logLinesPerSource = 200
)

// Query is the demo query model.
type Query struct {
	Scenario    string `json:"scenario"`
	SeriesCount *int   `json:"seriesCount"`
	Seed        *int64 `json:"seed"`
}

// Source generates frames. The zero value is ready to use.
type Source struct{}

var _ source.Source = Source{}

// New returns the demo source.
func New() Source { return Source{} }

// What a row of each scenario weighs: in the frame body (Arrow, what
// Limits.MaxBytes bounds) and in memory while the frame waits to be encoded
// (what the memory budget holds). A log line is about 170 bytes of text plus
// severity, labels and timestamp: 234 body bytes on average, ~15 points.
const (
	pointBodyBytes    = source.PointBytes
	logLineBodyBytes  = 240
	logLineMemBytes   = 360
	tableRowBodyBytes = 64
	tableRowMemBytes  = 160
	// frameMemOverhead is a frame's fixed weight: labels, meta, schema.
	frameMemOverhead = 2 << 10
)

// Query answers one query; see the package documentation, which says too
// how it keeps within the limits and the memory budget.
func (Source) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	m, err := parse(q)
	if err != nil {
		return err
	}
	if list, ok := listings[m.Scenario]; ok {
		f, err := list(q, *m.SeriesCount, uint64(*m.Seed))
		if err != nil {
			return err
		}
		f.RefID = q.RefID
		f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
		if err := source.Reserve(ctx, sink, source.Add(source.Mul(int64(f.Rows()), tableRowMemBytes), frameMemOverhead)); err != nil {
			return err
		}
		return sink.Frame(ctx, f)
	}
	series := int64(*m.SeriesCount)
	if q.Limits.MaxSeries > 0 && series > int64(q.Limits.MaxSeries) && m.Scenario != Table {
		what := "series"
		if m.Scenario == Logs {
			what = "log streams (label sets)"
		}
		return q.Limits.Series(what).Exceeded(fmt.Sprintf("demo query: seriesCount %d is", series), "lower seriesCount")
	}
	times, err := timeline(q)
	if err != nil {
		return err
	}
	seed := uint64(*m.Seed)
	n := int64(len(times))
	switch m.Scenario {
	case RandomWalk:
		points := source.Mul(series, n)
		if err := checkLimits(q.Limits, points, "points", source.Mul(points, pointBodyBytes),
			fmt.Sprintf("%d series × %d points = %d points", series, n, points)); err != nil {
			return err
		}
		// What stays held is the encoded frames (about the body bytes);
		// each frame's larger in-memory form lives only until it is encoded.
		if err := source.Reserve(ctx, sink, source.Add(source.Mul(points, pointBodyBytes), source.Mul(series, frameMemOverhead))); err != nil {
			return err
		}
		return randomWalk(ctx, q.RefID, int(series), seed, times, sink)
	case Logs:
		lines := source.Mul(min(n, logLinesPerSource), series)
		if err := checkLimits(q.Limits, lines, "log lines", source.Mul(lines, logLineBodyBytes),
			fmt.Sprintf("%d log lines", lines)); err != nil {
			return err
		}
		if err := source.Reserve(ctx, sink, source.Add(source.Mul(lines, logLineMemBytes), frameMemOverhead)); err != nil {
			return err
		}
		return sink.Frame(ctx, logs(q.RefID, int(series), seed, q.From, q.To, int(lines)))
	default: // Table
		if err := checkLimits(q.Limits, series, "rows", source.Mul(series, tableRowBodyBytes),
			fmt.Sprintf("%d rows", series)); err != nil {
			return err
		}
		if err := source.Reserve(ctx, sink, source.Add(source.Mul(series, tableRowMemBytes), frameMemOverhead)); err != nil {
			return err
		}
		return sink.Frame(ctx, table(q.RefID, int(series), seed, q.To))
	}
}

// checkLimits checks rows against MaxPoints and body bytes against
// MaxBytes, which the plugin derives from maxPoints.
func checkLimits(l source.Limits, rows int64, unit string, body int64, what string) error {
	const remedy = "narrow the time range, lower seriesCount"
	if l.MaxPoints > 0 && rows > l.MaxPoints {
		lim := l.Points("points")
		lim.Note = "a row of any scenario counts as a point"
		return lim.Exceeded("demo query: "+what+" are", remedy)
	}
	if l.MaxBytes > 0 && body > l.MaxBytes {
		lim := source.Limit{Max: l.MaxBytes, Unit: "bytes", Setting: "maxPoints",
			Note: fmt.Sprintf("%d points × %d bytes, one of these %s weighing about %d points", l.MaxPoints, source.PointBytes, unit, max(body/max(rows, 1)/source.PointBytes, 1))}
		return lim.Exceeded(fmt.Sprintf("demo query: %s (about %d bytes) weigh", what, body), remedy)
	}
	return nil
}

func parse(q source.Query) (Query, error) {
	var m Query
	if len(bytes.TrimSpace(q.JSON)) > 0 {
		if err := json.Unmarshal(q.JSON, &m); err != nil {
			return m, source.BadQuery("demo query: %s", jsonError(err))
		}
	}
	if m.Scenario == "" {
		m.Scenario = RandomWalk
	}
	switch m.Scenario {
	case RandomWalk, Logs, Table, Labels, Events:
	default:
		return m, source.BadQuery("demo query: scenario %s is not one of %q, %q, %q, %q, %q", source.Quote(m.Scenario), RandomWalk, Logs, Table, Labels, Events)
	}
	if m.SeriesCount == nil {
		m.SeriesCount = new(DefaultSeriesCount)
	}
	if *m.SeriesCount < 1 {
		return m, source.BadQuery("demo query: seriesCount %d must be at least 1", *m.SeriesCount)
	}
	if m.Seed == nil {
		m.Seed = new(int64(DefaultSeed))
	}
	return m, nil
}

// jsonError describes a JSON error without echoing more than a bounded
// prefix of the query: a type error quotes the offending value.
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: %s is not a %s", te.Field, source.Quote(te.Value), te.Type)
	}
	if msg := err.Error(); len(msg) <= 2*source.QuoteMax {
		return msg
	}
	return source.Quote(err.Error())
}

// timeline returns the timestamps of the query: from From to To in steps of
// the query's interval, widened so that there are at most maxDataPoints of
// them, aligned to the step so that the same instant gets the same value
// whatever the range.
func timeline(q source.Query) ([]time.Time, error) {
	if !q.To.After(q.From) {
		return nil, source.BadQuery("demo query: the time range is empty (from %s to %s)", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	maxPoints := q.MaxDataPoints
	if maxPoints <= 0 {
		maxPoints = DefaultMaxDataPoints
	}
	maxPoints = min(maxPoints, MaxPointsPerSeries)
	step := max(q.Interval, time.Duration(int64(q.To.Sub(q.From))/maxPoints))
	// Whole milliseconds, rounded up: a shorter step would spend maxPoints
	// before it reached To.
	if r := step % time.Millisecond; r > 0 && step < math.MaxInt64-time.Millisecond {
		step += time.Millisecond - r
	}
	step = max(step, time.Millisecond)
	start := q.From.Truncate(step)
	if start.Before(q.From) {
		start = start.Add(step)
	}
	n := int(q.To.Sub(start)/step) + 1
	if n > int(maxPoints) { // drop the oldest: a dashboard looks at the newest
		start = start.Add(time.Duration(n-int(maxPoints)) * step)
		n = int(maxPoints)
	}
	times := make([]time.Time, n)
	for i := range times {
		times[i] = start.Add(time.Duration(i) * step).UTC()
	}
	return times, nil
}

var (
	regions = []string{"eu-west", "eu-central", "us-east", "us-west", "ap-south", "ap-northeast"}
	jobs    = []string{"node", "api", "db", "cache", "ingest"}
)

func seriesLabels(i int) data.Labels {
	return data.Labels{
		"host":   "host-" + strconv.Itoa(i+1),
		"region": regions[i%len(regions)],
		"job":    jobs[(i/len(regions))%len(jobs)],
	}
}

// walk writes the random walk of series i at the given timestamps into
// values, from a generator seeded by (seed, series): the same query over the
// same time range returns the same values. A slow wave over the walk keeps
// series looking alive on any range; it is advanced by rotation, one sine
// per series rather than one per point.
func walk(values []float64, seed uint64, i int, times []time.Time) {
	if len(times) == 0 {
		return
	}
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	v := 50 + 30*r.Float64()
	drift := (r.Float64() - 0.5) * 0.02
	phase := float64(times[0].UnixMilli())/600_000 + float64(i)
	sin, cos := math.Sincos(phase)
	step := 0.0
	if len(times) > 1 {
		step = float64(times[1].Sub(times[0]).Milliseconds()) / 600_000
	}
	ds, dc := math.Sincos(step)
	for k := range values {
		v += drift + r.NormFloat64()*0.8
		values[k] = v + 5*sin
		sin, cos = sin*dc+cos*ds, cos*dc-sin*ds
	}
}

func randomWalk(ctx context.Context, refID string, series int, seed uint64, times []time.Time, sink source.Sink) error {
	// One meta for every frame of the query: a frame handed over is not
	// changed, so they may share it (and the encoder encodes it once).
	meta := &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
	for i := range series {
		if err := ctx.Err(); err != nil {
			return err
		}
		tf := data.NewFieldFromFieldType(data.FieldTypeTime, len(times))
		tf.Name = "time"
		copy(frame.Values[time.Time](tf), times)
		vf := data.NewFieldFromFieldType(data.FieldTypeFloat64, len(times))
		vf.Name, vf.Labels = "value", seriesLabels(i)
		walk(frame.Values[float64](vf), seed, i, times)
		f := data.NewFrame("", tf, vf)
		f.RefID = refID
		f.Meta = meta
		if err := sink.Frame(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

var (
	levels   = []string{"info", "info", "info", "info", "debug", "warn", "error"}
	methods  = []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	paths    = []string{"/api/v1/query", "/api/v1/query_range", "/api/dashboards/uid/quiver", "/api/datasources/proxy/7", "/login", "/metrics", "/api/search?query=cpu"}
	messages = map[string][]string{
		"info":  {"request served", "query executed", "cache refreshed", "session renewed"},
		"debug": {"plan chosen", "connection reused", "batch flushed"},
		"warn":  {"slow query", "retrying upstream", "cache miss storm"},
		"error": {"upstream timeout", "query failed: deadline exceeded", "connection reset by peer"},
	}
	statuses = map[string]int{"warn": 429, "error": 503} // 200 for the other levels
)

// logs returns one logs frame of n lines from series sources, newest first.
func logs(refID string, sources int, seed uint64, from, to time.Time, n int) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x10c5))
	ts := make([]time.Time, n)
	body := make([]string, n)
	sev := make([]string, n)
	lbls := make([]json.RawMessage, n)
	span := to.Sub(from)
	for k := range n {
		ts[k] = to.Add(-time.Duration(int64(span) / int64(n) * int64(k))).UTC()
		src := r.IntN(sources)
		lvl := levels[r.IntN(len(levels))]
		msgs := messages[lvl]
		body[k] = fmt.Sprintf(`ts=%s level=%s msg=%q method=%s path=%s status=%d duration_ms=%d trace_id=%016x host=host-%d`,
			ts[k].Format(time.RFC3339Nano), lvl, msgs[r.IntN(len(msgs))], methods[r.IntN(len(methods))],
			paths[r.IntN(len(paths))], cmp.Or(statuses[lvl], 200), 1+r.IntN(900), r.Uint64(), src+1)
		sev[k] = lvl
		l := seriesLabels(src)
		lbls[k] = json.RawMessage(fmt.Sprintf(`{"host":%q,"job":%q,"region":%q}`, l["host"], l["job"], l["region"]))
	}
	f := data.NewFrame("logs",
		data.NewField("timestamp", nil, ts),
		data.NewField("body", nil, body),
		data.NewField("severity", nil, sev),
		data.NewField("labels", nil, lbls),
	)
	f.RefID = refID
	f.Meta = &data.FrameMeta{
		Type:                   data.FrameTypeLogLines,
		TypeVersion:            data.FrameTypeVersion{0, 0},
		PreferredVisualization: data.VisTypeLogs,
	}
	return f
}

// table returns one frame with a row per host.
func table(refID string, rows int, seed uint64, at time.Time) *data.Frame {
	r := rand.New(rand.NewPCG(seed, 0x7ab1e))
	host, region, job := make([]string, rows), make([]string, rows), make([]string, rows)
	cpu := make([]float64, rows)
	mem := make([]int64, rows)
	up := make([]bool, rows)
	since := make([]time.Time, rows)
	for i := range rows {
		l := seriesLabels(i)
		host[i], region[i], job[i] = l["host"], l["region"], l["job"]
		cpu[i] = math.Round(r.Float64()*10000) / 100
		mem[i] = int64(256+r.IntN(32768)) << 20
		up[i] = r.IntN(20) != 0
		since[i] = at.Add(-time.Duration(r.Int64N(int64(30 * 24 * time.Hour)))).Truncate(time.Second).UTC()
	}
	f := data.NewFrame("hosts",
		data.NewField("host", nil, host),
		data.NewField("region", nil, region),
		data.NewField("job", nil, job),
		data.NewField("cpu %", nil, cpu).SetConfig(&data.FieldConfig{Unit: "percent"}),
		data.NewField("memory", nil, mem).SetConfig(&data.FieldConfig{Unit: "bytes"}),
		data.NewField("up", nil, up),
		data.NewField("since", nil, since),
	)
	f.RefID = refID
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}
