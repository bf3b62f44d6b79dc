package arrowipc_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
)

// SchemaDepth reads how deep a schema message's fields nest, stopping past
// the bound, and reports a malformed header as an error.
func TestSchemaDepth(t *testing.T) {
	header := func(fields ...arrow.Field) []byte {
		return flight.SerializeSchema(arrow.NewSchema(fields, nil), memory.DefaultAllocator)[8:] // the message, without its framing
	}
	nested := func(levels int) arrow.DataType {
		var dt arrow.DataType = arrow.PrimitiveTypes.Int64
		for range levels {
			dt = arrow.ListOf(dt)
		}
		return dt
	}
	for _, tc := range []struct {
		name   string
		header []byte
		most   int
		want   int
	}{
		{"flat", header(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64}), 64, 1},
		{"a struct of a list", header(arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "l", Type: nested(1)})}), 64, 3},
		{"no fields", header(), 64, 0},
		{"deeper than the bound", header(arrow.Field{Name: "x", Type: nested(1000)}), 64, 65},
	} {
		if got, err := arrowipc.SchemaDepth(tc.header, tc.most); err != nil || got != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.name, got, err, tc.want)
		}
	}
	whole := header(arrow.Field{Name: "x", Type: nested(3)})
	for _, bad := range [][]byte{nil, whole[:3], whole[:len(whole)/2]} {
		if _, err := arrowipc.SchemaDepth(bad, 64); err == nil {
			t.Errorf("a header of %d bytes cut from %d read without an error", len(bad), len(whole))
		}
	}
}
