// The logs format: one log-lines frame following Grafana's logs data-plane
// contract.

package flightsql

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// Field names of Grafana's logs data-plane contract (log-lines frames), as
// its logs view finds them (public/app/features/logs/logsFrame.ts): by name
// and type.
const (
	logsTimestamp = "timestamp" // time, required
	logsBody      = "body"      // string, required
	logsSeverity  = "severity"  // string
	logsID        = "id"        // string
	logsLabels    = "labels"    // JSON object (Arrow binary: tstype other)
)

// Column names taken, case-insensitively and in order of preference, as the
// log line, its severity and its id.
var (
	bodyNames     = []string{"body", "message", "msg", "line", "log"}
	severityNames = []string{"severity", "level", "lvl", "loglevel", "log_level", "severity_text", "detected_level"}
	idNames       = []string{"id"}
)

// logsBuilder builds one log-lines frame: timestamp, body, severity (when a
// column has one of severityNames), id (when a column is named id), and a
// JSON labels column holding every other column of the row as text.
type logsBuilder struct {
	frameInfo
	timeIdx int
	texts   []textField // body, then severity and id when a column has them
	others  []int
	// otherNames are the others' names as labels, unique
	// (series.UniqueLabels); renamed is its notice.
	otherNames []string
	renamed    string

	times  *array.TimestampBuilder
	labels *array.BinaryBuilder
	count  int64 // rows with a time
	nulls  int64
	clock  series.TimeReader
	buf    []byte

	// order, when set: the rows come in the parts of an incremental
	// answer (the first time group, kept rows, rows read), each in the
	// server's order. Add keeps them (held, rows), and Finish writes them
	// sorted by time as order says (ascending when the SQL does not sort),
	// keeping each part's order of equal times (no time is in two parts).
	order *sortOrder
	held  []arrow.RecordBatch
	rows  []logRow
	stats []data.QueryStat // on the frame (SetStats)
}

// textField is a text field of the frame and the column it is read from.
type textField struct {
	name string
	col  int
	b    *array.StringBuilder
}

// logRow is a row Add kept: its time, and where it is in held.
type logRow struct {
	t        arrow.Timestamp
	rec, row int32
}

// pickColumn returns the first column (not taken, accepted by ok) named one
// of names, in the order of names ("": any name); -1 when there is none.
func pickColumn(s *arrow.Schema, names []string, taken func(int) bool, ok func(arrow.Field) bool) int {
	for _, name := range names {
		for i, f := range s.Fields() {
			if !taken(i) && ok(f) && (name == "" || strings.EqualFold(f.Name, name)) {
				return i
			}
		}
	}
	return -1
}

// newLogsBuilder makes the builder of a logs frame of a result of schema s;
// order is nil but for an answer made of parts (logsBuilder.order).
func newLogsBuilder(mem memory.Allocator, fi frameInfo, s *arrow.Schema, order *sortOrder) (*logsBuilder, error) {
	ti, ok := series.TimeColumn(s, seriesType)
	if !ok {
		return nil, source.BadQuery("flightsql: format logs needs a timestamp column; the result has %s", source.DescribeColumns(s))
	}
	b := &logsBuilder{frameInfo: fi, timeIdx: ti, clock: series.NewTimeReader(s.Field(ti), seriesType), order: order}
	isText := func(f arrow.Field) bool { return f.Type.ID() == arrow.STRING }
	// A column named as the line may also hold JSON (a normalised binary
	// column: JSON, struct, map, list), written as text; the first text
	// column, taken when none is named so, is text only.
	isLine := func(f arrow.Field) bool { return isText(f) || f.Type.ID() == arrow.BINARY }
	anyType := func(arrow.Field) bool { return true }
	severity := pickColumn(s, severityNames, func(i int) bool { return i == ti }, anyType)
	id := pickColumn(s, idNames, func(i int) bool { return i == ti || i == severity }, anyType)
	taken := func(i int) bool { return i == ti || i == severity || i == id }
	body := pickColumn(s, bodyNames, taken, isLine)
	if body < 0 {
		body = pickColumn(s, []string{""}, taken, isText)
	}
	if body < 0 {
		return nil, source.BadQuery("flightsql: format logs needs a column for the log line (text or JSON named one of %s, or the first text column); the result has %s", strings.Join(bodyNames, ", "), source.DescribeColumns(s))
	}
	for i, f := range s.Fields() {
		if !taken(i) && i != body {
			b.others = append(b.others, i)
			b.otherNames = append(b.otherNames, f.Name)
		}
	}
	b.otherNames, b.renamed = series.UniqueLabels(b.otherNames)
	b.times = array.NewTimestampBuilder(mem, frame.Timestamp)
	b.labels = array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	for _, t := range []textField{{logsBody, body, nil}, {logsSeverity, severity, nil}, {logsID, id, nil}} {
		if t.col >= 0 {
			t.b = array.NewStringBuilder(mem)
			b.texts = append(b.texts, t)
		}
	}
	return b, nil
}

func (b *logsBuilder) Add(rec arrow.RecordBatch) error {
	tcol, times := b.clock.Read(rec.Column(b.timeIdx))
	if b.order != nil {
		rec.Retain()
		b.held = append(b.held, rec)
	}
	for i := range int(rec.NumRows()) {
		if tcol.IsNull(i) {
			b.nulls++
			continue
		}
		b.count++
		if b.limits.MaxPoints > 0 && b.count > b.limits.MaxPoints {
			return b.limits.Points("log lines").Exceeded("flightsql: the query returns", "add a LIMIT or a filter")
		}
		if b.order != nil {
			b.rows = append(b.rows, logRow{t: times[i], rec: int32(len(b.held) - 1), row: int32(i)})
		} else {
			b.addRow(rec, i, times[i])
		}
	}
	return nil
}

// addRow appends row i of rec, whose time is t.
func (b *logsBuilder) addRow(rec arrow.RecordBatch, i int, t arrow.Timestamp) {
	b.times.Append(t)
	for _, f := range b.texts {
		b.appendText(f.b, rec.Column(f.col), i) // text, or JSON as text
	}
	buf := append(b.buf[:0], '{')
	for k, c := range b.others {
		a := rec.Column(c)
		if a.IsNull(i) {
			continue
		}
		if len(buf) > 1 { // after a label
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, b.otherNames[k])
		buf = append(buf, ':')
		buf = jsonStringFrom(typeOf(a.DataType().ID()).grafana.text(buf, a, i), len(buf))
	}
	b.buf = append(buf, '}')
	b.labels.Append(b.buf)
}

// addSorted appends the rows Add kept, in the order of b.order, and
// releases their records.
func (b *logsBuilder) addSorted() {
	sign := 1
	if b.order.desc {
		sign = -1
	}
	byTime := func(x, y logRow) int { return sign * cmp.Compare(x.t, y.t) }
	if !slices.IsSortedFunc(b.rows, byTime) {
		slices.SortStableFunc(b.rows, byTime)
	}
	b.times.Reserve(len(b.rows))
	for _, r := range b.rows {
		b.addRow(b.held[r.rec], int(r.row), r.t)
	}
	b.rows = nil
	for _, r := range b.held {
		r.Release()
	}
	b.held = nil
}

// appendText appends a[i] as text (a string column's own value, a binary
// column's JSON) or a null.
func (b *logsBuilder) appendText(sb *array.StringBuilder, a arrow.Array, i int) {
	switch {
	case a.IsNull(i):
		sb.AppendNull()
	case a.DataType().ID() == arrow.STRING:
		sb.Append(a.(*array.String).Value(i))
	default:
		b.buf = typeOf(a.DataType().ID()).grafana.text(b.buf[:0], a, i)
		sb.BinaryBuilder.Append(b.buf)
	}
}

// SetStats sets the stats of the frame.
func (b *logsBuilder) SetStats(stats []data.QueryStat) { b.stats = stats }

func (b *logsBuilder) Finish(ctx context.Context, sink source.Sink, notices []data.Notice) error {
	notices = b.clock.Notices(notices, b.nulls)
	if b.renamed != "" {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: b.renamed})
	}
	meta := b.meta(data.FrameTypeLogLines, data.FrameTypeVersion{0, 0}, notices)
	meta.PreferredVisualization = data.VisTypeLogs
	meta.Stats = b.stats
	if b.order != nil {
		b.addSorted()
	}
	fields := []frame.Column{{Name: logsTimestamp, Array: b.times.NewArray()}}
	for _, t := range b.texts {
		fields = append(fields, frame.Column{Name: t.name, Array: t.b.NewArray()})
	}
	fields = append(fields, frame.Column{Name: logsLabels, Array: b.labels.NewArray()})
	rec, err := newFrameRecord("", b.refID, meta, fields)
	if err != nil {
		return err
	}
	return sink.Record(ctx, rec)
}

func (b *logsBuilder) Release() {
	for _, r := range b.held {
		r.Release()
	}
	b.held = nil
	b.times.Release()
	b.labels.Release()
	for _, t := range b.texts {
		t.b.Release()
	}
}
