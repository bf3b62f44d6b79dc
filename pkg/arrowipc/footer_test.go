package arrowipc

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// The footer's schema is copied from the header's (buildFooter): it must be
// byte for byte the footer that writing the schema again gives, for any
// fields, field and schema metadata, and blocks.
func TestFooterSchemaCopiedAsWrittenAgain(t *testing.T) {
	types := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
		&arrow.TimestampType{Unit: arrow.Nanosecond},
		&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"},
	}
	r := rand.New(rand.NewPCG(11, 5))
	text := func() string { return strings.Repeat("k", r.IntN(40)) + string(rune('a'+r.IntN(26))) }
	kvs := func(max int) []KeyValue {
		var kv []KeyValue
		for range r.IntN(max + 1) {
			kv = append(kv, KeyValue{Key: text(), Value: text()})
		}
		return kv
	}
	e, ref := mustEncoder(t), mustEncoder(t)
	for i := range 300 {
		fields := make([]Field, r.IntN(12))
		for j := range fields {
			fields[j] = Field{Name: text(), Type: types[r.IntN(len(types))], Nullable: r.IntN(2) == 0, Metadata: kvs(3)}
		}
		meta := kvs(4)
		blocks := make([]block, 1+r.IntN(3))
		for j := range blocks {
			blocks[j] = block{offset: r.Int64N(1 << 40), metaLength: r.Int32(), bodyLength: r.Int64N(1 << 40)}
		}
		if err := e.batch.setSchema(fields); err != nil {
			t.Fatal(err)
		}
		infos := e.batch.infos

		e.buildHeader(fields, infos, meta)
		got := e.buildFooter(blocks)

		b := ref.b
		b.Reset()
		schema := ref.writeSchema(fields, infos, meta)
		batches := blocksToFB(b, blocks)
		dicts := blocksToFB(b, nil)
		b.Finish(footerToFB(b, schema, dicts, batches))
		if want := b.FinishedBytes(); !bytes.Equal(got, want) {
			t.Fatalf("case %d (%d fields, %d schema metadata): the footer differs from the schema written again:\n got %x\nwant %x", i, len(fields), len(meta), got, want)
		}
		e.batch.drop()
	}
}

// AppendFile to nil writes the file into memory of exactly its size.
func TestAppendFileToNilIsExact(t *testing.T) {
	e := mustEncoder(t)
	fields := []Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64, Metadata: []KeyValue{{Key: "k", Value: "v"}}}}
	for _, rows := range []int{0, 1, 7, 256, 5000} {
		if _, err := e.Prepare(fields, rows, []Column{{Values: make([]byte, 8*rows)}}); err != nil {
			t.Fatal(err)
		}
		out, err := e.AppendFile(nil, []KeyValue{{Key: "name", Value: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != cap(out) {
			t.Errorf("%d rows: a file of %d bytes in %d bytes of memory", rows, len(out), cap(out))
		}
	}
}

func mustEncoder(t *testing.T) *Encoder {
	t.Helper()
	e, err := NewEncoder(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
