package flightsql

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// frameBuilder turns the normalised batches of one query into frames: the
// table and logs builders, and the series split (series.Builder).
type frameBuilder interface {
	// Add routes the rows of one batch; rec is not kept unless retained.
	Add(rec arrow.RecordBatch) error
	// Finish hands the frames to sink, the notices on the first one.
	Finish(sink source.Sink, notices []data.Notice) error
	// Release frees what Finish did not hand over.
	Release()
}

// frameInfo is what every frame of one query carries.
type frameInfo struct {
	refID  string
	sql    string // the SQL sent, after macros: meta.executedQueryString
	limits source.Limits
}

// meta is the FrameMeta of one frame of the query.
func (fi *frameInfo) meta(typ data.FrameType, version data.FrameTypeVersion, notices []data.Notice) *data.FrameMeta {
	return &data.FrameMeta{Type: typ, TypeVersion: version, ExecutedQueryString: fi.sql, Notices: notices}
}

// describeColumns names the columns of s and their types, for errors.
func describeColumns(s *arrow.Schema) string {
	if s.NumFields() == 0 {
		return "no columns"
	}
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
	}
	return "columns " + strings.Join(parts, ", ")
}

// releaseArrays releases the arrays of as and clears them.
func releaseArrays(as []arrow.Array) {
	for i, a := range as {
		if a != nil {
			a.Release()
			as[i] = nil
		}
	}
}

// Metadata keys of Grafana's Arrow frames (package frame owns them).
const (
	mdConfig = frame.KeyConfig
)

// outField is one column of a frame on its way to the Sink.
type outField struct {
	name   string
	arr    arrow.Array
	labels data.Labels // nil: no labels key
	config string      // FieldConfig JSON; "": no config key
	// md, when set, is the field's metadata as the labels and config
	// above make it (fieldMetadata), built once for many frames.
	md *arrow.Metadata
}

// metadata is f's field metadata: md, or built from the labels and config.
func (f *outField) metadata() (arrow.Metadata, error) {
	if f.md != nil {
		return *f.md, nil
	}
	return fieldMetadata(f.arr.DataType(), f.labels, f.config)
}

// fieldMetadata is the metadata of a field of type dt with labels and
// config (see outField) as the SDK writes it.
func fieldMetadata(dt arrow.DataType, labels data.Labels, config string) (arrow.Metadata, error) {
	md, err := frame.FieldMetadata(typeOf(dt.ID()).grafana.tstype, labels, nil)
	if err != nil {
		return arrow.Metadata{}, err
	}
	if config != "" { // "config" sorts first, as the SDK writes it
		md = arrow.NewMetadata(append([]string{frame.KeyConfig}, md.Keys()...), append([]string{config}, md.Values()...))
	}
	return md, nil
}

// newFrameRecord builds the record of one frame: the schema carries Grafana's
// metadata exactly as the SDK writes it, and a field is nullable exactly when
// its column holds nulls. It takes over the arrays of fields (releasing them
// in every case), so the caller only owns the returned record.
func newFrameRecord(name, refID string, meta *data.FrameMeta, fields []outField) (arrow.RecordBatch, error) {
	md, err := frame.SchemaMetadata(name, refID, meta)
	if err != nil {
		releaseFields(fields)
		return nil, fmt.Errorf("flightsql: %w", err)
	}
	return newFrameRecordMD(md, fields)
}

func releaseFields(fields []outField) {
	for _, f := range fields {
		f.arr.Release()
	}
}

// newFrameRecordMD is newFrameRecord with the frame's schema metadata
// (frame.SchemaMetadata) given.
func newFrameRecordMD(md arrow.Metadata, fields []outField) (arrow.RecordBatch, error) {
	defer releaseFields(fields)
	afs := make([]arrow.Field, len(fields))
	cols := make([]arrow.Array, len(fields))
	rows := -1
	for i, f := range fields {
		if typeOf(f.arr.DataType().ID()).grafana == nil {
			return nil, fmt.Errorf("flightsql: internal: column %q has type %s after normalisation", f.name, f.arr.DataType())
		}
		if rows >= 0 && f.arr.Len() != rows {
			return nil, fmt.Errorf("flightsql: internal: column %q has %d rows, want %d", f.name, f.arr.Len(), rows)
		}
		rows = f.arr.Len()
		fmd, err := f.metadata()
		if err != nil {
			return nil, fmt.Errorf("flightsql: metadata of %q: %w", f.name, err)
		}
		afs[i] = arrow.Field{Name: f.name, Type: f.arr.DataType(), Nullable: f.arr.NullN() > 0, Metadata: fmd}
		cols[i] = f.arr
	}
	if rows < 0 {
		rows = 0
	}
	return array.NewRecordBatch(arrow.NewSchema(afs, &md), cols, int64(rows)), nil
}

// fieldConfigJSON returns the JSON of cfg as the SDK writes it.
func fieldConfigJSON(cfg *data.FieldConfig) string {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "" // a FieldConfig built by this package always marshals
	}
	return string(b)
}
