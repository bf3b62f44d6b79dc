package frame

import (
	"encoding/json"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
)

// Encoder writes Grafana frames as Arrow IPC files. It is not safe for
// concurrent use; its scratch memory is reused from one frame to the next.
type Encoder struct {
	ipc *arrowipc.Encoder

	fields  []arrowipc.Field
	kvs     []arrowipc.KeyValue
	cols    []arrowipc.Column
	scratch []scratch
	text    []byte // metadata JSON of the frame being written
	keys    []string
}

// NewEncoder returns an Encoder that writes with the given options.
func NewEncoder(o arrowipc.Options) (*Encoder, error) {
	ipc, err := arrowipc.NewEncoder(o)
	if err != nil {
		return nil, err
	}
	return &Encoder{ipc: ipc}, nil
}

// IPC returns the wrapped Arrow IPC encoder.
func (e *Encoder) IPC() *arrowipc.Encoder { return e.ipc }

// AppendFrame appends f as one Arrow IPC file (one record batch) to dst and
// returns the extended slice; on error, dst unextended. The field vectors
// are read in place.
func (e *Encoder) AppendFrame(dst []byte, f *data.Frame) ([]byte, error) {
	if f == nil {
		return dst, fmt.Errorf("frame: nil frame")
	}
	rows, err := f.RowLen()
	if err != nil {
		return dst, fmt.Errorf("frame: %q: %w", f.Name, err)
	}
	n := len(f.Fields)
	e.fields, e.cols = e.fields[:0], e.cols[:0]
	e.kvs = e.kvs[:0]
	e.text = e.text[:0]
	if len(e.scratch) < n {
		e.scratch = append(e.scratch, make([]scratch, n-len(e.scratch))...)
	}
	// Label metadata values are string views of e.text, which is only
	// appended to until the frame is written; when it grows, the views keep
	// the old array, unchanged.
	for i, fld := range f.Fields {
		if fld == nil {
			return dst, fmt.Errorf("frame: %q: field %d is nil", f.Name, i)
		}
		k, err := lookupKind(fld)
		if err != nil {
			return dst, err
		}
		start := len(e.kvs)
		if fld.Config != nil {
			b, err := json.Marshal(fld.Config)
			if err != nil {
				return dst, fmt.Errorf("frame: field %q: encoding config: %w", fld.Name, err)
			}
			e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyConfig, Value: string(b)})
		}
		if fld.Labels != nil {
			at := len(e.text)
			e.text, e.keys = appendLabelsJSON(e.text, fld.Labels, e.keys)
			e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyLabels, Value: bytesView(e.text[at:])})
		}
		e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyTSType, Value: k.tstype})
		e.fields = append(e.fields, arrowipc.Field{Name: fld.Name, Type: k.arrow, Nullable: k.nullable, Metadata: e.kvs[start:len(e.kvs):len(e.kvs)]})

		c := k.column(fld, &e.scratch[i])
		if c.Offsets != nil && len(c.Values) > math.MaxInt32 {
			return dst, fmt.Errorf("frame: field %q: %d bytes of values exceed the 2 GiB a utf8 or binary column can hold", fld.Name, len(c.Values))
		}
		e.cols = append(e.cols, c)
	}
	start := len(e.kvs)
	if f.Meta != nil {
		b, err := json.Marshal(f.Meta)
		if err != nil {
			return dst, fmt.Errorf("frame: %q: encoding meta: %w", f.Name, err)
		}
		e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyMeta, Value: string(b)})
	}
	e.kvs = append(e.kvs,
		arrowipc.KeyValue{Key: KeyName, Value: f.Name},
		arrowipc.KeyValue{Key: KeyRefID, Value: f.RefID})
	meta := e.kvs[start:]

	err = e.ipc.Begin(dst, e.fields, meta)
	if err == nil {
		err = e.ipc.WriteBatch(rows, e.cols)
	}
	out, ferr := e.ipc.Finish()
	clear(e.cols) // keep no reference to the frame's vectors
	if err == nil {
		err = ferr
	}
	if err != nil {
		return dst, fmt.Errorf("frame: %q: %w", f.Name, err)
	}
	return out, nil
}

// bytesView returns b as a string without copying. The caller must not
// modify b while the string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// AppendRecord appends rec, whose schema carries Grafana's metadata (see
// SchemaMetadata and FieldMetadata), as one Arrow IPC file to dst. For the
// same data it writes the same bytes as AppendFrame.
func (e *Encoder) AppendRecord(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	out, err := e.ipc.AppendRecords(dst, rec.Schema(), rec)
	if err != nil {
		return dst, fmt.Errorf("frame: %w", err)
	}
	return out, nil
}
