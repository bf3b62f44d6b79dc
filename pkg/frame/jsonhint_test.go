package frame_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/frame"
)

// A zero-row utf8 or binary column whose offsets buffer is empty (as a
// zero-length array may arrive over Arrow IPC; arrow-go reads and writes it
// so): JSONSizeHint must not panic, and the JSON is the SDK's.
func TestJSONSizeHintEmptyOffsets(t *testing.T) {
	for _, dt := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.Binary} {
		d := array.NewData(dt, 0, []*memory.Buffer{nil, memory.NewBufferBytes(nil), memory.NewBufferBytes([]byte{})}, nil, 0, 0)
		col := array.MakeFromData(d)
		d.Release()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt}}, nil), []arrow.Array{col}, 0)
		col.Release()
		in := frame.Input{Record: rec}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: JSONSizeHint panicked: %v", dt, p)
				}
			}()
			got, err := frame.AppendJSON(nil, in)
			if err != nil {
				t.Fatalf("%s: %v", dt, err)
			}
			if hint := frame.JSONSizeHint(in); hint < len(got) {
				t.Errorf("%s: hint %d for %d bytes", dt, hint, len(got))
			}
			sameJSON(t, dt.String(), sdkRecordJSON(t, rec), got)
		}()
		rec.Release()
	}
}
