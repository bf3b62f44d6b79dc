package codec

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// Kind names a body-compression codec.
type Kind uint8

const (
	// None stores buffers as they are.
	None Kind = iota
	// LZ4 is the LZ4 frame format (Arrow's LZ4_FRAME).
	LZ4
	// Zstd is Zstandard (Arrow's ZSTD).
	Zstd
)

// Names lists the codec names accepted in settings, by kind, the default
// (DefaultKind) first.
var Names = []struct {
	Kind Kind
	Name string
}{{Auto, "auto"}, {Zstd, "zstd"}, {LZ4, "lz4"}, {None, "none"}}

// DefaultKind is the codec of a data source that sets none.
const DefaultKind = Auto

// String returns the name used in settings: "auto", "zstd", "lz4" or "none".
func (k Kind) String() string {
	for _, n := range Names {
		if n.Kind == k {
			return n.Name
		}
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind parses a codec name as used in settings.
func ParseKind(s string) (Kind, error) {
	for _, n := range Names {
		if n.Name == s {
			return n.Kind, nil
		}
	}
	return 0, fmt.Errorf("codec: %q is not one of \"auto\", \"zstd\", \"lz4\", \"none\"", s)
}

// Level ranges and defaults, by kind.
const (
	// ZstdMinLevel .. ZstdMaxLevel is the zstd scale; 0 asks for the
	// library's default level.
	ZstdMinLevel     = 1
	ZstdMaxLevel     = 22
	ZstdDefaultLevel = 3
	// LZ4MinLevel is LZ4's fast mode; 1..LZ4MaxLevel are its high-compression levels.
	LZ4MinLevel     = 0
	LZ4MaxLevel     = 9
	LZ4DefaultLevel = 0
)

// Spec describes one codec for settings and for people: its name (Kind's
// String), whether it takes a level, its level range and default. What each
// level becomes is New(Kind, level).Effective().
type Spec struct {
	Kind Kind
	// Levels is false for Auto and None, whose level is ignored; the level fields
	// are then 0.
	Levels                           bool
	MinLevel, MaxLevel, DefaultLevel int
}

// Specs lists every codec in the order settings offer them: auto (the
// default), zstd, lz4, none. It is the one description of the codecs' names and level ranges
// (package settings' generated table is written from it).
func Specs() []Spec {
	return []Spec{
		{Kind: Auto},
		{Kind: Zstd, Levels: true, MinLevel: ZstdMinLevel, MaxLevel: ZstdMaxLevel, DefaultLevel: ZstdDefaultLevel},
		{Kind: LZ4, Levels: true, MinLevel: LZ4MinLevel, MaxLevel: LZ4MaxLevel, DefaultLevel: LZ4DefaultLevel},
		{Kind: None},
	}
}

// ErrLevel is returned by New for a level outside the codec's range.
var ErrLevel = errors.New("codec: level out of range")

// Codec compresses buffers with one codec at one level. The zero value is
// None. A Codec is a small value that refers to a shared encoder pool: copy
// it freely and use it from any number of goroutines.
type Codec struct {
	kind  Kind
	level int
	pool  *encoderPool // nil for None
}

// New returns the codec kind at level, validated once here so that nothing
// on the per-buffer path needs checking:
//   - Zstd: 1..22 on the zstd scale, or 0 for the default (3); mapped to the
//     encoder's four speeds with zstd.EncoderLevelFromZstd.
//   - LZ4: 0 (fast) .. 9 (high compression).
//   - None and Auto: level must be 0.
func New(kind Kind, level int) (Codec, error) {
	switch kind {
	case None, Auto:
		if level != 0 {
			return Codec{}, fmt.Errorf("%w: codec %s takes no level, got %d", ErrLevel, kind, level)
		}
		return Codec{kind: kind}, nil
	case Zstd:
		if level == 0 {
			level = ZstdDefaultLevel
		}
		if level < ZstdMinLevel || level > ZstdMaxLevel {
			return Codec{}, fmt.Errorf("%w: zstd level %d is not within %d..%d", ErrLevel, level, ZstdMinLevel, ZstdMaxLevel)
		}
		return Codec{kind: kind, level: level, pool: zstdPools[zstd.EncoderLevelFromZstd(level)-zstd.SpeedFastest]}, nil
	case LZ4:
		if level < LZ4MinLevel || level > LZ4MaxLevel {
			return Codec{}, fmt.Errorf("%w: lz4 level %d is not within %d..%d", ErrLevel, level, LZ4MinLevel, LZ4MaxLevel)
		}
		return Codec{kind: kind, level: level, pool: lz4Pools[level]}, nil
	}
	return Codec{}, fmt.Errorf("codec: unknown kind %d", kind)
}

// MustNew is New for levels known to be valid; it panics otherwise.
func MustNew(kind Kind, level int) Codec {
	c, err := New(kind, level)
	if err != nil {
		panic(err)
	}
	return c
}

// Kind returns the codec's kind.
func (c Codec) Kind() Kind { return c.kind }

// Level returns the level as requested on the codec's own scale (0 for None,
// 3 for a zstd codec built with level 0).
func (c Codec) Level() int { return c.level }

// Effective says what the level becomes in the encoder, for people:
// "zstd fastest", "zstd default", "zstd better", "zstd best", "lz4 fast",
// "lz4 level 5", or "none". Levels with the same effective name produce the
// same bytes and share one pool.
func (c Codec) Effective() string {
	if c.pool == nil {
		return c.kind.String()
	}
	return c.pool.name
}

// String returns kind and level, e.g. "zstd/3", "lz4/0", "none", "auto".
func (c Codec) String() string {
	if c.pool == nil {
		return c.kind.String()
	}
	return c.kind.String() + "/" + strconv.Itoa(c.level)
}

// Encoder is an encoder borrowed from a codec's pool for a run of Encode
// calls (one frame's buffers, say) without a pool round trip per buffer.
// It must be used by one goroutine and given back with Close.
type Encoder struct {
	pool *encoderPool
	enc  encoder
}

// Encoder borrows an encoder from the codec's pool. For None it returns an
// Encoder that copies.
func (c Codec) Encoder() *Encoder {
	if c.pool == nil {
		return &Encoder{}
	}
	return &Encoder{pool: c.pool, enc: c.pool.get()}
}

// Encode appends the compressed form of src to dst and returns the extended
// slice, which aliases dst when dst had room (as append does). For None it
// appends src unchanged. It panics when called after Close.
func (e *Encoder) Encode(dst, src []byte) []byte {
	if e.pool == nil {
		return append(dst, src...)
	}
	if e.enc == nil {
		panic("codec: Encode on a closed Encoder")
	}
	return e.enc.encode(dst, src)
}

// Close resets the encoder and returns it to its pool. Calling Close more
// than once is safe.
func (e *Encoder) Close() {
	if e.enc != nil {
		e.pool.put(e.enc)
		e.enc = nil
	}
}
