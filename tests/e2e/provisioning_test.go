package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/tests/harness"
)

// provisionedServers, set in builds with the engine tags, starts local
// stand-ins for the servers docker-compose.yaml runs and returns their
// addresses by the compose ones.
var provisionedServers func(t *testing.T) map[string]string

// What docker compose provisions works as a new user finds it: the default
// data source uses the product's default codec (auto), every provisioned
// data source passes its health check, and every panel of the provisioned
// dashboards answers through the binary with frames and no error. The
// compose file's Flight SQL server and Redis are stood in for by local ones
// (provisionedServers) in builds with the engine tags; without them, the
// Flight SQL data sources and their panels are left out.
func TestProvisionedDataSourcesWork(t *testing.T) {
	wd, _ := os.Getwd()
	root, err := harness.RepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	sources, panels, err := harness.LoadProvisioning(root)
	if err != nil {
		t.Fatal(err)
	}
	defaults := 0
	ctxs := map[string]*pluginv2.PluginContext{}
	var local map[string]string // compose's host:port to a local server's
	if provisionedServers != nil {
		local = provisionedServers(t)
	}
	skipped := map[string]bool{}
	notices := map[string]bool{} // data sources whose panels show their incremental stats
	for _, ds := range sources {
		notices[ds.UID] = ds.JSONData["incrementalNotice"] == true
		if ds.JSONData["upstream"] == "flightsql" {
			if local == nil {
				t.Logf("%s: left out (no local Flight SQL server in this build)", ds.Name)
				skipped[ds.UID] = true
				continue
			}
			for _, k := range []string{"address", "redisAddress"} {
				if a, ok := ds.JSONData[k].(string); ok && a != "" {
					if local[a] == "" {
						t.Fatalf("%s: %s %s has no local stand-in", ds.Name, k, a)
					}
					ds.JSONData[k] = local[a]
				}
			}
		}
		if ds.Default {
			defaults++
			if ds.JSONData["codec"] != "auto" {
				t.Errorf("the default data source %q uses codec %v, not the product's default auto", ds.Name, ds.JSONData["codec"])
			}
		}
		js, err := json.Marshal(ds.JSONData)
		if err != nil {
			t.Fatal(err)
		}
		pc := instance(string(js), nil)
		res, err := plug.Health(ctx(t), pc)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != pluginv2.CheckHealthResponse_OK {
			t.Errorf("%s: health %v %q", ds.Name, res.Status, res.Message)
		}
		ctxs[ds.UID] = pc
	}
	if defaults != 1 {
		t.Errorf("%d default data sources, want 1", defaults)
	}
	ran := 0
	for _, pnl := range panels {
		if skipped[pnl.Datasource.UID] {
			ran++ // counted as run: left out by the build
			continue
		}
		pc := ctxs[pnl.Datasource.UID]
		if pc == nil {
			t.Errorf("panel %q uses data source %q, which is not provisioned", pnl.Title, pnl.Datasource.UID)
			continue
		}
		for _, target := range pnl.Targets {
			q := map[string]any{}
			for k, v := range target {
				if k != "datasource" {
					q[k] = v
				}
			}
			refID, _ := q["refId"].(string)
			resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, harness.Query(refID, q, from, t0, time.Minute, 1000))
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses[refID]
			if dr == nil || dr.Error != "" {
				t.Errorf("panel %q: %+v", pnl.Title, dr)
				continue
			}
			frames, err := data.UnmarshalArrowFrames(dr.Frames)
			if err != nil || len(frames) == 0 || frames[0].Rows() == 0 {
				t.Errorf("panel %q: %d frames, %v", pnl.Title, len(frames), err)
				continue
			}
			if notices[pnl.Datasource.UID] && !statsNotice(frames[0]) {
				t.Errorf("panel %q: no notice of its incremental stats in %v", pnl.Title, frames[0].Meta)
			}
			ran++
		}
	}
	if ran < len(panels) || !strings.Contains(sources[0].Name, "Quiver Demo") {
		t.Errorf("%d queries ran for %d panels; first data source %q", ran, len(panels), sources[0].Name)
	}
}

// statsNotice says whether f carries an info notice that opens Inspect →
// Stats (the incrementalNotice setting).
func statsNotice(f *data.Frame) bool {
	if f.Meta == nil {
		return false
	}
	for _, n := range f.Meta.Notices {
		if n.Severity == data.NoticeSeverityInfo && n.Inspect == data.InspectTypeStats {
			return true
		}
	}
	return false
}
