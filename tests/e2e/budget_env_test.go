package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/tests/harness"
)

// On Grafana 12.4 and later a plugin inherits nothing of the host's
// environment: its plugin-wide settings come from its grafana.ini section
// ([plugin.quiver-arrow-datasource]), which Grafana passes as GF_PLUGIN_
// variables. Started with exactly such an environment (and a
// QUIVER_MEMORY_BUDGET in the test's own, which must not reach it), the
// plugin uses and logs the section's budget.
func TestBudgetFromGrafanaIniSection(t *testing.T) {
	t.Setenv("QUIVER_MEMORY_BUDGET", "1GiB")
	env := []string{
		"GF_VERSION=13.2.0", "GF_EDITION=Open Source", "GF_PLUGIN_VERSION=0.1.0",
		"GF_PLUGIN_MEMORY_BUDGET=48MiB", "GF_PLUGIN_MEMORY_BUDGET_WAIT=45s", "GF_PLUGIN_GO_MEMORY_LIMIT=768MiB",
	}
	if path := os.Getenv("PATH"); path != "" {
		env = append(env, "PATH="+path) // one of the host variables Grafana passes on
	}
	var log syncBuffer
	p, err := harness.StartAsGrafana(binary, &log, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if got := metricsOf(t, p)["quiver_memory_budget_bytes"]; got != 48<<20 {
		t.Errorf("budget %.0f bytes, want the 48 MiB of grafana.ini's section", got)
	}
	if got := metricsOf(t, p)["go_gc_gomemlimit_bytes"]; got != 768<<20 {
		t.Errorf("Go memory limit %.0f bytes, want the 768 MiB of go_memory_limit", got)
	}
	if want := "memory_budget in [plugin.quiver-arrow-datasource] = 48MiB"; !strings.Contains(log.String(), want) {
		t.Errorf("the start-up log does not say %q:\n%s", want, log.String())
	}
	if !strings.Contains(log.String(), "wait=45s") {
		t.Errorf("the start-up log does not give the section's wait of 45s:\n%s", log.String())
	}
	if res, err := p.Health(ctx(t), instance(`{}`, nil)); err != nil || res.Status != pluginv2.CheckHealthResponse_OK {
		t.Errorf("health check: %v %v", err, res)
	}
}
