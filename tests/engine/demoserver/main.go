//go:build duckdb

// Command demoserver is the Flight SQL server of `docker compose up`:
// DuckDB (tests/engine) with a table of host metrics that keeps receiving
// rows, one per host every second, so that the provisioned dashboard's
// refreshes have new data to read incrementally. It starts with a day of
// history. Built with cgo and the tags duckdb,duckdb_arrow; it is a demo,
// not part of the plugin.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/tests/engine"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:31337", "host:port to serve Flight SQL on")
	hosts := flag.Int("hosts", 8, "hosts whose metrics arrive")
	every := flag.Duration("every", time.Second, "time between a host's rows")
	history := flag.Duration("history", 24*time.Hour, "history written at start")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *hosts, *every, *history, func(addr string) { log.Printf("serving Flight SQL (DuckDB) on %s", addr) }); err != nil {
		log.Fatal(err)
	}
}

// run serves the metrics table on listen until ctx ends, calling ready
// with the address once the history is written.
func run(ctx context.Context, listen string, hosts int, every, history time.Duration, ready func(addr string)) error {
	srv, err := engine.Serve(listen, engine.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.CreateMetrics(); err != nil {
		return err
	}
	now := time.Now().Truncate(every)
	if err := srv.InsertMetrics(now.Add(-history), now, hosts, every); err != nil {
		return err
	}
	ready(srv.Addr)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case t := <-tick.C:
			next := t.Truncate(every).Add(every)
			if err := srv.InsertMetrics(now, next, hosts, every); err != nil {
				return err
			}
			now = next
		}
	}
}
