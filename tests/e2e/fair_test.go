package e2e

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/plugin"
	"github.com/quiverdata/quiver/tests/harness"
)

// The fairness tests compare another tenant's latency while one request
// misbehaves with the same latency measured idle, in the same process and
// run. A p99 counts as "not slowed" within twice the idle p99, and never
// less than jitter more: on a shared two-core machine scheduling alone
// moves a p99 of a few milliseconds by that much. The failures these tests
// exist for are of another order: queries that wait for their deadline.
const jitter = 20 * time.Millisecond

func notSlowed(idle time.Duration) time.Duration { return max(2*idle, idle+jitter) }

// p99 of n small queries of tenant b's data source, one after the other.
// Each may take at most 3 s: one that takes longer fails the test.
func smallQueryP99(t *testing.T, p *harness.Plugin, pc *pluginv2.PluginContext, n int) time.Duration {
	t.Helper()
	took := make([]time.Duration, 0, n)
	for i := range n {
		c, cancel := context.WithTimeout(withTenant(ctx(t), "tenant-b"), 3*time.Second)
		start := time.Now()
		resp, err := p.QueryData(c, pc, pluginv2.DataFrameFormat_ARROW, walk("A", 1))
		took = append(took, time.Since(start))
		cancel()
		if err != nil {
			t.Fatalf("small query %d: %v", i, err)
		}
		if e := resp.Responses["A"].GetError(); e != "" {
			t.Fatalf("small query %d: %s", i, e)
		}
	}
	slices.Sort(took)
	return took[(len(took)*99+99)/100-1]
}

// waitHeld waits (at most 10 s) until the plugin's budget has held the same
// bytes, at least min, for three polls in a row, and returns them.
func waitHeld(t *testing.T, p *harness.Plugin, min float64) float64 {
	t.Helper()
	var last float64
	steady := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		used := metricsOf(t, p)["quiver_memory_budget_used_bytes"]
		if used >= min && used == last {
			if steady++; steady == 2 {
				return used
			}
		} else {
			steady = 0
		}
		last = used
	}
	t.Fatalf("the budget never held a steady %.0f bytes or more (last %.0f)", min, last)
	return 0
}

// A chunked client that stops reading holds up its own request only: the
// plugin stops encoding its frames once a bounded backlog waits to be sent,
// other tenants' queries keep their idle latency, and the stalled request
// ends at its deadline with its budget given back.
func TestStalledChunkedClientStallsNoOne(t *testing.T) {
	if testing.Short() {
		t.Skip("fairness test; skipped with -short")
	}
	p, err := harness.Start(binary, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	small := instance(`{"codec":"lz4"}`, nil)
	big := instance(`{"codec":"none"}`, nil)

	smallQueryP99(t, p, small, 20) // warm
	base := metricsOf(t, p)
	idle := smallQueryP99(t, p, small, 100)

	// ~50 MB of frames: more than gRPC's flow-control windows and the
	// plugin's backlog of unsent chunks hold.
	const deadline = 8 * time.Second
	sctx, cancel := context.WithTimeout(withTenant(ctx(t), "tenant-a"), deadline)
	defer cancel()
	stream, err := p.Data.QueryChunkedData(sctx, &pluginv2.QueryChunkedDataRequest{
		PluginContext: big, Format: pluginv2.DataFrameFormat_ARROW, Queries: []*pluginv2.DataQuery{walk("A", 8000)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	// The client reads no more: the plugin fills the windows and its
	// backlog, then holds still.
	held := waitHeld(t, p, 1<<20)
	// What waits for the client is bounded: the backlog, and what the
	// encode workers (two here) had in hand, a few KiB each.
	if unsent := metricsOf(t, p)["quiver_chunks_unsent_bytes"]; unsent < 1<<20 || unsent > plugin.MaxUnsent+1<<20 {
		t.Errorf("%.1f MiB of chunks wait for the stalled client, want between 1 MiB and the %d MiB backlog (+1 MiB)", unsent/(1<<20), plugin.MaxUnsent>>20)
	}

	stalled := smallQueryP99(t, p, small, 100)
	t.Logf("small query p99: idle %v, beside a stalled chunked client %v; the stalled request holds %.1f MiB of the budget",
		idle, stalled, held/(1<<20))
	if stalled > notSlowed(idle) {
		t.Errorf("another tenant's p99 went from %v idle to %v beside a stalled chunked client (limit %v)", idle, stalled, notSlowed(idle))
	}
	if now := metricsOf(t, p)["quiver_memory_budget_used_bytes"]; now != held {
		t.Errorf("the stalled request's budget moved from %.0f to %.0f bytes while its client read nothing: it was not stalled throughout", held, now)
	}

	// At its deadline the request ends and gives its budget back, its
	// client having read nothing more.
	<-sctx.Done()
	settle(t, p, base)
}
