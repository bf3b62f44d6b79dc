//go:build unix

package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The benchmarks of this file measure the encoder options pkg/codec fixes
// as constants (zstdWindow, the lower-memory flag, lz4BlockSize), on the
// kinds of buffers an Arrow body of a Grafana frame holds:
//
//	data=ts      int64 nanosecond timestamps at 1 s steps (a time column)
//	data=floats  a float64 random walk (a value column; does not compress)
//	data=logs    logfmt log lines (the bytes of a string column)
//
// For every combination of options and levels:
//
//	op=new+encode32KiB        build an encoder and EncodeAll 32 KiB of ts,
//	                          as the first use of an encoder a pool builds
//	op=new+encode32KiB+reset  the same, then reset as pkg/codec does before
//	                          an encoder goes back to its pool
//	op=encode/data=D/size=S   steady state: one reused encoder compressing
//	                          a buffer of S bytes into a reused buffer (4 and
//	                          64 KiB are typical columns; 512 KiB, a 65536-row
//	                          column, is larger than some windows and blocks)
//
// Besides ns/op, B/op and allocs/op they report cpu-ns/op (process CPU time
// per op, see measure), wire-B/op (compressed size) for encodes and, for the
// new ops, two one-shot figures taken outside the timed loop:
//
//	retained-B/op  heap still reachable after the op and a garbage
//	               collection, with the encoder kept alive: what one idle
//	               pooled encoder keeps (for lz4, mostly the block buffers
//	               its package-level pools hold until the next collections)
//	cold-B/op      bytes allocated by the op after two garbage collections
//	               emptied every sync.Pool (lz4 borrows its block buffers
//	               from package-level pools, so the looped B/op hides them)

// measure runs op in the benchmark loop with allocations reported, and
// reports the CPU time the whole process spent per op (user + system, all
// threads) as cpu-ns/op. On a shared machine ns/op also counts the time
// other processes held the CPU; cpu-ns/op does not.
func measure(b *testing.B, op func()) {
	b.ReportAllocs()
	n := 0
	c0 := processCPU(b)
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(processCPU(b)-c0)/float64(n), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// oneShot measures build once, outside the timed loop, and returns a
// function that reports retained-B/op and cold-B/op; call it after the loop
// (the loop's timer reset drops metrics reported before it). build returns
// the encoder it built, kept alive until the heap was measured.
func oneShot(b *testing.B, build func() any) (report func()) {
	runtime.GC()
	runtime.GC() // the second cycle empties the sync.Pool victim caches
	before := memStats()
	enc := build()
	after := memStats()
	runtime.GC()
	kept := memStats()
	runtime.KeepAlive(enc)
	return func() {
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc), "cold-B/op")
		b.ReportMetric(float64(int64(kept.HeapAlloc)-int64(before.HeapAlloc)), "retained-B/op")
	}
}

// benchData returns n bytes of one of the kinds of body buffer described
// above, the same for the same arguments.
func benchData(kind string, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 0xc0dec))
	out := make([]byte, 0, n+256)
	switch kind {
	case "ts":
		t := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		for len(out) < n {
			out = binary.LittleEndian.AppendUint64(out, uint64(t))
			t += int64(time.Second)
		}
	case "floats":
		v := 100.0
		for len(out) < n {
			v += r.NormFloat64()
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	case "logs":
		levels := []string{"info", "info", "info", "debug", "warn", "error"}
		paths := []string{"/api/v1/query_range", "/api/v1/query", "/api/v1/labels", "/api/v1/push", "/ready"}
		for len(out) < n {
			out = fmt.Appendf(out, "level=%s method=GET path=%s status=%d duration=%dms user=user-%d traceID=%016x",
				levels[r.IntN(len(levels))], paths[r.IntN(len(paths))], 200+100*r.IntN(4), r.IntN(3000), r.IntN(50), r.Uint64())
		}
	default:
		panic("benchData: kind " + kind)
	}
	return out[:n]
}

var (
	benchKinds = []string{"ts", "floats", "logs"}
	benchSizes = []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"64KiB", 64 << 10}, {"512KiB", 512 << 10}}
)

// BenchmarkZstdEncoderOptions justifies zstdWindow and WithLowerEncoderMem:
// window sizes 128 KiB, 1 MiB and the library's default 8 MiB, with and
// without the lower-memory tables, at the four encoder speeds.
func BenchmarkZstdEncoderOptions(b *testing.B) {
	first := benchData("ts", 32<<10)
	for _, w := range []struct {
		name string
		size int
	}{{"128KiB", 128 << 10}, {"1MiB", 1 << 20}, {"8MiB", 8 << 20}} {
		for _, lowMem := range []bool{true, false} {
			for l := zstd.SpeedFastest; l <= zstd.SpeedBestCompression; l++ {
				opts := []zstd.EOption{
					zstd.WithEncoderLevel(l),
					zstd.WithEncoderConcurrency(1),
					zstd.WithWindowSize(w.size),
					zstd.WithEncoderCRC(false),
					zstd.WithLowerEncoderMem(lowMem),
				}
				build := func(b *testing.B) *zstdEncoder {
					enc, err := zstd.NewWriter(nil, opts...)
					if err != nil {
						b.Fatal(err)
					}
					return &zstdEncoder{enc: enc}
				}
				prefix := fmt.Sprintf("window=%s/lowmem=%t/level=%s/", w.name, lowMem, l)
				for _, reset := range []bool{false, true} {
					name := "op=new+encode32KiB"
					if reset {
						name += "+reset"
					}
					b.Run(prefix+name, func(b *testing.B) {
						var dst []byte
						op := func() *zstdEncoder {
							z := build(b)
							dst = z.encode(dst[:0], first)
							if reset {
								z.reset()
							}
							return z
						}
						op()
						report := oneShot(b, func() any { return op() })
						measure(b, func() { op() })
						report()
					})
				}
				for _, kind := range benchKinds {
					for _, size := range benchSizes {
						b.Run(prefix+fmt.Sprintf("op=encode/data=%s/size=%s", kind, size.name), func(b *testing.B) {
							src := benchData(kind, size.n)
							z := build(b)
							dst := z.encode(nil, src)
							z.reset()
							b.SetBytes(int64(len(src)))
							measure(b, func() { dst = z.encode(dst[:0], src) })
							b.ReportMetric(float64(len(dst)), "wire-B/op")
						})
					}
				}
			}
		}
	}
}

// newLZ4EncoderSized is newLZ4Encoder with the block size as a parameter.
func newLZ4EncoderSized(b *testing.B, level lz4.CompressionLevel, block lz4.BlockSize) *lz4Encoder {
	e := &lz4Encoder{}
	e.w = lz4.NewWriter(&e.out)
	if err := e.w.Apply(
		lz4.CompressionLevelOption(level),
		lz4.ConcurrencyOption(1),
		lz4.BlockSizeOption(block),
		lz4.ChecksumOption(false),
	); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkLZ4EncoderOptions justifies lz4BlockSize: the four block sizes
// of the LZ4 frame format, in fast mode and at level 9.
func BenchmarkLZ4EncoderOptions(b *testing.B) {
	first := benchData("ts", 32<<10)
	for _, bs := range []struct {
		name string
		size lz4.BlockSize
	}{{"64KiB", lz4.Block64Kb}, {"256KiB", lz4.Block256Kb}, {"1MiB", lz4.Block1Mb}, {"4MiB", lz4.Block4Mb}} {
		for _, level := range []int{0, 9} {
			lvl := lz4.Fast
			if level == 9 {
				lvl = lz4.Level9
			}
			prefix := fmt.Sprintf("block=%s/level=%d/", bs.name, level)
			b.Run(prefix+"op=new+encode32KiB+reset", func(b *testing.B) {
				var dst []byte
				op := func() *lz4Encoder {
					e := newLZ4EncoderSized(b, lvl, bs.size)
					dst = e.encode(dst[:0], first)
					e.reset()
					return e
				}
				op()
				report := oneShot(b, func() any { return op() })
				measure(b, func() { op() })
				report()
			})
			for _, kind := range benchKinds {
				for _, size := range benchSizes {
					b.Run(prefix+fmt.Sprintf("op=encode/data=%s/size=%s", kind, size.name), func(b *testing.B) {
						src := benchData(kind, size.n)
						e := newLZ4EncoderSized(b, lvl, bs.size)
						dst := e.encode(nil, src)
						b.SetBytes(int64(len(src)))
						measure(b, func() { dst = e.encode(dst[:0], src) })
						b.ReportMetric(float64(len(dst)), "wire-B/op")
					})
				}
			}
		}
	}
}

// The benchmarks above build encoders the way pkg/codec does; this pins
// that the options they vary include the ones pkg/codec uses.
func TestBenchOptionsCoverCodec(t *testing.T) {
	switch zstdWindow {
	case 128 << 10, 1 << 20, 8 << 20:
	default:
		t.Errorf("zstdWindow %d is not among the window sizes BenchmarkZstdEncoderOptions measures", zstdWindow)
	}
	switch lz4BlockSize {
	case lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb:
	default:
		t.Errorf("lz4BlockSize %d is not among the block sizes BenchmarkLZ4EncoderOptions measures", lz4BlockSize)
	}
}
