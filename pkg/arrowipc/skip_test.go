package arrowipc_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
)

// noise returns n random bytes, which no codec compresses.
func noise(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b
}

// steps returns rows int64 values counting up by one: they compress under
// every codec.
func steps(rows int) []byte {
	b := make([]byte, 8*rows)
	for i := range rows {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(i))
	}
	return b
}

var oneInt64 = []arrowipc.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}

func prepareOne(t *testing.T, e *arrowipc.Encoder, fields []arrowipc.Field, rows int, values []byte) arrowipc.BodyStats {
	t.Helper()
	st, err := e.Prepare(fields, rows, []arrowipc.Column{{Values: values}})
	if err != nil {
		t.Fatal(err)
	}
	e.Discard()
	return st
}

// A buffer that compresses is compressed whenever its slot's history says
// nothing: a fresh encoder, or a slot that last held another field.
func TestCompressibleNeverSkippedWithoutHistory(t *testing.T) {
	const rows = 512
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []codec.Codec{codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 1), codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.Zstd, 19)} {
		e := newEncoder(t, c, 0.1)
		if st := prepareOne(t, e, oneInt64, rows, steps(rows)); st.PerBuffer[1].Outcome != arrowipc.BufferCompressed {
			t.Errorf("%s: a fresh encoder stored a compressible buffer %v", c, st.PerBuffer[1].Outcome)
		}
		// Teach the slot that field v does not compress.
		for range 8 {
			prepareOne(t, e, oneInt64, rows, noise(r, 8*rows))
		}
		if st := prepareOne(t, e, oneInt64, rows, noise(r, 8*rows)); st.PerBuffer[1].Outcome != arrowipc.BufferSkipped || st.Skipped != 1 {
			t.Errorf("%s: after 8 failing buffers the slot's ninth is %v (skipped %d), want skipped", c, st.PerBuffer[1].Outcome, st.Skipped)
		}
		// Another field in the same slot has no history.
		other := []arrowipc.Field{{Name: "w", Type: arrow.PrimitiveTypes.Int64}}
		if st := prepareOne(t, e, other, rows, steps(rows)); st.PerBuffer[1].Outcome != arrowipc.BufferCompressed {
			t.Errorf("%s: field w in field v's slot stored %v", c, st.PerBuffer[1].Outcome)
		}
		// The same name with another type neither.
		asFloat := []arrowipc.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64}}
		if st := prepareOne(t, e, asFloat, rows, steps(rows)); st.PerBuffer[1].Outcome != arrowipc.BufferCompressed {
			t.Errorf("%s: float field v in int field v's slot stored %v", c, st.PerBuffer[1].Outcome)
		}
	}
}

// A slot that keeps failing is tried with growing gaps (1, 2, 4, … 64
// skipped buffers) and tried again after each gap, so that a column that
// starts to compress is compressed again within 65 batches.
func TestHistoryBacksOffAndRetries(t *testing.T) {
	const rows = 512
	r := rand.New(rand.NewPCG(3, 4))
	e := newEncoder(t, codec.MustNew(codec.Zstd, 3), 0.1)
	var want []arrowipc.BufferOutcome
	for _, gap := range []int{1, 2, 4, 8, 16, 32, 64, 64} {
		want = append(want, arrowipc.BufferRaw)
		for range gap {
			want = append(want, arrowipc.BufferSkipped)
		}
	}
	for i := range want {
		if o := prepareOne(t, e, oneInt64, rows, noise(r, 8*rows)).PerBuffer[1].Outcome; o != want[i] {
			t.Fatalf("batch %d: %v, want %v", i, o, want[i])
		}
	}
	// The next one is tried: it compresses, which clears the slot, so the
	// one after is tried too.
	for i := range 2 {
		if o := prepareOne(t, e, oneInt64, rows, steps(rows)).PerBuffer[1].Outcome; o != arrowipc.BufferCompressed {
			t.Fatalf("compressible buffer %d after the gaps: %v", i, o)
		}
	}
}

// Buffers too short to pay are skipped, and counted so; codec none skips
// nothing (there is nothing to try).
func TestShortBuffersSkipped(t *testing.T) {
	st := prepareOne(t, newEncoder(t, codec.MustNew(codec.Zstd, 3), 0.1), oneInt64, 4, steps(4))
	if st.PerBuffer[1].Outcome != arrowipc.BufferSkipped || st.Skipped != 1 || st.Codec != codec.None {
		t.Errorf("a 32-byte buffer: %+v", st)
	}
	st = prepareOne(t, newEncoder(t, codec.MustNew(codec.None, 0), 0.1), oneInt64, 512, steps(512))
	if st.PerBuffer[1].Outcome != arrowipc.BufferRaw || st.Skipped != 0 {
		t.Errorf("codec none: %+v", st)
	}
}
