package demo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProvisionedVariableAndAnnotation runs the provisioned dashboard's query
// variables and annotations on the demo source: the host variable lists
// hosts and the annotation finds events over the dashboard's 6 h.
func TestProvisionedVariableAndAnnotation(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "provisioning", "dashboards", "quiver-codecs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name, Type string
				Query      json.RawMessage
			}
		}
		Annotations struct {
			List []struct {
				Name       string
				Datasource struct{ Type string }
				Target     json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	variables, annotations := 0, 0
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		variables++
		frames, err := run(t, query(string(v.Query)))
		if err != nil || len(frames) != 1 || frames[0].Rows() == 0 {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		if v.Name == "host" && (frames[0].Rows() != 50 || frames[0].Fields[0].At(0) != "host-1") {
			t.Errorf("host variable: %d values, first %v", frames[0].Rows(), frames[0].Fields[0].At(0))
		}
	}
	for _, a := range d.Annotations.List {
		if a.Datasource.Type != "quiver-arrow-datasource" {
			continue
		}
		annotations++
		q := query(string(a.Target))
		q.From = q.To.Add(-6 * time.Hour)
		frames, err := run(t, q)
		if err != nil || len(frames) != 1 || frames[0].Rows() == 0 {
			t.Fatalf("annotation %s: %v", a.Name, err)
		}
	}
	if variables != 1 || annotations != 1 {
		t.Errorf("%d query variables, %d Quiver annotations: want one of each", variables, annotations)
	}
}
