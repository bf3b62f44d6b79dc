package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Grafana's plugin validator (github.com/grafana/plugin-validator,
// pkg/analysis/passes/coderules) runs semgrep rules over a plugin's source:
// over pkg/ alone when there is one, with semgrep's default ignores (tests/,
// test/, testsuite/, *_test.go, node_modules/, build/, dist/, vendor/). Its
// module is not served here and semgrep is not packaged, so these tests
// apply the same rules, by package and function name through the file's
// imports: TestCodeRulesGo to pkg/ as the validator does, and
// TestCodeRulesFrontend to src/, which the validator skips when pkg/ exists.
// Both require 0 errors and 0 warnings; TestCodeRulesCatch proves each rule
// fires on code written to break it.

type finding struct {
	rule, severity, where string
}

type goRule struct {
	id, severity string
	pkg          string          // import path of the package called
	funcs        map[string]bool // its functions; nil: every one
	literalEnv   bool            // only calls whose first argument is a literal not allowed below
}

func names(s string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(s) {
		m[n] = true
	}
	return m
}

// allowedEnv is the validator's list of variables a plugin may read.
var allowedEnv = regexp.MustCompile(`^(GF_PLUGIN.*|GF_VERSION|GF_EDITION|GF_ENTERPRISE_LICENSE_PATH|GF_ENTERPRISE_LICENSE_TEXT|GF_ENTERPRISE_APP_URL|GF_ENTERPRISE_LICENSE_VALIDATION_KEY|GF_ENTERPRISE_LICENSE_VALIDATION_TYPE|AWS_AUTH_AllowedAuthProviders|AWS_AUTH_AssumeRoleEnabled|AWS_AUTH_SESSION_DURATION|GFAZPL_AZURE_CLOUD|GFAZPL_MANAGED_IDENTITY_ENABLED|GFAZPL_MANAGED_IDENTITY_CLIENT_ID|AZURE_CLOUD|AZURE_MANAGED_IDENTITY_ENABLED|AZURE_MANAGED_IDENTITY_CLIENT_ID)$`)

var goRules = []goRule{
	{id: "access-os-environment", severity: "error", pkg: "os", funcs: names("Environ Clearenv ExpandEnv")},
	{id: "access-os-environment", severity: "error", pkg: "syscall", funcs: names("Clearenv Environ")},
	{id: "access-only-allowed-os-environment", severity: "warning", pkg: "os", funcs: names("Getenv LookupEnv Setenv Unsetenv"), literalEnv: true},
	{id: "access-only-allowed-os-environment", severity: "warning", pkg: "syscall", funcs: names("Getenv Setenv Unsetenv"), literalEnv: true},
	{id: "access-file-system-with-fs", severity: "error", pkg: "io/fs"},
	{id: "access-file-system-with-filepath", severity: "error", pkg: "path/filepath", funcs: names("Walk WalkDir VolumeName EvalSymlinks Glob")},
	// The validator's list spells ReadFile "Readfile"; the rule means it.
	{id: "access-file-system-with-os", severity: "error", pkg: "os", funcs: names(`DirFS Getwd IsExist IsNotExist IsPermission Lchown Link Mkdir MkdirAll
		MkdirTemp Readfile ReadFile Readlink Remove RemoveAll Rename SameFile Symlink TempDir Truncate UserCacheDir UserConfigDir
		UserHomeDir WriteFile ReadDir Create CreateTemp NewFile Open OpenFile Chdir Chmod Chown Chtimes Stat Lstat`)},
	{id: "access-syscall", severity: "error", pkg: "syscall"},
	{id: "fmt-print-logging", severity: "error", pkg: "fmt", funcs: names("Println Print Printf")},
}

// outdatedSQLDS is the validator's outdated-sqlds-version rule.
var outdatedSQLDS = regexp.MustCompile(`^github\.com/grafana/sqlds(/v2)?(/|$)`)

// semgrepIgnored says whether semgrep's default ignores skip rel.
func semgrepIgnored(rel string, dir bool) bool {
	base := filepath.Base(rel)
	if dir {
		return slices.Contains([]string{"node_modules", "build", "dist", "vendor", ".env", ".venv", ".tox", ".npm", ".yarn",
			"test", "tests", "testsuite", ".semgrep", ".semgrep_logs", ".git"}, base)
	}
	return strings.HasSuffix(base, "_test.go")
}

// goFindings applies goRules to every Go file under dir that semgrep would
// scan.
func goFindings(t *testing.T, dir string) []finding {
	t.Helper()
	var out []finding
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel != "." && semgrepIgnored(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		out = append(out, goFileFindings(t, path)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func goFileFindings(t *testing.T, path string) []finding {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []finding
	at := func(p token.Pos) string { pos := fset.Position(p); return pos.Filename + ":" + strconv.Itoa(pos.Line) }
	imports := map[string]string{} // name in the file → import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = p
		if outdatedSQLDS.MatchString(p) {
			out = append(out, finding{"outdated-sqlds-version", "warning", at(imp.Pos())})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		pkg := imports[id.Name]
		for _, r := range goRules {
			if r.pkg != pkg || (r.funcs != nil && !r.funcs[sel.Sel.Name]) {
				continue
			}
			if r.literalEnv {
				if len(call.Args) == 0 {
					continue
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue // semgrep's pattern matches a literal name only
				}
				if v, _ := strconv.Unquote(lit.Value); allowedEnv.MatchString(v) {
					continue
				}
			}
			out = append(out, finding{r.id, r.severity, at(call.Pos()) + " " + id.Name + "." + sel.Sel.Name})
		}
		return true
	})
	return out
}

type tsRule struct {
	id, severity string
	re           *regexp.Regexp
}

var tsRules = []tsRule{
	{"console-logging", "warning", regexp.MustCompile(`\bconsole\.(log|info|table|clear|count|countReset|dir|dirxml|group|groupEnd|time|timeEnd|timeLog|trace)\s*\(`)},
	{"topnav-toggle", "error", regexp.MustCompile(`featureToggles\.topnav\b`)},
	{"window-properties", "error", regexp.MustCompile(`window\.(grafanaBootData|grafanaRuntime|__grafanaSceneContext)`)},
	{"access-old-react-internals", "warning", regexp.MustCompile(`__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED`)},
	{"native-browser-dialogs", "error", regexp.MustCompile(`(^|[^.\w])alert\s*\(|window\.(alert|confirm|prompt)\s*\(`)},
	{"window-open-without-noopener", "error", regexp.MustCompile(`window\.open\s*\((?:[^;]*noopener[^;]*noreferrer|[^;]*noreferrer[^;]*noopener)?[^;]*\)`)},
	{"deprecated-gf-form-css-classes", "warning", regexp.MustCompile(`gf-form`)},
	{"direct-window-location-access", "warning", regexp.MustCompile(`window\.location\.(search|href)\b`)},
	{"ts-ignore-suppress", "warning", regexp.MustCompile(`@ts-(ignore|expect-error)`)},
	{"no-direct-css-imports", "error", regexp.MustCompile(`import\s+['"].*\.(css|scss|less)['"]|import\s*\{\s*Global\s*\}\s*from\s*['"]@emotion/react['"]|<Global[\s/>]`)},
}

// windowOpenSafe: a window.open call that passes both noopener and
// noreferrer in its features is allowed.
var windowOpenSafe = regexp.MustCompile(`window\.open\s*\([^;]*(noopener[^;]*noreferrer|noreferrer[^;]*noopener)`)

// tsFindings applies tsRules to the .ts and .tsx files under dir but the
// rules' excluded tests (*.test.ts[x], *.spec.ts[x]).
func tsFindings(t *testing.T, dir string) []finding {
	t.Helper()
	var out []finding
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		base := filepath.Base(path)
		if !(strings.HasSuffix(base, ".ts") || strings.HasSuffix(base, ".tsx")) ||
			strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, r := range tsRules {
				if !r.re.MatchString(line) || (r.id == "window-open-without-noopener" && windowOpenSafe.MatchString(line)) {
					continue
				}
				out = append(out, finding{r.id, r.severity, path + ":" + strconv.Itoa(i+1)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCodeRulesGo(t *testing.T) {
	for _, f := range goFindings(t, filepath.Join("..", "..", "pkg")) {
		t.Errorf("%s (%s): %s", f.rule, f.severity, f.where)
	}
}

func TestCodeRulesFrontend(t *testing.T) {
	for _, f := range tsFindings(t, filepath.Join("..", "..", "src")) {
		t.Errorf("%s (%s): %s", f.rule, f.severity, f.where)
	}
}

// Every rule fires on testdata/coderules, written to break each once, and
// nothing fires on what it allows (GF_PLUGIN_* variables, a safe
// window.open, test files).
func TestCodeRulesCatch(t *testing.T) {
	got := map[string]int{}
	for _, f := range append(goFindings(t, filepath.Join("testdata", "coderules", "pkg")), tsFindings(t, filepath.Join("testdata", "coderules", "src"))...) {
		got[f.rule]++
	}
	want := map[string]int{
		"access-os-environment":              2, // os.Environ, syscall.Environ (the latter also access-syscall)
		"access-only-allowed-os-environment": 1, // os.Getenv("HOME"), not GF_PLUGIN_X
		"access-file-system-with-fs":         1,
		"access-file-system-with-filepath":   1,
		"access-file-system-with-os":         2, // os.ReadFile through an alias, os.Stat
		"access-syscall":                     2,
		"fmt-print-logging":                  1,
		"outdated-sqlds-version":             1,
		"console-logging":                    1,
		"topnav-toggle":                      1,
		"window-properties":                  1,
		"access-old-react-internals":         1,
		"native-browser-dialogs":             1,
		"window-open-without-noopener":       1,
		"deprecated-gf-form-css-classes":     1,
		"direct-window-location-access":      1,
		"ts-ignore-suppress":                 1,
		"no-direct-css-imports":              1,
	}
	for rule, n := range want {
		if got[rule] != n {
			t.Errorf("%s: %d findings, want %d", rule, got[rule], n)
		}
	}
	for rule, n := range got {
		if _, ok := want[rule]; !ok {
			t.Errorf("%s: %d unexpected findings", rule, n)
		}
	}
}
