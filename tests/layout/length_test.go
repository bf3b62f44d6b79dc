package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Limits a reviewer can check: no production file over maxFileLines lines
// and no function over maxFuncLines lines without a reason written down
// (the file's first comment says "over 400 lines" and why; a function's
// doc comment, or a comment at the top of its file, says "over 80 lines").
const (
	maxFileLines = 400
	maxFuncLines = 80
)

func TestLongFilesAndFunctionsSayWhy(t *testing.T) {
	fs := token.NewFileSet()
	eachProductionFile(t, func(rel string, src []byte) {
		f, err := parser.ParseFile(fs, rel, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		checkLengths(t, fs, rel, f)
	})
}

// eachProductionFile calls fn with the path from the repository's root and
// the source of every Go file under pkg/ but the tests.
func eachProductionFile(t *testing.T, fn func(rel string, src []byte)) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fn(rel, src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkLengths(t *testing.T, fs *token.FileSet, rel string, f *ast.File) {
	t.Helper()
	head := ""
	if len(f.Comments) > 0 {
		head = f.Comments[0].Text()
	}
	if lines := fs.Position(f.End()).Line; lines > maxFileLines && !strings.Contains(head, "400 lines") {
		t.Errorf("%s: %d lines, and its first comment does not say why it is over %d lines", rel, lines, maxFileLines)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		lines := fs.Position(fd.End()).Line - fs.Position(fd.Pos()).Line + 1
		if lines <= maxFuncLines || strings.Contains(fd.Doc.Text(), "80 lines") || strings.Contains(head, fd.Name.Name+" is over 80 lines") {
			continue
		}
		t.Errorf("%s: %s is %d lines, and no comment says why it is over %d lines", rel, fd.Name.Name, lines, maxFuncLines)
	}
}

// processState lists the package-level variables that may hold mutable
// state of the process, each with its reason; any other pool, map of sync,
// channel or mutex declared at package level fails TestNoProcessGlobalState.
var processState = map[string]string{
	"pkg/plugin.livePipeline": "metrics: the budget's gauges read the pipeline of the live Service",
}

// TestNoProcessGlobalState: pools, caches and slots belong to the value
// that uses them (a Pipeline, a Service, a Source), not to the process,
// but for metrics and the codec registration (processState).
func TestNoProcessGlobalState(t *testing.T) {
	seen := map[string]bool{}
	mutable := []string{"sync.Pool", "sync.Map", "sync.Mutex", "sync.RWMutex", "NewDirtyPool(", "make(chan", "atomic."}
	fs := token.NewFileSet()
	eachProductionFile(t, func(rel string, src []byte) {
		f, err := parser.ParseFile(fs, rel, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkg := filepath.Dir(rel)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				text := string(src[fs.Position(vs.Pos()).Offset:fs.Position(vs.End()).Offset])
				for _, name := range vs.Names {
					if _, ok := processState[pkg+"."+name.Name]; ok || name.Name == "_" {
						seen[pkg+"."+name.Name] = true
						continue
					}
					for _, m := range mutable {
						if strings.Contains(text, m) {
							t.Errorf("%s: package-level %s holds process state (%s): give it to the value that uses it, or list it in processState with why", rel, name.Name, m)
							break
						}
					}
				}
			}
		}
	})
	for name := range processState {
		if !seen[name] {
			t.Errorf("processState lists %s, which is not a package-level variable any more", name)
		}
	}
}

// TestNoStructKeepsAContext: a context is passed to each function that
// waits with it, never kept in a struct (a sink, a collector, an expander),
// so that what runs under a request's context is what its callers pass it
// to.
func TestNoStructKeepsAContext(t *testing.T) {
	eachProductionFile(t, func(rel string, src []byte) {
		for _, f := range contextFields(t, rel, src) {
			t.Errorf("%s: pass the context to the functions that wait with it instead", f)
		}
	})
	caught := contextFields(t, "x.go", []byte("package x\nimport stdctx \"context\"\ntype s struct {\n\tn int\n\tc stdctx.Context\n}\n"))
	if want := []string{"x.go:5: struct field c is a context.Context"}; !slices.Equal(caught, want) {
		t.Errorf("the check found %q in a struct that keeps a context, want %q", caught, want)
	}
}

// contextFields lists the struct fields of src whose type is
// context.Context, as "file:line: …".
func contextFields(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	local := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"context"` {
			local = "context"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok || local == "" {
			return true
		}
		for _, field := range st.Fields.List {
			sel, ok := field.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Context" {
				continue
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != local {
				continue
			}
			for _, fn := range field.Names {
				out = append(out, fmt.Sprintf("%s:%d: struct field %s is a context.Context", name, fs.Position(field.Pos()).Line, fn.Name))
			}
		}
		return true
	})
	return out
}
