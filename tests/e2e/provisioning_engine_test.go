//go:build duckdb && sqlengines

package e2e

import (
	"testing"
	"time"

	"github.com/quiverdata/quiver/tests/engine"
	"github.com/quiverdata/quiver/tests/redisserver"
)

func init() {
	provisionedServers = func(t *testing.T) map[string]string {
		srv := engine.Start(t, "UTC")
		if err := srv.CreateMetrics(); err != nil {
			t.Fatal(err)
		}
		if err := srv.InsertMetrics(from.Add(-time.Hour), t0, 8, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		rs := redisserver.Start(t)
		// The demo server's and Redis' addresses in docker-compose.yaml.
		return map[string]string{"flightsql:31337": srv.Addr, "redis:6379": rs.Addr}
	}
}
