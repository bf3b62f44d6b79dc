package frame

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
)

// Parts is a frame written in parts as its rows arrive: one Arrow IPC file
// whose record batches are the parts, in order (see arrowipc.File), which
// Grafana's decoder reads as one frame of all their rows. Each part is
// encoded (AppendPart) as soon as it is handed over, by any Encoder, and the
// frame is finished (FinishPartsPieces) with its schema metadata, known only
// at the end (notices found while converting, the query's stats).
//
// A Parts is not safe for concurrent use: its parts are encoded one at a
// time, in order.
type Parts struct {
	schema *arrow.Schema // the frame's fields, for a frame of no part
	file   arrowipc.File
	rows   int64   // summed over the parts
	sum    Summary // what encoding the parts did, Encode the time spent in AppendPart
}

// NewParts returns an empty frame of schema's fields (its metadata is not
// used: FinishPartsPieces takes the frame's).
func NewParts(schema *arrow.Schema) *Parts {
	return &Parts{schema: schema}
}

// Len returns how many parts the frame holds.
func (p *Parts) Len() int { return p.file.Batches() }

// Size returns the bytes of memory the encoded parts hold.
func (p *Parts) Size() int64 { return p.file.Size() }

// Reset drops the frame's parts and their memory.
func (p *Parts) Reset() { *p = Parts{schema: p.schema} }

// AppendPart encodes rec as the next part of p and returns what compression
// did to its body (its PerBuffer valid until e's next call). rec's schema
// metadata is ignored; its fields' names, types and metadata must be those
// of the frame's first part (an error wrapping arrowipc.ErrBatch otherwise,
// p unchanged), and a field is nullable in the frame when it is in any
// part. rec is not referenced once AppendPart returns.
func (e *Encoder) AppendPart(p *Parts, rec arrow.RecordBatch) (arrowipc.BodyStats, error) {
	st, _, err := e.appendPart(p, rec, false)
	return st, err
}

// AppendLentPart is AppendPart referencing rec's larger buffers rather than
// copying them (arrowipc.AppendBatchBorrowing), and reports whether it
// referenced any: rec is then under the lending contract of
// source.PartLender.
func (e *Encoder) AppendLentPart(p *Parts, rec arrow.RecordBatch) (arrowipc.BodyStats, bool, error) {
	return e.appendPart(p, rec, true)
}

func (e *Encoder) appendPart(p *Parts, rec arrow.RecordBatch, lent bool) (arrowipc.BodyStats, bool, error) {
	start := time.Now()
	st, err := e.ipc.PrepareRecord(rec)
	borrowed := false
	if err == nil {
		if lent {
			borrowed, err = e.ipc.AppendBatchBorrowing(&p.file)
		} else {
			err = e.ipc.AppendBatch(&p.file)
		}
	}
	if err != nil {
		return arrowipc.BodyStats{}, false, fmt.Errorf("frame: part %d: %w", p.Len(), err)
	}
	p.rows += st.Rows
	p.sum.Add(st, time.Since(start))
	return st, borrowed, nil
}

// FinishPartsPieces finishes the frame p: its schema carries md, the
// frame's schema metadata as SchemaMetadata builds it (name, refId, meta);
// the parts' own schema metadata is not used. A frame of no part is written
// as one empty batch of its fields. With stats set, it is the frame that
// carries the query's encoding stats, as Append writes them: *stats (the
// query's other frames) plus this frame, whose body is its parts' and whose
// encode time their encoding and the finishing.
//
// The frame is the returned pieces in order (see arrowipc.FinishFilePieces),
// its parts among them, for a caller that writes them out one after the
// other. It returns too the frame's body stats, summed over its parts
// (PerBuffer nil; Codec the one most parts declare). p is then empty; on
// error p is left as it was, for the caller to Reset.
func (e *Encoder) FinishPartsPieces(p *Parts, md arrow.Metadata, stats *Summary) ([][]byte, arrowipc.BodyStats, error) {
	start := time.Now().Add(-p.sum.Encode)
	if p.Len() == 0 {
		if err := e.appendEmptyPart(p); err != nil {
			return nil, arrowipc.BodyStats{}, err
		}
	}
	s := &p.sum
	st := arrowipc.BodyStats{Rows: p.rows, RawBytes: s.RawBytes, WireBytes: s.WireBytes,
		Buffers: s.Compressed + s.Raw + s.Skipped, Compressed: s.Compressed, Skipped: s.Skipped}
	for k, n := range s.ByCodec {
		if n > s.ByCodec[st.Codec] {
			st.Codec = codec.Kind(k)
		}
	}
	kvs, err := e.schemaMetaOfRecord(md, st, stats, start)
	if err != nil {
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %w", err)
	}
	pieces, err := e.ipc.FinishFilePieces(&p.file, kvs)
	if err != nil {
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %w", err)
	}
	p.Reset()
	return pieces, st, nil
}

// appendEmptyPart appends a part of no row of p's fields.
func (e *Encoder) appendEmptyPart(p *Parts) error {
	if p.schema == nil {
		return fmt.Errorf("frame: a frame of no part and no schema")
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, p.schema)
	defer b.Release()
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := e.AppendPart(p, rec)
	return err
}
