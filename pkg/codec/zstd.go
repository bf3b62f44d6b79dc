package codec

import (
	"github.com/klauspost/compress/zstd"
)

// zstdWindow bounds the window of pooled zstd encoders. Arrow body buffers
// are compressed one at a time with EncodeAll; a window larger than the
// buffer buys nothing, and the window decides how much memory each pooled
// encoder keeps (see BenchmarkZstdEncoderOptions for the measurements that
// chose it).
const zstdWindow = 1 << 20

// zstdOptions are the options every pooled zstd encoder is built with:
// single-threaded (EncodeAll runs on the caller's goroutine), no CRC (Arrow
// readers do not ask for one and a corrupted frame still fails to decode),
// and the lower-memory tables.
func zstdOptions(level zstd.EncoderLevel) []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zstdWindow),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true),
	}
}

type zstdEncoder struct{ enc *zstd.Encoder }

func newZstdEncoder(level zstd.EncoderLevel) encoder {
	enc, err := zstd.NewWriter(nil, zstdOptions(level)...)
	if err != nil {
		// The options are constants; an error here is a programming error.
		panic("codec: building zstd encoder: " + err.Error())
	}
	return &zstdEncoder{enc: enc}
}

func (z *zstdEncoder) encode(dst, src []byte) []byte { return z.enc.EncodeAll(src, dst) }

// reset: EncodeAll leaves no reference to dst or src behind, and the
// streaming state it does not use is released by Reset(nil).
func (z *zstdEncoder) reset() { z.enc.Reset(nil) }
