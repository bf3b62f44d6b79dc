package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates every file in memory and fails
// when the one in the tree differs: run `go generate ./pkg/settings`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"pkg/settings/codecs_gen.go", "src/generated/settings.ts", "src/generated/messages.json", "README.md"} {
		want, ok := files[p]
		if !ok {
			t.Errorf("%s: not generated", p)
			continue
		}
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./pkg/settings)", p, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./pkg/settings", p)
		}
	}
	if len(files) != 4 {
		t.Errorf("generated %d files; this test checks 4", len(files))
	}
}

// TestEveryNumericSettingHasMessageCases: the JSON fixture the editor's
// test reads covers every numeric setting, and every codec with levels.
func TestEveryNumericSettingHasMessageCases(t *testing.T) {
	b, err := messageCases()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"key": "level"`, `"codec": "zstd"`, `"codec": "lz4"`, `"key": "minSavings"`, `"key": "maxSeries"`,
		`"key": "maxPoints"`, `"key": "timeout"`, `"key": "rowLimit"`, `"key": "byteLimit"`, `"key": "dialect"`} {
		if !contains(string(b), key) {
			t.Errorf("messages.json has no case with %s", key)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
