// Command gpx_quiver is Quiver's backend: Grafana starts it and talks to it
// over the plugin protocol.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/quiverdata/quiver/pkg/plugin"
)

func main() {
	if err := plugin.Serve(plugin.Options{}); err != nil {
		log.DefaultLogger.Error("quiver stopped", "error", err)
		os.Exit(1)
	}
}
