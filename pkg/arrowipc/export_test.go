package arrowipc

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// AppendRecords appends one Arrow IPC file holding schema and recs (in
// order, any number of batches) to dst, for the tests: the plugin writes
// one batch per file (Prepare, AppendFile), but a reader must find every
// batch of a file through its footer, and the golden files hold two. It
// writes what AppendFile writes for one record. The records may be slices
// of larger ones; their columns must have the types of schema's fields. On
// error dst is returned unextended.
func (e *Encoder) AppendRecords(dst []byte, schema *arrow.Schema, recs ...arrow.RecordBatch) ([]byte, error) {
	if err := e.batch.setSchema(e.rec.fieldsOf(schema)); err != nil {
		return dst, e.settle(err)
	}
	// The schema's metadata goes past the fields', in the same scratch.
	n := len(e.rec.kvs)
	kvs := AppendMetadata(e.rec.kvs, schema.Metadata())
	e.rec.kvs = kvs[:n]
	meta := kvs[n:]
	e.buildHeader(e.batch.fields, e.batch.infos, meta)
	// Joined batch by batch: a batch's compressed buffers are the
	// encoder's, reused by the next prepare.
	j := &e.join
	j.begin()
	e.hdr.addTo(j)
	out := j.join(dst)
	var arr [8]block
	blocks := arr[:0]
	for _, rec := range recs {
		cols, err := e.rec.columnsOf(rec, &e.batch)
		if err == nil {
			_, err = e.prepare(int(rec.NumRows()), cols)
		}
		clear(cols)
		if err != nil {
			return dst, e.settle(err)
		}
		blk, _ := e.addBatch(j, int64(len(out)-len(dst)), false)
		out = j.join(out)
		blocks = append(blocks, blk)
	}
	addFooter(j, e.buildFooter(blocks))
	out = j.join(out)
	e.batch.drop()
	return out, nil
}

// AppendRecordsAsFile writes what AppendRecords writes, through a File:
// each record prepared (with schema's fields) and appended as the next
// batch, then the file finished with schema's metadata (in a buffer of its own when dst
// is nil).
func (e *Encoder) AppendRecordsAsFile(dst []byte, schema *arrow.Schema, recs ...arrow.RecordBatch) ([]byte, error) {
	var f File
	for _, rec := range recs {
		err := e.batch.setSchema(e.rec.fieldsOf(schema))
		var cols []Column
		if err == nil {
			cols, err = e.rec.columnsOf(rec, &e.batch)
		}
		if err == nil {
			_, err = e.prepare(int(rec.NumRows()), cols)
		}
		clear(cols)
		if err = e.settle(err); err == nil {
			err = e.AppendBatch(&f)
		}
		if err != nil {
			return dst, err
		}
	}
	return e.FinishFile(dst, &f, AppendMetadata(nil, schema.Metadata()))
}

// FinishFile is FinishFilePieces joined: the file appended to dst (with
// dst nil, in a buffer of exactly the file's size), for the tests that
// compare whole files.
func (e *Encoder) FinishFile(dst []byte, f *File, meta []KeyValue) ([]byte, error) {
	pieces, err := e.FinishFilePieces(f, meta)
	if err != nil {
		return dst, err
	}
	j := &e.join
	j.begin()
	for _, b := range pieces {
		j.ref(b)
	}
	return j.join(dst), nil
}
