package pipeline

import (
	"context"
	"errors"
	"fmt"
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

// Within one share, waiters are served first come, first served: a small
// one waits behind a larger one that does not fit.
func TestBudgetWaitsAndGrantsInOrder(t *testing.T) {
	b := testBudget(100, time.Minute) // a share holds at most 75
	a1, a2, a3 := b.account("s"), b.account("s"), b.account("s")
	if err := a1.Acquire(context.Background(), 60); err != nil {
		t.Fatal(err)
	}
	w2 := acquireAsync(a2, context.Background(), 30)
	expectPending(t, w2, "30 more with 60 of the share's 75 held")
	w3 := acquireAsync(a3, context.Background(), 10)
	expectPending(t, w3, "10 behind a waiter of its share")
	a1.Release(60)
	if err := expectResult(t, w2, "a2"); err != nil {
		t.Fatal(err)
	}
	if err := expectResult(t, w3, "a3"); err != nil {
		t.Fatal(err)
	}
	a2.Close()
	a3.Close()
	if used, peak, _, waiting := b.Stats(); used != 0 || peak != 60 || waiting != 0 {
		t.Errorf("used %d peak %d waiting %d, want 0 60 0", used, peak, waiting)
	}
}

func TestBudgetRefusesWhatCanNeverFit(t *testing.T) {
	b := testBudget(100, time.Minute)
	err := b.account("s").Acquire(context.Background(), 76)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), settings.MemoryBudgetSetting) || !strings.Contains(err.Error(), "75 B one data source may hold") {
		t.Fatalf("err %v, want ErrTooLarge naming the share's 75 B and %s", err, settings.MemoryBudgetSetting)
	}
}

func TestBudgetCancelAndTimeout(t *testing.T) {
	b := testBudget(100, 100*time.Millisecond)
	holder := b.account("s")
	if err := holder.Acquire(context.Background(), 75); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := acquireAsync(b.account("s"), ctx, 10)
	cancel()
	if err := expectResult(t, w, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	err := b.account("s").Acquire(context.Background(), 10)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "Quiver is busy") || !strings.Contains(err.Error(), settings.IniMemoryBudgetWait+" in "+settings.IniSection) {
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
	holder := b.account("s")
	if err := holder.Acquire(context.Background(), 75); err != nil {
		t.Fatal(err)
	}
	w := acquireAsync(b.account("s"), context.Background(), 60)
	start := time.Now()
	for range 60 { // 1 byte every 20 ms: fits the share after 1.2 s
		time.Sleep(20 * time.Millisecond)
		holder.Release(1)
	}
	if err := expectResult(t, w, "waiter behind a moving queue"); err != nil {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	holder.Close()
}

// Two unary requests each hold part of the budget and each want more: only
// their own completion would free it. The budget lets them through over the
// limit (up to twice it) rather than deadlock, the one whose share holds
// least first, and refuses past that.
func TestBudgetBreaksHoldAndWait(t *testing.T) {
	b := testBudget(100, time.Minute)
	r1, r2 := b.account("one"), b.account("two")
	if err := r1.Acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	if err := r2.Acquire(context.Background(), 20); err != nil {
		t.Fatal(err)
	}
	w1 := acquireAsync(r1, context.Background(), 40)
	expectPending(t, w1, "r1 while r2 can still finish")
	// Now both wait on each other: r2, whose share holds least, goes over
	// the limit (150 of 100).
	w2 := acquireAsync(r2, context.Background(), 60)
	if err := expectResult(t, w2, "r2 with every holder waiting"); err != nil {
		t.Fatalf("r2: %v", err)
	}
	expectPending(t, w1, "r1 while r2 can finish")
	// r2 asks again: now r1's share holds least, and its 40 goes through
	// (190); r2's 50 waits while r1 can finish.
	w2 = acquireAsync(r2, context.Background(), 50)
	if err := expectResult(t, w1, "r1 with every holder waiting"); err != nil {
		t.Fatalf("r1: %v", err)
	}
	expectPending(t, w2, "r2 while r1 can finish")
	// r1 asks again too: r2's share holds least, but its 50 would make 240,
	// more than twice the budget, and its request alone needs 130.
	w1 = acquireAsync(r1, context.Background(), 30)
	if err := expectResult(t, w2, "r2 beyond twice the budget"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("r2: %v, want too large (its own request needs more than the budget)", err)
	}
	expectPending(t, w1, "r1 while r2 can finish")
	r2.Close()
	if err := expectResult(t, w1, "r1 alone, every holder waiting"); err != nil {
		t.Fatalf("r1: %v", err)
	}
	r1.Close()
	if used, peak, _, _ := b.Stats(); used != 0 || peak != 190 {
		t.Errorf("used %d, peak %d: want 0 and 190", used, peak)
	}
}

// A chunked request whose sent frames are on their way out (Held.Drain) is not
// blocked on itself: it waits for its own sends to give their bytes back
// instead of being let over the budget or refused as too large; a request
// whose bytes drain nothing is let over the budget as before.
func TestBudgetWaitsForItsOwnSends(t *testing.T) {
	b := testBudget(100, time.Minute)
	chunked := b.account("s")
	if err := chunked.Acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	sent := (&Held{a: chunked, n: 70}).Drain() // sent: the transport will give them back
	w := acquireAsync(chunked, context.Background(), 60)
	expectPending(t, w, "a request whose sends are on their way out")
	if used, _, _, _ := b.Stats(); used != 70 {
		t.Fatalf("used %d while it waits: want 70, no overdraft", used)
	}
	sent()
	if err := expectResult(t, w, "once its sends are written"); err != nil {
		t.Fatalf("after its sends: %v", err)
	}
	chunked.Close()

	unary := b.account("s")
	if err := unary.Acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	sent = (&Held{a: unary, n: 30}).Drain() // part on its way out, part kept for the response
	w = acquireAsync(unary, context.Background(), 60)
	expectPending(t, w, "while 30 are on their way out")
	sent() // written: what is left is kept, nothing drains
	if err := expectResult(t, w, "holding 40 it keeps, waiting for 60"); err != nil {
		t.Fatalf("%v", err) // 100 in all: it fits now
	}
	// Holding 100 that drain nothing, it waits on itself: let over the
	// budget at once (170), as a unary request always was.
	w = acquireAsync(unary, context.Background(), 70)
	if err := expectResult(t, w, "blocked on itself"); err != nil {
		t.Fatalf("%v, want an overdraft", err)
	}
	if used, _, _, _ := b.Stats(); used != 170 {
		t.Errorf("used %d, want 170", used)
	}
	unary.Close()
	if used, _, _, _ := b.Stats(); used != 0 {
		t.Errorf("used %d after both closed", used)
	}
}

// A share that overdrew and then stalls (a chunked request whose client
// stopped reading: its bytes are on their way out and stay there) does not
// hold up the other shares: they still have the quarter of the budget its
// share leaves them, however far past its share it went.
func TestBudgetOverdraftLeavesTheOthersTheirRoom(t *testing.T) {
	b := testBudget(100, time.Minute)
	stalled := b.account("stalled")
	if err := stalled.Acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	// Alone and waiting on itself (its first frame held back while it
	// builds the rest): let over its share and the budget.
	if err := stalled.Acquire(context.Background(), 60); err != nil {
		t.Fatal(err)
	}
	sent := (&Held{a: stalled, n: 130}).Drain() // sent, never read
	other := b.account("other")
	if err := expectResult(t, acquireAsync(other, context.Background(), 10), "another share beside the stalled one"); err != nil {
		t.Fatal(err)
	}
	if err := expectResult(t, acquireAsync(other, context.Background(), 15), "the rest of its quarter"); err != nil {
		t.Fatal(err)
	}
	w := acquireAsync(other, context.Background(), 1)
	expectPending(t, w, "past the quarter the stalled share leaves")
	sent()
	if err := expectResult(t, w, "once the stalled share gave back"); err != nil {
		t.Fatal(err)
	}
	other.Close()
	stalled.Close()
	if used, peak, _, _ := b.Stats(); used != 0 || peak != 155 || b.over != 0 {
		t.Errorf("used %d, peak %d, over %d: want 0, 155 and 0", used, peak, b.over)
	}
}

// A quiet share's small reservation goes ahead of another share's queue:
// the busy share holds at most three quarters, and the share that holds
// least is served first.
func TestBudgetServesTheQuietShareFirst(t *testing.T) {
	b := testBudget(100, time.Minute)
	busy := b.account("busy")
	if err := busy.Acquire(context.Background(), 70); err != nil {
		t.Fatal(err)
	}
	// The busy share's queue: each waiter, once served, gives its bytes
	// back when drain is closed.
	drain := make(chan struct{})
	var queued []chan error
	for range 30 {
		got := make(chan error, 1)
		go func() {
			a := b.account("busy")
			err := a.Acquire(context.Background(), 20)
			got <- err
			<-drain
			a.Close()
		}()
		queued = append(queued, got)
	}
	for _, w := range queued {
		expectPending(t, w, "the busy share past its three quarters")
	}
	quiet := b.account("quiet")
	if err := quiet.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	// With nothing free at all, the quiet share's next reservation is the
	// next served, before any of the busy share's queue.
	if err := quiet.Acquire(context.Background(), 29); err != nil {
		t.Fatal(err)
	}
	late := acquireAsync(b.account("quiet"), context.Background(), 10)
	expectPending(t, late, "the quiet share with the budget full")
	busy.Release(10)
	if err := expectResult(t, late, "the quiet share after a release"); err != nil {
		t.Fatal(err)
	}
	for _, w := range queued {
		expectPending(t, w, "the busy share while it holds more than the quiet one")
	}
	busy.Close()
	quiet.Close()
	close(drain)
	for i, w := range queued {
		if err := expectResult(t, w, "the busy share's queue"); err != nil {
			t.Fatalf("busy waiter %d: %v", i, err)
		}
	}
}

// A large reservation of the share that holds least is not passed by the
// small ones of a share that holds more: it is served as soon as it fits.
func TestBudgetDoesNotStarveALargeReservation(t *testing.T) {
	b := testBudget(100, time.Minute)
	small := b.account("small")
	if err := small.Acquire(context.Background(), 40); err != nil {
		t.Fatal(err)
	}
	large := acquireAsync(b.account("large"), context.Background(), 70)
	expectPending(t, large, "70 with 40 held")
	more := acquireAsync(b.account("small"), context.Background(), 5)
	expectPending(t, more, "the small share behind the large reservation of a share holding less")
	small.Close()
	if err := expectResult(t, large, "the large reservation"); err != nil {
		t.Fatal(err)
	}
	if err := expectResult(t, more, "the small share once the large one is in"); err != nil {
		t.Fatal(err)
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
				a := b.account(fmt.Sprint("share", i%4))
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
