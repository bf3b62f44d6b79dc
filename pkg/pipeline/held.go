package pipeline

import "context"

// Held is budget an account holds for one thing: a source's reservation
// not yet drawn, a frame on its way to an encode worker, a frame's encoded
// parts, an encoded frame until it is written out. The pipeline takes
// budget into a Held and gives it back through one, so that what holds
// budget is the thing it is held for, and handing the thing over hands its
// Held with it (Move).
//
// A Held is used by one goroutine at a time; copying one copies the claim,
// so a Held changes hands with Move, which leaves the giver empty. The zero
// Held holds nothing.
type Held struct {
	a *Account
	n int64
}

// Hold reserves n bytes for a, waiting for them with ctx (Account.Acquire).
func (a *Account) Hold(ctx context.Context, n int64) (Held, error) {
	if err := a.Acquire(ctx, n); err != nil {
		return Held{}, err
	}
	return Held{a: a, n: max(n, 0)}, nil
}

// Bytes is what h holds.
func (h *Held) Bytes() int64 { return h.n }

// Move returns h's claim and leaves h empty (of the same account).
func (h *Held) Move() Held {
	m := *h
	h.n = 0
	return m
}

// Release gives back everything h holds.
func (h *Held) Release() {
	if h.n > 0 {
		h.a.Release(h.n)
	}
	h.n = 0
}

// Split moves up to n of h's bytes into a Held of their own, of h's
// account.
func (h *Held) Split(n int64) Held {
	n = min(max(n, 0), h.n)
	h.n -= n
	return Held{a: h.a, n: n}
}

// Join moves o's bytes into h; both are of one account, o's when h has
// none.
func (h *Held) Join(o *Held) {
	m := o.Move()
	if h.a == nil {
		h.a = m.a
	}
	h.n += m.n
}

// Fit makes h hold exactly n bytes: what it lacks taken without waiting
// (what an encoded frame weighs beyond its estimate, or a copy of it,
// which a worker or a sender must not wait for), what it holds beyond
// given back. h has an account: it was made by one (Hold, Held{a: a}) or
// split from one that has.
func (h *Held) Fit(n int64) {
	switch {
	case n > h.n:
		h.a.b.mu.Lock()
		h.a.b.take(h.a, n-h.n)
		h.a.b.mu.Unlock()
	case n < h.n:
		h.a.Release(h.n - n)
	}
	h.n = n
}

// Drain marks h's bytes as on their way out: a send will give them back
// without waiting for anything the account waits for (see Budget). It
// returns what gives them back once sent; h is left empty.
func (h *Held) Drain() (release func()) {
	m := h.Move()
	if m.n <= 0 {
		return func() {}
	}
	m.a.b.mu.Lock()
	m.a.change(func() { m.a.draining += m.n })
	m.a.b.mu.Unlock()
	return func() {
		b := m.a.b
		b.mu.Lock()
		m.a.change(func() { m.a.draining = max(m.a.draining-m.n, 0) })
		b.give(m.a, m.n)
		b.settle()
		b.mu.Unlock()
	}
}
