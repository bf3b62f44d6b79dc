package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoToolingSkipsNodeModules: npm packages may ship Go code (flatted
// does), which is not this module's to build, vet or test. A scratch module
// with this repository's go.mod and go.sum, one package of its own and Go
// packages in node_modules folders at the root and deeper (as tests/react19
// has): `go list ./...`, what `go vet ./...` and `go test ./...` walk, must
// name only its own.
func TestGoToolingSkipsNodeModules(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b))
	}
	writeFile(t, filepath.Join(dir, "own", "own.go"), "package own\n")
	writeFile(t, filepath.Join(dir, "node_modules", "flatted", "golang", "flatted.go"), "package flatted\n")
	writeFile(t, filepath.Join(dir, "tests", "react19", "node_modules", "flatted", "golang", "flatted.go"), "package flatted\n")

	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if got, want := strings.Fields(string(out)), module+"own"; len(got) != 1 || got[0] != want {
		t.Fatalf("go list ./... names %q; want only %q (go.mod must ignore node_modules)", got, want)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
