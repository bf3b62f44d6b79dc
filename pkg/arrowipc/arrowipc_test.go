package arrowipc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/codec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func newEncoder(t testing.TB, c codec.Codec, minSavings float64) *arrowipc.Encoder {
	t.Helper()
	e, err := arrowipc.NewEncoder(arrowipc.Options{Codec: c, MinSavings: minSavings})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOptionsChecked(t *testing.T) {
	for _, ms := range []float64{-0.1, 1, 2} {
		if _, err := arrowipc.NewEncoder(arrowipc.Options{MinSavings: ms}); err == nil {
			t.Errorf("MinSavings %v accepted", ms)
		}
	}
}

func TestUnsupportedTypesNamed(t *testing.T) {
	for _, dt := range []arrow.DataType{
		arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.StringView,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Time64us,
		&arrow.Decimal128Type{Precision: 10, Scale: 2}, arrow.FixedWidthTypes.Float16,
		arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}),
		arrow.FixedWidthTypes.Timestamp_ms, arrow.FixedWidthTypes.Duration_s, arrow.Null,
	} {
		schema := arrow.NewSchema([]arrow.Field{{Name: "ok", Type: arrow.PrimitiveTypes.Int64}, {Name: "col x", Type: dt}}, nil)
		dst := []byte("previous frame")
		out, err := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0).AppendRecords(dst, schema)
		var ute *arrowipc.UnsupportedTypeError
		if !errors.As(err, &ute) || ute.Field != "col x" {
			t.Errorf("%s: err = %v, want an UnsupportedTypeError naming field \"col x\"", dt, err)
			continue
		}
		if !bytes.Contains([]byte(err.Error()), []byte(dt.String())) {
			t.Errorf("%s: message %q does not name the type", dt, err)
		}
		if string(out) != "previous frame" {
			t.Errorf("%s: dst changed on error: %q", dt, out)
		}
	}
}

func TestOutOfOrderAndBadBatches(t *testing.T) {
	e := newEncoder(t, codec.MustNew(codec.LZ4, 0), 0)
	if out, err := e.AppendFile([]byte("x"), nil); !errors.Is(err, arrowipc.ErrState) || string(out) != "x" {
		t.Errorf("AppendFile before Prepare: %q, %v", out, err)
	}
	fields := []arrowipc.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Int32}}
	good := []arrowipc.Column{{Offsets: []byte{0, 0, 0, 0, 1, 0, 0, 0}, Values: []byte("x")}, {Values: []byte{1, 0, 0, 0}}}
	for name, cols := range map[string][]arrowipc.Column{
		"too few columns":      good[:1],
		"short values":         {good[0], {Values: []byte{1, 0}}},
		"offsets not from 0":   {{Offsets: []byte{1, 0, 0, 0, 1, 0, 0, 0}, Values: []byte("x")}, good[1]},
		"offsets past data":    {{Offsets: []byte{0, 0, 0, 0, 9, 0, 0, 0}, Values: []byte("x")}, good[1]},
		"nulls no bitmap":      {good[0], {NullCount: 1, Values: []byte{1, 0, 0, 0}}},
		"more nulls than rows": {good[0], {NullCount: 2, Validity: []byte{0}, Values: []byte{1, 0, 0, 0}}},
	} {
		// A good batch prepared before is replaced, not written.
		if _, err := e.Prepare(fields, 1, good); err != nil {
			t.Fatal(err)
		}
		_, err := e.Prepare(fields, 1, cols)
		if !errors.Is(err, arrowipc.ErrBatch) {
			t.Errorf("%s: Prepare = %v, want ErrBatch", name, err)
		}
		// The error sticks until the next Prepare.
		out, ferr := e.AppendFile([]byte("x"), nil)
		if !errors.Is(ferr, arrowipc.ErrBatch) || string(out) != "x" {
			t.Errorf("%s: AppendFile = %q, %v; want dst unextended and the error", name, out, ferr)
		}
	}
	// And the encoder still writes good files afterwards, once per Prepare.
	if _, err := e.Prepare(fields, 1, good); err != nil {
		t.Fatal(err)
	}
	out, err := e.AppendFile(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := e.AppendFile([]byte("x"), nil); !errors.Is(err, arrowipc.ErrState) || string(again) != "x" {
		t.Errorf("AppendFile twice: %q, %v; want ErrState", again, err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// makeRecord builds a record with a time column, a random-walk float64 (which
// compresses well below 64 bytes only), a random float64 (which does not
// compress) and a repetitive string column.
func makeRecord(mem memory.Allocator, rows int, seed uint64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "noise", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "line", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000_000 + int64(i)*1e9))
		if i%13 == 5 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(r.NormFloat64())
		}
		b.Field(2).(*array.StringBuilder).Append("level=info msg=\"request served\" path=/api/v1/query status=200")
	}
	return b.NewRecordBatch()
}

func TestCompressionDeclaredPerBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	big := makeRecord(mem, 2000, 1)
	defer big.Release()
	tiny := big.NewSlice(0, 1) // every buffer below the compression threshold
	defer tiny.Release()
	for _, tc := range []struct {
		c    codec.Codec
		want string
	}{{codec.MustNew(codec.Zstd, 3), "zstd"}, {codec.MustNew(codec.LZ4, 0), "lz4"}, {codec.MustNew(codec.None, 0), "none"}} {
		out, err := newEncoder(t, tc.c, 0.1).AppendRecords(nil, big.Schema(), big, tiny)
		if err != nil {
			t.Fatal(err)
		}
		batches, err := arrowipctest.Inspect(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(batches) != 2 {
			t.Fatalf("%s: %d batches", tc.c, len(batches))
		}
		if b := batches[0]; b.Codec != tc.want || b.Rows != 2000 {
			t.Errorf("%s: big batch declares %q with %d rows, want %q", tc.c, b.Codec, b.Rows, tc.want)
		}
		if tc.want != "none" {
			// time and line compress; the random float64 values do not and are stored raw.
			if b := batches[0]; b.Compressed == 0 || b.Compressed == b.Buffers {
				t.Errorf("%s: %d of %d buffers compressed, want some but not all", tc.c, b.Compressed, b.Buffers)
			}
		}
		if b := batches[1]; b.Codec != "none" || b.Compressed != 0 {
			t.Errorf("%s: tiny batch declares %q with %d compressed buffers, want none", tc.c, b.Codec, b.Compressed)
		}
		readAll(t, mem, out, 2001)
	}
}

func readAll(t *testing.T, mem memory.Allocator, b []byte, wantRows int64) {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows int64
	for i := range r.NumRecords() {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		rows += rec.NumRows()
	}
	if rows != wantRows {
		t.Fatalf("read %d rows, want %d", rows, wantRows)
	}
}

// A stricter minimum saving stores more buffers raw, and never makes the
// file smaller.
func TestMinSavings(t *testing.T) {
	rec := makeRecord(memory.DefaultAllocator, 4096, 9)
	defer rec.Release()
	var prevCompressed = 1 << 30
	var prevSize, first int
	for _, ms := range []float64{0, 0.5, 0.9, 0.99} {
		out, err := newEncoder(t, codec.MustNew(codec.Zstd, 3), ms).AppendRecords(nil, rec.Schema(), rec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := arrowipctest.Inspect(out)
		if err != nil {
			t.Fatal(err)
		}
		if b[0].Compressed > prevCompressed || len(out) < prevSize {
			t.Errorf("minSavings %v: %d compressed buffers, %d bytes; previous %d, %d", ms, b[0].Compressed, len(out), prevCompressed, prevSize)
		}
		if ms == 0 {
			first = b[0].Compressed
		}
		prevCompressed, prevSize = b[0].Compressed, len(out)
	}
	// Only the repeated log line saves 99%: fewer buffers stay compressed.
	if prevCompressed >= first {
		t.Errorf("minSavings 0.99 compressed %d buffers, as many as minSavings 0 (%d)", prevCompressed, first)
	}
}

// Steady state: a reused encoder appending a record of a known size into a
// reused buffer allocates nothing.
func TestAppendRecordsSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are checked without -race")
	}
	rec := makeRecord(memory.DefaultAllocator, 256, 3)
	defer rec.Release()
	sliced := rec.NewSlice(3, 200)
	defer sliced.Release()
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3)} {
		e := newEncoder(t, c, 0.1)
		buf, err := e.AppendRecords(nil, rec.Schema(), rec, sliced)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			buf, err = e.AppendRecords(buf[:0], rec.Schema(), rec, sliced)
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs > 0 {
			t.Errorf("codec=%s: %.1f allocations per file in steady state, want 0", c, allocs)
		}
	}
}

// Golden files pin the exact bytes: a change to the format shows up here
// first. Refresh them with: go test ./pkg/arrowipc -run Golden -update
func TestGolden(t *testing.T) {
	rec := makeRecord(memory.DefaultAllocator, 300, 5)
	defer rec.Release()
	md := arrow.NewMetadata([]string{"name", "refId"}, []string{"golden", "A"})
	schema := arrow.NewSchema(rec.Schema().Fields(), &md)
	rec = array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
	defer rec.Release()
	for _, tc := range []struct {
		name string
		c    codec.Codec
	}{{"none", codec.MustNew(codec.None, 0)}, {"lz4-0", codec.MustNew(codec.LZ4, 0)}, {"zstd-3", codec.MustNew(codec.Zstd, 3)}} {
		out, err := newEncoder(t, tc.c, 0.1).AppendRecords(nil, schema, rec, rec.NewSlice(7, 100))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "golden", tc.name+".arrow")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (create it with -update)", err)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: %d bytes differ from the golden %d bytes; if the change is intended, rerun with -update and review the diff", tc.name, len(out), len(want))
		}
		readAll(t, memory.DefaultAllocator, want, 393)
		// The same two batches through a File.
		asFile, err := newEncoder(t, tc.c, 0.1).AppendRecordsAsFile(nil, schema, rec, rec.NewSlice(7, 100))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(asFile, want) {
			t.Errorf("%s: through a File, %d bytes differ from the golden %d bytes", tc.name, len(asFile), len(want))
		}
	}
}

// A fixed-width values buffer of at least 8 KiB is judged by its first
// 1 KiB: a noisy prefix stores it raw even when the rest would compress
// (columns of numbers are alike from end to end; this spares compressing
// what will not compress), a compressible prefix compresses it whole.
// Strings are always compressed whole.
func TestProbeJudgesNumbersByTheirPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows = 1024 // 8 KiB
	noisyThenZeros := make([]byte, 8*rows)
	for i := range 128 {
		binary.LittleEndian.PutUint64(noisyThenZeros[8*i:], r.Uint64())
	}
	zerosThenNoisy := make([]byte, 8*rows)
	for i := rows - 128; i < rows; i++ {
		binary.LittleEndian.PutUint64(zerosThenNoisy[8*i:], r.Uint64())
	}
	fields := []arrowipc.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}
	for _, tc := range []struct {
		name   string
		values []byte
		want   int
	}{{"noisy prefix", noisyThenZeros, 0}, {"zero prefix", zerosThenNoisy, 1}} {
		e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0.1)
		if _, err := e.Prepare(fields, rows, []arrowipc.Column{{Values: tc.values}}); err != nil {
			t.Fatal(err)
		}
		out, err := e.AppendFile(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := arrowipctest.Inspect(out)
		if err != nil {
			t.Fatal(err)
		}
		if b[0].Compressed != tc.want {
			t.Errorf("%s: %d buffers compressed, want %d", tc.name, b[0].Compressed, tc.want)
		}
		readAll(t, memory.DefaultAllocator, out, rows)
	}
}

// Text offsets that fall, or turn negative read as int32, are refused,
// naming the first row where they fall; the last offset bounds the values.
func TestTextOffsetsChecked(t *testing.T) {
	le := func(offs ...uint32) []byte {
		b := make([]byte, 0, 4*len(offs))
		for _, o := range offs {
			b = binary.LittleEndian.AppendUint32(b, o)
		}
		return b
	}
	fields := []arrowipc.Field{{Name: "s", Type: arrow.BinaryTypes.String}}
	for _, c := range []struct {
		name string
		offs []byte
		want string // in the error; "" for none
	}{
		{"rising", le(0, 1, 1, 3), ""},
		{"falling at row 2", le(0, 2, 1, 3), "offsets decrease at row 2"},
		{"falling at the last row", le(0, 1, 2, 1), "offsets decrease at row 3"},
		{"negative at row 1", le(0, 0xffffffff, 0xffffffff, 0xffffffff), "offsets decrease at row 1"},
		{"past 2^31 at row 3", le(0, 1, 2, 0x80000000), "offsets decrease at row 3"},
		{"past the values", le(0, 1, 2, 4), "offsets reach 4 past 3 value bytes"},
	} {
		e := newEncoder(t, codec.MustNew(codec.None, 0), 0)
		_, err := e.Prepare(fields, 3, []arrowipc.Column{{Offsets: c.offs, Values: []byte("abc")}})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, arrowipc.ErrBatch) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want ErrBatch saying %q", c.name, err, c.want)
		}
	}
}
