package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// stressModel is the query model of stressSource.
type stressModel struct {
	Frames     int   // frames in all, frame 0 included
	Rows       int   // rows of each frame after frame 0
	Rows0      int   // rows of frame 0 (of each of its parts when Parts0)
	Slow0      int   // ms frame 0's encoding takes (its meta marshals that slowly); whole frame 0 only
	Parts0     int   // frame 0 handed over in this many parts (whole in the JSON format)
	Interleave bool  // with Parts0: frames 1.. handed over after its first part, before the others
	FailAt     int   // the source fails before handing frame FailAt (1..)
	Lend       bool  // lend the records
	Reserve    int64 // bytes reserved up front
}

// slowMeta makes a frame slow to encode: its meta marshals slowly.
type slowMeta struct{ ms int }

func (m slowMeta) MarshalJSON() ([]byte, error) {
	time.Sleep(time.Duration(m.ms) * time.Millisecond)
	return []byte(`{"slow":true}`), nil
}

// stressSource hands over frame i with values i*1e6+r, so that a chunk's
// frame is known by its first value.
type stressSource struct{ mem memory.Allocator }

func stressSchema(refID string) *arrow.Schema {
	md, _ := frame.SchemaMetadata("", refID, nil)
	fmd := frame.ColumnMetadata(frame.TSNumber, nil, "")
	return arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64, Metadata: fmd}}, &md)
}

func stressRecord(mem memory.Allocator, refID string, i, off, rows int) arrow.RecordBatch {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	for r := range rows {
		b.Append(float64(i*1e6 + off + r))
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(stressSchema(refID), []arrow.Array{a}, int64(rows))
}

func (s stressSource) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	var m stressModel
	if err := json.Unmarshal(q.JSON, &m); err != nil {
		return err
	}
	if m.Reserve > 0 {
		if err := source.Reserve(ctx, sink, m.Reserve); err != nil {
			return err
		}
	}
	record := func(i int) error {
		if m.FailAt > 0 && i == m.FailAt {
			return source.Upstream(errors.New("server went away"))
		}
		rec := stressRecord(s.mem, q.RefID, i, 0, m.Rows)
		if l, ok := sink.(source.RecordLender); ok && m.Lend {
			return l.LendRecord(ctx, rec)
		}
		return sink.Record(ctx, rec)
	}
	rest := func() error {
		for i := 1; i < m.Frames; i++ {
			if err := record(i); err != nil {
				return err
			}
		}
		return nil
	}
	if m.Parts0 > 0 {
		w, err := source.OpenParts(sink, stressSchema(q.RefID))
		if err != nil {
			return err
		}
		if w != nil {
			defer w.Abort()
			for p := range m.Parts0 {
				if p == 1 && m.Interleave {
					if err := rest(); err != nil {
						return err
					}
				}
				part := stressRecord(s.mem, q.RefID, 0, p*m.Rows0, m.Rows0)
				hand := w.Part
				if l, ok := w.(source.PartLender); ok && m.Lend {
					hand = l.LendPart
				}
				if err := hand(ctx, part); err != nil {
					return err
				}
			}
			md, _ := frame.SchemaMetadata("", q.RefID, nil)
			if err := w.Close(ctx, md); err != nil {
				return err
			}
			if m.Interleave {
				return nil
			}
			return rest()
		}
		m.Rows0 *= m.Parts0 // declined (JSON): the table whole
	}
	vals := make([]float64, m.Rows0)
	for r := range vals {
		vals[r] = float64(r)
	}
	f := data.NewFrame("", data.NewField("v", nil, vals))
	if m.Slow0 > 0 {
		f.Meta = &data.FrameMeta{Custom: slowMeta{m.Slow0}}
	}
	if err := sink.Frame(ctx, f); err != nil {
		return err
	}
	return rest()
}

func stressQuery(refID string, m stressModel) *pluginv2.DataQuery {
	b, _ := json.Marshal(m)
	return query(refID, string(b))
}

// stressStream is the server side of a chunked stream whose client reads
// only while open is closed (nil: at once), and stops at its context.
type stressStream struct {
	grpc.ServerStream
	ctx    context.Context
	open   chan struct{}
	mu     sync.Mutex
	chunks []*pluginv2.QueryChunkedDataResponse
}

func (c *stressStream) Context() context.Context { return c.ctx }
func (c *stressStream) Send(r *pluginv2.QueryChunkedDataResponse) error {
	if c.open != nil {
		select {
		case <-c.open:
		case <-c.ctx.Done():
			return c.ctx.Err()
		}
	}
	c.mu.Lock()
	c.chunks = append(c.chunks, r)
	c.mu.Unlock()
	return nil
}

func tenantCtx(ctx context.Context, tenant string) context.Context {
	return metadata.NewIncomingContext(ctx, metadata.Pairs(tenantMetadataKey, tenant))
}

// checkChunkOrder checks that each refId's chunks are its frames 0, 1, …
// (each known by its first value), any error last, and returns the frames
// and whether an error came, by refId.
func checkChunkOrder(t *testing.T, what string, chunks []*pluginv2.QueryChunkedDataResponse, format pluginv2.DataFrameFormat) (map[string]int, map[string]string) {
	t.Helper()
	return checkChunks(t, what, chunks, format, func(_ string, i int) float64 { return float64(i * 1e6) })
}

// checkChunks is checkChunkOrder with frame i of refId starting with first(refId, i).
func checkChunks(t *testing.T, what string, chunks []*pluginv2.QueryChunkedDataResponse, format pluginv2.DataFrameFormat, first func(string, int) float64) (map[string]int, map[string]string) {
	t.Helper()
	next, errs := map[string]int{}, map[string]string{}
	for _, c := range chunks {
		if c.Error != "" {
			if _, dup := errs[c.RefId]; dup {
				t.Errorf("%s: %s: a second error chunk", what, c.RefId)
			}
			errs[c.RefId] = c.Error
			continue
		}
		if _, after := errs[c.RefId]; after {
			t.Errorf("%s: %s: frame %s after its error", what, c.RefId, c.FrameId)
		}
		if want := strconv.Itoa(next[c.RefId]); c.FrameId != want {
			t.Errorf("%s: %s: chunk of frame %s where frame %s comes next", what, c.RefId, c.FrameId, want)
		}
		var f *data.Frame
		var err error
		if format == pluginv2.DataFrameFormat_ARROW {
			f, err = data.UnmarshalArrowFrame(c.Frame)
		} else {
			f = &data.Frame{}
			err = f.UnmarshalJSON(c.Frame)
		}
		if err != nil {
			t.Fatalf("%s: %s frame %s: %v", what, c.RefId, c.FrameId, err)
		}
		i, _ := strconv.Atoi(c.FrameId)
		if f.Rows() > 0 {
			if v, _ := f.Fields[0].ConcreteAt(0); v != first(c.RefId, i) {
				t.Errorf("%s: %s: chunk %s holds the frame starting with %v", what, c.RefId, c.FrameId, v)
			}
		}
		next[c.RefId]++
	}
	return next, errs
}

// settle waits (bounded) for the budget to be back to 0, the allocator
// empty and the goroutines back to base.
func settleAll(t *testing.T, s *Service, mem *memory.CheckedAllocator, base int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		used, _, _, waiting := s.pipeline.Stats()
		if used == 0 && waiting == 0 && mem.CurrentAlloc() == 0 && runtime.NumGoroutine() <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	used, _, _, waiting := s.pipeline.Stats()
	if used != 0 || waiting != 0 {
		t.Errorf("%s: budget holds %d bytes, %d waiting, after the requests", what, used, waiting)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		t.Errorf("%s: %d bytes of records not released", what, n)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%s: %d goroutines, %d before:\n%s", what, n, base, buf[:runtime.Stack(buf, true)])
	}
}

func stressService(t *testing.T, mem memory.Allocator, workers int, budget int64, wait time.Duration) *Service {
	t.Helper()
	s := NewService(Options{
		Sources:       func(context.Context, settings.Settings) (source.Source, error) { return stressSource{mem: mem}, nil },
		EncodeWorkers: workers,
		Budget:        settings.Budget{Bytes: budget, Wait: wait},
	})
	t.Cleanup(s.Close)
	return s
}

// Many chunked requests of several tenants and data sources at once, on 1–2
// encode workers and a small budget, frame 0 much larger and slower than
// the rest, Arrow and JSON, whole, lent, in parts, failing midway: every
// request ends, each query's chunks come in frame order, and nothing is
// held afterwards.
func TestChunkedOrderUnderStress(t *testing.T) {
	models := []stressModel{
		{Frames: 40, Rows: 200, Rows0: 40000, Slow0: 30},
		{Frames: 40, Rows: 200, Rows0: 40000, Slow0: 30, Lend: true},
		{Frames: 30, Rows: 500, Rows0: 2000, Parts0: 5, Lend: true},
		{Frames: 30, Rows: 500, Rows0: 2000, Parts0: 5},
		{Frames: 40, Rows: 200, Rows0: 40000, Slow0: 20, FailAt: 17},
		{Frames: 40, Rows: 200, Rows0: 100, Reserve: 64 << 10},
		{Frames: 1, Rows0: 10},
	}
	for _, workers := range []int{1, 2} {
		for _, format := range []pluginv2.DataFrameFormat{pluginv2.DataFrameFormat_ARROW, pluginv2.DataFrameFormat_JSON} {
			name := fmt.Sprintf("%d workers %s", workers, format)
			t.Run(name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				s := stressService(t, mem, workers, 2<<20, 5*time.Second)
				base := runtime.NumGoroutine()
				pcs := []*pluginv2.PluginContext{pluginContext(`{"codec":"lz4"}`), pluginContext(`{"codec":"none"}`)}
				var wg sync.WaitGroup
				var ended atomic.Int32
				const requests = 12
				for r := range requests {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(tenantCtx(context.Background(), fmt.Sprint("t", r%3)), 60*time.Second)
						defer cancel()
						var qs []*pluginv2.DataQuery
						for i, m := range models {
							if (i+r)%2 == 0 {
								qs = append(qs, stressQuery(fmt.Sprint("Q", i), m))
							}
						}
						stream := &stressStream{ctx: ctx}
						err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pcs[r%2], Format: format, Queries: qs}, stream)
						if ctx.Err() != nil {
							t.Errorf("request %d ended only at its deadline", r)
						}
						if err != nil {
							t.Errorf("request %d: %v", r, err)
						}
						frames, errs := checkChunkOrder(t, fmt.Sprint("request ", r), stream.chunks, format)
						for _, q := range qs {
							var m stressModel
							_ = json.Unmarshal(q.Json, &m)
							if m.FailAt > 0 {
								if errs[q.RefId] == "" || frames[q.RefId] > m.FailAt {
									t.Errorf("request %d %s: %d frames, error %q", r, q.RefId, frames[q.RefId], errs[q.RefId])
								}
							} else if errs[q.RefId] != "" && !isBusy(errs[q.RefId]) || errs[q.RefId] == "" && frames[q.RefId] != m.Frames {
								t.Errorf("request %d %s: %d frames of %d, error %q", r, q.RefId, frames[q.RefId], m.Frames, errs[q.RefId])
							}
						}
						ended.Add(1)
					})
				}
				wg.Wait()
				if ended.Load() != requests {
					t.Errorf("%d requests of %d ended", ended.Load(), requests)
				}
				settleAll(t, s, mem, base, name)
			})
		}
	}
}

func isBusy(msg string) bool {
	return strings.Contains(msg, "Quiver is busy") || strings.Contains(msg, "too large")
}

// Frame 0 in parts, the query's other frames handed over while it is open
// (its first part, then the frames, then its other parts), on a budget the
// frames fill: the request must end, with every frame, long before the
// budget's wait, its chunks in the order of the unary answer's frames.
func TestChunkedInterleavedPartsFrame0(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s := stressService(t, mem, 2, 1<<20, 20*time.Second)
	base := runtime.NumGoroutine()
	m := stressModel{Frames: 60, Rows: 2000, Rows0: 4000, Parts0: 4, Interleave: true}
	pc := pluginContext(`{"codec":"none"}`)
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc,
		Queries: []*pluginv2.DataQuery{stressQuery("A", m)}})
	if err != nil {
		t.Fatal(err)
	}
	unary := resp.Responses["A"]
	if unary.Error != "" || len(unary.Frames) != m.Frames {
		t.Fatalf("unary: %q, %d frames", unary.Error, len(unary.Frames))
	}
	var firsts []float64
	for _, b := range unary.Frames {
		f, err := data.UnmarshalArrowFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := f.Fields[0].ConcreteAt(0)
		firsts = append(firsts, v.(float64))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := &stressStream{ctx: ctx}
	start := time.Now()
	err = s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc,
		Queries: []*pluginv2.DataQuery{stressQuery("A", m)}}, stream)
	t.Logf("took %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	frames, errs := checkChunks(t, "interleaved", stream.chunks, pluginv2.DataFrameFormat_ARROW, func(_ string, i int) float64 { return firsts[i] })
	if frames["A"] != m.Frames || errs["A"] != "" {
		t.Errorf("%d frames of %d, error %q", frames["A"], m.Frames, errs["A"])
	}
	settleAll(t, s, mem, base, "interleaved")
}

// A client that stops reading holds up its own request with at most about
// MaxUnsent waiting to be sent: also when its first frame is slow to
// encode and the others come fast meanwhile.
func TestChunkedStalledClientSlowFrame0(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s := stressService(t, mem, 2, 64<<20, 20*time.Second)
	base := runtime.NumGoroutine()
	// frame 0 slow (1.5 s); 300 frames of 32768 rows (~256 KiB each, 75 MiB in all)
	m := stressModel{Frames: 300, Rows: 32768, Rows0: 10, Slow0: 1500}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := &stressStream{ctx: ctx, open: make(chan struct{})} // never reads
	done := make(chan error, 1)
	go func() {
		done <- s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pluginContext(`{"codec":"none"}`),
			Queries: []*pluginv2.DataQuery{stressQuery("A", m)}}, stream)
	}()
	time.Sleep(3 * time.Second) // frame 0 encoded (1.5 s), then the budget stops moving
	used, peak, _, _ := s.pipeline.Stats()
	t.Logf("stalled request holds %d KiB (peak %d KiB); MaxUnsent %d KiB", used>>10, peak>>10, MaxUnsent>>10)
	if used > 2*MaxUnsent {
		t.Errorf("a stalled client's request holds %d KiB, more than twice MaxUnsent (%d KiB)", used>>10, MaxUnsent>>10)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the request did not end after its client went")
	}
	settleAll(t, s, mem, base, "stalled")
}

// Beside a stalled request with a slow first frame, another request of the
// same tenant's data source is answered (its share is not all held by the
// stalled one's frames waiting for its first).
func TestChunkedStalledSlowFrame0LeavesItsShare(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s := stressService(t, mem, 2, 64<<20, 3*time.Second)
	base := runtime.NumGoroutine()
	pc := pluginContext(`{"codec":"none"}`)
	ctx, cancel := context.WithTimeout(tenantCtx(context.Background(), "T"), 60*time.Second)
	defer cancel()
	stalled := &stressStream{ctx: ctx, open: make(chan struct{})} // never reads
	done := make(chan error, 1)
	go func() {
		done <- s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc,
			Queries: []*pluginv2.DataQuery{stressQuery("A", stressModel{Frames: 300, Rows: 32768, Rows0: 10, Slow0: 1500})}}, stalled)
	}()
	time.Sleep(2500 * time.Millisecond) // its first frame is encoded, its client reads nothing
	ctxB, cancelB := context.WithTimeout(tenantCtx(context.Background(), "T"), 30*time.Second)
	defer cancelB()
	other := &stressStream{ctx: ctxB}
	if err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc,
		Queries: []*pluginv2.DataQuery{stressQuery("B", stressModel{Frames: 8, Rows: 1 << 20, Rows0: 10})}}, other); err != nil {
		t.Fatal(err)
	}
	frames, errs := checkChunkOrder(t, "beside", other.chunks, pluginv2.DataFrameFormat_ARROW)
	if frames["B"] != 8 || errs["B"] != "" {
		t.Errorf("the other request of the share: %d frames of 8, error %q", frames["B"], errs["B"])
	}
	cancel()
	<-done
	settleAll(t, s, mem, base, "beside")
}

// cancelStream reads after chunks and cancels its request after the n-th.
type cancelStream struct {
	stressStream
	n      int
	cancel context.CancelFunc
}

func (c *cancelStream) Send(r *pluginv2.QueryChunkedDataResponse) error {
	c.mu.Lock()
	sent := len(c.chunks)
	c.mu.Unlock()
	if sent == c.n {
		c.cancel()
	}
	if c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	return c.stressStream.Send(r)
}

// Clients that read, stop reading (then go), or cancel midway, of several
// tenants and data sources at once, on a small budget and 1–2 workers:
// every request ends (the stalled ones once their client goes), the chunks
// that arrive are in frame order, and nothing is held afterwards.
func TestChunkedStalledAndCancelledClientsUnderStress(t *testing.T) {
	models := []stressModel{
		{Frames: 30, Rows: 4000, Rows0: 40000, Slow0: 40},
		{Frames: 30, Rows: 4000, Rows0: 40000, Slow0: 40, Lend: true},
		{Frames: 20, Rows: 4000, Rows0: 4000, Parts0: 4, Lend: true},
		{Frames: 20, Rows: 4000, Rows0: 4000, Parts0: 4, Interleave: true},
		{Frames: 30, Rows: 4000, Rows0: 20000, Slow0: 20, FailAt: 11},
	}
	for _, workers := range []int{1, 2} {
		for _, format := range []pluginv2.DataFrameFormat{pluginv2.DataFrameFormat_ARROW, pluginv2.DataFrameFormat_JSON} {
			name := fmt.Sprintf("%d workers %s", workers, format)
			t.Run(name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				s := stressService(t, mem, workers, 4<<20, 3*time.Second)
				base := runtime.NumGoroutine()
				pcs := []*pluginv2.PluginContext{pluginContext(`{"codec":"lz4"}`), pluginContext(`{"codec":"none"}`)}
				var wg sync.WaitGroup
				for r := range 12 {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(tenantCtx(context.Background(), fmt.Sprint("t", r%3)), 60*time.Second)
						defer cancel()
						var qs []*pluginv2.DataQuery
						for i, m := range models {
							if (i+r)%2 == 0 || i == r%len(models) {
								qs = append(qs, stressQuery(fmt.Sprint("Q", i), m))
							}
						}
						req := &pluginv2.QueryChunkedDataRequest{PluginContext: pcs[r%2], Format: format, Queries: qs}
						var chunks func() []*pluginv2.QueryChunkedDataResponse
						var err error
						switch r % 3 {
						case 0: // reads
							st := &stressStream{ctx: ctx}
							err = s.QueryChunkedData(req, st)
							chunks = func() []*pluginv2.QueryChunkedDataResponse { return st.chunks }
							if ctx.Err() != nil {
								t.Errorf("request %d ended only at its deadline", r)
							}
						case 1: // stops reading, goes after a while
							st := &stressStream{ctx: ctx, open: make(chan struct{})}
							time.AfterFunc(time.Duration(200+50*r)*time.Millisecond, cancel)
							err = s.QueryChunkedData(req, st)
							chunks = func() []*pluginv2.QueryChunkedDataResponse { return st.chunks }
						case 2: // cancels midway
							st := &cancelStream{stressStream: stressStream{ctx: ctx}, n: 3 + r, cancel: cancel}
							err = s.QueryChunkedData(req, st)
							chunks = func() []*pluginv2.QueryChunkedDataResponse { return st.chunks }
						}
						if r%3 == 0 && err != nil {
							t.Errorf("request %d: %v", r, err)
						}
						checkChunks(t, fmt.Sprint("request ", r), chunks(), format, func(ref string, i int) float64 {
							if ref == "Q3" && format == pluginv2.DataFrameFormat_ARROW { // frame 0 in parts, interleaved: it comes last
								if i == 19 {
									return 0
								}
								return float64((i + 1) * 1e6)
							}
							return float64(i * 1e6)
						})
					})
				}
				wg.Wait()
				settleAll(t, s, mem, base, name)
			})
		}
	}
}
