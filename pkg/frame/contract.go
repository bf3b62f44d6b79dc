package frame

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Metadata keys Grafana's decoder reads (SDK data/arrow.go).
const (
	KeyName   = "name"   // schema: the frame's name
	KeyRefID  = "refId"  // schema: the query's refId
	KeyMeta   = "meta"   // schema: data.FrameMeta as JSON, only when set
	KeyTSType = "tstype" // field: the TypeScript type (TSNumber…)
	KeyLabels = "labels" // field: data.Labels as JSON, only when non-nil
	KeyConfig = "config" // field: data.FieldConfig as JSON, only when set
)

// TypeScript type names the SDK writes under KeyTSType.
const (
	TSNumber  = "number"
	TSString  = "string"
	TSBoolean = "boolean"
	TSTime    = "time"
	TSEnum    = "enum"
	TSOther   = "other"
)

// Timestamp is the one timestamp type Grafana's reader interprets correctly:
// nanoseconds, no time zone (the reader ignores both unit and zone).
var Timestamp = &arrow.TimestampType{Unit: arrow.Nanosecond}

// SchemaMetadata returns the schema metadata of a frame as the SDK writes it.
func SchemaMetadata(name, refID string, meta *data.FrameMeta) (arrow.Metadata, error) {
	if meta == nil {
		return arrow.NewMetadata([]string{KeyName, KeyRefID}, []string{name, refID}), nil
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return arrow.Metadata{}, fmt.Errorf("frame: encoding meta: %w", err)
	}
	return arrow.NewMetadata([]string{KeyMeta, KeyName, KeyRefID}, []string{string(b), name, refID}), nil
}
