package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
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
	// their rows and bytes, and whether the part may be lent: it joins
	// several batches, or is one whole batch (see batchFunc).
	pendingRows, pendingBytes int64
	pendingLend               bool
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

// addBatch adds the rows of rec, told whether rec is whole (see
// batchFunc); rec is not kept unless retained. When the table is in parts,
// a part that is ready is handed over, waiting with ctx: a part that is one
// whole batch, or several joined (into memory of their own), is lent to a
// sink that borrows (source.PartLender), any other handed over to be
// copied.
func (b *tableBuilder) addBatch(ctx context.Context, rec arrow.RecordBatch, whole bool) error {
	b.rows += rec.NumRows()
	if b.limits.MaxPoints > 0 && b.rows > b.limits.MaxPoints {
		return b.limits.Points("rows").Exceeded("flightsql: the query returns", "add a LIMIT or a filter")
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
		b.pendingLend = whole || b.pendingRows > 0 // a batch in parts has rows
		b.pendingRows += rec.NumRows()
		b.pendingBytes += recordBytes(rec)
		if bigPart(b.pendingRows, b.pendingBytes) {
			return b.flushPart(ctx)
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
func (b *tableBuilder) flushPart(ctx context.Context) error {
	part, err := b.joined(nil)
	if err != nil {
		return err
	}
	lend := b.pendingLend
	b.pendingRows, b.pendingBytes = 0, 0
	if l, ok := b.w.(source.PartLender); ok && lend {
		return l.LendPart(ctx, part)
	}
	return b.w.Part(ctx, part)
}

// joined joins the kept batches column by column into one frame record
// with meta. Columns not joined when it fails stay kept, for release.
func (b *tableBuilder) joined(meta *data.FrameMeta) (arrow.RecordBatch, error) {
	fields := make([]frame.Column, 0, len(b.parts))
	for c, parts := range b.parts {
		f := b.schema.Field(c)
		arr, err := joinArrays(b.mem, f.Type, parts)
		b.parts[c] = nil
		if err != nil {
			frame.ReleaseColumns(fields)
			return nil, fmt.Errorf("flightsql: column %s: %w", source.Quote(f.Name), err)
		}
		config, _ := f.Metadata.GetValue(frame.KeyConfig)
		fields = append(fields, frame.Column{Name: f.Name, Array: arr, Config: config})
	}
	return newFrameRecord("", b.refID, meta, fields) // it takes the columns over
}

func (b *tableBuilder) Finish(ctx context.Context, sink source.Sink, notices []data.Notice) error {
	var meta *data.FrameMeta
	if b.sql != "" || len(notices) > 0 {
		meta = b.meta("", data.FrameTypeVersion{}, notices)
	}
	if b.w != nil {
		if b.pendingRows > 0 {
			if err := b.flushPart(ctx); err != nil {
				return err
			}
		}
		md, err := frame.SchemaMetadata("", b.refID, meta)
		if err != nil {
			return fmt.Errorf("flightsql: %w", err)
		}
		w := b.w
		b.w = nil // closed below, or aborted by the sink's caller on error
		if err := w.Close(ctx, md); err != nil {
			w.Abort()
			return err
		}
		return nil
	}
	rec, err := b.joined(meta)
	if err != nil {
		return err
	}
	return sink.Record(ctx, rec)
}

// joinArrays returns the concatenation of parts and releases them.
func joinArrays(mem memory.Allocator, dt arrow.DataType, parts []arrow.Array) (arrow.Array, error) {
	defer series.ReleaseArrays(parts)
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

func (b *tableBuilder) Release() {
	for _, p := range b.parts {
		series.ReleaseArrays(p)
	}
	if b.w != nil {
		b.w.Abort()
		b.w = nil
	}
}
