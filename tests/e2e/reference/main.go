// Command reference is the yardstick of Quiver's end-to-end benchmark: a
// plugin that serves the same demo frames through the SDK's standard path
// (datasource.Manage, backend.QueryDataHandler, the SDK's MarshalArrow).
// It is built by the benchmark only and never shipped.
package main

import (
	"context"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/demo"
)

type instance struct{}

func (instance) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		var frames collect
		err := demo.New().Query(ctx, source.Query{
			RefID: q.RefID, JSON: q.JSON, From: q.TimeRange.From, To: q.TimeRange.To,
			Interval: q.Interval, MaxDataPoints: q.MaxDataPoints,
		}, &frames)
		resp.Responses[q.RefID] = backend.DataResponse{Frames: frames.list, Error: err}
	}
	return resp, nil
}

type collect struct{ list data.Frames }

func (c *collect) Frame(_ context.Context, f *data.Frame) error {
	c.list = append(c.list, f)
	return nil
}
func (c *collect) Record(_ context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	f, err := data.FromArrowRecord(rec)
	if err == nil {
		c.list = append(c.list, f)
	}
	return err
}

func main() {
	err := datasource.Manage("quiver-reference-datasource", func(context.Context, backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
		return instance{}, nil
	}, datasource.ManageOpts{})
	if err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
