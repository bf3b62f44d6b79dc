// Package layout checks the package graph of design.md §5: arrows point
// down only, and only the plugin wiring touches the SDK's backend.
package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/quiverdata/quiver/"

// allowed lists, per package, the Quiver packages its non-test files may
// import. A package missing here fails the test: add it deliberately.
var allowed = map[string][]string{
	"pkg":                          {"pkg/plugin"},
	"pkg/plugin":                   {"pkg/arrowipc", "pkg/codec", "pkg/frame", "pkg/pipeline", "pkg/settings", "pkg/source", "pkg/source/demo", "pkg/source/flightsql"},
	"pkg/pipeline":                 {"pkg/arrowipc", "pkg/frame", "pkg/settings", "pkg/source"},
	"pkg/source/demo":              {"pkg/frame", "pkg/source"},
	"pkg/source/flightsql":         {"pkg/arrowipc", "pkg/frame", "pkg/settings", "pkg/source", "pkg/source/flightsql/series"}, // arrowipc: SchemaDepth, before arrow-go reads a schema
	"pkg/source/flightsql/series":  {"pkg/frame", "pkg/source"},                                                                // the per-series split, below the Flight SQL client
	"pkg/source":                   {},
	"pkg/settings":                 {},
	"pkg/frame":                    {"pkg/arrowipc", "pkg/codec"},
	"pkg/frame/frametest":          {},
	"pkg/arrowipc":                 {"pkg/arrowipc/internal/format", "pkg/codec"},
	"pkg/arrowipc/internal/format": {},                               // the format's slots and enums, shared with arrowipctest
	"pkg/arrowipc/arrowipctest":    {"pkg/arrowipc/internal/format"}, // Inspect: reads back what batches declare, for tests
	"pkg/codec":                    {},
}

// Third-party rules: what must stay out of a package.
var forbidden = map[string][]string{
	"pkg/pipeline":                 {"github.com/grafana/grafana-plugin-sdk-go/genproto", "google.golang.org/grpc"}, // the gRPC edge is the plugin's
	"pkg/source/flightsql/series":  {"google.golang.org/grpc", "github.com/apache/arrow-go/v18/arrow/flight"},       // the split knows batches, not the wire
	"pkg/codec":                    {"github.com/apache/arrow-go", "github.com/grafana/"},
	"pkg/arrowipc":                 {"github.com/grafana/"},
	"pkg/arrowipc/internal/format": {"github.com/"},
}

// sdkBackend is the SDK's backend package tree: only the plugin wiring uses
// it. sdkBackendAllowed lists, per package, the backend packages it may
// import ("" for all); every package not listed may import none.
const sdkBackend = "github.com/grafana/grafana-plugin-sdk-go/backend"

var sdkBackendAllowed = map[string][]string{
	"pkg":        {sdkBackend + "/log"},
	"pkg/plugin": {""},
}

func sdkBackendOK(pkg, imp string) bool {
	if imp != sdkBackend && !strings.HasPrefix(imp, sdkBackend+"/") {
		return true
	}
	for _, ok := range sdkBackendAllowed[pkg] {
		if ok == "" || imp == ok {
			return true
		}
	}
	return false
}

// TestPackageGraph checks every package under pkg/, test helpers included
// (their non-test files).
func TestPackageGraph(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := packageImports(t, root)
	for pkg, deps := range imports {
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("%s: package not in the layout table of this test", pkg)
			continue
		}
		for dep := range deps {
			if !contains(ok, dep) {
				t.Errorf("%s imports %s: not allowed (design.md §5)", pkg, dep)
			}
		}
	}
	for pkg := range allowed {
		if imports[pkg] == nil {
			t.Errorf("%s: in the layout table but not in the tree", pkg)
		}
	}
	for pkg := range sdkBackendAllowed {
		if allowed[pkg] == nil {
			t.Errorf("%s: in sdkBackendAllowed but not in the layout table", pkg)
		}
	}
}

// packageImports returns, for every package under pkg/ with non-test Go
// files, the Quiver packages those files import, and reports the
// third-party imports the rules forbid.
func packageImports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	imports := map[string]map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				imports[pkg][strings.TrimPrefix(p, module)] = true
				continue
			}
			for _, bad := range forbidden[pkg] {
				if strings.HasPrefix(p, bad) {
					t.Errorf("%s imports %s, which it must not", rel, p)
				}
			}
			if !sdkBackendOK(pkg, p) {
				t.Errorf("%s imports %s: only the plugin wiring uses the SDK's backend", rel, p)
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
	return imports
}

// TestREADMEDiagram checks the package list of the README ("How it is
// built") against the tree: every package is listed once, with exactly the
// Quiver packages it imports after "→".
func TestREADMEDiagram(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := readmePackages(t, string(b))
	for pkg, deps := range packageImports(t, root) {
		got, ok := listed[pkg]
		if !ok {
			t.Errorf("README: %s is not in the package list", pkg)
			continue
		}
		var want []string
		for d := range deps {
			want = append(want, strings.TrimPrefix(d, "pkg/"))
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("README: %s → %s; it imports %s", pkg, strings.Join(got, " "), strings.Join(want, " "))
		}
		delete(listed, pkg)
	}
	for pkg := range listed {
		t.Errorf("README: %s is listed but not in the tree", pkg)
	}
}

// readmePackages parses the README's package list: a code block whose lines
// start with "pkg/…" name a package ("pkg/main.go" is "pkg"), indented lines
// continue it, and "→ a b" lists what it imports.
func readmePackages(t *testing.T, readme string) map[string][]string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "```\npkg/main.go")
	if !ok {
		t.Fatal("README: no package list (a code block starting with pkg/main.go)")
	}
	block, _, _ := strings.Cut("pkg/main.go"+rest, "```")
	listed := map[string][]string{}
	var cur string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "pkg/") {
			name := strings.Fields(line)[0]
			cur = strings.TrimSuffix(name, "/")
			if cur == "pkg/main.go" {
				cur = "pkg"
			}
			if _, dup := listed[cur]; dup {
				t.Errorf("README: %s listed twice", cur)
			}
			listed[cur] = nil
		}
		if _, deps, ok := strings.Cut(line, "→"); ok && cur != "" {
			listed[cur] = append(listed[cur], strings.Fields(deps)...)
		}
	}
	return listed
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
