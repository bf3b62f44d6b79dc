package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// A Held's bytes move with it and are given back once: what the budget
// holds is always the sum of the Helds, through splits, joins, fits and
// moves, and nothing once every Held is released or drained.
func TestHeldMovesAndGivesBackOnce(t *testing.T) {
	b := testBudget(1<<20, time.Second)
	a := b.account("s")
	used := func(want int64, what string) {
		t.Helper()
		if got, _, _, _ := b.Stats(); got != want {
			t.Fatalf("%s: the budget holds %d, want %d", what, got, want)
		}
	}
	credit, err := a.Hold(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	used(1000, "hold")
	part := credit.Split(600)
	if part.Bytes() != 600 || credit.Bytes() != 400 {
		t.Fatalf("split: %d and %d", part.Bytes(), credit.Bytes())
	}
	over := credit.Split(10_000) // more than it holds: all of it
	if over.Bytes() != 400 || credit.Bytes() != 0 {
		t.Fatalf("split beyond: %d and %d", over.Bytes(), credit.Bytes())
	}
	used(1000, "splits take nothing")
	part.Fit(900) // an encoded frame above its estimate
	used(1300, "fit up")
	part.Fit(100)
	used(500, "fit down")
	part.Join(&over)
	if part.Bytes() != 500 || over.Bytes() != 0 {
		t.Fatalf("join: %d and %d", part.Bytes(), over.Bytes())
	}
	frame := part.Move()
	part.Release() // moved: gives back nothing
	used(500, "release after move")
	more := Held{a: a}
	more.Fit(200) // taken without waiting
	frame.Join(&more)
	used(700, "take")
	release := frame.Drain()
	frame.Release() // drained: gives back nothing
	used(700, "drained, not sent")
	release()
	used(0, "sent")
	var zero Held
	zero.Release()
	zero.Join(&zero)
	if zero.Drain()(); zero.Bytes() != 0 {
		t.Fatal("the zero Held holds something")
	}
	used(0, "zero Held")
}

// A Held made from an account keeps it once moved or released: a frame of
// no estimated bytes (an empty table's parts) still fits its encoded size.
func TestHeldKeepsItsAccount(t *testing.T) {
	b := testBudget(1<<20, time.Second)
	a := b.account("s")
	h := Held{a: a}
	h.Release()
	m := h.Move()
	m.Fit(64)
	if got, _, _, _ := b.Stats(); got != 64 || m.Bytes() != 64 {
		t.Fatalf("budget %d, Held %d, want 64", got, m.Bytes())
	}
	a.Close()
}

// reservingSource reserves reserve bytes, when not negative, then hands
// over one frame of a row.
type reservingSource struct{ reserve int64 }

func (r reservingSource) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	if r.reserve >= 0 {
		if err := source.Reserve(ctx, sink, r.reserve); err != nil {
			return err
		}
	}
	return sink.Frame(ctx, data.NewFrame("f", data.NewField("v", nil, []int64{1})))
}

// A query's frames wait for the budget until its source reserves; once it
// has, even nothing, they take what they lack without waiting.
func TestFramesDrawOnTheReservation(t *testing.T) {
	p := New(Options{Workers: 1, Budget: settings.Budget{Bytes: 64 << 10, Wait: time.Minute}})
	defer p.Close()
	for share, n := range map[string]int64{"a": 48 << 10, "b": 16 << 10} { // the whole budget
		if err := p.Account(share).Acquire(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	es, err := NewEncoders(arrowipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, reserve := range []int64{-1, 0} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		acct := p.Account("s")
		frames := 0
		err := p.Run(ctx, Query{Source: reservingSource{reserve}, Encoders: es}, acct, func(_ int, f Frame) error {
			frames++
			f.Budget.Release()
			return nil
		})
		cancel()
		acct.Close()
		if reserved := reserve >= 0; (err == nil) != reserved || (frames == 1) != reserved {
			t.Errorf("reserved %d: %d frames, %v", reserve, frames, err)
		}
	}
}
