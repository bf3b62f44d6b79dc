package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// This file is the sink's PartSink: a frame handed over in parts (a table
// read batch by batch) is encoded part by part on the shared encode workers
// as the parts arrive, into one Arrow IPC file of several record batches,
// and emitted whole at its index once the source closes it.

var (
	_ source.PartSink   = (*sink)(nil)
	_ source.PartLender = (*partWriter)(nil)
)

// errWriterDone is returned by a FrameWriter used after Close or Abort.
var errWriterDone = errors.New("pipeline: internal error: a frame was handed a part after it was closed")

// Parts opens a frame in parts: it counts as one frame against maxSeries
// now, and its parts' rows against maxPoints as they come; it takes its
// place among the query's frames when it is closed (see admit). The JSON
// data-frame format declines (the source then hands the frame over whole).
func (k *sink) Parts(schema *arrow.Schema) (source.FrameWriter, error) {
	if k.q.JSON {
		return nil, nil
	}
	if _, err := k.admit(1, 0, false); err != nil {
		return nil, err
	}
	w := &partWriter{k: k, parts: frame.NewParts(schema), held: Held{a: k.acct}}
	k.mu.Lock()
	k.writers = append(k.writers, w)
	k.mu.Unlock()
	return w, nil
}

// partWriter is one frame in parts. The source's goroutine calls its
// methods; each part is encoded by a worker, one part at a time: a part is
// handed to a worker only once the previous one is encoded, so the parts
// stay in order and at most two wait (one encoding, one in Part).
//
// Budget: a part holds its record's bytes from Part until it is encoded
// (the record is released then); the encoded parts hold their bytes
// (held: a lent part's larger buffers are its record's own memory, the
// rest copies), which become the finished frame's (its parts are its
// pieces), released by emit's caller as any encoded frame's.
type partWriter struct {
	k               *sink
	parts           *frame.Parts
	closed, aborted bool           // by Close, by Abort
	md              arrow.Metadata // from Close

	// Set by the worker encoding a part, read once done is closed.
	done chan struct{} // closed when the last part handed over is encoded
	err  error         // why a part failed
	held Held          // budget the encoded parts hold
	took time.Duration // encoding the parts
	// lent are the lent parts whose memory the encoded parts reference:
	// held until the frame is written out (Frame.Lent), as a lent record
	// is; spare is what their buffers hold beyond their bytes (in held).
	lent  []arrow.RecordBatch
	spare int64
}

// wait waits for the part in flight, if any, and returns why a part failed.
func (w *partWriter) wait() error {
	if w.done != nil {
		<-w.done
	}
	return w.err
}

func (w *partWriter) Part(ctx context.Context, rec arrow.RecordBatch) error {
	return w.part(ctx, rec, false)
}

// LendPart is Part referencing rec's larger buffers in the frame instead of
// copying them (source.PartLender).
func (w *partWriter) LendPart(ctx context.Context, rec arrow.RecordBatch) error {
	return w.part(ctx, rec, true)
}

func (w *partWriter) part(ctx context.Context, rec arrow.RecordBatch, lent bool) error {
	k := w.k
	if w.closed || w.aborted {
		rec.Release()
		return errWriterDone
	}
	if _, err := k.admit(0, rec.NumRows(), false); err != nil {
		rec.Release()
		return err
	}
	held, err := k.hold(ctx, RecordBytes(rec))
	if err != nil {
		rec.Release()
		k.fail(err)
		return err
	}
	if err := w.wait(); err != nil {
		rec.Release()
		held.Release()
		return err
	}
	done := make(chan struct{})
	err = k.dispatch(ctx, func() {
		defer close(done)
		if err := w.encodePart(rec, held, lent); err != nil {
			w.err = err
			k.fail(err)
		}
	}, func() {
		rec.Release()
		held.Release()
	})
	if err == nil {
		w.done = done
	}
	return err
}

// encodePart encodes rec as the next part and releases the budget it held,
// and rec unless the part references its memory (a lent part: rec is then
// released with the frame); the encoded part's bytes are taken from the
// budget without waiting.
// A failure (a panic included) fails the query.
func (w *partWriter) encodePart(rec arrow.RecordBatch, held Held, lent bool) (err error) {
	k := w.k
	kept := false
	defer func() {
		if !kept {
			rec.Release()
		}
		held.Release()
	}()
	defer Recover(&err, k.log, "panic encoding a frame", k.q.Query.RefID, " while encoding a frame")
	e := k.q.Encoders.Get(k.q.Decoder)
	start := time.Now()
	if lent {
		_, kept, err = e.AppendLentPart(w.parts, rec)
	} else {
		_, err = e.AppendPart(w.parts, rec)
	}
	w.took += time.Since(start)
	k.q.Encoders.Put(e)
	if err != nil {
		return fmt.Errorf("encoding a part of a frame: %w", err)
	}
	if kept {
		w.lent = append(w.lent, rec)
		w.spare += spareOf(rec)
	}
	w.held.Fit(max(w.parts.Size()+w.spare, w.held.Bytes()))
	return nil
}

func (w *partWriter) Close(ctx context.Context, md arrow.Metadata) error {
	k := w.k
	if w.closed || w.aborted {
		return errWriterDone
	}
	if err := w.wait(); err != nil {
		return err
	}
	w.closed, w.md = true, md
	k.mu.Lock()
	idx := k.index() // its place among the query's frames (see admit)
	k.mu.Unlock()
	// The frame is finished and emitted as a whole frame is (sink.queue),
	// with the budget its parts held.
	j := job{parts: w, held: w.held.Move()}
	if idx > 0 || k.q.Streamed { // the first waits for no room (sink.finish)
		if err := k.room(ctx); err != nil {
			j.release()
			return err
		}
	}
	return k.queue(ctx, idx, j)
}

func (w *partWriter) Abort() {
	if w.closed || w.aborted {
		return
	}
	w.aborted = true
	_ = w.wait() // the part in flight is encoded: nothing touches the parts now
	w.drop()
}

// drop releases the encoded parts, the lent parts they reference and their
// budget.
func (w *partWriter) drop() {
	w.parts.Reset()
	NewLent(w.lent...).Release()
	w.lent, w.spare = nil, 0
	w.held.Release()
}

// abortOpen aborts the frames the source left open (after a failure, or a
// source that forgot to close one) and says how many frames in parts were
// not closed, these and the aborted ones: frames the response would lack.
// The source has returned and no worker runs for the query.
func (k *sink) abortOpen() int {
	k.mu.Lock()
	writers := k.writers
	k.writers = nil
	k.mu.Unlock()
	unclosed := 0
	for _, w := range writers {
		if !w.closed {
			unclosed++
			w.Abort()
		}
	}
	return unclosed
}
