package series

import "testing"

// TestDirtyPool: buffers of the tiers' sizes, kept when they are a tier's
// and given back as they were (nothing cleared).
func TestDirtyPool(t *testing.T) {
	p := NewDirtyPool(10, 20)
	for _, n := range []int{0, 1, 1023, 1024, 1025, 16 << 10, 1 << 20} {
		b, _ := p.Take(n)
		if len(*b) != n {
			t.Fatalf("Take(%d): length %d", n, len(*b))
		}
		want := 1024
		for want < n {
			want *= 2
		}
		if cap(*b) != want {
			t.Fatalf("Take(%d): capacity %d, want %d", n, cap(*b), want)
		}
		p.Put(b)
	}
	big, _ := p.Take(1<<20 + 1)
	if len(*big) != 1<<20+1 {
		t.Fatalf("Take above the tiers: length %d", len(*big))
	}
	p.Put(big) // dropped: above the tiers
	odd := make([]byte, 100, 1500)
	p.Put(&odd) // dropped: not a tier's capacity
	for range 100 {
		if b, _ := p.Take(1200); cap(*b) != 2048 {
			t.Fatalf("Take(1200) after Put of a 1500-byte buffer: capacity %d", cap(*b))
		}
	}
	// A buffer comes back with what it held: nothing is cleared (but
	// poisoned, in a build with the quiver_poison tag).
	probe := []byte{0xaa}
	Poison(probe)
	want := probe[0] // 0xaa, or 0xa5 when poisoned
	seen := false
	for range 100 {
		b, _ := p.Take(4096)
		(*b)[0] = 0xaa
		p.Put(b)
		if c, _ := p.Take(4096); (*c)[0] == want {
			seen = true
		}
	}
	if !seen {
		t.Error("no buffer was ever reused")
	}
}
