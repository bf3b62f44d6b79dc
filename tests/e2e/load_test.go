package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/tests/harness"
)

// The load tests start their own plugin process with a small memory budget,
// so that the bound is meaningful, and read the process's own view of its
// memory through the diagnostics endpoint (CollectMetrics):
// quiver_go_heap_live_bytes is the live Go heap as of the last collection
// (runtime/metrics /gc/heap/live:bytes), quiver_memory_budget_* the budget's
// accounting, go_goroutines the goroutines.
const (
	loadBudget = 48 << 20
	// loadMargin is what the live heap may hold beyond twice the budget
	// (the most the budget lets in-flight queries hold, see package plugin):
	// the process itself (SDK, gRPC, three instances: ~20 MiB warm), the
	// frame encoders of each instance with their scratch (sized for the
	// largest frames, ~6 MB here, two busy per instance at most) and the
	// zstd encoders, encode buffers, and gRPC's copies of responses being
	// sent after their budget is released. Measured: 107–137 MiB at peak,
	// against 420 MiB for the same burst without a budget.
	loadMargin = 96 << 20
	// settleMargin is how far above its baseline the live heap may stay
	// once the burst is over (instances, encoders and pools now warm).
	settleMargin = 24 << 20
)

// loadRequest is one request of the mixed load.
type loadRequest struct {
	pc      *pluginv2.PluginContext
	chunked bool
	queries []*pluginv2.DataQuery
}

// mixedLoad returns n requests of mixed demo scenarios, sizes and codecs
// (three instances), half unary and half chunked, 1–3 queries each.
func mixedLoad(n int, seed uint64) []loadRequest {
	instances := []*pluginv2.PluginContext{
		instance(`{"codec":"zstd","level":3}`, nil), instance(`{"codec":"lz4"}`, nil), instance(`{"codec":"none"}`, nil),
	}
	models := []string{
		`{"scenario":"random_walk","seriesCount":50}`,   // ~0.4 MB
		`{"scenario":"random_walk","seriesCount":400}`,  // ~3 MB
		`{"scenario":"random_walk","seriesCount":1500}`, // ~12 MB
		`{"scenario":"logs","seriesCount":5}`,           // 1000 lines
		`{"scenario":"logs","seriesCount":60}`,          // 12 000 lines, ~4 MB
		`{"scenario":"table","seriesCount":2000}`,
		`{"scenario":"table","seriesCount":40000}`, // ~6 MB
	}
	r := rand.New(rand.NewPCG(seed, 9))
	reqs := make([]loadRequest, n)
	for i := range reqs {
		lr := loadRequest{pc: instances[i%len(instances)], chunked: i%2 == 1}
		for q := range 1 + r.IntN(3) {
			lr.queries = append(lr.queries, harness.Query(fmt.Sprint("Q", q), models[r.IntN(len(models))], from, t0, time.Minute, 1000))
		}
		reqs[i] = lr
	}
	return reqs
}

// run sends the request and returns its query errors and frame count.
func (lr loadRequest) run(ctx context.Context, p *harness.Plugin) (frames int, err error) {
	if lr.chunked {
		chunks, err := p.QueryChunked(ctx, lr.pc, pluginv2.DataFrameFormat_ARROW, lr.queries...)
		if err != nil {
			return 0, err
		}
		for _, c := range chunks {
			if c.Error != "" {
				return frames, fmt.Errorf("%s: %s", c.RefId, c.Error)
			}
			frames++
		}
		return frames, nil
	}
	resp, err := p.QueryData(ctx, lr.pc, pluginv2.DataFrameFormat_ARROW, lr.queries...)
	if err != nil {
		return 0, err
	}
	for ref, dr := range resp.Responses {
		if dr.Error != "" {
			return frames, fmt.Errorf("%s: %s", ref, dr.Error)
		}
		frames += len(dr.Frames)
	}
	return frames, nil
}

// memorySampler polls the plugin's metrics and keeps the peaks.
type memorySampler struct {
	p                        *harness.Plugin
	stop                     chan struct{}
	done                     sync.WaitGroup
	mu                       sync.Mutex
	live, inuse, used, waits float64
	samples                  int
}

func sampleMemory(p *harness.Plugin) *memorySampler {
	s := &memorySampler{p: p, stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m, err := p.Metrics(ctx)
			cancel()
			if err != nil {
				continue
			}
			s.mu.Lock()
			s.samples++
			s.live = max(s.live, m["quiver_go_heap_live_bytes"])
			s.inuse = max(s.inuse, m["go_memstats_heap_inuse_bytes"])
			s.used = max(s.used, m["quiver_memory_budget_used_bytes"])
			s.waits = m["quiver_memory_budget_waits_total"]
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *memorySampler) finish() {
	close(s.stop)
	s.done.Wait()
}

// startLoadPlugin starts a plugin process of its own with a small budget.
func startLoadPlugin(t *testing.T) *harness.Plugin {
	t.Helper()
	p, err := harness.Start(binary, os.Stderr, fmt.Sprintf("QUIVER_MEMORY_BUDGET=%d", loadBudget), "QUIVER_MEMORY_BUDGET_WAIT=60s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func metricsOf(t *testing.T, p *harness.Plugin) map[string]float64 {
	t.Helper()
	m, err := p.Metrics(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// settle waits (at most 20 s) until the plugin's live heap and goroutines
// are back near the baseline, and fails naming what stayed up.
func settle(t *testing.T, p *harness.Plugin, base map[string]float64) map[string]float64 {
	t.Helper()
	var m map[string]float64
	deadline := time.Now().Add(20 * time.Second)
	for {
		m = metricsOf(t, p)
		ok := m["quiver_memory_budget_used_bytes"] == 0 &&
			m["quiver_go_heap_live_bytes"] <= base["quiver_go_heap_live_bytes"]+settleMargin &&
			m["go_goroutines"] <= base["go_goroutines"]+4
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if used := m["quiver_memory_budget_used_bytes"]; used != 0 {
		t.Errorf("%.0f bytes of the budget still held after the burst", used)
	}
	if live, b := m["quiver_go_heap_live_bytes"], base["quiver_go_heap_live_bytes"]; live > b+settleMargin {
		t.Errorf("live heap %.1f MiB after the burst, baseline %.1f MiB (margin %d MiB)", live/(1<<20), b/(1<<20), settleMargin>>20)
	}
	if g, b := m["go_goroutines"], base["go_goroutines"]; g > b+4 {
		t.Errorf("%.0f goroutines after the burst, %.0f before", g, b)
	}
	return m
}

// warm runs one request of each kind so that the baseline includes the
// instances, encoders and pools every later request shares.
func warm(t *testing.T, p *harness.Plugin, reqs []loadRequest) {
	t.Helper()
	for _, lr := range reqs[:6] {
		if _, err := lr.run(ctx(t), p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadMixedConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("load test; skipped with -short")
	}
	const n = 128
	p := startLoadPlugin(t)
	reqs := mixedLoad(n, 1)
	warm(t, p, reqs)
	time.Sleep(1500 * time.Millisecond) // the idle collection after warming
	base := metricsOf(t, p)
	if b := base["quiver_memory_budget_bytes"]; b != loadBudget {
		t.Fatalf("quiver_memory_budget_bytes %v, want the %d set by QUIVER_MEMORY_BUDGET", b, loadBudget)
	}

	s := sampleMemory(p)
	var wg sync.WaitGroup
	var failed, frames atomic.Int64
	start := time.Now()
	for i, lr := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nf, err := lr.run(c, p)
			frames.Add(int64(nf))
			if err != nil {
				if failed.Add(1) <= 5 {
					t.Errorf("request %d: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	s.finish()
	if f := failed.Load(); f > 0 {
		t.Errorf("%d of %d requests failed", f, n)
	}
	after := settle(t, p, base)
	t.Logf("%d requests, %d frames in %s; peaks: live heap %.1f MiB, heap in use %.1f MiB, budget held %.1f MiB of %d MiB; %.0f budget waits; %d samples; settled: live %.1f MiB (baseline %.1f MiB)",
		n, frames.Load(), took.Round(time.Millisecond), s.live/(1<<20), s.inuse/(1<<20), s.used/(1<<20), loadBudget>>20, s.waits, s.samples,
		after["quiver_go_heap_live_bytes"]/(1<<20), base["quiver_go_heap_live_bytes"]/(1<<20))
	if s.samples < 5 {
		t.Fatalf("only %d metric samples during the burst", s.samples)
	}
	if s.used > 2*loadBudget {
		t.Errorf("the budget's accounting held %.1f MiB, above twice the budget (%d MiB)", s.used/(1<<20), 2*loadBudget>>20)
	}
	if bound := float64(2*loadBudget + loadMargin); s.live > bound {
		t.Errorf("live heap peaked at %.1f MiB, above twice the budget plus the margin (%.0f MiB)", s.live/(1<<20), bound/(1<<20))
	}
	if s.waits == 0 {
		t.Errorf("no query waited for budget: the load does not exercise it")
	}
}

func TestLoadHalfCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("load test; skipped with -short")
	}
	const n = 128
	p := startLoadPlugin(t)
	reqs := mixedLoad(n, 2)
	warm(t, p, reqs)
	time.Sleep(1500 * time.Millisecond)
	base := metricsOf(t, p)

	s := sampleMemory(p)
	var wg sync.WaitGroup
	var failed, cancelled atomic.Int64
	r := rand.New(rand.NewPCG(3, 4))
	for i, lr := range reqs {
		cancelAfter := time.Duration(-1)
		if i%2 == 0 {
			cancelAfter = time.Duration(r.IntN(400)) * time.Millisecond
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if cancelAfter >= 0 {
				time.AfterFunc(cancelAfter, cancel)
			}
			_, err := lr.run(c, p)
			switch {
			case err == nil:
			case cancelAfter >= 0 && (status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled)):
				cancelled.Add(1)
			default:
				if failed.Add(1) <= 5 {
					t.Errorf("request %d (cancel %v): %v", i, cancelAfter >= 0, err)
				}
			}
		}()
	}
	wg.Wait()
	s.finish()
	if f := failed.Load(); f > 0 {
		t.Errorf("%d requests failed other than by their cancellation", f)
	}
	if cancelled.Load() == 0 {
		t.Errorf("no request was cancelled mid-flight")
	}
	after := settle(t, p, base)
	t.Logf("%d requests, %d cancelled mid-flight; peaks: live heap %.1f MiB, budget held %.1f MiB; settled: %.0f goroutines (baseline %.0f), live %.1f MiB",
		n, cancelled.Load(), s.live/(1<<20), s.used/(1<<20), after["go_goroutines"], base["go_goroutines"], after["quiver_go_heap_live_bytes"]/(1<<20))
	if bound := float64(2*loadBudget + loadMargin); s.live > bound {
		t.Errorf("live heap peaked at %.1f MiB, above %.0f MiB", s.live/(1<<20), bound/(1<<20))
	}
	// The process still answers.
	if _, err := reqs[1].run(ctx(t), p); err != nil {
		t.Errorf("after the cancelled burst: %v", err)
	}
}

// TestMeasureLimits measures what docs/limits.md reports, through the
// binary with its default budget: peak RSS (VmHWM) of 200 concurrent mixed
// requests and RSS 30 s after, and the peak RSS of the largest single
// queries within the default limits, each in a fresh process. It runs only
// with QUIVER_MEASURE=1 (it takes minutes); QUIVER_MEASURE_BINARY measures
// another build (an older one, to compare).
func TestMeasureLimits(t *testing.T) {
	if os.Getenv("QUIVER_MEASURE") != "1" {
		t.Skip("measurement; set QUIVER_MEASURE=1")
	}
	bin := binary
	if b := os.Getenv("QUIVER_MEASURE_BINARY"); b != "" {
		bin = b
	}
	start := func(t *testing.T) *harness.Plugin {
		p, err := harness.Start(bin, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	day := t0.Add(-24 * time.Hour)

	t.Run("burst", func(t *testing.T) {
		p := start(t)
		instances := []*pluginv2.PluginContext{instance(`{"codec":"zstd","level":3}`, nil), instance(`{"codec":"lz4"}`, nil), instance(`{"codec":"none"}`, nil)}
		models := []string{
			`{"scenario":"random_walk","seriesCount":100}`, `{"scenario":"random_walk","seriesCount":1000}`,
			`{"scenario":"random_walk","seriesCount":4000}`, `{"scenario":"logs","seriesCount":20}`,
			`{"scenario":"logs","seriesCount":300}`, `{"scenario":"table","seriesCount":10000}`,
			`{"scenario":"table","seriesCount":200000}`,
		}
		r := rand.New(rand.NewPCG(5, 6))
		const n = 200
		var wg sync.WaitGroup
		var failed atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		var firstErr string
		begin := time.Now()
		for i := range n {
			lr := loadRequest{pc: instances[i%3], chunked: i%4 == 3}
			for q := range 1 + r.IntN(3) {
				lr.queries = append(lr.queries, harness.Query(fmt.Sprint("Q", q), models[r.IntN(len(models))], day, t0, time.Minute, 1000))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				s := time.Now()
				_, err := lr.run(c, p)
				mu.Lock()
				lat = append(lat, time.Since(s))
				if err != nil && firstErr == "" {
					firstErr = err.Error()
				}
				mu.Unlock()
				if err != nil {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		took := time.Since(begin)
		_, peak, _ := p.Memory()
		rss0, _, _ := p.Memory()
		time.Sleep(30 * time.Second)
		rss30, _, _ := p.Memory()
		m := metricsOf(t, p)
		t.Logf("30 s after: live heap %.0f MiB, heap in use %.0f MiB, idle %.0f MiB, released %.0f MiB, stacks %.0f MiB, sys %.0f MiB",
			m["quiver_go_heap_live_bytes"]/(1<<20), m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_memstats_heap_idle_bytes"]/(1<<20),
			m["go_memstats_heap_released_bytes"]/(1<<20), m["go_memstats_stack_inuse_bytes"]/(1<<20), m["go_memstats_sys_bytes"]/(1<<20))
		slices.Sort(lat)
		t.Logf("200 concurrent mixed requests: %d errors (%.200s), %s in all, latency p50 %s p99 %s; peak RSS %.0f MiB; RSS at the end %.0f MiB, 30 s later %.0f MiB; budget %.0f MiB, peak held %.0f MiB",
			failed.Load(), firstErr, took.Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond),
			mib(peak), mib(rss0), mib(rss30), m["quiver_memory_budget_bytes"]/(1<<20), m["quiver_memory_budget_peak_bytes"]/(1<<20))
	})
	for _, q := range []struct{ name, model string }{
		{"random_walk 10000 × 1000 points", `{"scenario":"random_walk","seriesCount":10000}`},
		{"logs 3333 streams (666 600 lines)", `{"scenario":"logs","seriesCount":3333}`},
		{"table 2 500 000 rows", `{"scenario":"table","seriesCount":2500000}`},
	} {
		t.Run(q.name, func(t *testing.T) {
			p := start(t)
			pc := instance(`{}`, nil)
			s := time.Now()
			resp, err := p.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, harness.Query("A", q.model, day, t0, time.Minute, 1000))
			took := time.Since(s)
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			var bytes int
			for _, f := range dr.Frames {
				bytes += len(f)
			}
			_, peak, _ := p.Memory()
			t.Logf("%s: %d frames, %.0f MiB on the wire, error %.200q, %s; peak RSS %.0f MiB", q.name, len(dr.Frames), mib(int64(bytes)), dr.Error, took.Round(time.Millisecond), mib(peak))
		})
	}
}
