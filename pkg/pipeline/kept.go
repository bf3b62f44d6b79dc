// Memory kept between queries (a data source's result cache), counted in
// the budget.

package pipeline

import (
	"maps"
	"slices"
	"time"
)

// Kept is memory one owner keeps between queries, counted in the budget:
// queries see that much less room. It takes bytes only when they are free,
// no query waits and none is having kept memory given back for it
// (TryTake), and a query that would have to wait first asks the owners to
// give back what it lacks (shrink, see Acquire), so kept memory never makes
// a query wait or fail as busy. An owner must have given back, when shrink
// returns, every byte it could: it may not hold bytes taken but not yet
// evictable (memoryStore takes and inserts under one lock).
type Kept struct {
	b      *Budget
	shrink func(n int64)
	held   int64 // guarded by b.mu
	closed bool  // guarded by b.mu
}

// Keep registers memory kept between queries. The budget calls shrink, on
// a query's goroutine and outside its own lock, to ask the owner to give
// back about n bytes with Give.
func (p *Pipeline) Keep(shrink func(n int64)) *Kept { return p.budget.keep(shrink) }

func (b *Budget) keep(shrink func(n int64)) *Kept {
	k := &Kept{b: b, shrink: shrink}
	b.mu.Lock()
	b.kept[k] = struct{}{}
	b.mu.Unlock()
	return k
}

// TryTake takes n bytes when they fit the budget now and no query waits
// for any or has them reclaimed; it says whether it took them.
func (k *Kept) TryTake(n int64) bool {
	b := k.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if k.closed || len(b.queue) > 0 || b.reclaiming > 0 || b.used+n > b.limit {
		return false
	}
	k.held += n
	b.keptHeld += n
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

// Give gives back n of the bytes k took.
func (k *Kept) Give(n int64) {
	b := k.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, k.held)
	if n <= 0 {
		return
	}
	k.held -= n
	b.keptHeld -= n
	b.used -= n
	b.released = time.Now()
	b.settle()
}

// Close gives back what k holds and unregisters it: its owner is gone.
// Later calls of TryTake take nothing.
func (k *Kept) Close() {
	b := k.b
	b.mu.Lock()
	delete(b.kept, k)
	k.closed = true
	held := k.held
	b.mu.Unlock()
	k.Give(held)
}

// reclaim asks the owners of kept memory, in turn, to give back what n
// more bytes lack under the limit, until they fit.
func (b *Budget) reclaim(n int64) {
	b.mu.Lock()
	ks := slices.Collect(maps.Keys(b.kept))
	b.mu.Unlock()
	for _, k := range ks {
		b.mu.Lock()
		short, held := b.used+n-b.limit, k.held
		b.mu.Unlock()
		if short <= 0 {
			return
		}
		if held > 0 {
			k.shrink(min(short, held))
		}
	}
}
