package codec

import (
	"strconv"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// encoder is one single-threaded compressor.
type encoder interface {
	// encode appends the compressed form of src to dst.
	encode(dst, src []byte) []byte
	// reset drops every reference to caller memory before the encoder goes
	// back to its pool.
	reset()
}

// itemPool is what an encoderPool keeps idle encoders in: a sync.Pool in
// production, a recording pool in tests (sync.Pool may drop items, so it
// cannot prove that every encoder came back).
type itemPool interface {
	Get() any
	Put(any)
}

// encoderPool holds idle encoders of one codec at one effective level.
type encoderPool struct {
	name  string
	items itemPool
	build func() encoder
}

func newEncoderPool(name string, build func() encoder) *encoderPool {
	return &encoderPool{name: name, items: &sync.Pool{}, build: build}
}

func (p *encoderPool) get() encoder {
	if e, ok := p.items.Get().(encoder); ok {
		return e
	}
	return p.build()
}

func (p *encoderPool) put(e encoder) {
	e.reset()
	p.items.Put(e)
}

// One pool per effective level, built at init: a handful of structs, no
// encoders until first use.
var (
	zstdPools [zstd.SpeedBestCompression - zstd.SpeedFastest + 1]*encoderPool // indexed by level - SpeedFastest
	lz4Pools  [LZ4MaxLevel + 1]*encoderPool
)

func init() {
	for l := zstd.SpeedFastest; l <= zstd.SpeedBestCompression; l++ {
		zstdPools[l-zstd.SpeedFastest] = newEncoderPool("zstd "+l.String(), func() encoder { return newZstdEncoder(l) })
	}
	// LZ4's level 0 is the library's fast mode, 1..9 its high-compression
	// levels Level1..Level9.
	for l := LZ4MinLevel; l <= LZ4MaxLevel; l++ {
		name, lvl := "lz4 fast", lz4.Fast
		if l > 0 {
			name, lvl = "lz4 level "+strconv.Itoa(l), lz4.CompressionLevel(1<<(8+l))
		}
		lz4Pools[l] = newEncoderPool(name, func() encoder { return newLZ4Encoder(lvl) })
	}
}
