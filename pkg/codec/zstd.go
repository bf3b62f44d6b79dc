package codec

import (
	"github.com/klauspost/compress/zstd"
)

// zstdWindow bounds the window of pooled zstd encoders. Arrow body buffers
// are compressed one at a time with EncodeAll, and the window decides how
// much memory each pooled encoder keeps. BenchmarkZstdEncoderOptions chose
// it: at levels 1–5 128 KiB, 1 MiB and 8 MiB keep the same memory and write
// the same bytes; at 6–9 128 KiB keeps 4.5 MiB per encoder against 5.3 MiB,
// at 10–22 34 against 35 MiB, for output within a byte on timestamps and
// slightly smaller on 512 KiB of log lines.
const zstdWindow = 128 << 10

type zstdEncoder struct{ enc *zstd.Encoder }

// newZstdEncoder builds a pooled zstd encoder: single-threaded (EncodeAll
// runs on the caller's goroutine), no CRC (Arrow readers do not ask for one
// and a corrupted frame still fails to decode), and the lower-memory tables.
func newZstdEncoder(level zstd.EncoderLevel) encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zstdWindow), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
	if err != nil {
		// The options are constants; an error here is a programming error.
		panic("codec: building zstd encoder: " + err.Error())
	}
	return &zstdEncoder{enc: enc}
}

func (z *zstdEncoder) encode(dst, src []byte) []byte { return z.enc.EncodeAll(src, dst) }

// reset does nothing: EncodeAll runs on the caller's goroutine, starts
// every call afresh and keeps no reference to dst or src. (Encoder.Reset
// would build the streaming state EncodeAll never uses, doubling the memory
// each pooled encoder keeps.)
func (z *zstdEncoder) reset() {}
