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

func (r reportingSource) HealthReport(context.Context) (string, error) {
	return r.msg, r.err
}

// TestHealthReport: the health check shows a HealthReporter's message (the
// dialect the Flight SQL source chose, say), and its error as a failure
// whose error source says whose fault it is: the upstream's for an upstream
// error, the plugin's (its settings) otherwise.
func TestHealthReport(t *testing.T) {
	var _ source.HealthReporter = reportingSource{}
	for _, tc := range []struct {
		src      reportingSource
		jsonData string
		status   backend.HealthStatus
		errSrc   backend.ErrorSource
		msg      string
	}{
		{reportingSource{msg: "Connected to DuckDB v1.4.1 at db:1; SQL dialect duckdb (auto)"}, `{}`, backend.HealthStatusOk, "",
			"Connected to DuckDB v1.4.1 at db:1; SQL dialect duckdb (auto); frames are sent as auto (none, lz4 or zstd per frame, preferring cpu)"},
		{reportingSource{err: source.Upstream(errors.New("flightsql: unreachable"))}, `{}`, backend.HealthStatusError, backend.ErrorSourceDownstream, "flightsql: unreachable"},
		{reportingSource{err: errors.New("flightsql: no dialect")}, `{}`, backend.HealthStatusError, backend.ErrorSourcePlugin, "flightsql: no dialect"},
		{reportingSource{msg: "never asked"}, `{"codec":"brotli"}`, backend.HealthStatusError, backend.ErrorSourcePlugin, "settings: codec"},
	} {
		s := newTestService(t, tc.src, 1)
		pc := backend.FromProto().PluginContext(pluginContext(tc.jsonData))
		res, err := s.CheckHealth(context.Background(), &backend.CheckHealthRequest{PluginContext: pc})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != tc.status || res.ErrorSource != tc.errSrc || !strings.HasPrefix(res.Message, tc.msg) {
			t.Errorf("got %v %q %q, want %v %q %q…", res.Status, res.ErrorSource, res.Message, tc.status, tc.errSrc, tc.msg)
		}
	}
}

// TestResourceErrorSource: a failed resource response says whose fault it
// was by its status.
func TestResourceErrorSource(t *testing.T) {
	for status, want := range map[int]backend.ErrorSource{
		400: backend.ErrorSourcePlugin, 404: backend.ErrorSourcePlugin, 500: backend.ErrorSourcePlugin,
		502: backend.ErrorSourceDownstream, 503: backend.ErrorSourceDownstream, 504: backend.ErrorSourceDownstream,
	} {
		if got := resourceErrorSource(status); got != want {
			t.Errorf("status %d: got %q, want %q", status, got, want)
		}
	}
}
