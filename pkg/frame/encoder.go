package frame

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
)

// Summary is what encoding a query's other frames did, for the stats of the
// frame that carries the query's stats (see AppendFrameWithStats).
type Summary struct {
	Frames              int
	RawBytes, WireBytes int64
	Encode              time.Duration
}

// Add adds what encoding one frame did.
func (s *Summary) Add(st arrowipc.BodyStats, took time.Duration) {
	s.Frames++
	s.RawBytes += st.RawBytes
	s.WireBytes += st.WireBytes
	s.Encode += took
}

// Encoder writes Grafana frames as Arrow IPC files. It is not safe for
// concurrent use; its scratch memory is reused from one frame to the next.
type Encoder struct {
	ipc   *arrowipc.Encoder
	codec string // the codec as stats show it

	fields  []arrowipc.Field
	kvs     []arrowipc.KeyValue
	cols    []arrowipc.Column
	scratch []scratch
	text    []byte // metadata JSON of the frame being written
	keys    []string

	// the frame being written, for the metadata callbacks
	cur     *data.Frame
	start   time.Time
	summary *Summary // stats to add to the frame's meta; nil for none

	// the meta JSON of the last frame, by pointer: the frames of one query
	// often share one FrameMeta, which frames handed over must not change
	// (holding the pointer keeps its address from being reused).
	lastMeta     *data.FrameMeta
	lastMetaJSON string
	frameMeta    func(arrowipc.BodyStats) ([]arrowipc.KeyValue, error)
	recordMeta   func(arrowipc.BodyStats, []arrowipc.KeyValue) ([]arrowipc.KeyValue, error)
}

// NewEncoder returns an Encoder that writes with the given options.
func NewEncoder(o arrowipc.Options) (*Encoder, error) {
	ipc, err := arrowipc.NewEncoder(o)
	if err != nil {
		return nil, err
	}
	e := &Encoder{ipc: ipc}
	c := o.Codec
	e.codec = c.String() + " (" + c.Effective() + ")"
	// Bound once here: a method value made per frame would allocate.
	e.frameMeta = e.schemaMetaOfFrame
	e.recordMeta = e.schemaMetaOfRecord
	return e, nil
}

// IPC returns the wrapped Arrow IPC encoder (its codec, the stats of the
// last file).
func (e *Encoder) IPC() *arrowipc.Encoder { return e.ipc }

// AppendFrame appends f as one Arrow IPC file (one record batch) to dst and
// returns the extended slice; on error, dst unextended. The field vectors
// are read in place. f.Meta is treated as immutable: the encoder keeps the
// JSON of the last meta it wrote by pointer, so that frames sharing one
// FrameMeta pay for its encoding once; change a meta only through a copy.
func (e *Encoder) AppendFrame(dst []byte, f *data.Frame) ([]byte, error) {
	e.summary = nil
	return e.appendFrame(dst, f)
}

// AppendFrameWithStats is AppendFrame for the frame that carries a query's
// encoding statistics in meta.stats, where Grafana's query inspector shows
// them: frames, body bytes raw and on the wire, their ratio, the codec and
// the encode time, summed over others and this frame. Stats differ from run
// to run (the time); frames without them do not.
func (e *Encoder) AppendFrameWithStats(dst []byte, f *data.Frame, others Summary) ([]byte, error) {
	e.summary = &others
	defer func() { e.summary = nil }()
	return e.appendFrame(dst, f)
}

func (e *Encoder) appendFrame(dst []byte, f *data.Frame) ([]byte, error) {
	e.start = time.Now()
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
	e.cur = f
	out, err := e.ipc.AppendFile(dst, e.fields, rows, e.cols, e.frameMeta)
	e.cur = nil
	clear(e.cols) // keep no reference to the frame's vectors
	if err != nil {
		return dst, fmt.Errorf("frame: %q: %w", f.Name, err)
	}
	return out, nil
}

// schemaMetaOfFrame returns the schema metadata of e.cur, called once its
// body is compressed.
func (e *Encoder) schemaMetaOfFrame(st arrowipc.BodyStats) ([]arrowipc.KeyValue, error) {
	f := e.cur
	start := len(e.kvs)
	switch {
	case e.summary != nil:
		b, err := json.Marshal(e.withStats(f.Meta, st))
		if err != nil {
			return nil, fmt.Errorf("encoding meta: %w", err)
		}
		e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyMeta, Value: string(b)})
	case f.Meta != nil:
		if f.Meta != e.lastMeta {
			b, err := json.Marshal(f.Meta)
			if err != nil {
				return nil, fmt.Errorf("encoding meta: %w", err)
			}
			e.lastMeta, e.lastMetaJSON = f.Meta, string(b)
		}
		e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyMeta, Value: e.lastMetaJSON})
	}
	e.kvs = append(e.kvs,
		arrowipc.KeyValue{Key: KeyName, Value: f.Name},
		arrowipc.KeyValue{Key: KeyRefID, Value: f.RefID})
	return e.kvs[start:], nil
}

// AppendRecord appends rec, whose schema carries Grafana's metadata (see
// SchemaMetadata and FieldMetadata), as one Arrow IPC file to dst. For the
// same data it writes the same bytes as AppendFrame.
func (e *Encoder) AppendRecord(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	e.summary = nil
	return e.appendRecord(dst, rec)
}

// AppendRecordWithStats is AppendRecord for the frame that carries a
// query's statistics; see AppendFrameWithStats.
func (e *Encoder) AppendRecordWithStats(dst []byte, rec arrow.RecordBatch, others Summary) ([]byte, error) {
	e.summary = &others
	defer func() { e.summary = nil }()
	return e.appendRecord(dst, rec)
}

func (e *Encoder) appendRecord(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	e.start = time.Now()
	out, err := e.ipc.AppendRecord(dst, rec, e.recordMeta)
	if err != nil {
		return dst, fmt.Errorf("frame: %w", err)
	}
	return out, nil
}

// schemaMetaOfRecord returns a record's schema metadata, with stats added to
// its meta when the encoder writes stats.
func (e *Encoder) schemaMetaOfRecord(st arrowipc.BodyStats, kvs []arrowipc.KeyValue) ([]arrowipc.KeyValue, error) {
	if e.summary == nil {
		return kvs, nil
	}
	var meta *data.FrameMeta
	at := -1
	for i, kv := range kvs {
		if kv.Key == KeyMeta {
			at = i
			m, err := data.FrameMetaFromJSON(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("reading the record's meta: %w", err)
			}
			meta = m
		}
	}
	b, err := json.Marshal(e.withStats(meta, st))
	if err != nil {
		return nil, fmt.Errorf("encoding meta: %w", err)
	}
	out := make([]arrowipc.KeyValue, 0, len(kvs)+1)
	if at < 0 { // "meta" sorts before "name" and "refId"
		out = append(out, arrowipc.KeyValue{Key: KeyMeta, Value: string(b)})
		return append(out, kvs...), nil
	}
	out = append(out, kvs...)
	out[at].Value = string(b)
	return out, nil
}

// Stat names, as the query inspector shows them.
const (
	StatFrames    = "Quiver frames"
	StatRawBytes  = "Quiver body bytes (raw)"
	StatWireBytes = "Quiver body bytes (wire)"
	StatRatio     = "Quiver compression ratio"
	StatEncode    = "Quiver encode time"
	StatCodec     = "Quiver codec "
)

// withStats returns a copy of meta (or a new one) with the query's encoding
// stats appended: e.summary plus this frame, whose body st describes.
func (e *Encoder) withStats(meta *data.FrameMeta, st arrowipc.BodyStats) *data.FrameMeta {
	m := data.FrameMeta{}
	if meta != nil {
		m = *meta
	}
	sum := *e.summary
	sum.Add(st, time.Since(e.start))
	ratio := 1.0
	if sum.WireBytes > 0 {
		ratio = math.Round(float64(sum.RawBytes)/float64(sum.WireBytes)*100) / 100
	}
	m.Stats = append(slices.Clip(m.Stats),
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatFrames}, Value: float64(sum.Frames)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatRawBytes, Unit: "decbytes"}, Value: float64(sum.RawBytes)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatWireBytes, Unit: "decbytes"}, Value: float64(sum.WireBytes)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatRatio}, Value: ratio},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatEncode, Unit: "ms"}, Value: math.Round(float64(sum.Encode.Nanoseconds())/1e3) / 1e3},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatCodec + e.codec}, Value: float64(e.ipc.Codec().Level())},
	)
	return &m
}

// bytesView returns b as a string without copying. The caller must not
// modify b while the string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
