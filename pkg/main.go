// Command gpx_quiver is Quiver's backend: Grafana starts it and talks to it
// over the plugin protocol.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/build/buildinfo"

	"github.com/quiverdata/quiver/pkg/plugin"
)

func main() {
	info, version := boolFlag("buildinfo", "print build info and exit"), boolFlag("version", "print version and exit")
	flag.Parse()
	if info() || version() {
		if err := printInfo(version()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := plugin.Serve(plugin.Options{}); err != nil {
		log.DefaultLogger.Error("quiver stopped", "error", err)
		os.Exit(1)
	}
}

// printInfo answers -buildinfo and -version as datasource.Manage does (SDK
// internal/buildinfo): the build info the SDK's build compiled in, as JSON,
// or only its version, on standard output, which is the answer the caller
// reads. Nothing else in the plugin writes to standard output: it logs
// through the SDK's logger.
func printInfo(versionOnly bool) error {
	bi, err := buildinfo.GetBuildInfo()
	if err != nil {
		return fmt.Errorf("get build info: %w", err)
	}
	out := []byte(bi.Version)
	if !versionOnly {
		if out, err = json.Marshal(bi); err != nil {
			return fmt.Errorf("marshal build info: %w", err)
		}
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}

// boolFlag defines a boolean command-line flag, or reads the one of that
// name the SDK already defined (its internal/buildinfo package, linked in
// with backend/datasource, defines -buildinfo and -version).
func boolFlag(name, usage string) func() bool {
	if f := flag.Lookup(name); f != nil {
		return func() bool {
			v, _ := f.Value.(flag.Getter).Get().(bool)
			return v
		}
	}
	p := flag.Bool(name, false, usage)
	return func() bool { return *p }
}
