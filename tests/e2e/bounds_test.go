package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/tests/harness"
)

// callResource calls a resource of pc on p as Grafana does and returns the
// answer's status and its error message ("" when the body has none).
func callResource(t *testing.T, p *harness.Plugin, pc *pluginv2.PluginContext, method, path, body string) (int, string, []byte) {
	t.Helper()
	u, _, _ := strings.Cut(path, "?")
	stream, err := p.Resource.CallResource(ctx(t), &pluginv2.CallResourceRequest{PluginContext: pc, Path: u, Method: method, Url: path, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	_ = json.Unmarshal(r.Body, &e)
	return int(r.Code), e.Error, r.Body
}

// The codec advisor is for users who may edit the data source: Grafana's
// plugin context names the user's role; a Viewer and a request without a
// user get a 403 saying who may, an Editor the figures.
func TestAdviseRefusedToViewers(t *testing.T) {
	body := `{"query":{"scenario":"random_walk","seriesCount":2,"seed":1},"from":1764583200000,"to":1764586800000,"maxDataPoints":100}`
	for _, c := range []struct {
		user   *pluginv2.User
		status int
		want   string
	}{
		{nil, 403, "no signed-in user"},
		{&pluginv2.User{Login: "v", Role: "Viewer"}, 403, `role "Viewer" may not run the advisor`},
		{&pluginv2.User{Login: "e", Role: "Editor"}, 200, ""},
	} {
		pc := instance(`{}`, nil)
		pc.User = c.user
		status, msg, raw := callResource(t, plug, pc, "POST", "advise", body)
		if status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%v: %d %q, want %d naming %q", c.user, status, msg, c.status, c.want)
		}
		if status == 200 && !strings.Contains(string(raw), `"settings"`) {
			t.Errorf("%v: no figures: %.200s", c.user, raw)
		}
	}
}

// GET columns matches the table literally: "%" and "_" name tables, they
// do not list every table's schema; the 404 quotes 64 bytes of the name.
func TestColumnsTableIsLiteral(t *testing.T) {
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, name := range []string{"aXb", "a_b", "%", "x"} {
		col := "c_" + url.QueryEscape(name)
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE "%s" ("%s" INTEGER)`, name, col)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	pc := instance(fmt.Sprintf(`{"upstream":"flightsql","address":%q}`, serveFlightSQL(t, srv)), nil)
	for _, name := range []string{"a_b", "aXb", "%", "x"} {
		status, msg, raw := callResource(t, plug, pc, "GET", "columns?table="+url.QueryEscape(name), "")
		var got struct{ Columns []struct{ Name string } }
		_ = json.Unmarshal(raw, &got)
		if want := "c_" + url.QueryEscape(name); status != 200 || len(got.Columns) != 1 || got.Columns[0].Name != want {
			t.Errorf("table %q: %d %q %s, want its one column %s", name, status, msg, raw, want)
		}
	}
	for _, name := range []string{"_", "a%", strings.Repeat("q", 5000)} {
		status, msg, _ := callResource(t, plug, pc, "GET", "columns?table="+url.QueryEscape(name), "")
		if status != 404 || !strings.Contains(msg, "not found") || len(msg) > 160 {
			t.Errorf("table %.80q: %d %q, want a 404 quoting at most 64 bytes", name, status, msg)
		}
	}
}

// QUIVER_MEMORY_BUDGET_WAIT=0s would fail every wait at once: the plugin
// logs the refusal at start-up, runs with the default and fails every health
// check naming the variable.
func TestZeroBudgetWaitRefused(t *testing.T) {
	p, err := harness.Start(binary, io.Discard, "QUIVER_MEMORY_BUDGET_WAIT=0s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	res, err := p.Health(ctx(t), instance(`{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != pluginv2.CheckHealthResponse_ERROR || !strings.Contains(res.Message, `QUIVER_MEMORY_BUDGET_WAIT: "0s" is below 1s`) || !strings.Contains(res.Message, "that setting's default") {
		t.Errorf("health %v %q", res.Status, res.Message)
	}
}
