package plugin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

func testBudget(limit int64, wait time.Duration) *budget {
	b := newBudget(settings.Budget{Bytes: limit, Wait: wait, From: "test"})
	b.collect = nil
	return b
}

// granted reports whether acquire returns within a short while.
func acquireAsync(a *account, ctx context.Context, n int64) chan error {
	ch := make(chan error, 1)
	go func() { ch <- a.acquire(ctx, n) }()
	return ch
}

func expectPending(t *testing.T, ch chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s: returned %v, want it to wait", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

func expectResult(t *testing.T, ch chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still waiting", what)
		return nil
	}
}

func TestBudgetWaitsAndGrantsInOrder(t *testing.T) {
	b := testBudget(100, time.Minute)
	a1, a2, a3 := b.account(), b.account(), b.account()
	if err := a1.acquire(context.Background(), 80); err != nil {
		t.Fatal(err)
	}
	w2 := acquireAsync(a2, context.Background(), 50)
	expectPending(t, w2, "50 of 100 with 80 held")
	// A small one behind it waits too: first come, first served.
	w3 := acquireAsync(a3, context.Background(), 10)
	expectPending(t, w3, "10 behind a waiter")
	a1.release(80)
	if err := expectResult(t, w2, "a2"); err != nil {
		t.Fatal(err)
	}
	if err := expectResult(t, w3, "a3"); err != nil {
		t.Fatal(err)
	}
	a2.close()
	a3.close()
	if used, peak, _, waiting := b.stats(); used != 0 || peak != 80 || waiting != 0 {
		t.Errorf("used %d peak %d waiting %d, want 0 80 0", used, peak, waiting)
	}
}

func TestBudgetRefusesWhatCanNeverFit(t *testing.T) {
	b := testBudget(100, time.Minute)
	err := b.account().acquire(context.Background(), 101)
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), settings.EnvMemoryBudget) {
		t.Fatalf("err %v, want errTooLarge naming %s", err, settings.EnvMemoryBudget)
	}
	if status, _, _ := classify(err); status != backend.StatusBadRequest {
		t.Errorf("status %d, want 400", status)
	}
}

func TestBudgetCancelAndTimeout(t *testing.T) {
	b := testBudget(100, 100*time.Millisecond)
	holder := b.account()
	if err := holder.acquire(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := acquireAsync(b.account(), ctx, 10)
	cancel()
	if err := expectResult(t, w, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	err := b.account().acquire(context.Background(), 10)
	if !errors.Is(err, errBusy) || !strings.Contains(err.Error(), "Quiver is busy") || !strings.Contains(err.Error(), settings.EnvMemoryBudgetWait) {
		t.Errorf("timed-out waiter: %v", err)
	}
	if status, _, _ := classify(err); status != backend.StatusTooManyRequests {
		t.Errorf("busy status %d, want 429", status)
	}
	if _, _, _, waiting := b.stats(); waiting != 0 {
		t.Errorf("%d waiters left behind", waiting)
	}
	holder.close()
	if used, _, _, _ := b.stats(); used != 0 {
		t.Errorf("used %d after every account closed", used)
	}
}

// A queue that moves is waited out, however long it takes: only a stalled
// budget fails a waiter as busy.
func TestBudgetWaitsOutAMovingQueue(t *testing.T) {
	// The gaps (20 ms) are far below the stall window (500 ms), so that a
	// loaded machine's late wake-ups do not look like a stall; the whole
	// wait (1.2 s) is well above it.
	b := testBudget(100, 500*time.Millisecond)
	holder := b.account()
	if err := holder.acquire(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	w := acquireAsync(b.account(), context.Background(), 60)
	start := time.Now()
	for range 60 { // 1 byte every 20 ms: fits after 1.2 s
		time.Sleep(20 * time.Millisecond)
		holder.release(1)
	}
	if err := expectResult(t, w, "waiter behind a moving queue"); err != nil {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	holder.close()
}

// Two unary requests each hold most of the budget and each want more: only
// their own completion would free it. The budget lets them through over the
// limit (up to twice it) rather than deadlock, and refuses past that.
func TestBudgetBreaksHoldAndWait(t *testing.T) {
	b := testBudget(100, time.Minute)
	r1, r2 := b.account(), b.account()
	if err := r1.acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	if err := r2.acquire(context.Background(), 20); err != nil {
		t.Fatal(err)
	}
	w1 := acquireAsync(r1, context.Background(), 40)
	expectPending(t, w1, "r1 while r2 can still finish")
	// Now both wait on each other: the oldest waiter goes over the limit.
	w2 := acquireAsync(r2, context.Background(), 60)
	if err := expectResult(t, w1, "r1 with every holder waiting"); err != nil {
		t.Fatalf("r1: %v", err)
	}
	expectPending(t, w2, "r2 while r1 can finish")
	// r1 asks again: r2's 60 goes through (190 of 100); r1's 100 cannot
	// (290) and waits while r2 can finish.
	w1 = acquireAsync(r1, context.Background(), 100)
	if err := expectResult(t, w2, "r2 with every holder waiting"); err != nil {
		t.Fatalf("r2: %v", err)
	}
	expectPending(t, w1, "r1 while r2 can finish")
	// r2 finishes: r1 alone would hold 210, more than twice the budget.
	r2.close()
	if err := expectResult(t, w1, "r1 beyond twice the budget"); !errors.Is(err, errTooLarge) {
		t.Fatalf("r1: %v, want too large (its own request needs more than the budget)", err)
	}
	r1.close()
	if used, peak, _, _ := b.stats(); used != 0 || peak != 190 {
		t.Errorf("used %d, peak %d: want 0 and 190", used, peak)
	}
}

// Many accounts hammering the budget. Without hold-and-wait nothing is
// refused and the limit holds exactly; with it (each keeps what it has while
// asking for more) the bytes held stay within twice the budget, the only
// refusals are "busy" or "too large", and everything comes back.
func TestBudgetConcurrent(t *testing.T) {
	for _, keep := range []bool{false, true} {
		b := testBudget(1000, time.Minute)
		var wg sync.WaitGroup
		var mu sync.Mutex
		refused := 0
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := b.account()
				defer a.close()
				for j := range 50 {
					n := int64(10 + (i*j)%300)
					if err := a.acquire(context.Background(), n); err != nil {
						if !errors.Is(err, errBusy) && !errors.Is(err, errTooLarge) {
							t.Error(err)
						}
						mu.Lock()
						refused++
						mu.Unlock()
						a.close()
						continue
					}
					if !keep || j%4 == 3 {
						a.close()
					}
				}
			}()
		}
		wg.Wait()
		used, peak, _, waiting := b.stats()
		if used != 0 || waiting != 0 {
			t.Errorf("keep=%v: used %d waiting %d after all closed", keep, used, waiting)
		}
		if limit := map[bool]int64{false: 1000, true: 2000}[keep]; peak > limit {
			t.Errorf("keep=%v: peak %d above %d", keep, peak, limit)
		}
		if !keep && refused > 0 {
			t.Errorf("%d reservations refused without hold-and-wait", refused)
		}
		t.Logf("keep=%v: peak %d, %d refused", keep, peak, refused)
	}
}

func TestFrameBytes(t *testing.T) {
	s := "0123456789"
	f := data.NewFrame("",
		data.NewField("t", nil, make([]time.Time, 100)),
		data.NewField("v", nil, make([]float64, 100)),
		data.NewField("n", nil, make([]*float64, 100)),
		data.NewField("s", nil, []string{s, s}),
		data.NewField("p", nil, []*string{&s, nil}),
	)
	want := int64(frameOverhead + 100*24 + 100*8 + 100*16 + 2*24 + 20 + 2*32 + 10)
	if got := frameBytes(f); got != want {
		t.Errorf("frameBytes %d, want %d", got, want)
	}
	mem := memory.NewGoAllocator()
	var k collectSink
	if err := (fakeSource{mem: mem, frames: 1, rows: 1000}).Query(context.Background(), source.Query{RefID: "A"}, &k); err != nil {
		t.Fatal(err)
	}
	if got := recordBytes(k.recs[0]); got < 8000 || got > 8000+125+frameOverhead {
		t.Errorf("recordBytes of 1000 float64 %d", got)
	}
	k.recs[0].Release()

	// Variable-width columns, small and large offsets, sliced or not: the
	// value bytes of the rows they span plus 8 bytes of offset per row.
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "bc", "def"}, nil)
	str := sb.NewArray()
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bb.AppendValues([][]byte{[]byte(`{"k":1}`), nil, []byte(`[]`)}, []bool{true, false, true})
	bin := bb.NewArray()
	lb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeString)
	lb.AppendStringValues([]string{"xy", "", "z"}, nil)
	large := lb.NewArray()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "l", Type: arrow.BinaryTypes.LargeString},
	}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{str, bin, large}, 3)
	for _, a := range []arrow.Array{str, bin, large} {
		a.Release()
	}
	sb.Release()
	bb.Release()
	lb.Release()
	defer rec.Release()
	if got, want := recordBytes(rec), int64(frameOverhead+3*1+(6+8*4)+(9+8*4)+(3+8*4)); got != want {
		t.Errorf("recordBytes of three text columns %d, want %d", got, want)
	}
	sl := rec.NewSlice(1, 3)
	defer sl.Release()
	if got, want := recordBytes(sl), int64(frameOverhead+3*1+(5+8*3)+(2+8*3)+(1+8*3)); got != want {
		t.Errorf("recordBytes of a slice of them %d, want %d", got, want)
	}
}

// The leaves keep their own copies of two facts; they must agree.
func TestLeafCopiesAgree(t *testing.T) {
	if settings.QuoteMax != source.QuoteMax || settings.PointBytes != source.PointBytes {
		t.Error("settings and source disagree on QuoteMax or PointBytes")
	}
}

// A query whose frames do not fit the budget fails naming the setting; the
// budget is whole again after every response, unary or chunked.
func TestServiceBudget(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := NewService(Options{
		Sources: func(context.Context, settings.Settings) (source.Source, error) {
			return fakeSource{mem: mem, frames: 50, rows: 1000}, nil
		},
		EncodeWorkers: 2,
		Budget:        settings.Budget{Bytes: 200 << 10, Wait: time.Second},
	})
	t.Cleanup(s.Close)
	pc := pluginContext(`{"codec":"none"}`)
	// 50 frames of ~10 KB held in one unary response: 500 KB > 200 KB, and
	// nobody else holds any; the overdraft lets one request through up to
	// twice the budget, then it is refused as too large.
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", `"ok"`)}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if !strings.Contains(dr.Error, "query too large for the memory budget: the frames of this request's queries add up to") || dr.Status != 400 || len(dr.Frames) != 0 {
		t.Errorf("unary over the budget: %d %q, %d frames", dr.Status, dr.Error, len(dr.Frames))
	}
	if used, _, _, _ := s.budget.stats(); used != 0 {
		t.Fatalf("%d bytes held after the response", used)
	}
	// Chunked: each frame's bytes go back once sent, so the same query fits.
	stream := &chunkStream{ctx: context.Background()}
	if err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", `"ok"`)}}, stream); err != nil {
		t.Fatal(err)
	}
	if len(stream.chunks) != 50 || stream.chunks[0].Error != "" {
		t.Errorf("chunked: %d chunks, first error %q", len(stream.chunks), stream.chunks[0].Error)
	}
	if used, peak, _, _ := s.budget.stats(); used != 0 || peak > 400<<10 {
		t.Errorf("used %d, peak %d after chunked", used, peak)
	}
}

func TestPrecheck(t *testing.T) {
	year := func(y int) int64 { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() }
	qs := []*pluginv2.DataQuery{
		{RefId: "ok", TimeRange: &pluginv2.TimeRange{FromEpochMS: year(2000), ToEpochMS: year(2001)}},
		{RefId: "y1", TimeRange: &pluginv2.TimeRange{FromEpochMS: year(1), ToEpochMS: year(2001)}},
		{RefId: "y9999", TimeRange: &pluginv2.TimeRange{FromEpochMS: year(2000), ToEpochMS: year(9999)}},
		{RefId: "big", Json: make([]byte, MaxQueryJSON+1)},
	}
	errs := precheck(qs)
	if errs[0] != nil {
		t.Errorf("good query refused: %v", errs[0])
	}
	for i, want := range map[int]string{1: "0001-01-01", 2: "9999-01-01", 3: "1048576 bytes"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), want) || source.KindOf(errs[i]) != source.KindQuery {
			t.Errorf("%s: %v, want a bad-query error saying %q", qs[i].RefId, errs[i], want)
		}
	}
	if precheck(qs[:1]) != nil {
		t.Error("precheck of good queries should be nil")
	}
}

// collectSink keeps the records a source hands over.
type collectSink struct{ recs []arrow.RecordBatch }

func (c *collectSink) Frame(*data.Frame) error { return errors.New("want records") }
func (c *collectSink) Record(r arrow.RecordBatch) error {
	c.recs = append(c.recs, r)
	return nil
}

// chunkStream is the server side of a QueryChunkedData stream, in memory.
type chunkStream struct {
	grpc.ServerStream
	ctx    context.Context
	chunks []*pluginv2.QueryChunkedDataResponse
}

func (c *chunkStream) Context() context.Context { return c.ctx }
func (c *chunkStream) Send(r *pluginv2.QueryChunkedDataResponse) error {
	c.chunks = append(c.chunks, r)
	return nil
}
