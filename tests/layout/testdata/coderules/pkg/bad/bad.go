// Package bad breaks each of the validator's Go rules once; see
// TestCodeRulesCatch.
package bad

import (
	"fmt"
	"io/fs"
	osx "os"
	"path/filepath"
	"syscall"

	_ "github.com/grafana/sqlds/v2"
)

func Bad() {
	_ = osx.Environ()
	_ = syscall.Environ()
	_ = osx.Getenv("HOME")
	_ = osx.Getenv("GF_PLUGIN_ALLOWED")
	_, _ = fs.ReadFile(nil, "x")
	_, _ = filepath.Glob("*")
	_, _ = osx.ReadFile("/proc/meminfo")
	_, _ = osx.Stat("/")
	_, _ = syscall.Getpagesize(), 0
	fmt.Println("hello")
	_ = fmt.Sprintf("allowed")
}
