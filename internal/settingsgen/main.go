package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	root := flag.String("root", "../..", "repository root (go generate runs in pkg/settings)")
	flag.Parse()
	files, err := generate(*root) // nil when err is set
	for _, p := range slices.Sorted(maps.Keys(files)) {
		full := filepath.Join(*root, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && string(old) == string(files[p]) {
			continue
		}
		if err = os.MkdirAll(filepath.Dir(full), 0o755); err == nil {
			err = os.WriteFile(full, files[p], 0o644)
		}
		if err != nil {
			break
		}
		fmt.Println("wrote", p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "settings generator:", err)
		os.Exit(1)
	}
}

// generate returns every generated file by its path from the repository
// root. README.md is read from root to splice its table in.
func generate(root string) (map[string][]byte, error) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, err
	}
	cs, err := specs()
	if err != nil {
		return nil, err
	}
	readme, err = spliceREADME(readme, cs)
	if err != nil {
		return nil, err
	}
	codecsGo, err := codecsGo(cs)
	if err != nil {
		return nil, err
	}
	cases, err := messageCases()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"pkg/settings/codecs_gen.go":  codecsGo,
		"src/generated/settings.ts":   settingsTS(cs),
		"src/generated/messages.json": cases,
		"README.md":                   readme,
	}, nil
}
