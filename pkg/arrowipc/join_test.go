package arrowipc

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/codec"
)

// An assembly abandoned halfway (a panic between adding pieces and joining
// them, which the caller recovers before reusing the encoder) leaves
// nothing in the encoder's next file, batch or pieces: each writes what a
// fresh encoder writes.
func TestJoinerForgetsAnAbandonedAssembly(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{1, 2, 3, 4, 5}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	meta := []KeyValue{{Key: "name", Value: "cpu"}}
	// write writes rec as a file, as a File of two batches joined, and as
	// one in pieces, abandoning an assembly before each when abandon is set.
	write := func(abandon bool) [][]byte {
		e, err := NewEncoder(Options{Codec: codec.MustNew(codec.None, 0)})
		if err != nil {
			t.Fatal(err)
		}
		left := func() {
			if abandon {
				e.join.ref([]byte("STALE"))
				e.join.scratch = append(e.join.scratch, "stale"...)
			}
		}
		prepare := func() {
			if _, err := e.PrepareRecord(rec); err != nil {
				t.Fatal(err)
			}
			left()
		}
		prepare()
		file, err := e.AppendFile(nil, meta)
		if err != nil {
			t.Fatal(err)
		}
		var f, g File
		for _, dst := range []*File{&f, &f, &g, &g} {
			prepare()
			if err := e.AppendBatch(dst); err != nil {
				t.Fatal(err)
			}
		}
		left()
		joined, err := e.FinishFile(nil, &f, meta)
		if err != nil {
			t.Fatal(err)
		}
		left()
		pieces, err := e.FinishFilePieces(&g, meta)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{file, joined, bytes.Join(pieces, nil)}
	}
	want, got := write(false), write(true)
	for i, what := range []string{"AppendFile", "FinishFile", "FinishFilePieces"} {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s after an abandoned assembly: %d bytes unlike a fresh encoder's %d", what, len(got[i]), len(want[i]))
		}
	}
}
