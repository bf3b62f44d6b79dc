package flightsql

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// frameBuilder turns the normalised batches of one query into frames.
type frameBuilder interface {
	// add routes the rows of one batch; rec is not kept.
	add(rec arrow.RecordBatch) error
	// finish hands the frames to sink, the notices on the first one.
	finish(sink source.Sink, notices []data.Notice) error
	// release frees what finish did not hand over.
	release()
}

// timeColumn finds the time column of a normalised schema: the column named
// "time" if it is a timestamp, else the first timestamp column, else an
// integer column named "time" read as Unix epoch (see epochNS). ok is false
// when there is none.
func timeColumn(s *arrow.Schema) (idx int, epoch, ok bool) {
	named := -1
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, "time") {
			named = i
			break
		}
	}
	if named >= 0 && s.Field(named).Type.ID() == arrow.TIMESTAMP {
		return named, false, true
	}
	for i, f := range s.Fields() {
		if f.Type.ID() == arrow.TIMESTAMP {
			return i, false, true
		}
	}
	if named >= 0 {
		switch s.Field(named).Type.ID() {
		case arrow.INT64, arrow.INT32:
			return named, true, true
		}
	}
	return 0, false, false
}

// epochNS reads an integer Unix time by its magnitude, as Grafana's SQL data
// sources do: up to 1e11 seconds, up to 1e14 milliseconds, up to 1e17
// microseconds, nanoseconds beyond.
func epochNS(v int64) int64 {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a < 1e11:
		return v * 1e9
	case a < 1e14:
		return v * 1e6
	case a < 1e17:
		return v * 1e3
	}
	return v
}

// timeReader returns a function reading column a of the time column as
// nanoseconds.
func timeReader(a arrow.Array) func(i int) int64 {
	switch a := a.(type) {
	case *array.Timestamp:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		return func(i int) int64 { return epochNS(a.Value(i)) }
	case *array.Int32:
		return func(i int) int64 { return epochNS(int64(a.Value(i))) }
	}
	panic(fmt.Sprintf("flightsql: internal: time column of type %s", a.DataType()))
}

// seriesBuilder splits rows into one frame per (label set × value column)
// while the batches stream: every row goes straight to the builders of its
// series, so the result exists once, already split.
type seriesBuilder struct {
	mem    memory.Allocator
	refID  string
	limits source.Limits

	schema   *arrow.Schema
	timeIdx  int
	epoch    bool
	valueIdx []int
	labelIdx []int

	series map[string]*series
	order  []*series // first-seen order, the order of the frames
	points int64
	nulls  int64 // rows dropped for a null time

	key, prevKey, text []byte
	prev               *series
}

type series struct {
	labels data.Labels
	times  []arrow.Timestamp
	sorted bool
	values []array.Builder // one per value column
}

func newSeriesBuilder(mem memory.Allocator, refID string, limits source.Limits, s *arrow.Schema) (*seriesBuilder, error) {
	ti, epoch, ok := timeColumn(s)
	if !ok {
		return nil, source.BadQuery("flightsql: format time_series needs a timestamp column, or an integer Unix-time column named time; the result has %s. Choose format table, or select a time column", describeColumns(s))
	}
	b := &seriesBuilder{mem: mem, refID: refID, limits: limits, schema: s, timeIdx: ti, epoch: epoch, series: map[string]*series{}}
	for i, f := range s.Fields() {
		if i == ti {
			continue
		}
		if columns[f.Type.ID()].numeric {
			b.valueIdx = append(b.valueIdx, i)
		} else {
			b.labelIdx = append(b.labelIdx, i)
		}
	}
	if len(b.valueIdx) == 0 {
		return nil, source.BadQuery("flightsql: format time_series needs at least one numeric value column; the result has %s. Choose format table, or select a number", describeColumns(s))
	}
	return b, nil
}

func describeColumns(s *arrow.Schema) string {
	if s.NumFields() == 0 {
		return "no columns"
	}
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
	}
	return "columns " + strings.Join(parts, ", ")
}

func (b *seriesBuilder) add(rec arrow.RecordBatch) error {
	tcol := rec.Column(b.timeIdx)
	timeAt := timeReader(tcol)
	valueCols := make([]arrow.Array, len(b.valueIdx))
	valueKinds := make([]*column, len(b.valueIdx))
	for j, vi := range b.valueIdx {
		valueCols[j] = rec.Column(vi)
		valueKinds[j] = columns[valueCols[j].DataType().ID()]
	}
	for i := range int(rec.NumRows()) {
		if tcol.IsNull(i) {
			b.nulls++
			continue
		}
		s, err := b.seriesOf(rec, i)
		if err != nil {
			return err
		}
		t := arrow.Timestamp(timeAt(i))
		if n := len(s.times); n > 0 && t < s.times[n-1] {
			s.sorted = false
		}
		s.times = append(s.times, t)
		for j, vb := range s.values {
			valueKinds[j].appendAt(vb, valueCols[j], i)
		}
		b.points += int64(len(b.valueIdx))
		if b.limits.MaxPoints > 0 && b.points > b.limits.MaxPoints {
			return source.LimitExceeded("flightsql: the query returns more than %d points (maxPoints setting); narrow the time range or aggregate, or raise maxPoints", b.limits.MaxPoints)
		}
	}
	return nil
}

// seriesOf returns the series of row i, creating it when new.
func (b *seriesBuilder) seriesOf(rec arrow.RecordBatch, i int) (*series, error) {
	key := b.key[:0]
	for _, li := range b.labelIdx {
		a := rec.Column(li)
		if a.IsNull(i) {
			key = append(key, 0)
			continue
		}
		b.text = columns[a.DataType().ID()].text(b.text[:0], a, i)
		key = append(key, 1)
		key = binary.AppendUvarint(key, uint64(len(b.text)))
		key = append(key, b.text...)
	}
	b.key = key
	if b.prev != nil && bytes.Equal(key, b.prevKey) {
		return b.prev, nil
	}
	s, ok := b.series[string(key)]
	if !ok {
		if max := b.limits.MaxSeries; max > 0 && (len(b.order)+1)*len(b.valueIdx) > max {
			return nil, source.LimitExceeded("flightsql: the query returns more than %d series (maxSeries setting); filter or group by fewer labels, or raise maxSeries", max)
		}
		s = &series{sorted: true, values: make([]array.Builder, len(b.valueIdx))}
		if len(b.labelIdx) > 0 {
			s.labels = data.Labels{}
			for _, li := range b.labelIdx {
				a := rec.Column(li)
				if !a.IsNull(i) {
					s.labels[b.schema.Field(li).Name] = string(columns[a.DataType().ID()].text(nil, a, i))
				}
			}
		}
		for j, vi := range b.valueIdx {
			s.values[j] = array.NewBuilder(b.mem, b.schema.Field(vi).Type)
		}
		b.series[string(key)] = s
		b.order = append(b.order, s)
	}
	b.prev, b.prevKey = s, append(b.prevKey[:0], key...)
	return s, nil
}

func (b *seriesBuilder) finish(sink source.Sink, notices []data.Notice) error {
	if b.nulls > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("%d rows with a null time were left out.", b.nulls)})
	}
	tname := b.schema.Field(b.timeIdx).Name
	for len(b.order) > 0 {
		s := b.order[0]
		b.order = b.order[1:]
		if err := b.emit(sink, s, tname, &notices); err != nil {
			return err
		}
	}
	return nil
}

// emit sorts one series by time and hands one frame per value column to sink.
func (b *seriesBuilder) emit(sink source.Sink, s *series, tname string, notices *[]data.Notice) error {
	defer releaseBuilders(s.values)
	var perm []int
	if !s.sorted {
		perm = make([]int, len(s.times))
		for i := range perm {
			perm[i] = i
		}
		slices.SortStableFunc(perm, func(x, y int) int {
			switch tx, ty := s.times[x], s.times[y]; {
			case tx < ty:
				return -1
			case tx > ty:
				return 1
			}
			return 0
		})
		times := make([]arrow.Timestamp, len(perm))
		for i, p := range perm {
			times[i] = s.times[p]
		}
		s.times = times
	}
	tb := array.NewTimestampBuilder(b.mem, timestampNS)
	tb.AppendValues(s.times, nil)
	tarr := tb.NewArray()
	tb.Release()
	defer tarr.Release()

	for j, vb := range s.values {
		varr := vb.NewArray()
		if perm != nil {
			varr = gather(b.mem, varr, perm)
		}
		vf := b.schema.Field(b.valueIdx[j])
		meta := &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
		if len(*notices) > 0 {
			meta.Notices, *notices = *notices, nil
		}
		config, _ := vf.Metadata.GetValue(mdConfig)
		tarr.Retain()
		rec, err := newFrameRecord("", b.refID, meta, []outField{
			{name: tname, arr: tarr},
			{name: vf.Name, arr: varr, labels: s.labels, config: config},
		})
		if err != nil {
			return err
		}
		if err := sink.Record(rec); err != nil {
			return err
		}
	}
	return nil
}

func (b *seriesBuilder) release() {
	for _, s := range b.order {
		releaseBuilders(s.values)
	}
	b.order = nil
}

func releaseBuilders(bs []array.Builder) {
	for i, vb := range bs {
		if vb != nil {
			vb.Release()
			bs[i] = nil
		}
	}
}

// gather returns a[perm[0]], a[perm[1]], … and releases a.
func gather(mem memory.Allocator, a arrow.Array, perm []int) arrow.Array {
	defer a.Release()
	c := columns[a.DataType().ID()]
	nb := array.NewBuilder(mem, a.DataType())
	defer nb.Release()
	nb.Reserve(len(perm))
	for _, p := range perm {
		c.appendAt(nb, a, p)
	}
	return nb.NewArray()
}
