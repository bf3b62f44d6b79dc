package codec

import (
	"github.com/pierrec/lz4/v4"
)

// appendWriter is an io.Writer that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// lz4Encoder writes the LZ4 frame format, which Arrow calls LZ4_FRAME.
type lz4Encoder struct {
	w   *lz4.Writer
	out appendWriter
}

// lz4BlockSize is the frame's block size. Arrow body buffers of a Grafana
// frame are mostly far below 64 KiB; the block size decides how large a
// block buffer every encode borrows (see BenchmarkLZ4EncoderOptions).
const lz4BlockSize = lz4.Block256Kb

func newLZ4Encoder(level lz4.CompressionLevel) encoder {
	e := &lz4Encoder{}
	e.w = lz4.NewWriter(&e.out)
	if err := e.w.Apply(
		lz4.CompressionLevelOption(level),
		lz4.ConcurrencyOption(1),
		lz4.BlockSizeOption(lz4BlockSize),
		lz4.ChecksumOption(false),
	); err != nil {
		panic("codec: building lz4 encoder: " + err.Error())
	}
	return e
}

func (e *lz4Encoder) encode(dst, src []byte) []byte {
	e.out.b = dst
	e.w.Reset(&e.out)
	// Writes to an appendWriter cannot fail, and neither can the encoder's
	// own steps for a valid configuration.
	if _, err := e.w.Write(src); err != nil {
		panic("codec: lz4 write: " + err.Error())
	}
	if err := e.w.Close(); err != nil {
		panic("codec: lz4 close: " + err.Error())
	}
	dst = e.out.b
	e.out.b = nil
	return dst
}

func (e *lz4Encoder) reset() {
	e.out.b = nil
	e.w.Reset(&e.out)
}
