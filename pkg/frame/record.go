package frame

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Column is one field of a frame's record as NewRecord builds it.
type Column struct {
	Name  string
	Array arrow.Array // NewRecord takes it over
	// TSType is Grafana's type of the field (TSNumber, TSTime, …).
	TSType string
	Labels data.Labels // nil: no labels key
	Config string      // FieldConfig JSON; "": no config key
	// Metadata, when set, is the field's metadata as ColumnMetadata makes
	// it, built once for many frames; TSType, Labels and Config are then
	// not read.
	Metadata *arrow.Metadata
}

// ColumnMetadata is the metadata of a field of Grafana type tstype with
// labels and a FieldConfig's JSON (none when ""), as the SDK writes it.
func ColumnMetadata(tstype string, labels data.Labels, config string) arrow.Metadata {
	keys, values := make([]string, 0, 3), make([]string, 0, 3)
	if config != "" {
		keys, values = append(keys, KeyConfig), append(values, config)
	}
	if labels != nil {
		b, _ := appendLabelsQuoted(nil, labels, nil, quoteCompacted)
		keys, values = append(keys, KeyLabels), append(values, string(b))
	}
	return arrow.NewMetadata(append(keys, KeyTSType), append(values, tstype))
}

// NewRecord builds the record of one frame: its schema carries Grafana's
// metadata exactly as the SDK writes it, and a field is nullable exactly
// when its column holds nulls. It takes over the columns' arrays (releasing
// them in every case), so the caller only owns the returned record.
func NewRecord(name, refID string, meta *data.FrameMeta, cols []Column) (arrow.RecordBatch, error) {
	md, err := SchemaMetadata(name, refID, meta)
	if err != nil {
		ReleaseColumns(cols)
		return nil, fmt.Errorf("frame: %w", err)
	}
	return NewRecordMD(md, cols)
}

// NewRecordMD is NewRecord with the frame's schema metadata (SchemaMetadata)
// given.
func NewRecordMD(md arrow.Metadata, cols []Column) (arrow.RecordBatch, error) {
	defer ReleaseColumns(cols)
	afs := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	rows := 0
	for i, c := range cols {
		if i > 0 && c.Array.Len() != rows {
			return nil, fmt.Errorf("frame: internal: column %q has %d rows, want %d", c.Name, c.Array.Len(), rows)
		}
		rows = c.Array.Len()
		afs[i] = arrow.Field{Name: c.Name, Type: c.Array.DataType(), Nullable: c.Array.NullN() > 0, Metadata: c.metadata()}
		arrs[i] = c.Array
	}
	return array.NewRecordBatch(arrow.NewSchema(afs, &md), arrs, int64(rows)), nil
}

func (c *Column) metadata() arrow.Metadata {
	if c.Metadata != nil {
		return *c.Metadata
	}
	return ColumnMetadata(c.TSType, c.Labels, c.Config)
}

// ReleaseColumns releases the arrays of columns no record took over.
func ReleaseColumns(cols []Column) {
	for _, c := range cols {
		c.Array.Release()
	}
}
