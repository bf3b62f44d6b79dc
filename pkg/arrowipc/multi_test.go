package arrowipc_test

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/codec"
)

var fileCodecs = []codec.Codec{
	codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0),
	codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.Auto, 0),
}

// A File of one batch is byte for byte the file AppendFile writes, in a
// buffer of its own (dst nil) or appended to a caller's buffer, whatever
// the size of its metadata.
func TestFileOfOneBatchIsAppendFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := makeRecord(mem, 3000, 4)
	defer rec.Release()
	sliced := rec.NewSlice(5, 1234)
	defer sliced.Release()
	small := []arrowipc.KeyValue{{Key: "name", Value: "cpu"}, {Key: "refId", Value: "A"}}
	large := []arrowipc.KeyValue{{Key: "meta", Value: strings.Repeat("x", 12<<10)}, {Key: "name", Value: "cpu"}}
	for _, c := range fileCodecs {
		for _, r := range []arrow.RecordBatch{rec, sliced} {
			for _, meta := range [][]arrowipc.KeyValue{nil, small, large} {
				e1, e2 := newEncoder(t, c, 0.1), newEncoder(t, c, 0.1)
				if _, err := e1.PrepareRecord(r); err != nil {
					t.Fatal(err)
				}
				want, err := e1.AppendFile(nil, meta)
				if err != nil {
					t.Fatal(err)
				}
				for _, dst := range [][]byte{nil, []byte("prefix")} {
					var f arrowipc.File
					if _, err := e2.PrepareRecord(r); err != nil {
						t.Fatal(err)
					}
					if err := e2.AppendBatch(&f); err != nil {
						t.Fatal(err)
					}
					got, err := e2.FinishFile(dst, &f, meta)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got[len(dst):], want) || string(got[:len(dst)]) != string(dst) {
						t.Errorf("%s rows=%d meta=%d dst=%q: %d bytes differ from AppendFile's %d", c, r.NumRows(), len(meta), dst, len(got), len(want))
					}
					if f.Size() != 0 || f.Batches() != 0 {
						t.Errorf("a finished file holds %d bytes, %d batches", f.Size(), f.Batches())
					}
				}
			}
		}
	}
}

// Several batches through a File are what the reference writer of the
// tests (AppendRecords, which the golden files pin) writes, whatever the
// codec and the destination; every reader finds every batch.
func TestFileOfSeveralBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var recs []arrow.RecordBatch
	for i, n := range []int{2000, 1, 0, 700, 4096} {
		recs = append(recs, makeRecord(mem, n, uint64(i)))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	md := arrow.NewMetadata([]string{"name", "refId"}, []string{"several", "B"})
	schema := arrow.NewSchema(recs[0].Schema().Fields(), &md)
	for _, c := range fileCodecs {
		want, err := newEncoder(t, c, 0.1).AppendRecords(nil, schema, recs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, dst := range [][]byte{nil, []byte("prefix")} {
			got, err := newEncoder(t, c, 0.1).AppendRecordsAsFile(dst, schema, recs...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[len(dst):], want) {
				t.Errorf("%s dst=%q: %d bytes differ from AppendRecords' %d", c, dst, len(got)-len(dst), len(want))
			}
		}
		batches, err := arrowipctest.Inspect(want)
		if err != nil {
			t.Fatal(err)
		}
		if len(batches) != len(recs) {
			t.Fatalf("%s: Inspect found %d batches, want %d", c, len(batches), len(recs))
		}
		for i, b := range batches {
			if b.Rows != recs[i].NumRows() {
				t.Errorf("%s: batch %d has %d rows, want %d", c, i, b.Rows, recs[i].NumRows())
			}
		}
		readEqual(t, mem, want, recs)
	}
}

// readEqual reads file with arrow-go's FileReader and checks each batch
// against recs, value by value.
func readEqual(t *testing.T, mem memory.Allocator, file []byte, recs []arrow.RecordBatch) {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(file), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRecords() != len(recs) {
		t.Fatalf("FileReader found %d batches, want %d", r.NumRecords(), len(recs))
	}
	for i := range r.NumRecords() {
		got, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		for c := range got.NumCols() {
			if !array.Equal(got.Column(int(c)), recs[i].Column(int(c))) {
				t.Errorf("batch %d column %d differs", i, c)
			}
		}
	}
}

// A field is nullable in the file when it is in any batch; a batch whose
// fields differ otherwise is refused, leaving the file as it was.
func TestFileFields(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	build := func(nullable bool, name string, md arrow.Metadata, vals []float64, valid []bool) arrow.RecordBatch {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		arr := b.NewArray()
		defer arr.Release()
		s := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: nullable, Metadata: md}}, nil)
		return array.NewRecordBatch(s, []arrow.Array{arr}, int64(len(vals)))
	}
	tsNumber := arrow.NewMetadata([]string{"tstype"}, []string{"number"})
	first := build(false, "v", tsNumber, []float64{1, 2}, nil)
	second := build(true, "v", tsNumber, []float64{3, 0, 5}, []bool{true, false, true})
	defer first.Release()
	defer second.Release()
	bad := map[string]arrow.RecordBatch{
		"name":     build(false, "w", tsNumber, []float64{1}, nil),
		"metadata": build(false, "v", arrow.NewMetadata([]string{"tstype"}, []string{"string"}), []float64{1}, nil),
	}
	b := array.NewInt64Builder(mem)
	b.Append(1)
	ints := b.NewArray()
	b.Release()
	bad["type"] = array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Metadata: tsNumber}}, nil), []arrow.Array{ints}, 1)
	ints.Release()
	defer func() {
		for _, r := range bad {
			r.Release()
		}
	}()

	e := newEncoder(t, codec.MustNew(codec.LZ4, 0), 0)
	var f arrowipc.File
	if err := e.AppendBatch(&f); !errors.Is(err, arrowipc.ErrState) {
		t.Errorf("AppendBatch before Prepare: %v, want ErrState", err)
	}
	if _, err := e.FinishFile(nil, &f, nil); !errors.Is(err, arrowipc.ErrState) {
		t.Errorf("FinishFile of no batch: %v, want ErrState", err)
	}
	for _, r := range []arrow.RecordBatch{first, bad["name"], second, bad["metadata"], bad["type"]} {
		if _, err := e.PrepareRecord(r); err != nil {
			t.Fatal(err)
		}
		err := e.AppendBatch(&f)
		isBad := r != first && r != second
		if isBad != errors.Is(err, arrowipc.ErrBatch) {
			t.Errorf("batch of field %s: AppendBatch %v", r.Schema().Field(0), err)
		}
	}
	if f.Batches() != 2 {
		t.Fatalf("file holds %d batches; want 2", f.Batches())
	}
	out, err := e.FinishFile(nil, &f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.FinishFile(nil, &f, nil); !errors.Is(err, arrowipc.ErrFinished) {
		t.Errorf("FinishFile twice: %v, want ErrFinished", err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(out), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if fd := r.Schema().Field(0); !fd.Nullable || fd.Metadata.String() != tsNumber.String() {
		t.Errorf("file's field %s, want nullable with its metadata", fd)
	}
	readEqual(t, mem, out, []arrow.RecordBatch{first, second})
}

// A File's batches are kept in memory of exactly their size and joined
// once: appending them allocates their bytes and a little bookkeeping, not
// a buffer regrown by doubling (about twice their bytes), and finishing
// allocates the header and the footer, not the batches again; every reader
// still reads every batch.
func TestFileAllocatesItsBytesOnce(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := makeRecord(mem, 64, 9)
	defer rec.Release()
	e := newEncoder(t, codec.MustNew(codec.None, 0), 0.1)
	meta := []arrowipc.KeyValue{{Key: "meta", Value: strings.Repeat("m", 3000)}, {Key: "name", Value: "cpu"}}
	warm := func() { // the encoder's builders and scratch grow once
		var f arrowipc.File
		for range 2 {
			if _, err := e.PrepareRecord(rec); err != nil {
				t.Fatal(err)
			}
			if err := e.AppendBatch(&f); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.FinishFilePieces(&f, meta); err != nil {
			t.Fatal(err)
		}
	}
	warm()
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	for _, n := range []int{1, 2, 3, 17, 64, 340} {
		var f arrowipc.File
		appended := allocated(func() {
			for range n {
				if _, err := e.PrepareRecord(rec); err != nil {
					t.Fatal(err)
				}
				if err := e.AppendBatch(&f); err != nil {
					t.Fatal(err)
				}
			}
		})
		size := uint64(f.Size())
		// Go rounds each allocation up to its size class (up to 1/8
		// more); bookkeeping: the batches' slice headers and blocks,
		// grown by append, and the fields kept from the first batch.
		if book := uint64(4<<10 + 128*n); appended < size || appended > size+size/8+book {
			t.Errorf("%d batches of %d bytes: appending allocated %d bytes (want %d to %d)", n, size, appended, size, size+size/8+book)
		}
		var pieces [][]byte
		var err error
		finished := allocated(func() { pieces, err = e.FinishFilePieces(&f, meta) })
		if err != nil {
			t.Fatal(err)
		}
		out := bytes.Join(pieces, nil)
		if uint64(len(out)) < size {
			t.Errorf("%d batches: a file of %d bytes, batches of %d", n, len(out), size)
		}
		// The header and the footer, each exactly its size, the footer's
		// builder grown by doubling to hold more blocks than warm's (at
		// most twice the footer again) and the pieces' list: no batch's
		// bytes again.
		if head, tail := len(pieces[0]), len(pieces[len(pieces)-1]); cap(pieces[0]) != head || cap(pieces[len(pieces)-1]) != tail ||
			finished > uint64(head+3*tail)*9/8+uint64(4<<10+32*n) {
			t.Errorf("%d batches: finishing a file of %d bytes (header %d, footer %d) allocated %d", n, len(out), head, tail, finished)
		}
		batches, err := arrowipctest.Inspect(out)
		if err != nil || len(batches) != n {
			t.Errorf("%d batches: read %d (%v)", n, len(batches), err)
		}
	}
}

// A File finished in pieces is, joined, the file FinishFile writes: its
// header and footer in buffers of their own, its batches the File's.
func TestFilePiecesAreTheFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := makeRecord(mem, 700, 5)
	defer rec.Release()
	meta := []arrowipc.KeyValue{{Key: "name", Value: "cpu"}}
	for _, c := range fileCodecs {
		for _, n := range []int{1, 2, 9} {
			e := newEncoder(t, c, 0.1)
			var f, g arrowipc.File
			for range n {
				for _, file := range []*arrowipc.File{&f, &g} {
					if _, err := e.PrepareRecord(rec); err != nil {
						t.Fatal(err)
					}
					if err := e.AppendBatch(file); err != nil {
						t.Fatal(err)
					}
				}
			}
			want, err := e.FinishFile(nil, &f, meta)
			if err != nil {
				t.Fatal(err)
			}
			pieces, err := e.FinishFilePieces(&g, meta)
			if err != nil {
				t.Fatal(err)
			}
			if len(pieces) != n+2 || !bytes.Equal(bytes.Join(pieces, nil), want) {
				t.Errorf("%s, %d batches: %d pieces, joined unlike FinishFile's %d bytes", c, n, len(pieces), len(want))
			}
			if g.Size() != 0 || g.Batches() != 0 {
				t.Errorf("a finished file holds %d bytes, %d batches", g.Size(), g.Batches())
			}
			if _, err := e.FinishFilePieces(&g, meta); !errors.Is(err, arrowipc.ErrFinished) {
				t.Errorf("finished twice: %v", err)
			}
		}
	}
	var empty arrowipc.File
	e := newEncoder(t, fileCodecs[0], 0.1)
	if _, err := e.FinishFilePieces(&empty, nil); !errors.Is(err, arrowipc.ErrState) {
		t.Errorf("a file of no batch: %v", err)
	}
}

// borrowRecords returns a record of 40 000 rows and slices of it, for the
// borrowing tests, released (and their memory checked) when t ends.
func borrowRecords(t *testing.T) (rec arrow.RecordBatch, cuts []arrow.RecordBatch) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	// 40 000 rows: the noise column's validity bitmap (5 KB) is borrowable
	// in size, and shifted into scratch for slices.
	const rows = 40000
	base := makeRecord(mem, rows, 7)
	defer base.Release()
	// Text of every length, so that the rebased offsets of two slices differ.
	sb := array.NewStringBuilder(mem)
	for i := range rows {
		sb.Append(strings.Repeat("ab", i%23))
	}
	text := sb.NewArray()
	sb.Release()
	defer text.Release()
	cols := append(slices.Clone(base.Columns()), text)
	schema := arrow.NewSchema(append(base.Schema().Fields(), arrow.Field{Name: "text", Type: arrow.BinaryTypes.String}), nil)
	rec = array.NewRecordBatch(schema, cols, rows)
	// Later slices no longer than earlier ones: the scratch is overwritten in place.
	for _, cut := range [][2]int64{{0, rows}, {5, 36005}, {36010, rows - 1}, {0, rows}, {17, 33017}, {1301, 34301}} {
		cuts = append(cuts, rec.NewSlice(cut[0], cut[1]))
	}
	t.Cleanup(func() {
		rec.Release()
		for _, r := range cuts {
			r.Release()
		}
	})
	return rec, cuts
}

// borrowedFrom counts the pieces that begin inside a buffer of rec, and
// says whether one of them is exactly b (a buffer of rec or of a slice).
func borrowedFrom(pieces [][]byte, rec arrow.RecordBatch, b []byte) (n int, isB bool) {
	for _, p := range pieces {
		isB = isB || len(p) > 0 && unsafe.SliceData(p) == unsafe.SliceData(b)
		for _, a := range rec.Columns() {
			for _, buf := range a.Data().Buffers() {
				if buf != nil && within(p, buf.Bytes()) {
					n++
				}
			}
		}
	}
	return n, isB
}

// A File appended borrowing writes the bytes of one that is not, whatever the
// codec, for whole records and for slices of them (whose rebased offsets
// and shifted bitmaps are encoder scratch, reused by the next batch, so
// never borrowed); at codec none it references the records' large buffers
// instead of copying them, and appending allocates a small part of the
// batches' bytes.
func TestFileBorrows(t *testing.T) {
	rec, recs := borrowRecords(t)
	meta := []arrowipc.KeyValue{{Key: "name", Value: "cpu"}}
	for _, c := range fileCodecs {
		e := newEncoder(t, c, 0.1)
		var plain, borrowing arrowipc.File
		said := 0 // batches AppendBatchBorrowing says it borrowed from
		for _, r := range recs {
			if _, err := e.PrepareRecord(r); err != nil {
				t.Fatal(err)
			}
			if err := e.AppendBatch(&plain); err != nil {
				t.Fatal(err)
			}
			if _, err := e.PrepareRecord(r); err != nil {
				t.Fatal(err)
			}
			b, err := e.AppendBatchBorrowing(&borrowing)
			if err != nil {
				t.Fatal(err)
			}
			if b {
				said++
			}
		}
		if plain.Size() != borrowing.Size() {
			t.Errorf("%s: borrowing, the file holds %d bytes, %d without", c, borrowing.Size(), plain.Size())
		}
		want, err := e.FinishFile(nil, &plain, meta)
		if err != nil {
			t.Fatal(err)
		}
		pieces, err := e.FinishFilePieces(&borrowing, meta)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.Join(pieces, nil), want) {
			t.Fatalf("%s: the borrowing file's bytes differ", c)
		}
		// The time column's values (8 bytes a row) of the first record:
		// borrowed at codec none; at zstd, where every batch stores some
		// buffer compressed, nothing of the records' is.
		borrowed, found := borrowedFrom(pieces, rec, rec.Column(0).Data().Buffers()[1].Bytes())
		switch c.Kind() {
		case codec.None:
			if !found {
				t.Errorf("%s: the first record's times were copied, not borrowed", c)
			}
			if said != len(recs) {
				t.Errorf("%s: AppendBatchBorrowing said it borrowed from %d batches of %d", c, said, len(recs))
			}
		case codec.Zstd:
			if borrowed > 0 || said > 0 {
				t.Errorf("%s: %d pieces of compressed batches borrowed (said of %d batches)", c, borrowed, said)
			}
		}
	}
	// Appending borrows at codec none: a fraction of the bytes is allocated.
	e := newEncoder(t, codec.MustNew(codec.None, 0), 0.1)
	for range 2 { // the second round has warm scratch
		var f arrowipc.File
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 8 {
			if _, err := e.PrepareRecord(rec); err != nil {
				t.Fatal(err)
			}
			if _, err := e.AppendBatchBorrowing(&f); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(f.Size())/4 {
			t.Errorf("appending 8 batches of %d bytes borrowing allocated %d", f.Size()/8, alloc)
		}
		f = arrowipc.File{}
	}
}

// AppendFilePieces writes AppendFile's bytes, each record's and each
// slice's, in pieces that reference the record's larger buffers at codec
// none, and none of them where the batch stores a buffer compressed.
func TestAppendFilePiecesBorrows(t *testing.T) {
	rec, recs := borrowRecords(t)
	meta := []arrowipc.KeyValue{{Key: "name", Value: "cpu"}}
	for _, c := range fileCodecs {
		e := newEncoder(t, c, 0.1)
		var wants [][]byte
		var files [][][]byte
		for _, r := range recs {
			if _, err := e.PrepareRecord(r); err != nil {
				t.Fatal(err)
			}
			want, err := e.AppendFile(nil, meta)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.PrepareRecord(r); err != nil {
				t.Fatal(err)
			}
			pieces, err := e.AppendFilePieces(meta)
			if err != nil {
				t.Fatal(err)
			}
			wants, files = append(wants, want), append(files, pieces)
		}
		// Compared once every record is written: a piece of the encoder's
		// scratch, overwritten by the next record, would differ.
		for i, r := range recs {
			pieces := files[i]
			if !bytes.Equal(bytes.Join(pieces, nil), wants[i]) {
				t.Fatalf("%s: record %d: the pieces' bytes differ from AppendFile's", c, i)
			}
			// The time column's values (8 bytes a row, this slice's).
			times := r.Column(0).Data().Buffers()[1].Bytes()[8*r.Column(0).Data().Offset():]
			borrowed, found := borrowedFrom(pieces, rec, times)
			switch c.Kind() {
			case codec.None:
				if !found {
					t.Errorf("%s: record %d: the times were copied, not borrowed", c, i)
				}
			case codec.Zstd:
				if borrowed > 0 {
					t.Errorf("%s: record %d: %d pieces of a compressed batch borrowed", c, i, borrowed)
				}
			}
		}
		if _, err := e.AppendFilePieces(meta); !errors.Is(err, arrowipc.ErrState) {
			t.Errorf("%s: AppendFilePieces without a prepared batch: %v, want ErrState", c, err)
		}
	}
}

// within says whether p begins inside b's memory.
func within(p, b []byte) bool {
	if len(p) == 0 || len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= start && at < start+uintptr(len(b))
}

// A reused encoder writes a file in pieces with two allocations: the
// pieces' list, sized once, and the memory of the runs between borrowed
// pieces.
func TestAppendFilePiecesSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are checked without -race")
	}
	_, recs := borrowRecords(t)
	meta := []arrowipc.KeyValue{{Key: "name", Value: "cpu"}}
	e := newEncoder(t, codec.MustNew(codec.None, 0), 0.1)
	r := recs[0]
	var err error
	write := func() {
		if _, err = e.PrepareRecord(r); err == nil {
			_, err = e.AppendFilePieces(meta)
		}
	}
	write()
	allocs := testing.AllocsPerRun(100, write)
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 2 {
		t.Errorf("%.1f allocations per file in pieces, want 2", allocs)
	}
}
