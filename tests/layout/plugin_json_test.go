package layout

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// plugin.json's grafanaDependency, read as the plugin validator reads it
// (github.com/Masterminds/semver/v3): the Grafana versions the editors are
// tested on (the @grafana/* 12.4 and 13.2 lines, tests/react19) and the
// pre-release builds Grafana Cloud and nightlies report are admitted; the
// untested 12.3 and older are not.
func TestGrafanaDependencyAdmitsWhatIsTested(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Dependencies struct {
			GrafanaDependency string `json:"grafanaDependency"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	c, err := semver.NewConstraint(p.Dependencies.GrafanaDependency)
	if err != nil {
		t.Fatalf("grafanaDependency %q: %v", p.Dependencies.GrafanaDependency, err)
	}
	for v, want := range map[string]bool{
		"12.4.0": true, "12.4.10": true, "13.0.3": true, "13.2.3": true,
		"13.3.0-123456": true, "14.0.0-pre": true, "12.4.0-98765": true,
		"12.3.0": false, "12.3.9": false, "11.6.11": false, "10.3.0": false,
	} {
		if got := c.Check(semver.MustParse(v)); got != want {
			t.Errorf("grafanaDependency %q admits %s: %v, want %v", p.Dependencies.GrafanaDependency, v, got, want)
		}
	}
}
