package arrowipc_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/codec"
)

// appendRecord writes rec as the plugin does: phase one, then phase two
// with the record's schema metadata.
func appendRecord(e *arrowipc.Encoder, dst []byte, rec arrow.RecordBatch) ([]byte, arrowipc.BodyStats, error) {
	st, err := e.PrepareRecord(rec)
	if err != nil {
		return dst, st, err
	}
	out, err := e.AppendFile(dst, arrowipc.AppendMetadata(nil, rec.Schema().Metadata()))
	return out, st, err
}

// The stats of phase one describe the body that phase two writes: per
// buffer, in the batch's order, and in sum, against sizes computed from the
// record and against what Inspect reads back from the file.
func TestBodyStatsPerBuffer(t *testing.T) {
	const rows = 2000
	rec := makeRecord(memory.DefaultAllocator, rows, 1)
	defer rec.Release()
	line := rec.Column(2).(*array.String).Value(0)
	// time: no validity, values; noise: validity, values; line: no
	// validity, offsets, data.
	wantRaw := []int{0, 8 * rows, (rows + 7) / 8, 8 * rows, 0, 4 * (rows + 1), rows * len(line)}
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3)} {
		e := newEncoder(t, c, 0.1)
		out, st, err := appendRecord(e, nil, rec)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.PerBuffer) != len(wantRaw) {
			t.Fatalf("%s: %d buffers in PerBuffer, want %d", c, len(st.PerBuffer), len(wantRaw))
		}
		var raw, wire int64
		var nonEmpty, compressed int
		for i, b := range st.PerBuffer {
			if b.RawBytes != wantRaw[i] {
				t.Errorf("%s: buffer %d: %d raw bytes, want %d", c, i, b.RawBytes, wantRaw[i])
			}
			switch b.Outcome {
			case arrowipc.BufferEmpty:
				if b.RawBytes != 0 || b.WireBytes != 0 {
					t.Errorf("%s: buffer %d empty with %d/%d bytes", c, i, b.RawBytes, b.WireBytes)
				}
			case arrowipc.BufferRaw:
				prefix := 0
				if st.Compressed > 0 {
					prefix = 8
				}
				if b.WireBytes != b.RawBytes+prefix {
					t.Errorf("%s: buffer %d stored raw in %d bytes, %d raw", c, i, b.WireBytes, b.RawBytes)
				}
			case arrowipc.BufferCompressed:
				compressed++
				if b.WireBytes >= b.RawBytes {
					t.Errorf("%s: buffer %d compressed to %d bytes from %d", c, i, b.WireBytes, b.RawBytes)
				}
			}
			if b.Outcome != arrowipc.BufferEmpty {
				nonEmpty++
			}
			raw += int64(b.RawBytes)
			wire += int64(b.WireBytes)
		}
		if st.Rows != rows || raw != st.RawBytes || wire != st.WireBytes || nonEmpty != st.Buffers || compressed != st.Compressed {
			t.Errorf("%s: stats %+v disagree with their buffers: raw %d wire %d buffers %d compressed %d", c, st, raw, wire, nonEmpty, compressed)
		}
		batches, err := arrowipctest.Inspect(out)
		if err != nil {
			t.Fatal(err)
		}
		if b := batches[0]; b.Buffers != st.Buffers || b.Compressed != st.Compressed || b.Rows != rows {
			t.Errorf("%s: file holds %d buffers, %d compressed, %d rows; stats say %d, %d", c, b.Buffers, b.Compressed, b.Rows, st.Buffers, st.Compressed)
		}
		if c.Kind() == codec.None {
			if st.Compressed != 0 || st.WireBytes != st.RawBytes {
				t.Errorf("codec none: %+v", st)
			}
			continue
		}
		// The repeated line compresses; the random floats do not.
		if st.PerBuffer[6].Outcome != arrowipc.BufferCompressed || st.PerBuffer[3].Outcome != arrowipc.BufferRaw {
			t.Errorf("%s: line data %v, noise values %v", c, st.PerBuffer[6].Outcome, st.PerBuffer[3].Outcome)
		}
	}
}

// The two phases write what the multi-batch test helper writes for one
// record, so the golden files and reader tests cover the plugin's path.
func TestTwoPhasesWriteOneBatchFile(t *testing.T) {
	rec := makeRecord(memory.DefaultAllocator, 300, 5)
	defer rec.Release()
	md := arrow.NewMetadata([]string{"name", "refId"}, []string{"golden", "A"})
	rec = array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields(), &md), rec.Columns(), rec.NumRows())
	defer rec.Release()
	sliced := rec.NewSlice(7, 100)
	defer sliced.Release()
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3)} {
		for _, r := range []arrow.RecordBatch{rec, sliced} {
			e := newEncoder(t, c, 0.1)
			want, err := e.AppendRecords([]byte("prefix"), r.Schema(), r)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := appendRecord(e, []byte("prefix"), r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %d rows: two phases wrote %d bytes, the helper %d, not identical", c, r.NumRows(), len(got), len(want))
			}
			readAll(t, memory.DefaultAllocator, got[len("prefix"):], r.NumRows())
		}
	}
}

// A second Prepare replaces the first batch; Discard drops it.
func TestPrepareReplacesAndDiscardDrops(t *testing.T) {
	e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0)
	fields := []arrowipc.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int32}}
	if _, err := e.Prepare(fields, 2, []arrowipc.Column{{Values: make([]byte, 8)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prepare(fields, 1, []arrowipc.Column{{Values: make([]byte, 4)}}); err != nil {
		t.Fatal(err)
	}
	out, err := e.AppendFile(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, memory.DefaultAllocator, out, 1)
	if _, err := e.Prepare(fields, 1, []arrowipc.Column{{Values: make([]byte, 4)}}); err != nil {
		t.Fatal(err)
	}
	e.Discard()
	if _, err := e.AppendFile(nil, nil); !errors.Is(err, arrowipc.ErrState) {
		t.Errorf("AppendFile after Discard: %v, want ErrState", err)
	}
}

// Steady state of the plugin's record path: a reused encoder preparing and
// writing a record of a known size into a reused buffer allocates nothing.
func TestPrepareRecordSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are checked without -race")
	}
	rec := makeRecord(memory.DefaultAllocator, 256, 3)
	defer rec.Release()
	sliced := rec.NewSlice(3, 200)
	defer sliced.Release()
	meta := arrowipc.AppendMetadata(nil, arrow.NewMetadata([]string{"name", "refId"}, []string{"x", "A"}))
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3)} {
		e := newEncoder(t, c, 0.1)
		var buf []byte
		var err error
		write := func() {
			for _, r := range []arrow.RecordBatch{rec, sliced} {
				if _, err = e.PrepareRecord(r); err != nil {
					return
				}
				if buf, err = e.AppendFile(buf[:0], meta); err != nil {
					return
				}
			}
		}
		write()
		allocs := testing.AllocsPerRun(100, write)
		if err != nil {
			t.Fatal(err)
		}
		if allocs > 0 {
			t.Errorf("codec=%s: %.1f allocations per two files in steady state, want 0", c, allocs)
		}
	}
}
