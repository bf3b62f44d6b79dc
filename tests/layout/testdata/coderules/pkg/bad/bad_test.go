package bad

import "os"

// Test files are skipped by semgrep's default ignores.
func ignored() { _ = os.Environ() }
