package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/quiverdata/quiver/pkg/source"
)

// reportingSource is a source whose health check tells what it found.
type reportingSource struct {
	fakeSource
	msg string
	err error
}

func (r reportingSource) CheckHealth(ctx context.Context) error {
	_, err := r.HealthReport(ctx)
	return err
}
func (r reportingSource) HealthReport(context.Context) (string, error) {
	return r.msg, r.err
}

// TestHealthReport: the health check shows a HealthReporter's message (the
// dialect the Flight SQL source chose, say), and its error as a failure.
func TestHealthReport(t *testing.T) {
	var _ source.HealthReporter = reportingSource{}
	for _, tc := range []struct {
		src    reportingSource
		status backend.HealthStatus
		msg    string
	}{
		{reportingSource{msg: "Connected to DuckDB v1.4.1 at db:1; SQL dialect duckdb (auto)"}, backend.HealthStatusOk,
			"Connected to DuckDB v1.4.1 at db:1; SQL dialect duckdb (auto); frames are sent as auto (none, lz4 or zstd per frame, preferring cpu)"},
		{reportingSource{err: errors.New("flightsql: unreachable")}, backend.HealthStatusError, "flightsql: unreachable"},
	} {
		s := newTestService(t, tc.src, 1)
		pc := backend.FromProto().PluginContext(pluginContext(`{}`))
		res, err := s.CheckHealth(context.Background(), &backend.CheckHealthRequest{PluginContext: pc})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != tc.status || !strings.HasPrefix(res.Message, tc.msg) {
			t.Errorf("got %v %q, want %v %q…", res.Status, res.Message, tc.status, tc.msg)
		}
	}
}
