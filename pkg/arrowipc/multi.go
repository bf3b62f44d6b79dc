package arrowipc

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// This file is the third way to use a prepared batch: as the next record
// batch of a File, an Arrow IPC file of several batches written as they
// come, whose schema metadata is given only when it is finished.

// ErrFinished is returned by AppendBatch and FinishFilePieces for a File
// that is finished already.
var ErrFinished = errors.New("arrowipc: the file is finished")

// File is an Arrow IPC file of several record batches on its way, written
// batch by batch with AppendBatch and finished with FinishFilePieces,
// which puts the schema with its custom metadata in front of the batches
// and the footer after them. It is the caller's, not an Encoder's:
// successive batches may be written by different Encoders (pooled encoders
// on different goroutines), one at a time.
//
// The first batch fixes the fields: a later batch whose fields differ from
// them in number, name, type or metadata is an error wrapping ErrBatch. A
// field is nullable in the file when it is nullable in any batch (a batch
// declares a field nullable when it holds nulls, as a joined table would),
// so a file decodes as the table of all its batches joined. Each batch
// declares its own compression, as Arrow allows per RecordBatch message.
//
// Each batch is kept framed, in a buffer of exactly its size, whose memory
// is never regrown, cleared or left unused; or, appended borrowing
// (AppendBatchBorrowing), in pieces: its larger buffers are the caller's
// own memory, referenced, and what lies between them in buffers of their
// own.
// FinishFilePieces hands them over as they are, with the header and the
// footer, for a caller that writes the pieces out in turn.
//
// The zero File is empty and ready for use. It is not safe for concurrent
// use.
type File struct {
	fields []Field
	infos  []typeInfo
	pieces [][]byte // the batches, each framed (RecordBatch message, body)
	size   int64    // their bytes
	blocks []block  // offsets from the first batch
	done   bool
}

// Batches returns how many batches the file holds.
func (f *File) Batches() int { return len(f.blocks) }

// Size returns the bytes of the file's batches: memory of its own, and the
// caller's buffers it borrowed (see AppendBatchBorrowing).
func (f *File) Size() int64 { return f.size }

// AppendBatch writes the prepared batch (see Prepare and PrepareRecord) as
// the next record batch of f, and the batch is then no longer prepared,
// whatever the outcome. Without a prepared batch it returns the error of
// the failed Prepare, or ErrState; for a batch whose fields differ from
// f's, an error wrapping ErrBatch (f is unchanged).
func (e *Encoder) AppendBatch(f *File) error {
	_, err := e.appendBatch(f, false)
	return err
}

// AppendBatchBorrowing is AppendBatch referencing, rather than copying, the
// batch's buffers of MinBorrow bytes and more when it stores none
// compressed: a record's arrays, or the columns given to Prepare, not what
// the encoder normalised into its scratch. It reports whether it referenced
// any. When it did, the caller must leave that memory as it is, and not let
// it be reused (as a pooling allocator's Free would), until the file is
// finished and its bytes or pieces written out; and it holds all the memory
// those buffers lie in (a received message's whole body, say), not only
// their bytes, which Size does not count.
func (e *Encoder) AppendBatchBorrowing(f *File) (borrowed bool, err error) {
	return e.appendBatch(f, true)
}

func (e *Encoder) appendBatch(f *File, borrow bool) (borrowed bool, err error) {
	if !e.batch.ready {
		return false, cmp.Or(e.err, ErrState)
	}
	defer e.batch.drop()
	if f.done {
		return false, ErrFinished
	}
	p := &e.batch
	if len(f.blocks) == 0 {
		f.setFields(p.fields, p.infos)
	} else if err := f.match(p.fields); err != nil {
		return false, err
	}
	j := &e.join
	j.begin()
	blk, borrowed := e.addBatch(j, f.size, borrow)
	f.size += int64(j.size())
	if borrowed {
		f.pieces = j.split(f.pieces)
	} else {
		f.pieces = append(f.pieces, j.join(nil))
	}
	f.blocks = append(f.blocks, blk)
	for i := range p.fields {
		f.fields[i].Nullable = f.fields[i].Nullable || p.fields[i].Nullable
	}
	return borrowed, nil
}

// setFields keeps a copy of fields, their names and metadata included
// (the caller's memory is reused from one batch to the next).
func (f *File) setFields(fields []Field, infos []typeInfo) {
	f.fields = make([]Field, len(fields))
	for i, fd := range fields {
		md := make([]KeyValue, len(fd.Metadata))
		for j, kv := range fd.Metadata {
			md[j] = KeyValue{Key: strings.Clone(kv.Key), Value: strings.Clone(kv.Value)}
		}
		f.fields[i] = Field{Name: strings.Clone(fd.Name), Type: fd.Type, Nullable: fd.Nullable, Metadata: md}
	}
	f.infos = slices.Clone(infos)
}

// match checks that fields are f's but for their nullability.
func (f *File) match(fields []Field) error {
	if len(fields) != len(f.fields) {
		return fmt.Errorf("%w: the batch has %d fields, the file's first batch %d", ErrBatch, len(fields), len(f.fields))
	}
	for i := range fields {
		got, want := &fields[i], &f.fields[i]
		switch {
		case got.Name != want.Name:
			return fmt.Errorf("%w: field %d is %q, in the file's first batch %q", ErrBatch, i, got.Name, want.Name)
		case !sameType(got.Type, want.Type):
			return fmt.Errorf("%w: field %q is of type %s, in the file's first batch %s", ErrBatch, got.Name, got.Type, want.Type)
		case !slices.Equal(got.Metadata, want.Metadata):
			return fmt.Errorf("%w: field %q has other metadata than in the file's first batch", ErrBatch, got.Name)
		}
	}
	return nil
}

// FinishFilePieces finishes f: the magic, the schema of f's fields with
// custom metadata meta (in this order), f's batches and the footer, as the
// returned pieces in order: its header (magic and schema message) and its
// footer each in a buffer of its own, its batches f's (which f no longer
// holds), borrowed memory included. The pieces are the caller's, and f is
// finished. A File without a batch returns ErrState, a finished one
// ErrFinished, f then unchanged.
func (e *Encoder) FinishFilePieces(f *File, meta []KeyValue) ([][]byte, error) {
	switch {
	case f.done:
		return nil, ErrFinished
	case len(f.blocks) == 0:
		return nil, fmt.Errorf("%w: the file has no batch", ErrState)
	}
	e.buildHeader(f.fields, f.infos, meta)
	for i := range f.blocks {
		f.blocks[i].offset += int64(e.hdr.size()) // the batches follow the header
	}
	j := &e.join
	j.begin()
	e.hdr.addTo(j)
	head := j.join(nil)
	addFooter(j, e.buildFooter(f.blocks))
	tail := j.join(nil)
	pieces := make([][]byte, 0, len(f.pieces)+2) // exactly: slices.Concat rounds up
	pieces = append(append(append(pieces, head), f.pieces...), tail)
	*f = File{done: true}
	return pieces, nil
}
