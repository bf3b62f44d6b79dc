// This file is over 400 lines: the budget, its per-request accounts and the
// size estimates of frames and records are one mechanism whose invariants
// (held ≤ 2 budgets, every reservation given back once) are read together.

package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// Budget is the process-wide memory budget: a weighted semaphore of the
// bytes that in-flight queries hold (frames waiting to be encoded, encoded
// frames waiting to be sent), shared by every request of every instance.
//
// Fair shares: every account belongs to a share, one tenant's data source
// (Pipeline.Account's key). A share holds at most three quarters of the
// budget (shareOf), so a burst of one leaves room for the others, and the
// waiters are served share by share, the share that holds least first
// (within one, a waiter of a request that holds bytes first, then in
// arrival order). A waiter that does not fit holds up those behind it,
// as no share that holds more may pass it: a small query of a quiet share
// goes ahead of another's queue, and a large one is not starved by a
// stream of small ones.
//
// A reservation that does not fit waits with the request's context
// (Grafana's cancellation frees its place at once) while the budget moves;
// when nothing is released for the configured wait it fails as busy. One
// that can never fit (more than a share's most) fails at once.
//
// Memory kept between queries (a data source's result cache, Kept) counts
// in the bytes held but belongs to no share and never waits (see Kept).
//
// A unary response keeps its frames until the whole response is written,
// so a request can hold bytes while another of its queries waits for more.
// A chunked request's sent frames give theirs back as the transport writes
// them (Held.Drain): while it has any on their way out, a release will
// come, and it is not blocked on itself however much it holds.
// When every request that holds bytes is waiting, no release can come: the
// first such waiter in the order above is then let through over the budget
// and its share's most (overdraft), by at most one more budget in all;
// past that it fails as busy. So the bytes held never exceed twice the
// budget, and a burst cannot deadlock. What a share holds past its most
// does not count against another share's reservation (see fits).
type Budget struct {
	limit    int64
	wait     time.Duration
	from     string // how the limit was set, for messages
	observer Observer

	mu       sync.Mutex
	used     int64
	peak     int64
	queue    []*waiter
	released time.Time        // when bytes were last released: the queue moves
	holders  int              // accounts holding bytes
	blocked  int              // accounts holding bytes, none draining, with a waiting reservation
	shares   map[string]int64 // bytes held by each share holding any
	over     int64            // what the shares hold past shareOf, summed
	kept     map[*Kept]struct{}
	keptHeld int64 // of used, what Kept holds (kept.go)
	// reclaiming counts the queries having kept memory given back for
	// them: meanwhile Kept takes nothing (what is given back is theirs).
	reclaiming int
	// idle GC: after a burst, once no query holds any, collect (see
	// collectTwice).
	burst     int64 // most bytes held since the last idle collection
	idleTimer *time.Timer
	idleAfter time.Duration
	idleMin   int64
	collect   func()
}

// waiter is one reservation waiting for budget.
type waiter struct {
	n     int64
	acct  *Account
	ready chan struct{} // closed when granted or refused
	err   error         // set when refused
}

// Account is what one request (QueryData or QueryChunkedData call) holds.
type Account struct {
	b        *Budget
	share    string
	held     int64 // guarded by b.mu
	draining int64 // of held, on their way out (Held.Drain); guarded by b.mu
	waiting  int   // guarded by b.mu
}

// Share is the name of the share the account draws on.
func (a *Account) Share() string { return a.share }

// Errors of the budget: a reservation that waited too long (the query may
// succeed later) and one that can never fit (it may with a smaller time
// range).
var (
	ErrBusy     = errors.New("Quiver is busy")
	ErrTooLarge = errors.New("query too large for the memory budget")
)

// Observer is told what the budget does, for metrics.
type Observer interface {
	// Waited: a reservation had to wait.
	Waited()
	// Overdrawn: a reservation was let through over the budget.
	Overdrawn()
	// Refused: a reservation was refused, for reason "too_large",
	// "busy" or "cancelled".
	Refused(reason string)
}

type noObserver struct{}

func (noObserver) Waited()        {}
func (noObserver) Overdrawn()     {}
func (noObserver) Refused(string) {}

func newBudget(b settings.Budget, o Observer) *Budget {
	if o == nil {
		o = noObserver{}
	}
	return &Budget{
		limit: b.Bytes, wait: b.Wait, from: b.From, observer: o, shares: map[string]int64{}, kept: map[*Kept]struct{}{},
		idleAfter: time.Second, idleMin: min(b.Bytes/4, 32<<20), collect: collectTwice,
	}
}

func (b *Budget) account(share string) *Account { return &Account{b: b, share: share} }

// shareOf is the most one share may hold, but by overdraft: three quarters
// of the budget.
func (b *Budget) shareOf() int64 { return b.limit - b.limit/4 }

// setting names the budget's setting and value for error messages.
func (b *Budget) setting() string {
	return fmt.Sprintf("%s (%s)", settings.FormatBytes(b.limit), b.from)
}

// Acquire reserves n bytes for a, waiting for them with ctx.
func (a *Account) Acquire(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	b := a.b
	if n > b.shareOf() {
		b.observer.Refused("too_large")
		return fmt.Errorf("%w: it needs %s at once, more than the %s one data source may hold of the memory budget of %s (three quarters: the rest stays free for the others); narrow the time range or lower seriesCount, or raise %s",
			ErrTooLarge, settings.FormatBytes(n), settings.FormatBytes(b.shareOf()), b.setting(), settings.MemoryBudgetSetting)
	}
	b.mu.Lock()
	granted := b.grant(a, n)
	if !granted && b.keptHeld > 0 && b.used+n > b.limit {
		// Kept memory yields to queries (kept.go).
		b.reclaiming++
		b.mu.Unlock()
		b.reclaim(n)
		b.mu.Lock()
		b.reclaiming--
		granted = b.grant(a, n)
	}
	if granted {
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, acct: a, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	a.setWaiting(+1)
	b.settle()
	b.mu.Unlock()
	select {
	case <-w.ready: // its share's turn came at once
		return w.err
	default:
	}
	b.observer.Waited()

	err := b.await(ctx, w)
	if err == nil {
		return w.err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted or refused meanwhile
		if w.err == nil {
			b.give(a, n)
		}
	default:
		b.queue = slices.DeleteFunc(b.queue, func(q *waiter) bool { return q == w })
		a.setWaiting(-1)
	}
	b.settle()
	return err
}

// await waits until w is granted or refused (nil), ctx is done, or the
// budget has stalled: nothing released for b.wait while w waits. A queue
// that moves (a burst on a busy host) is waited out however long it takes;
// Grafana's cancellation ends the wait at once.
func (b *Budget) await(ctx context.Context, w *waiter) error {
	start := time.Now()
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	for {
		select {
		case <-w.ready:
			return nil
		case <-ctx.Done():
			b.observer.Refused("cancelled")
			return context.Cause(ctx)
		case <-timer.C:
		}
		b.mu.Lock()
		last := b.released
		b.mu.Unlock()
		now := time.Now()
		stalled := min(now.Sub(last), now.Sub(start))
		if stalled < b.wait {
			timer.Reset(b.wait - stalled)
			continue
		}
		b.observer.Refused("busy")
		return fmt.Errorf("%w: this query waited %s for %s of the memory budget of %s, and the queries holding it released nothing meanwhile; try again, or raise %s or %s in %s",
			ErrBusy, time.Since(start).Round(time.Second), settings.FormatBytes(w.n), b.setting(), settings.IniMemoryBudget, settings.IniMemoryBudgetWait, settings.IniSection)
	}
}

// Release gives back n bytes of a's.
func (a *Account) Release(n int64) {
	if n <= 0 {
		return
	}
	b := a.b
	b.mu.Lock()
	b.give(a, n)
	b.settle()
	b.mu.Unlock()
}

// Close releases everything a still holds: the request is answered.
func (a *Account) Close() {
	a.b.mu.Lock()
	n := a.held
	a.b.mu.Unlock()
	a.Release(n)
}

// The methods below run with b.mu held.

// blocked: a holds bytes and waits for more, and none of its bytes is on
// its way out, so it releases nothing until its reservation is granted.
func (a *Account) blocked() bool { return a.held > 0 && a.waiting > 0 && a.draining == 0 }

// change runs f, which changes a's bytes or waiters, and keeps b's count of
// holders and blocked accounts.
func (a *Account) change(f func()) {
	b := a.b
	wasHolder, wasBlocked := a.held > 0, a.blocked()
	f()
	b.holders += step(wasHolder, a.held > 0)
	b.blocked += step(wasBlocked, a.blocked())
}

// step is how a count of accounts in some state changes when one goes from
// was to now.
func step(was, now bool) int {
	switch {
	case now && !was:
		return 1
	case was && !now:
		return -1
	}
	return 0
}

func (a *Account) setWaiting(d int) { a.change(func() { a.waiting += d }) }

// grant takes n bytes for a when no reservation waits and they fit.
func (b *Budget) grant(a *Account, n int64) bool {
	if len(b.queue) > 0 || !b.fits(a, n) {
		return false
	}
	b.take(a, n)
	return true
}

func (b *Budget) take(a *Account, n int64) {
	a.change(func() { a.held += n })
	b.addToShare(a.share, n)
	b.used += n
	b.peak = max(b.peak, b.used)
	b.burst = max(b.burst, b.used)
	if b.idleTimer != nil {
		b.idleTimer.Stop()
	}
}

func (b *Budget) give(a *Account, n int64) {
	n = min(n, a.held)
	a.change(func() { a.held -= n; a.draining = min(a.draining, a.held) })
	b.addToShare(a.share, -n)
	b.used -= n
	if n > 0 {
		b.released = time.Now()
	}
	if b.used == b.keptHeld && b.burst >= b.idleMin && b.collect != nil {
		b.burst = 0
		if b.idleTimer == nil {
			b.idleTimer = time.AfterFunc(b.idleAfter, b.collectIfIdle)
		} else {
			b.idleTimer.Reset(b.idleAfter)
		}
	}
}

// collectTwice runs two collections: the first frees the burst's garbage
// and moves sync.Pool contents (idle encoders and their scratch, sized for
// the burst's largest frames) to the pools' victim caches, the second frees
// those. The runtime's background scavenger then returns the pages to the
// OS; nothing else would collect until the forced GC two minutes later.
func collectTwice() {
	runtime.GC()
	runtime.GC()
}

func (b *Budget) collectIfIdle() {
	b.mu.Lock()
	idle := b.used == b.keptHeld // no query holds any
	b.mu.Unlock()
	if idle {
		b.collect()
	}
}

// addToShare adds d bytes (given back when negative) to what share holds,
// and keeps over in step.
func (b *Budget) addToShare(share string, d int64) {
	most := b.shareOf()
	was := b.shares[share]
	now := was + d
	b.over += max(now-most, 0) - max(was-most, 0)
	if now <= 0 {
		delete(b.shares, share)
	} else {
		b.shares[share] = now
	}
}

// fits says whether n more bytes for a fit a's share and the budget. What
// other shares hold past their most (overdrawn, or forced) does not count
// against the budget here: a share that overdrew and then stalled (a
// chunked client that stopped reading) would otherwise hold up every other
// share until it gives back. The bytes held stay within twice the budget.
func (b *Budget) fits(a *Account, n int64) bool {
	own := b.shares[a.share]
	others := b.over - max(own-b.shareOf(), 0)
	return b.used-others+n <= b.limit && b.used+n <= 2*b.limit && own+n <= b.shareOf()
}

// next returns the index in b.queue of the waiter to serve next (see
// Budget), among those of requests that hold bytes when holders is set.
func (b *Budget) next(holders bool) int {
	best := -1
	var bestShare int64
	var bestHolder bool
	for i, w := range b.queue {
		holder := w.acct.held > 0
		if holders && !holder {
			continue
		}
		share := b.shares[w.acct.share]
		if best < 0 || share < bestShare || (share == bestShare && holder && !bestHolder) {
			best, bestShare, bestHolder = i, share, holder
		}
	}
	return best
}

// settle grants waiters, in the order next gives, while the next fits,
// then breaks a deadlock (see Budget) by overdraft or refusal.
func (b *Budget) settle() {
	for len(b.queue) > 0 {
		i := b.next(false)
		w := b.queue[i]
		if !b.fits(w.acct, w.n) {
			if b.holders == 0 || b.holders != b.blocked {
				return // a release will come
			}
			// Every request holding bytes waits: none releases until one
			// is let through.
			i = b.next(true)
			w = b.queue[i]
			if b.used+w.n > 2*b.limit {
				w.err = b.refusal(w)
			} else {
				b.observer.Overdrawn()
			}
		}
		b.queue = append(b.queue[:i], b.queue[i+1:]...)
		w.acct.setWaiting(-1)
		if w.err == nil {
			b.take(w.acct, w.n)
		}
		close(w.ready)
	}
}

// refusal is the error of a waiter that would overdraft past twice the
// budget: its own request's, when that alone needs more than the budget.
func (b *Budget) refusal(w *waiter) error {
	if need := w.acct.held + w.n; need > b.limit {
		b.observer.Refused("too_large")
		return fmt.Errorf("%w: the frames of this request's queries add up to %s or more, more than the whole budget of %s; narrow the time range, lower seriesCount, split the queries, or raise %s",
			ErrTooLarge, settings.FormatBytes(need), b.setting(), settings.MemoryBudgetSetting)
	}
	b.observer.Refused("busy")
	return fmt.Errorf("%w: the queries in flight hold the whole memory budget of %s and wait for more; try again, or raise %s",
		ErrBusy, b.setting(), settings.MemoryBudgetSetting)
}

// Stats returns the bytes held, the most held at once, the limit and how
// many reservations wait (for the metrics).
func (b *Budget) Stats() (used, peak, limit int64, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak, b.limit, len(b.queue)
}

// frameOverhead is what an encoded frame weighs beyond its body: schema,
// field metadata and footer (about 1.3 KB, see design.md).
const frameOverhead = 2 << 10

// FrameBytes estimates the memory a frame holds: its values as the SDK's
// vectors hold them (a nullable value adds its pointer), string and JSON
// bytes with their headers, plus frameOverhead. An encoded frame weighs no
// more: Arrow stores the same values in fewer bytes, compressed or raw.
func FrameBytes(f *data.Frame) int64 {
	total := int64(frameOverhead)
	for _, fd := range f.Fields {
		t := fd.Type()
		per, fixed := frame.ValueBytes(t)
		if t.Nullable() {
			per += 8
		}
		if !fixed {
			per += 24 // strings, JSON, and anything else: headers plus the bytes (varBytes)
		}
		total = source.Add(source.Add(total, source.Mul(int64(fd.Len()), per)), varBytes(fd))
	}
	return total
}

// varBytes sums the bytes of a string or JSON field's values, read in
// place (no boxing); 0 for other fields.
func varBytes(fd *data.Field) int64 {
	switch fd.Type().NonNullableType() {
	case data.FieldTypeString:
		return valueBytes[string](fd)
	case data.FieldTypeJSON:
		return valueBytes[json.RawMessage](fd)
	}
	return 0
}

func valueBytes[T ~string | ~[]byte](fd *data.Field) (total int64) {
	if fd.Nullable() {
		for _, v := range frame.Values[*T](fd) {
			if v != nil {
				total += int64(len(*v))
			}
		}
		return total
	}
	for _, v := range frame.Values[T](fd) {
		total += int64(len(v))
	}
	return total
}

// RecordBytes is the body bytes an Arrow record spans (a slice of a larger
// batch counts its own rows only), plus frameOverhead.
func RecordBytes(rec arrow.RecordBatch) int64 {
	total := int64(frameOverhead)
	n := rec.NumRows()
	for _, col := range rec.Columns() {
		total = source.Add(total, (n+7)/8) // validity
		switch a := col.(type) {
		case interface {
			ValueOffset64(int) int64
			ValueLen(int) int
		}: // utf8 and binary, large or not: ValueOffset64(Len()) is out of range for the small ones
			if l := col.Len(); l > 0 {
				end := a.ValueOffset64(l-1) + int64(a.ValueLen(l-1))
				total = source.Add(total, end-a.ValueOffset64(0)+8*int64(l+1))
			}
		default:
			if fw, ok := col.DataType().(arrow.FixedWidthDataType); ok {
				total = source.Add(total, source.Mul(n, int64(max(fw.BitWidth()/8, 1))))
				continue
			}
			for _, buf := range col.Data().Buffers() {
				if buf != nil {
					total = source.Add(total, int64(buf.Len()))
				}
			}
		}
	}
	return total
}
