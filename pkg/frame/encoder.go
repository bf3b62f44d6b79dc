package frame

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
)

// Input is one frame to encode, in either of the two shapes a source hands
// over: exactly one of Frame and Record is set.
type Input struct {
	// Frame is an SDK frame; its field vectors are read in place.
	Frame *data.Frame
	// Record is an Arrow record whose schema carries Grafana's metadata
	// (see SchemaMetadata and ColumnMetadata).
	Record arrow.RecordBatch
}

// Encoder writes Grafana frames as Arrow IPC files. It is not safe for
// concurrent use; its scratch memory is reused from one frame to the next.
type Encoder struct {
	ipc   *arrowipc.Encoder
	codec string // the codec as stats show it
	level int    // the codec's level, the value of its stat
	auto  bool   // the codec is auto: stats say what it chose

	fields  []arrowipc.Field
	kvs     []arrowipc.KeyValue
	cols    []arrowipc.Column
	scratch []scratch
	text    []byte // labels JSON of the frame being written
	keys    []string

	// The meta JSON of the last frame, by pointer (see Append; holding the
	// pointer keeps its address from being reused).
	lastMeta     *data.FrameMeta
	lastMetaJSON string
}

// NewEncoder returns an Encoder that writes with the given options.
func NewEncoder(o arrowipc.Options) (*Encoder, error) {
	ipc, err := arrowipc.NewEncoder(o)
	if err != nil {
		return nil, err
	}
	c := o.Codec
	name := c.String() + " (" + c.Effective() + ")"
	auto := c.Kind() == codec.Auto
	if auto {
		name = c.String() + "/" + cmp.Or(o.Preference.Name, codec.DefaultPreference) // completed by withStats
	}
	return &Encoder{ipc: ipc, codec: name, level: c.Level(), auto: auto}, nil
}

// Decoder is a generation of Grafana's decoder (codec.Decoder), named here
// so that the packages that borrow encoders need not import codec.
type Decoder = codec.Decoder

// SetDecoder sets the generation of Grafana's decoder that codec auto
// prices the next frames by (see arrowipc.Encoder.SetDecoder).
func (e *Encoder) SetDecoder(d *Decoder) { e.ipc.SetDecoder(d) }

// Append appends in as one Arrow IPC file (one record batch) to dst and
// returns the extended slice (dst unextended on error) and what compression
// did to its body, whose PerBuffer is valid until the next Append. For the
// same data a Frame and a Record give the same bytes. With dst nil (or
// empty without the room) the file is written into memory of exactly its
// size (see arrowipc.Encoder.AppendFile).
//
// With stats nil the frame carries its own meta only. Otherwise it is the
// frame that carries a query's encoding statistics in meta.stats, where
// Grafana's query inspector shows them: frames, body bytes raw and on the
// wire, their ratio, the codec and the encode time, summed over *stats (the
// query's other frames) and this frame. Stats differ from run to run (the
// time); frames without them do not.
//
// A Frame's Meta is treated as immutable: the encoder keeps the JSON of the
// last meta it wrote by pointer, so that frames sharing one FrameMeta pay
// for its encoding once; change a meta only through a copy.
func (e *Encoder) Append(dst []byte, in Input, stats *Summary) ([]byte, arrowipc.BodyStats, error) {
	var kvs []arrowipc.KeyValue
	var st arrowipc.BodyStats
	var err error
	switch {
	case in.Frame != nil && in.Record != nil:
		err = fmt.Errorf("frame: input %q holds both a frame and a record", in.Frame.Name)
	case in.Frame != nil:
		kvs, st, err = e.prepareFrame(in.Frame, stats)
		clear(e.cols) // the arrowipc encoder holds what it needs
	case in.Record != nil:
		kvs, st, err = e.prepareRecord(in.Record, stats)
	default:
		err = fmt.Errorf("frame: nil frame (the input holds neither a frame nor a record)")
	}
	if err != nil {
		return dst, arrowipc.BodyStats{}, err
	}
	if dst, err = e.ipc.AppendFile(dst, kvs); err != nil {
		return dst, arrowipc.BodyStats{}, fmt.Errorf("frame: %w", err)
	}
	return dst, st, nil
}

// prepareFrame lays f's fields out as columns with their metadata, prepares
// them in the arrowipc encoder and returns f's schema metadata, with the
// query's stats when stats is set.
func (e *Encoder) prepareFrame(f *data.Frame, stats *Summary) ([]arrowipc.KeyValue, arrowipc.BodyStats, error) {
	start := time.Now()
	rows, err := f.RowLen()
	if err != nil {
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %q: %w", f.Name, err)
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
			return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %q: field %d is nil", f.Name, i)
		}
		k, ok := kinds[fld.Type()]
		if !ok {
			return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: field %q: field type %s cannot be written", fld.Name, fld.Type())
		}
		from := len(e.kvs)
		if fld.Config != nil {
			b, err := json.Marshal(fld.Config)
			if err != nil {
				return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: field %q: encoding config: %w", fld.Name, err)
			}
			e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyConfig, Value: string(b)})
		}
		if fld.Labels != nil {
			at := len(e.text)
			e.text, e.keys = appendLabelsQuoted(e.text, fld.Labels, e.keys, quoteCompacted)
			e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyLabels, Value: bytesView(e.text[at:])})
		}
		e.kvs = append(e.kvs, arrowipc.KeyValue{Key: KeyTSType, Value: k.tstype})
		e.fields = append(e.fields, arrowipc.Field{Name: fld.Name, Type: k.arrow, Nullable: k.nullable, Metadata: e.kvs[from:len(e.kvs):len(e.kvs)]})

		c := k.column(fld, &e.scratch[i])
		if c.Offsets != nil && len(c.Values) > math.MaxInt32 {
			return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: field %q: %d bytes of values exceed the 2 GiB a utf8 or binary column can hold", fld.Name, len(c.Values))
		}
		e.cols = append(e.cols, c)
	}
	st, err := e.ipc.Prepare(e.fields, rows, e.cols)
	if err != nil {
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %q: %w", f.Name, err)
	}
	kvs, err := e.schemaMetaOfFrame(f, st, stats, start)
	if err != nil {
		e.ipc.Discard()
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %q: %w", f.Name, err)
	}
	return kvs, st, nil
}

// schemaMetaOfFrame returns the schema metadata of f, whose body st
// describes, with the query's stats when stats is set.
func (e *Encoder) schemaMetaOfFrame(f *data.Frame, st arrowipc.BodyStats, stats *Summary, start time.Time) ([]arrowipc.KeyValue, error) {
	at := len(e.kvs)
	switch {
	case stats != nil:
		b, err := json.Marshal(e.withStats(f.Meta, stats, st, start))
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
	return e.kvs[at:], nil
}

// AppendLent is Append for a record whose larger buffers the frame
// references rather than copies (arrowipc.AppendFilePieces): the frame is
// the returned pieces in order, under the lending contract of
// source.RecordLender. Joined, the pieces are the bytes Append writes.
func (e *Encoder) AppendLent(rec arrow.RecordBatch, stats *Summary) ([][]byte, arrowipc.BodyStats, error) {
	kvs, st, err := e.prepareRecord(rec, stats)
	if err != nil {
		return nil, arrowipc.BodyStats{}, err
	}
	pieces, err := e.ipc.AppendFilePieces(kvs)
	if err != nil {
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %w", err)
	}
	return pieces, st, nil
}

// prepareRecord prepares rec's batch and returns its schema metadata, with
// the query's stats when stats is set (see Append).
func (e *Encoder) prepareRecord(rec arrow.RecordBatch, stats *Summary) ([]arrowipc.KeyValue, arrowipc.BodyStats, error) {
	start := time.Now()
	st, err := e.ipc.PrepareRecord(rec)
	if err != nil {
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %w", err)
	}
	kvs, err := e.schemaMetaOfRecord(rec.Schema().Metadata(), st, stats, start)
	if err != nil {
		e.ipc.Discard()
		return nil, arrowipc.BodyStats{}, fmt.Errorf("frame: %w", err)
	}
	return kvs, st, nil
}

// schemaMetaOfRecord returns a record's schema metadata md, with the
// query's stats added to its meta when stats is set.
func (e *Encoder) schemaMetaOfRecord(md arrow.Metadata, st arrowipc.BodyStats, stats *Summary, start time.Time) ([]arrowipc.KeyValue, error) {
	kvs, at := arrowipc.AppendMetadata(e.kvs[:0], md), md.FindKey(KeyMeta)
	e.kvs = kvs
	if stats == nil {
		return kvs, nil
	}
	var meta *data.FrameMeta
	if at >= 0 {
		m, err := data.FrameMetaFromJSON(kvs[at].Value)
		if err != nil {
			return nil, fmt.Errorf("reading the record's meta: %w", err)
		}
		meta = m
	}
	b, err := json.Marshal(e.withStats(meta, stats, st, start))
	if err != nil {
		return nil, fmt.Errorf("encoding meta: %w", err)
	}
	if at < 0 { // "meta" sorts before "name" and "refId"
		e.kvs, at = slices.Insert(e.kvs, 0, arrowipc.KeyValue{Key: KeyMeta}), 0
	}
	e.kvs[at].Value = string(b)
	return e.kvs, nil
}

// Stat names, as the query inspector shows them.
const (
	StatFrames    = "Quiver frames"
	StatRawBytes  = "Quiver body bytes (raw)"
	StatWireBytes = "Quiver body bytes (wire)"
	StatRatio     = "Quiver compression ratio"
	StatEncode    = "Quiver encode time"
	// StatCodec is followed by the codec setting and, in parentheses, what
	// it became: "zstd/3 (zstd default)", "lz4/0 (lz4 fast)". For codec
	// auto, the preference and the codec it sent every frame with,
	// "auto/cpu (none)", or "auto/cpu" when it chose per frame differently,
	// followed by StatFramesAs stats. The value is the level setting (0 for
	// auto, which picks its levels itself).
	StatCodec = "Quiver codec "
	// Body buffers by what became of them (see arrowipc.BufferOutcome).
	StatCompressed = "Quiver buffers compressed"
	StatRaw        = "Quiver buffers stored raw"
	StatSkipped    = "Quiver buffers skipped (not tried)"
	// StatFramesAs is followed by a codec name: the frames sent with it,
	// shown for codec auto when it sent the query's frames with more than
	// one codec (codecs it sent no frame with are left out).
	StatFramesAs = "Quiver frames sent as "
)

// withStats returns a copy of meta (or a new one) with the query's encoding
// stats appended: others plus this frame, whose body st describes and whose
// encoding began at start. Under codec auto, when one codec carried every
// frame, the codec stat names it (a frame count per codec would make auto's
// stats longer than an explicit codec's, and its response larger than
// theirs); else StatFramesAs stats count the frames of each codec.
func (e *Encoder) withStats(meta *data.FrameMeta, others *Summary, st arrowipc.BodyStats, start time.Time) *data.FrameMeta {
	m := data.FrameMeta{}
	if meta != nil {
		m = *meta
	}
	sum := *others
	sum.Add(st, time.Since(start))
	ratio := 1.0
	if sum.WireBytes > 0 {
		ratio = math.Round(float64(sum.RawBytes)/float64(sum.WireBytes)*100) / 100
	}
	sole, used := codec.None, 0 // the last codec that carried a frame, and how many did
	for k, n := range sum.ByCodec {
		if n > 0 {
			sole, used = codec.Kind(k), used+1
		}
	}
	codecName := e.codec
	if e.auto && used <= 1 {
		codecName += " (" + sole.String() + ")"
	}
	m.Stats = append(slices.Clip(m.Stats),
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatFrames}, Value: float64(sum.Frames)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatRawBytes, Unit: "decbytes"}, Value: float64(sum.RawBytes)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatWireBytes, Unit: "decbytes"}, Value: float64(sum.WireBytes)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatRatio}, Value: ratio},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatEncode, Unit: "ms"}, Value: math.Round(float64(sum.Encode.Nanoseconds())/1e3) / 1e3},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatCodec + codecName}, Value: float64(e.level)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatCompressed}, Value: float64(sum.Compressed)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatRaw}, Value: float64(sum.Raw)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatSkipped}, Value: float64(sum.Skipped)},
	)
	for k, n := range sum.ByCodec {
		if e.auto && used > 1 && n > 0 {
			m.Stats = append(m.Stats, data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: StatFramesAs + codec.Kind(k).String()}, Value: float64(n)})
		}
	}
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
