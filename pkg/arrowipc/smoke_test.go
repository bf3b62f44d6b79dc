package arrowipc_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
)

func TestSmoke(t *testing.T) {
	md := arrow.NewMetadata([]string{"name", "refId"}, []string{"x", "A"})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: arrow.NewMetadata([]string{"labels", "tstype"}, []string{`{"a":"b"}`, "number"})},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := 0; i < 1000; i++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1e9))
		if i%7 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(float64(i % 10))
		}
		b.Field(2).(*array.StringBuilder).Append("hello hello hello")
	}
	rec := b.NewRecordBatch()
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.LZ4, 0)} {
		e, err := arrowipc.NewEncoder(arrowipc.Options{Codec: c, MinSavings: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.AppendRecords(nil, schema, rec, rec.NewSlice(3, 500))
		if err != nil {
			t.Fatal(err)
		}
		f, err := data.UnmarshalArrowFrame(out)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if f.Rows() != 1497 {
			t.Fatalf("rows %d", f.Rows())
		}
		r, err := ipc.NewFileReader(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %d batches", c, len(out), r.NumRecords())
	}
}
