package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// frameBuilder turns the normalised batches of one query into frames: the
// table and logs builders, and the series split (series.Builder).
type frameBuilder interface {
	// Finish hands the frames to sink, the notices on the first one,
	// waiting with ctx (source.Sink).
	Finish(ctx context.Context, sink source.Sink, notices []data.Notice) error
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

// newFrameRecord is frame.NewRecord for columns normalised to types
// Grafana reads: each column's Grafana type is its Arrow type's
// registration. It takes over the columns' arrays in every case.
func newFrameRecord(name, refID string, meta *data.FrameMeta, cols []frame.Column) (arrow.RecordBatch, error) {
	for i := range cols {
		g := typeOf(cols[i].Array.DataType().ID()).grafana
		if g == nil {
			err := fmt.Errorf("flightsql: internal: column %s has type %s after normalisation", source.Quote(cols[i].Name), cols[i].Array.DataType())
			frame.ReleaseColumns(cols)
			return nil, err
		}
		cols[i].TSType = g.tstype
	}
	rec, err := frame.NewRecord(name, refID, meta, cols)
	if err != nil {
		return nil, fmt.Errorf("flightsql: %w", err)
	}
	return rec, nil
}
