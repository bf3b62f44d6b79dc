package flightsql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// tableBuilder makes one frame of the whole result, columns as returned
// (after normalisation). Grafana's table panel shows one frame at a time (a
// frame picker when a query returns several), so a table is one frame
// however many batches it took. When the sink takes a frame in parts
// (source.PartSink, see stream), each batch is handed over as the next part
// as it arrives (small batches joined first, see bigPart), and nothing else
// is kept; otherwise every batch's columns are
// kept as they arrive (no copy) and joined column by column at the end
// (bulk copies).
type tableBuilder struct {
	frameInfo
	mem    memory.Allocator
	schema *arrow.Schema
	parts  [][]arrow.Array // of each column, one per batch, when joining
	rows   int64
	w      source.FrameWriter // the frame in parts, when the sink takes it
	// The batches in parts waiting to be joined into a part (see bigPart):
	// their rows, bytes and count, and whether the first was whole (see
	// batchFunc).
	pendingRows, pendingBytes int64
	pending                   int
	pendingWhole              bool
}

func newTableBuilder(mem memory.Allocator, fi frameInfo, s *arrow.Schema) *tableBuilder {
	return &tableBuilder{frameInfo: fi, mem: mem, schema: s, parts: make([][]arrow.Array, s.NumFields())}
}

// stream opens the table on sink as a frame in parts, when sink takes
// them; otherwise the batches are joined at the end. It is called before
// the first batch.
func (b *tableBuilder) stream(sink source.Sink) error {
	var meta *data.FrameMeta
	if b.sql != "" {
		meta = b.meta("", data.FrameTypeVersion{}, nil) // the size of what Close will write
	}
	empty, err := b.joined(meta) // no batch kept yet: empty columns
	if err != nil {
		return err
	}
	defer empty.Release()
	w, err := source.OpenParts(sink, empty.Schema())
	if err != nil {
		return err
	}
	b.w = w
	return nil
}

func (b *tableBuilder) add(rec arrow.RecordBatch) error { return b.addBatch(rec, false) }

// addBatch is add, told whether rec is whole (see batchFunc): a part that
// is one whole batch, or several joined (into memory of their own), is
// lent to a sink that borrows (source.PartLender), any other handed over
// to be copied.
func (b *tableBuilder) addBatch(rec arrow.RecordBatch, whole bool) error {
	b.rows += rec.NumRows()
	if b.limits.MaxPoints > 0 && b.rows > b.limits.MaxPoints {
		return source.Limit{Max: b.limits.MaxPoints, Unit: "rows", Setting: "maxPoints"}.Exceeded("flightsql: the query returns", "add a LIMIT or a filter")
	}
	if b.w != nil && rec.NumRows() == 0 {
		return nil // a part of no row adds nothing but its overhead
	}
	for c := range b.parts {
		a := rec.Column(c)
		a.Retain()
		b.parts[c] = append(b.parts[c], a)
	}
	if b.w != nil {
		if b.pending == 0 {
			b.pendingWhole = whole
		}
		b.pending++
		b.pendingRows += rec.NumRows()
		b.pendingBytes += recordBytes(rec)
		if bigPart(b.pendingRows, b.pendingBytes) {
			return b.flushPart()
		}
	}
	return nil
}

// A part handed to the sink has at least minPartRows rows or minPartBytes
// bytes (but for the last): smaller batches (a server's post-filter
// remnants, 1024-row batches) are joined first, since every batch costs the
// frame its message and footer block, its own compression decision on
// buffers too small to compress well, and Grafana's decoder a batch more.
// Batches of DataFusion's default size (8192 rows) pass as they are.
const (
	minPartRows  = 8192
	minPartBytes = 256 << 10
)

func bigPart(rows, bytes int64) bool { return rows >= minPartRows || bytes >= minPartBytes }

// flushPart joins the pending batches into one part and hands it over.
func (b *tableBuilder) flushPart() error {
	part, err := b.joined(nil)
	if err != nil {
		return err
	}
	lend := b.pending > 1 || b.pendingWhole
	b.pendingRows, b.pendingBytes, b.pending = 0, 0, 0
	if l, ok := b.w.(source.PartLender); ok && lend {
		return l.LendPart(part)
	}
	return b.w.Part(part)
}

// joined joins the kept batches column by column into one frame record
// with meta. Columns not joined when it fails stay kept, for release.
func (b *tableBuilder) joined(meta *data.FrameMeta) (arrow.RecordBatch, error) {
	fields := make([]outField, 0, len(b.parts))
	defer func() {
		for _, f := range fields {
			f.arr.Release()
		}
	}()
	for c, parts := range b.parts {
		arr, err := joinArrays(b.mem, b.schema.Field(c).Type, parts)
		b.parts[c] = nil
		if err != nil {
			return nil, fmt.Errorf("flightsql: column %q: %w", b.schema.Field(c).Name, err)
		}
		f := b.schema.Field(c)
		config, _ := f.Metadata.GetValue(mdConfig)
		fields = append(fields, outField{name: f.Name, arr: arr, config: config})
	}
	owned := fields
	fields = nil // newFrameRecord takes them over
	return newFrameRecord("", b.refID, meta, owned)
}

func (b *tableBuilder) finish(sink source.Sink, notices []data.Notice) error {
	var meta *data.FrameMeta
	if b.sql != "" || len(notices) > 0 {
		meta = b.meta("", data.FrameTypeVersion{}, notices)
	}
	if b.w != nil {
		if b.pendingRows > 0 {
			if err := b.flushPart(); err != nil {
				return err
			}
		}
		md, err := frame.SchemaMetadata("", b.refID, meta)
		if err != nil {
			return fmt.Errorf("flightsql: %w", err)
		}
		w := b.w
		b.w = nil // closed below, or aborted by the sink's caller on error
		if err := w.Close(md); err != nil {
			w.Abort()
			return err
		}
		return nil
	}
	rec, err := b.joined(meta)
	if err != nil {
		return err
	}
	return sink.Record(rec)
}

// joinArrays returns the concatenation of parts and releases them.
func joinArrays(mem memory.Allocator, dt arrow.DataType, parts []arrow.Array) (arrow.Array, error) {
	defer releaseArrays(parts)
	switch len(parts) {
	case 0:
		bld := array.NewBuilder(mem, dt)
		defer bld.Release()
		return bld.NewArray(), nil
	case 1:
		parts[0].Retain()
		return parts[0], nil
	}
	return array.Concatenate(parts, mem)
}

func (b *tableBuilder) release() {
	for _, p := range b.parts {
		releaseArrays(p)
	}
	if b.w != nil {
		b.w.Abort()
		b.w = nil
	}
}

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
	schema   *arrow.Schema
	timeIdx  int
	bodyIdx  int
	severity int // -1: none
	id       int // -1: none
	others   []int

	times      *array.TimestampBuilder
	bodies     *array.StringBuilder
	severities *array.StringBuilder
	ids        *array.StringBuilder
	labels     *array.BinaryBuilder
	rows       int64
	nulls      int64
	clock      timeReader
	buf        []byte
}

// pickColumn returns the first column (not taken, accepted by ok) named one
// of names, in the order of names; -1 when there is none.
func pickColumn(s *arrow.Schema, names []string, taken func(int) bool, ok func(arrow.Field) bool) int {
	for _, name := range names {
		for i, f := range s.Fields() {
			if !taken(i) && ok(f) && strings.EqualFold(f.Name, name) {
				return i
			}
		}
	}
	return -1
}

func newLogsBuilder(mem memory.Allocator, fi frameInfo, s *arrow.Schema) (*logsBuilder, error) {
	ti, _, ok := timeColumn(s)
	if !ok {
		return nil, source.BadQuery("flightsql: format logs needs a timestamp column; the result has %s", describeColumns(s))
	}
	b := &logsBuilder{frameInfo: fi, schema: s, timeIdx: ti, clock: newTimeReader(s.Field(ti))}
	isText := func(f arrow.Field) bool { return f.Type.ID() == arrow.STRING }
	anyType := func(arrow.Field) bool { return true }
	b.severity = pickColumn(s, severityNames, func(i int) bool { return i == ti }, anyType)
	b.id = pickColumn(s, idNames, func(i int) bool { return i == ti || i == b.severity }, anyType)
	taken := func(i int) bool { return i == ti || i == b.severity || i == b.id }
	b.bodyIdx = pickColumn(s, bodyNames, taken, isText)
	if b.bodyIdx < 0 {
		for i, f := range s.Fields() {
			if !taken(i) && isText(f) {
				b.bodyIdx = i
				break
			}
		}
	}
	if b.bodyIdx < 0 {
		return nil, source.BadQuery("flightsql: format logs needs a text column for the log line (named one of %s, or the first text column); the result has %s", strings.Join(bodyNames, ", "), describeColumns(s))
	}
	for i := range s.Fields() {
		if !taken(i) && i != b.bodyIdx {
			b.others = append(b.others, i)
		}
	}
	b.times = array.NewTimestampBuilder(mem, timestampNS)
	b.bodies = array.NewStringBuilder(mem)
	b.labels = array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	if b.severity >= 0 {
		b.severities = array.NewStringBuilder(mem)
	}
	if b.id >= 0 {
		b.ids = array.NewStringBuilder(mem)
	}
	return b, nil
}

func (b *logsBuilder) add(rec arrow.RecordBatch) error {
	tcol, times := b.clock.read(rec.Column(b.timeIdx))
	body := rec.Column(b.bodyIdx).(*array.String)
	for i := range int(rec.NumRows()) {
		if tcol.IsNull(i) {
			b.nulls++
			continue
		}
		b.rows++
		if b.limits.MaxPoints > 0 && b.rows > b.limits.MaxPoints {
			return source.Limit{Max: b.limits.MaxPoints, Unit: "log lines", Setting: "maxPoints"}.Exceeded("flightsql: the query returns", "add a LIMIT or a filter")
		}
		b.times.Append(times[i])
		if body.IsNull(i) {
			b.bodies.AppendNull()
		} else {
			b.bodies.Append(body.Value(i))
		}
		if b.severities != nil {
			b.appendText(b.severities, rec.Column(b.severity), i)
		}
		if b.ids != nil {
			b.appendText(b.ids, rec.Column(b.id), i)
		}
		buf := append(b.buf[:0], '{')
		first := true
		for _, c := range b.others {
			a := rec.Column(c)
			if a.IsNull(i) {
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = appendJSONString(buf, b.schema.Field(c).Name)
			buf = append(buf, ':')
			start := len(buf)
			buf = columns[a.DataType().ID()].text(buf, a, i)
			text := string(buf[start:])
			buf = appendJSONString(buf[:start], text)
		}
		b.buf = append(buf, '}')
		b.labels.Append(b.buf)
	}
	return nil
}

// appendText appends a[i] as text (a string column's own value) or a null.
func (b *logsBuilder) appendText(sb *array.StringBuilder, a arrow.Array, i int) {
	switch {
	case a.IsNull(i):
		sb.AppendNull()
	case a.DataType().ID() == arrow.STRING:
		sb.Append(a.(*array.String).Value(i))
	default:
		b.buf = columns[a.DataType().ID()].text(b.buf[:0], a, i)
		sb.BinaryBuilder.Append(b.buf)
	}
}

func (b *logsBuilder) finish(sink source.Sink, notices []data.Notice) error {
	notices = b.clock.notices(notices, b.nulls)
	meta := b.meta(data.FrameTypeLogLines, data.FrameTypeVersion{0, 0}, notices)
	meta.PreferredVisualization = data.VisTypeLogs
	fields := []outField{
		{name: logsTimestamp, arr: b.times.NewArray()},
		{name: logsBody, arr: b.bodies.NewArray()},
	}
	if b.severities != nil {
		fields = append(fields, outField{name: logsSeverity, arr: b.severities.NewArray()})
	}
	if b.ids != nil {
		fields = append(fields, outField{name: logsID, arr: b.ids.NewArray()})
	}
	fields = append(fields, outField{name: logsLabels, arr: b.labels.NewArray()})
	rec, err := newFrameRecord("", b.refID, meta, fields)
	if err != nil {
		return err
	}
	return sink.Record(rec)
}

func (b *logsBuilder) release() {
	b.times.Release()
	b.bodies.Release()
	b.labels.Release()
	if b.severities != nil {
		b.severities.Release()
	}
	if b.ids != nil {
		b.ids.Release()
	}
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
			i++
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return append(dst, '"')
}
