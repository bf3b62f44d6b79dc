package pipeline

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
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/settings"
)

func testBudget(limit int64, wait time.Duration) *Budget {
	b := newBudget(settings.Budget{Bytes: limit, Wait: wait, From: "test"}, nil)
	b.collect = nil
	return b
}

// granted reports whether acquire returns within a short while.
func acquireAsync(a *Account, ctx context.Context, n int64) chan error {
	ch := make(chan error, 1)
	go func() { ch <- a.Acquire(ctx, n) }()
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
	if err := a1.Acquire(context.Background(), 80); err != nil {
		t.Fatal(err)
	}
	w2 := acquireAsync(a2, context.Background(), 50)
	expectPending(t, w2, "50 of 100 with 80 held")
	// A small one behind it waits too: first come, first served.
	w3 := acquireAsync(a3, context.Background(), 10)
	expectPending(t, w3, "10 behind a waiter")
	a1.Release(80)
	if err := expectResult(t, w2, "a2"); err != nil {
		t.Fatal(err)
	}
	if err := expectResult(t, w3, "a3"); err != nil {
		t.Fatal(err)
	}
	a2.Close()
	a3.Close()
	if used, peak, _, waiting := b.Stats(); used != 0 || peak != 80 || waiting != 0 {
		t.Errorf("used %d peak %d waiting %d, want 0 80 0", used, peak, waiting)
	}
}

func TestBudgetRefusesWhatCanNeverFit(t *testing.T) {
	b := testBudget(100, time.Minute)
	err := b.account().Acquire(context.Background(), 101)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), settings.EnvMemoryBudget) {
		t.Fatalf("err %v, want ErrTooLarge naming %s", err, settings.EnvMemoryBudget)
	}
}

func TestBudgetCancelAndTimeout(t *testing.T) {
	b := testBudget(100, 100*time.Millisecond)
	holder := b.account()
	if err := holder.Acquire(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := acquireAsync(b.account(), ctx, 10)
	cancel()
	if err := expectResult(t, w, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	err := b.account().Acquire(context.Background(), 10)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "Quiver is busy") || !strings.Contains(err.Error(), settings.EnvMemoryBudgetWait) {
		t.Errorf("timed-out waiter: %v", err)
	}
	if _, _, _, waiting := b.Stats(); waiting != 0 {
		t.Errorf("%d waiters left behind", waiting)
	}
	holder.Close()
	if used, _, _, _ := b.Stats(); used != 0 {
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
	if err := holder.Acquire(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	w := acquireAsync(b.account(), context.Background(), 60)
	start := time.Now()
	for range 60 { // 1 byte every 20 ms: fits after 1.2 s
		time.Sleep(20 * time.Millisecond)
		holder.Release(1)
	}
	if err := expectResult(t, w, "waiter behind a moving queue"); err != nil {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	holder.Close()
}

// Two unary requests each hold most of the budget and each want more: only
// their own completion would free it. The budget lets them through over the
// limit (up to twice it) rather than deadlock, and refuses past that.
func TestBudgetBreaksHoldAndWait(t *testing.T) {
	b := testBudget(100, time.Minute)
	r1, r2 := b.account(), b.account()
	if err := r1.Acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	if err := r2.Acquire(context.Background(), 20); err != nil {
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
	r2.Close()
	if err := expectResult(t, w1, "r1 beyond twice the budget"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("r1: %v, want too large (its own request needs more than the budget)", err)
	}
	r1.Close()
	if used, peak, _, _ := b.Stats(); used != 0 || peak != 190 {
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
				defer a.Close()
				for j := range 50 {
					n := int64(10 + (i*j)%300)
					if err := a.Acquire(context.Background(), n); err != nil {
						if !errors.Is(err, ErrBusy) && !errors.Is(err, ErrTooLarge) {
							t.Error(err)
						}
						mu.Lock()
						refused++
						mu.Unlock()
						a.Close()
						continue
					}
					if !keep || j%4 == 3 {
						a.Close()
					}
				}
			}()
		}
		wg.Wait()
		used, peak, _, waiting := b.Stats()
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
	if got := FrameBytes(f); got != want {
		t.Errorf("FrameBytes %d, want %d", got, want)
	}
	mem := memory.NewGoAllocator()
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues(make([]float64, 1000), nil)
	floats := fb.NewArray()
	fb.Release()
	one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64}}, nil), []arrow.Array{floats}, 1000)
	floats.Release()
	if got := RecordBytes(one); got < 8000 || got > 8000+125+frameOverhead {
		t.Errorf("RecordBytes of 1000 float64 %d", got)
	}
	one.Release()

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
	if got, want := RecordBytes(rec), int64(frameOverhead+3*1+(6+8*4)+(9+8*4)+(3+8*4)); got != want {
		t.Errorf("RecordBytes of three text columns %d, want %d", got, want)
	}
	sl := rec.NewSlice(1, 3)
	defer sl.Release()
	if got, want := RecordBytes(sl), int64(frameOverhead+3*1+(5+8*3)+(2+8*3)+(1+8*3)); got != want {
		t.Errorf("RecordBytes of a slice of them %d, want %d", got, want)
	}
}
