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
