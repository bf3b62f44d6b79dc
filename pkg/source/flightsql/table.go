package flightsql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// tableBuilder appends every batch to one builder per column: one frame,
// columns as returned (after normalisation).
type tableBuilder struct {
	refID    string
	limits   source.Limits
	schema   *arrow.Schema
	builders []array.Builder
	rows     int64
}

func newTableBuilder(mem memory.Allocator, refID string, limits source.Limits, s *arrow.Schema) *tableBuilder {
	b := &tableBuilder{refID: refID, limits: limits, schema: s, builders: make([]array.Builder, s.NumFields())}
	for i, f := range s.Fields() {
		b.builders[i] = array.NewBuilder(mem, f.Type)
	}
	return b
}

func (b *tableBuilder) add(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	b.rows += int64(n)
	if b.limits.MaxPoints > 0 && b.rows > b.limits.MaxPoints {
		return source.LimitExceeded("flightsql: the query returns more than %d rows (maxPoints setting); add a LIMIT or a filter, or raise maxPoints", b.limits.MaxPoints)
	}
	for c, bld := range b.builders {
		a := rec.Column(c)
		kind := columns[a.DataType().ID()]
		bld.Reserve(n)
		for i := range n {
			kind.appendAt(bld, a, i)
		}
	}
	return nil
}

func (b *tableBuilder) finish(sink source.Sink, notices []data.Notice) error {
	fields := make([]outField, len(b.builders))
	for i, bld := range b.builders {
		f := b.schema.Field(i)
		config, _ := f.Metadata.GetValue(mdConfig)
		fields[i] = outField{name: f.Name, arr: bld.NewArray(), config: config}
	}
	var meta *data.FrameMeta
	if len(notices) > 0 {
		meta = &data.FrameMeta{Notices: notices}
	}
	rec, err := newFrameRecord("", b.refID, meta, fields)
	if err != nil {
		return err
	}
	return sink.Record(rec)
}

func (b *tableBuilder) release() { releaseBuilders(b.builders) }

// logsBuilder builds one log-lines frame: time, body, and a JSON "labels"
// column holding every other column of the row as text.
type logsBuilder struct {
	refID   string
	limits  source.Limits
	schema  *arrow.Schema
	timeIdx int
	epoch   bool
	bodyIdx int
	others  []int

	times  *array.TimestampBuilder
	bodies *array.StringBuilder
	labels *array.BinaryBuilder
	rows   int64
	nulls  int64
	buf    []byte
}

// bodyNames are the column names taken as the log line, in order of preference.
var bodyNames = []string{"body", "message", "msg", "line", "log"}

func newLogsBuilder(mem memory.Allocator, refID string, limits source.Limits, s *arrow.Schema) (*logsBuilder, error) {
	ti, epoch, ok := timeColumn(s)
	if !ok {
		return nil, source.BadQuery("flightsql: format logs needs a timestamp column; the result has %s", describeColumns(s))
	}
	body := -1
	for _, name := range bodyNames {
		for i, f := range s.Fields() {
			if i != ti && f.Type.ID() == arrow.STRING && strings.EqualFold(f.Name, name) && body < 0 {
				body = i
			}
		}
	}
	for i, f := range s.Fields() {
		if body < 0 && i != ti && f.Type.ID() == arrow.STRING {
			body = i
		}
	}
	if body < 0 {
		return nil, source.BadQuery("flightsql: format logs needs a text column for the log line (named one of %s, or the first text column); the result has %s", strings.Join(bodyNames, ", "), describeColumns(s))
	}
	b := &logsBuilder{refID: refID, limits: limits, schema: s, timeIdx: ti, epoch: epoch, bodyIdx: body,
		times:  array.NewTimestampBuilder(mem, timestampNS),
		bodies: array.NewStringBuilder(mem),
		labels: array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary),
	}
	for i := range s.Fields() {
		if i != ti && i != body {
			b.others = append(b.others, i)
		}
	}
	return b, nil
}

func (b *logsBuilder) add(rec arrow.RecordBatch) error {
	tcol, body := rec.Column(b.timeIdx), rec.Column(b.bodyIdx).(*array.String)
	timeAt := timeReader(tcol)
	for i := range int(rec.NumRows()) {
		if tcol.IsNull(i) {
			b.nulls++
			continue
		}
		b.rows++
		if b.limits.MaxPoints > 0 && b.rows > b.limits.MaxPoints {
			return source.LimitExceeded("flightsql: the query returns more than %d log lines (maxPoints setting); add a LIMIT or a filter, or raise maxPoints", b.limits.MaxPoints)
		}
		b.times.Append(arrow.Timestamp(timeAt(i)))
		if body.IsNull(i) {
			b.bodies.AppendNull()
		} else {
			b.bodies.Append(body.Value(i))
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

func (b *logsBuilder) finish(sink source.Sink, notices []data.Notice) error {
	if b.nulls > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d rows with a null time were left out.", b.nulls)})
	}
	meta := &data.FrameMeta{Type: data.FrameTypeLogLines, TypeVersion: data.FrameTypeVersion{0, 0},
		PreferredVisualization: data.VisTypeLogs, Notices: notices}
	rec, err := newFrameRecord("", b.refID, meta, []outField{
		{name: b.schema.Field(b.timeIdx).Name, arr: b.times.NewArray()},
		{name: b.schema.Field(b.bodyIdx).Name, arr: b.bodies.NewArray()},
		{name: "labels", arr: b.labels.NewArray()},
	})
	if err != nil {
		return err
	}
	return sink.Record(rec)
}

func (b *logsBuilder) release() {
	b.times.Release()
	b.bodies.Release()
	b.labels.Release()
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
