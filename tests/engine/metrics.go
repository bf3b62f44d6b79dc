//go:build duckdb

package engine

import (
	"fmt"
	"time"
)

// The demo's host metrics (tests/engine/demoserver, docker compose): a
// table metrics(ts, host, region, cpu, mem) with one row per host every
// step.

// CreateMetrics creates the metrics table.
func (s *Server) CreateMetrics() error {
	_, err := s.DB.Exec(`CREATE TABLE metrics (ts TIMESTAMPTZ, host VARCHAR, region VARCHAR, cpu DOUBLE, mem DOUBLE)`)
	return err
}

// InsertMetrics writes every host's rows of [from, to), one each step.
func (s *Server) InsertMetrics(from, to time.Time, hosts int, step time.Duration) error {
	n := int(to.Sub(from) / step)
	if n <= 0 {
		return nil
	}
	_, err := s.DB.Exec(fmt.Sprintf(`INSERT INTO metrics
		SELECT t, 'host-' || h::VARCHAR, CASE WHEN h %% 2 = 0 THEN 'eu' ELSE 'us' END,
		       50 + 40 * sin(epoch(t) / 900 + h) + random() * 5, 30 + h * 5 + random() * 3
		FROM (SELECT make_timestamptz(%d::BIGINT) + i * INTERVAL '%d milliseconds' AS t FROM range(0, %d) r(i)), range(0, %d) hs(h)`,
		from.UnixMicro(), step.Milliseconds(), n, hosts))
	return err
}
