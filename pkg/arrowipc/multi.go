package arrowipc

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// This file is the third way to use a prepared batch: as the next record
// batch of a File, an Arrow IPC file of several batches written as they
// come, whose schema metadata is given only when it is finished.

// ErrFinished is returned by AppendBatch and FinishFile for a File that is
// finished already.
var ErrFinished = errors.New("arrowipc: the file is finished")

// DefaultMetaHint is the room a File leaves for its schema's custom
// metadata when File.MetaHint is 0.
const DefaultMetaHint = 4 << 10

// File is an Arrow IPC file of several record batches on its way, written
// batch by batch with AppendBatch and finished with FinishFile, which puts
// the schema with its custom metadata in front of the batches and the
// footer after them. It is the caller's, not an Encoder's: successive
// batches may be written by different Encoders (pooled encoders on
// different goroutines), one at a time.
//
// The first batch fixes the fields: a later batch whose fields differ from
// them in number, name, type or metadata is an error wrapping ErrBatch. A
// field is nullable in the file when it is nullable in any batch (a batch
// declares a field nullable when it holds nulls, as a joined table would),
// so a file decodes as the table of all its batches joined. Each batch
// declares its own compression, as Arrow allows per RecordBatch message.
//
// The batches are kept in one buffer that grows by doubling, with room in
// front of the first for the file's header (magic and schema message):
// FinishFile writes the header there and the footer after the batches when
// they fit, so the finished file is that buffer and the batches are never
// copied once more; when the metadata is too large for the room left, the
// file is copied once into a buffer of its exact size.
//
// The zero File is empty and ready for use. It is not safe for concurrent
// use.
type File struct {
	// MetaHint is how many bytes of schema custom metadata the caller
	// expects to pass to FinishFile (0: DefaultMetaHint); the file leaves
	// room for that much in front of its batches and after them. It is read
	// when the first batch is written.
	MetaHint int

	fields []Field
	infos  []typeInfo
	buf    []byte // [0:head) room for the header, then the batches
	head   int
	tail   int     // bytes to keep free past the batches for the footer
	blocks []block // offsets from buf[head]
	rows   int64
	done   bool
}

// Batches returns how many batches the file holds.
func (f *File) Batches() int { return len(f.blocks) }

// Rows returns the rows of the file's batches.
func (f *File) Rows() int64 { return f.rows }

// Size returns the bytes of memory the file holds (its buffer's capacity).
func (f *File) Size() int64 { return int64(cap(f.buf)) }

// Reset forgets the file and its memory: the File is empty again, as the
// zero File, but for MetaHint.
func (f *File) Reset() { *f = File{MetaHint: f.MetaHint} }

// AppendBatch writes the prepared batch (see Prepare and PrepareRecord) as
// the next record batch of f, and the batch is then no longer prepared,
// whatever the outcome. Without a prepared batch it returns the error of
// the failed Prepare, or ErrState; for a batch whose fields differ from
// f's, an error wrapping ErrBatch (f is unchanged).
func (e *Encoder) AppendBatch(f *File) error {
	if !e.batch.ready {
		if e.err != nil {
			return e.err
		}
		return ErrState
	}
	defer e.batch.drop()
	if f.done {
		return ErrFinished
	}
	p := &e.batch
	if len(f.blocks) == 0 {
		f.setFields(p.fields, p.infos)
		e.buildHeader(f.fields, f.infos, nil)
		n := len(e.hdr.msg)
		hint := f.MetaHint
		if hint <= 0 {
			hint = DefaultMetaHint
		}
		// The header: magic, continuation, length, schema message; each
		// metadata entry adds its table and two string headers.
		f.head = pad8(len(format.Magic) + 2 + 8 + n + hint + 64)
		f.tail = n + hint + 64 + footerTail
	} else if err := f.match(p.fields); err != nil {
		return err
	}
	fb := finishMessage(e.rb, format.HeaderRecordBatch, e.writeRecordBatch(), p.length)
	// Room for this batch, the footer's schema and every batch's block, so
	// that FinishFile finishes in place.
	f.grow(pad8(8+len(fb)) + int(p.length) + f.tail + blockBytes*(len(f.blocks)+1))
	blk := block{offset: int64(len(f.buf) - f.head), bodyLength: p.length}
	f.buf, blk.metaLength = appendFramed(f.buf, fb)
	f.buf = e.appendBody(f.buf)
	f.blocks = append(f.blocks, blk)
	f.rows += p.rows
	for i := range p.fields {
		f.fields[i].Nullable = f.fields[i].Nullable || p.fields[i].Nullable
	}
	return nil
}

// blockBytes is what one batch adds to the footer: its Block struct.
const blockBytes = 24

// grow makes room for n more bytes in f.buf, doubling its capacity (at
// least), and reserves the header's room on the first call.
func (f *File) grow(n int) {
	if f.buf == nil {
		f.buf = make([]byte, f.head, f.head+n)
		return
	}
	if cap(f.buf)-len(f.buf) >= n {
		return
	}
	grown := make([]byte, len(f.buf), max(2*cap(f.buf), len(f.buf)+n))
	copy(grown, f.buf)
	f.buf = grown
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

// FinishFile finishes f: the magic, the schema of f's fields with custom
// metadata meta (in this order), f's batches and the footer. With dst nil
// it returns f's own memory as the file, the header written in the room
// left in front of the batches (or, when meta does not fit there, a copy of
// exactly the file's size); otherwise it appends the file to dst and
// returns the extended slice. Either way f is finished and holds no memory
// any more. A File without a batch returns ErrState, a finished one
// ErrFinished; dst is then returned unextended and f unchanged.
func (e *Encoder) FinishFile(dst []byte, f *File, meta []KeyValue) ([]byte, error) {
	switch {
	case f.done:
		return dst, ErrFinished
	case len(f.blocks) == 0:
		return dst, fmt.Errorf("%w: the file has no batch", ErrState)
	}
	e.buildHeader(f.fields, f.infos, meta)
	h := e.hdr.size()
	for i := range f.blocks {
		f.blocks[i].offset += int64(h)
	}
	fb := e.buildFooter(f.blocks)
	batches := f.buf[f.head:]
	var out []byte
	switch {
	case dst == nil && h <= f.head && cap(f.buf)-len(f.buf) >= len(fb)+footerTail:
		// The header goes right in front of the batches, in the room
		// left for it.
		start := f.head - h
		e.hdr.appendTo(f.buf[start:start:f.head])
		out = appendFooterBytes(f.buf, fb)[start:]
	default:
		if dst == nil {
			dst = make([]byte, 0, h+len(batches)+len(fb)+footerTail)
		}
		out = e.hdr.appendTo(dst)
		out = append(out, batches...)
		out = appendFooterBytes(out, fb)
	}
	*f = File{MetaHint: f.MetaHint, done: true}
	return out, nil
}
