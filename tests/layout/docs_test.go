package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// cited is a repository path in a document's text: pkg/…, tests/…,
	// src/…, docs/… (a "*" is a glob), after a space, a backquote or an
	// opening bracket.
	cited = regexp.MustCompile("(?:^|[\\s`(\\[])((?:pkg|tests|src|docs)/[\\w./*-]*[\\w*])")
	// linked is the target of a Markdown link.
	linked = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// TestDocsCiteFilesThatExist checks that every repository path the README
// and docs/ cite, and every relative link they hold, names a file or
// directory of the repository, so that a file moved or removed fails here
// rather than leaving a reader at a dead citation.
func TestDocsCiteFilesThatExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md"))
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		exists := func(path string) bool {
			m, err := filepath.Glob(path)
			return err == nil && len(m) > 0
		}
		for _, m := range cited.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimSuffix(m[1], ".")
			checked++
			if !exists(filepath.Join(root, p)) {
				t.Errorf("%s cites %s, which does not exist", rel, p)
			}
		}
		for _, m := range linked.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			if !exists(filepath.Join(filepath.Dir(doc), target)) {
				t.Errorf("%s links %s, which does not exist", rel, m[1])
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d citations found: the patterns no longer match the documents", checked)
	}
}
