package pipeline

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestKeptMemoryYieldsToQueries: kept memory counts in the budget, takes
// only free bytes while no query waits, and gives back what a query lacks
// before the query would wait.
func TestKeptMemoryYieldsToQueries(t *testing.T) {
	b := testBudget(1000, time.Minute)
	var k *Kept
	asked := int64(0)
	k = b.keep(func(n int64) {
		asked += n
		k.Give(n)
	})
	if !k.TryTake(800) {
		t.Fatal("800 of 1000 free bytes not taken")
	}
	if k.TryTake(300) {
		t.Fatal("took 300 bytes with 200 free")
	}
	if used, _, _, _ := b.Stats(); used != 800 {
		t.Fatalf("used %d, want the 800 kept", used)
	}

	// A query of 500: 300 are lacking, and given back before it waits.
	a := b.account("t")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.Acquire(ctx, 500); err != nil {
		t.Fatalf("a query waited for kept memory: %v", err)
	}
	if asked != 300 {
		t.Errorf("kept memory asked to give back %d bytes, want the 300 lacking", asked)
	}
	if used, _, _, _ := b.Stats(); used != 1000 {
		t.Errorf("used %d, want 500 kept and 500 of the query", used)
	}

	// While a query waits, nothing is kept, even what fits.
	k.Give(400) // 100 kept, 400 free
	other := b.account("u")
	ch := acquireAsync(other, ctx, 700) // more than is free, with nothing left to reclaim but 100
	expectPending(t, ch, "700 with 400 free")
	if k.TryTake(100) {
		t.Error("kept memory took bytes while a query waits")
	}
	a.Close()
	if err := expectResult(t, ch, "700 after the first query ended"); err != nil {
		t.Fatal(err)
	}
	other.Close()

	// Closed: what it held is given back, and it takes no more.
	k.Close()
	if used, _, _, _ := b.Stats(); used != 0 {
		t.Errorf("used %d after every query and the kept memory are gone", used)
	}
	if k.TryTake(1) {
		t.Error("closed kept memory took bytes")
	}
}

// TestKeptMemoryGivenBackIsTheQuerys: what kept memory gives back for a
// query that lacks it is not taken again by a concurrent TryTake (a cache
// storing another answer) before the query gets it, and TryTake refuses
// while the query waits.
func TestKeptMemoryGivenBackIsTheQuerys(t *testing.T) {
	b := testBudget(1000, 300*time.Millisecond)
	var k *Kept
	var mu sync.Mutex
	retaken := 0
	k = b.keep(func(n int64) {
		k.Give(n)
		done := make(chan bool)
		go func() { done <- k.TryTake(n) }() // another goroutine storing an answer
		if <-done {
			mu.Lock()
			retaken++
			mu.Unlock()
		}
	})
	if !k.TryTake(800) {
		t.Fatal("800 of 1000 free bytes not taken")
	}
	a := b.account("t")
	defer a.Close()
	if err := a.Acquire(context.Background(), 500); err != nil {
		t.Fatalf("the query did not get the memory kept memory gave back: %v", err)
	}
	if retaken != 0 {
		t.Errorf("kept memory took back %d times what it gave for the query", retaken)
	}
}
