// Package layout checks the package graph of design.md §5: arrows point
// down only, and only the plugin wiring touches the SDK's backend.
package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/quiverdata/quiver/"

// allowed lists, per package, the Quiver packages its non-test files may
// import. A package missing here fails the test: add it deliberately.
var allowed = map[string][]string{
	"pkg":                  {"pkg/plugin"},
	"pkg/plugin":           {"pkg/arrowipc", "pkg/codec", "pkg/frame", "pkg/settings", "pkg/source", "pkg/source/demo", "pkg/source/flightsql"},
	"pkg/source/demo":      {"pkg/frame", "pkg/source"},
	"pkg/source/flightsql": {"pkg/frame", "pkg/settings", "pkg/source"},
	"pkg/source":           {},
	"pkg/settings":         {},
	"pkg/frame":            {"pkg/arrowipc", "pkg/codec"},
	"pkg/frame/frametest":  {},
	"pkg/arrowipc":         {"pkg/codec"},
	"pkg/codec":            {},
	"pkg/harness":          {"pkg/frame"},
}

// Third-party rules: what must stay out of a package.
var forbidden = map[string][]string{
	"pkg/codec":            {"github.com/apache/arrow-go", "github.com/grafana/"},
	"pkg/arrowipc":         {"github.com/grafana/"},
	"pkg/frame":            {"github.com/grafana/grafana-plugin-sdk-go/backend"},
	"pkg/source":           {"github.com/grafana/grafana-plugin-sdk-go/backend"},
	"pkg/source/demo":      {"github.com/grafana/grafana-plugin-sdk-go/backend"},
	"pkg/source/flightsql": {"github.com/grafana/grafana-plugin-sdk-go/backend"},
}

func TestPackageGraph(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		seen[pkg] = true
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("%s: package not in the layout table of this test", pkg)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				dep := strings.TrimPrefix(p, module)
				if !contains(ok, dep) {
					t.Errorf("%s imports %s: not allowed (design.md §5)", rel, dep)
				}
				continue
			}
			for _, bad := range forbidden[pkg] {
				if strings.HasPrefix(p, bad) {
					t.Errorf("%s imports %s, which it must not", rel, p)
				}
			}
			if pkg == "pkg/settings" && strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("pkg/settings imports %s: it uses the standard library only", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("%s: in the layout table but not in the tree", pkg)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
