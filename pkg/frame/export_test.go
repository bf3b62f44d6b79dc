package frame

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Test-support functions: only tests call them.

// AppendJSON appends in as the SDK's data-frame JSON to dst with a new
// JSONWriter (see JSONWriter.Append); a caller writing many frames should
// keep a JSONWriter.
func AppendJSON(dst []byte, in Input) ([]byte, error) {
	var w JSONWriter
	return w.Append(dst, in)
}

// FieldMetadata returns a field's metadata as the SDK writes it: config and
// labels only when set, tstype always.
func FieldMetadata(tstype string, labels data.Labels, config *data.FieldConfig) (arrow.Metadata, error) {
	c := ""
	if config != nil {
		b, err := json.Marshal(config)
		if err != nil {
			return arrow.Metadata{}, err
		}
		c = string(b)
	}
	return ColumnMetadata(tstype, labels, c), nil
}

// Rows returns the rows of the frame's parts.
func (p *Parts) Rows() int64 { return p.rows }
