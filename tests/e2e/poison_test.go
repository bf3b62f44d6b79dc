package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/tests/harness"
)

// The lending paths under poison. The plugin built with the quiver_poison
// tag overwrites every buffer it gives back for reuse (a lent series'
// arrays once gRPC has written their frame, the split's scratch, a
// stream's received bodies) the moment it is given back, and the next
// query takes it at once. Twelve clients run time-series queries at once,
// each over its own window of the table (so its own values): unary,
// chunked, chunked and read slowly, and cancelled midway. Every answer
// that completes is checked value by value: a frame that still referenced
// memory given back would hold the poison, or another query's values.
func TestLendingUnderPoison(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test; skipped with -short")
	}
	if raceEnabled {
		t.Skip("the plugin binary under test never runs under the race detector, only this process's decoding would (a minute and a half): CI runs it in its pass without -race (Magefile's GoTest)")
	}
	wd, _ := os.Getwd()
	root, err := harness.RepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "gpx_quiver_poison")
	if err := harness.Build(ctx(t), root, "./pkg", bin, "-tags", "quiver_poison"); err != nil {
		t.Fatal(err)
	}
	p, err := harness.Start(bin, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	const hosts, points, window = 100, 1000, 700 // 70 000 rows a query: two flushes, every series in two runs, collected into lent memory
	addr := startSQLite(t, hosts, points, base)
	pc := instance(fmt.Sprintf(`{"upstream":"flightsql","address":%q,"codec":"none","timeout":300}`, addr), nil)

	const clients, rounds = 12, 4
	var checked, cancelled atomic.Int64
	errs := make(chan error, clients*rounds)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for round := range rounds {
				first := r.IntN(points - window)
				from := base.Add(time.Duration(first) * time.Minute)
				q := harness.Query("A", map[string]string{
					"rawSql": "SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time) ORDER BY time, host",
					"format": "time_series",
				}, from, from.Add((window-1)*time.Minute), time.Minute, window)
				c, cancel := context.WithCancel(ctx(t))
				mode := (g + round) % 4
				if mode == 3 { // cancelled midway
					time.AfterFunc(time.Duration(r.IntN(40))*time.Millisecond, cancel)
				}
				frames, err := poisonQuery(c, p, pc, q, mode)
				cancel()
				switch {
				case err != nil && mode == 3 && status.Code(err) == codes.Canceled:
					cancelled.Add(1)
					continue
				case err != nil:
					errs <- fmt.Errorf("client %d round %d (mode %d): %w", g, round, mode, err)
					continue
				}
				if err := checkWindow(base, hosts, window, first, frames); err != nil {
					errs <- fmt.Errorf("client %d round %d (mode %d), window from point %d: %w", g, round, mode, first, err)
					continue
				}
				checked.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d answers checked value by value, %d cancelled midway", checked.Load(), cancelled.Load())
	if checked.Load() < clients*rounds*3/4 {
		t.Errorf("only %d answers checked of %d", checked.Load(), clients*rounds)
	}
}

// poisonQuery runs q in mode 0 (unary), 1 (chunked), 2 (chunked, read
// slowly) or 3 (chunked, its context cancelled by the caller), and
// returns its frames.
func poisonQuery(c context.Context, p *harness.Plugin, pc *pluginv2.PluginContext, q *pluginv2.DataQuery, mode int) (data.Frames, error) {
	if mode == 0 {
		resp, err := p.QueryData(c, pc, pluginv2.DataFrameFormat_ARROW, q)
		if err != nil {
			return nil, err
		}
		if dr := resp.Responses["A"]; dr.Error != "" {
			return nil, errors.New(dr.Error)
		}
		return data.UnmarshalArrowFrames(resp.Responses["A"].Frames)
	}
	stream, err := p.Data.QueryChunkedData(c, &pluginv2.QueryChunkedDataRequest{PluginContext: pc, Format: pluginv2.DataFrameFormat_ARROW, Queries: []*pluginv2.DataQuery{q}})
	if err != nil {
		return nil, err
	}
	var chunks []*pluginv2.QueryChunkedDataResponse
	for {
		ch, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		chunks = append(chunks, ch)
		if mode == 2 {
			time.Sleep(time.Millisecond)
		}
	}
	return framesOfChunks(chunks)
}
