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
	out := e.appendHeader(dst, meta)
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
		var blk block
		out, blk = e.appendBatch(out, len(dst))
		blocks = append(blocks, blk)
	}
	out = e.appendFooter(out, meta, blocks)
	e.batch.drop()
	return out, nil
}
