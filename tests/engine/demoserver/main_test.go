//go:build duckdb

package main

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestDemoServerKeepsReceivingRows: the history is there once it is ready,
// and rows keep arriving, as a Flight SQL client sees them.
func TestDemoServerKeepsReceivingRows(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, "127.0.0.1:0", 3, 100*time.Millisecond, time.Minute, func(a string) { addr <- a })
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatal(err)
	}
	cl, err := flightsql.NewClient(a, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	count := func() int64 {
		t.Helper()
		info, err := cl.Execute(ctx, "SELECT count(*) AS n FROM metrics")
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if !rdr.Next() {
			t.Fatal(rdr.Err())
		}
		return rdr.RecordBatch().Column(0).(interface{ Value(int) int64 }).Value(0)
	}
	first := count()
	if first != 3*600 {
		t.Errorf("%d rows of history, want 3 hosts × 600", first)
	}
	time.Sleep(350 * time.Millisecond)
	if later := count(); later <= first {
		t.Errorf("no new rows: %d, then %d", first, later)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
