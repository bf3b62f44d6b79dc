package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// testCodecs is a spread of every kind and effective level.
func testCodecs(t testing.TB) []Codec {
	t.Helper()
	var cs []Codec
	cs = append(cs, MustNew(None, 0))
	for _, l := range []int{0, 1, 3, 5, 7, 9} {
		cs = append(cs, MustNew(LZ4, l))
	}
	levels := []int{1, 2, 3, 6, 10, 19, 22}
	if raceEnabled {
		// The best-compression levels run the same pooling code as the
		// others, many times slower under the detector; CI runs every
		// level again without it (Magefile's GoTest).
		levels = levels[:5]
	}
	for _, l := range levels {
		cs = append(cs, MustNew(Zstd, l))
	}
	return cs
}

func decode(t testing.TB, k Kind, b []byte) []byte {
	t.Helper()
	switch k {
	case None:
		return b
	case Zstd:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		out, err := d.DecodeAll(b, nil)
		if err != nil {
			t.Fatalf("zstd decode: %v", err)
		}
		return out
	case LZ4:
		out, err := io.ReadAll(lz4.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("lz4 decode: %v", err)
		}
		return out
	}
	t.Fatalf("kind %v", k)
	return nil
}

// payload returns n bytes that compress somewhat: a random walk of small steps.
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	v := byte(0)
	for i := range b {
		v += byte(r.IntN(5))
		b[i] = v
	}
	return b
}

func TestNewValidatesLevels(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		level int
		ok    bool
		eff   string
	}{
		{None, 0, true, "none"},
		{None, 1, false, ""},
		{Auto, 0, true, "auto"},
		{Auto, 3, false, ""},
		{Zstd, 0, true, "zstd default"},
		{Zstd, 1, true, "zstd fastest"},
		{Zstd, 2, true, "zstd fastest"},
		{Zstd, 3, true, "zstd default"},
		{Zstd, 5, true, "zstd default"},
		{Zstd, 6, true, "zstd better"},
		{Zstd, 9, true, "zstd better"},
		{Zstd, 10, true, "zstd best"},
		{Zstd, 22, true, "zstd best"},
		{Zstd, 23, false, ""},
		{Zstd, -1, false, ""},
		{LZ4, 0, true, "lz4 fast"},
		{LZ4, 9, true, "lz4 level 9"},
		{LZ4, 10, false, ""},
		{LZ4, -1, false, ""},
		{Kind(9), 0, false, ""},
	} {
		c, err := New(tc.kind, tc.level)
		if (err == nil) != tc.ok {
			t.Errorf("New(%v, %d): err = %v, want ok=%v", tc.kind, tc.level, err, tc.ok)
			continue
		}
		if tc.ok && c.Effective() != tc.eff {
			t.Errorf("New(%v, %d).Effective() = %q, want %q", tc.kind, tc.level, c.Effective(), tc.eff)
		}
		if !tc.ok && tc.kind <= Auto && !errors.Is(err, ErrLevel) {
			t.Errorf("New(%v, %d): %v is not ErrLevel", tc.kind, tc.level, err)
		}
	}
	if c := MustNew(Zstd, 0); c.Level() != ZstdDefaultLevel || c.String() != "zstd/3" {
		t.Errorf("zstd level 0 = %d %q, want the default 3", c.Level(), c)
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range []Kind{None, LZ4, Zstd, Auto} {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseKind("gzip"); err == nil {
		t.Error("ParseKind(gzip) succeeded")
	}
	if k, err := ParseKind(Names[0].Name); err != nil || k != DefaultKind {
		t.Errorf("the first name %q is %v, %v; want the default %v", Names[0].Name, k, err, DefaultKind)
	}
}

func TestParsePreference(t *testing.T) {
	if Preferences[0].Name != DefaultPreference {
		t.Errorf("the first preference is %q, the default %q", Preferences[0].Name, DefaultPreference)
	}
	for _, p := range Preferences {
		got, err := ParsePreference(p.Name)
		if err != nil || got != p || p.BytePrice <= 0 {
			t.Errorf("ParsePreference(%q) = %+v, %v", p.Name, got, err)
		}
	}
	if _, err := ParsePreference("speed"); err == nil {
		t.Error("ParsePreference(speed) succeeded")
	}
}

func TestRoundTripAppends(t *testing.T) {
	for _, c := range testCodecs(t) {
		for _, n := range []int{0, 1, 100, 4096, 300 << 10} {
			t.Run(fmt.Sprintf("%s/%d", c, n), func(t *testing.T) {
				src := payload(n, uint64(n))
				prefix := []byte("prefix")
				out := encodeOnce(c, append([]byte(nil), prefix...), src)
				if !bytes.HasPrefix(out, prefix) {
					t.Fatal("Encode did not keep dst's contents")
				}
				if got := decode(t, c.Kind(), out[len(prefix):]); !bytes.Equal(got, src) {
					t.Fatalf("round trip: got %d bytes, want %d", len(got), n)
				}
				e := c.Encoder()
				out2 := e.Encode(nil, src)
				e.Close()
				e.Close() // twice is safe
				if !bytes.Equal(out2, out[len(prefix):]) {
					t.Fatal("an encoder writing to nil differs from one appending to dst")
				}
			})
		}
	}
}

func TestLevelsShareEffectivePools(t *testing.T) {
	if MustNew(Zstd, 3).pool != MustNew(Zstd, 5).pool {
		t.Error("zstd 3 and 5 are both default speed but use different pools")
	}
	if MustNew(Zstd, 3).pool == MustNew(Zstd, 6).pool {
		t.Error("zstd 3 and 6 share a pool")
	}
	if MustNew(LZ4, 1).pool == MustNew(LZ4, 2).pool {
		t.Error("lz4 1 and 2 share a pool")
	}
}

// recordingPool never drops an item, unlike sync.Pool, and counts what
// went out and came back.
type recordingPool struct {
	mu        sync.Mutex
	idle      []any
	built     int
	out       int
	returned  int
	notResets int
}

func (p *recordingPool) Get() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out++
	if n := len(p.idle); n > 0 {
		it := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return it
	}
	return nil
}

func (p *recordingPool) Put(x any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.returned++
	p.idle = append(p.idle, x)
}

// withRecordingPools swaps every pool's item store for a recording one for
// the duration of the test.
func withRecordingPools(t *testing.T) map[*encoderPool]*recordingPool {
	t.Helper()
	rec := map[*encoderPool]*recordingPool{}
	var all []*encoderPool
	all = append(all, zstdPools[:]...)
	all = append(all, lz4Pools[:]...)
	for _, p := range all {
		old := p.items
		rp := &recordingPool{}
		p.items = rp
		rec[p] = rp
		t.Cleanup(func() { p.items = old })
	}
	return rec
}

func TestEveryEncoderGoesBack(t *testing.T) {
	rec := withRecordingPools(t)
	var wg sync.WaitGroup
	cs := testCodecs(t)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				c := cs[(g+i)%len(cs)]
				src := payload(1+(g*977+i*131)%70000, uint64(g*100+i))
				if i%2 == 0 {
					_ = encodeOnce(c, nil, src)
				} else {
					e := c.Encoder()
					_ = e.Encode(nil, src)
					_ = e.Encode(nil, src[:len(src)/2])
					e.Close()
				}
			}
		}()
	}
	wg.Wait()
	for p, rp := range rec {
		if rp.out != rp.returned {
			t.Errorf("%s: %d encoders taken, %d returned", p.name, rp.out, rp.returned)
		}
		// Every encoder built is idle again.
		if len(rp.idle) > rp.out {
			t.Errorf("%s: %d idle encoders after %d gets", p.name, len(rp.idle), rp.out)
		}
	}
}

// A reused encoder's output is byte-identical to its first use, after a
// larger input went through it in between.
func TestReusedEncoderIsDeterministic(t *testing.T) {
	withRecordingPools(t)
	small := payload(3000, 7)
	large := payload(2<<20, 8)
	for _, c := range testCodecs(t) {
		if c.Kind() == None {
			continue
		}
		e := c.Encoder()
		first := e.Encode(nil, small)
		e.Close()
		e = c.Encoder() // the same encoder: the recording pool keeps it
		_ = e.Encode(nil, large)
		e.Close()
		e = c.Encoder()
		again := e.Encode(nil, small)
		e.Close()
		if !bytes.Equal(first, again) {
			t.Errorf("%s: reused encoder output differs (%d vs %d bytes)", c, len(first), len(again))
		}
	}
}

func TestConcurrentMixedRoundTrip(t *testing.T) {
	cs := testCodecs(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				c := cs[(g*3+i)%len(cs)]
				src := payload((g*7919+i*104729)%200000, uint64(g*31+i))
				out := encodeOnce(c, nil, src)
				got := decode(t, c.Kind(), out)
				if !bytes.Equal(got, src) {
					errs <- fmt.Errorf("%s: %d bytes round trip failed", c, len(src))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEncodeSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are checked without -race")
	}
	src := payload(32<<10, 3)
	dst := make([]byte, 0, 64<<10)
	for _, c := range []Codec{MustNew(Zstd, 1), MustNew(Zstd, 3), MustNew(LZ4, 0)} {
		e := c.Encoder()
		allocs := testing.AllocsPerRun(50, func() { dst = e.Encode(dst[:0], src) })
		e.Close()
		if allocs > 0 {
			t.Errorf("%s: %.1f allocations per Encode into a reused buffer, want 0", c, allocs)
		}
	}
}

func TestSpecsAreWhatNewAccepts(t *testing.T) {
	seen := map[Kind]bool{}
	for _, s := range Specs() {
		seen[s.Kind] = true
		if k, err := ParseKind(s.Kind.String()); err != nil || k != s.Kind {
			t.Errorf("%v: ParseKind(%q) = %v, %v", s.Kind, s.Kind.String(), k, err)
		}
		if !s.Levels {
			if _, err := New(s.Kind, 0); err != nil {
				t.Errorf("%v: %v", s.Kind, err)
			}
			if _, err := New(s.Kind, 1); err == nil {
				t.Errorf("%v takes no level, but New accepts 1", s.Kind)
			}
			continue
		}
		for l := s.MinLevel - 1; l <= s.MaxLevel+1; l++ {
			_, err := New(s.Kind, l)
			if ok := l >= s.MinLevel && l <= s.MaxLevel; ok != (err == nil) && !(s.Kind == Zstd && l == 0) {
				t.Errorf("%v level %d: spec says ok=%t, New: %v", s.Kind, l, ok, err)
			}
		}
		if c := MustNew(s.Kind, s.DefaultLevel); c.Level() != s.DefaultLevel {
			t.Errorf("%v default level %d: built %d", s.Kind, s.DefaultLevel, c.Level())
		}
	}
	for _, k := range []Kind{None, LZ4, Zstd} {
		if !seen[k] {
			t.Errorf("Specs lacks %v", k)
		}
	}
}

// encodeOnce borrows an encoder of c for one Encode.
func encodeOnce(c Codec, dst, src []byte) []byte {
	e := c.Encoder()
	defer e.Close()
	return e.Encode(dst, src)
}
