package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
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
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fs := token.NewFileSet()
	err = filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fs, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		checkLengths(t, fs, rel, f)
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
	"pkg/plugin.livePipeline":    "metrics: the budget's gauges read the pipeline of the live Service",
	"pkg/source/flightsql.zones": "a bounded cache of the time zone database: immutable locations by name",
}

// TestNoProcessGlobalState: pools, caches and slots belong to the value
// that uses them (a Pipeline, a Service, a Source), not to the process,
// but for metrics and the codec registration (processState).
func TestNoProcessGlobalState(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	mutable := []string{"sync.Pool", "sync.Map", "sync.Mutex", "sync.RWMutex", "NewDirtyPool(", "make(chan", "atomic."}
	fs := token.NewFileSet()
	err = filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fs, path, src, 0)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
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
							t.Errorf("%s: package-level %s holds process state (%s): give it to the value that uses it, or list it in processState with why", filepath.Join(pkg, filepath.Base(path)), name.Name, m)
							break
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range processState {
		if !seen[name] {
			t.Errorf("processState lists %s, which is not a package-level variable any more", name)
		}
	}
}
