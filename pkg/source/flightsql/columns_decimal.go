// Decimals of every width: their exact text, and float64 correctly rounded.

package flightsql

import (
	"bytes"
	"slices"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// decimalReader reads the unscaled values of one decimal width.
type decimalReader struct {
	// int64At returns a[i]'s unscaled value when it fits in an int64.
	int64At func(a arrow.Array, i int) (int64, bool)
	// appendDigits appends a[i]'s unscaled value in base 10.
	appendDigits func(dst []byte, a arrow.Array, i int) []byte
}

// intDecimal reads decimals whose unscaled values are int32 or int64
// (decimal32, decimal64).
func intDecimal[T ~int32 | ~int64, A valueArray[T]]() decimalReader {
	return decimalReader{
		int64At: func(a arrow.Array, i int) (int64, bool) { return int64(a.(A).Value(i)), true },
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendInt(dst, int64(a.(A).Value(i)), 10)
		},
	}
}

var decimal128Reader = decimalReader{
	int64At: func(a arrow.Array, i int) (int64, bool) {
		n := a.(*array.Decimal128).Value(i)
		lo := n.LowBits()
		return int64(lo), n.HighBits() == int64(lo)>>63
	},
	appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
		n := a.(*array.Decimal128).Value(i)
		return appendInt128(dst, uint64(n.HighBits()), n.LowBits())
	},
}

var decimal256Reader = decimalReader{
	int64At: func(a arrow.Array, i int) (int64, bool) {
		w := a.(*array.Decimal256).Value(i).Array()
		sign := uint64(int64(w[0]) >> 63)
		return int64(w[0]), w[1] == sign && w[2] == sign && w[3] == sign
	},
	appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
		n := a.(*array.Decimal256).Value(i)
		w := n.Array()
		if sign := uint64(int64(w[0]) >> 63); w[1] == sign && w[2] == sign && w[3] == sign {
			return strconv.AppendInt(dst, int64(w[0]), 10)
		}
		return n.BigInt().Append(dst, 10)
	},
}

// appendDecimal appends the exact text of decimal a[i] at its scale:
// "-12.50" for -1250 at scale 2, "1200" for 12 at scale -2.
func appendDecimal(dst []byte, d decimalReader, a arrow.Array, i int, scale int32) []byte {
	start := len(dst)
	dst = d.appendDigits(dst, a, i)
	if scale <= 0 {
		if scale < 0 && !(len(dst) == start+1 && dst[start] == '0') {
			for range -scale {
				dst = append(dst, '0')
			}
		}
		return dst
	}
	digits := start
	if dst[start] == '-' {
		digits++
	}
	// Left-pad with zeros so there is at least one digit before the point.
	if n := len(dst) - digits; n <= int(scale) {
		pad := int(scale) - n + 1
		dst = append(dst, make([]byte, pad)...)
		copy(dst[digits+pad:], dst[digits:len(dst)-pad])
		for j := range pad {
			dst[digits+j] = '0'
		}
	}
	return slices.Insert(dst, len(dst)-int(scale), '.')
}

func decimalText(dst []byte, a arrow.Array, i int) []byte {
	return appendDecimal(dst, *typeOf(a.DataType().ID()).decimal, a, i, a.DataType().(arrow.DecimalType).GetScale())
}

// decimalToFloat converts a decimal column to float64, each value correctly
// rounded (see decimalFloat), and reports lostPrecision when a value does not
// read back exactly.
func decimalToFloat(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
	return exactToFloat(mem, a, *typeOf(a.DataType().ID()).decimal, a.DataType().(arrow.DecimalType).GetScale())
}

// exactToFloat converts exact numbers read by d (at scale) to float64.
func exactToFloat(mem memory.Allocator, a arrow.Array, d decimalReader, scale int32) (arrow.Array, found, error) {
	var f found
	var buf []byte
	out := eachValid(array.NewFloat64Builder(mem), a, func(b *array.Float64Builder, i int) {
		v, lossy := decimalFloat(d, a, i, scale, &buf)
		if lossy {
			f |= lostPrecision
		}
		b.UnsafeAppend(v)
	})
	return out, f, nil
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// maxExactInt is the largest integer below which every integer is a float64.
const maxExactInt = 1 << 53

// decimalFloat returns the float64 nearest to decimal a[i] and whether that
// float64 fails to read back as the decimal at its scale. When the unscaled
// value and the power of ten are both exact float64s, one IEEE division gives
// the correctly rounded result; otherwise the decimal's exact text goes
// through strconv.ParseFloat, which rounds correctly too. Values with at most
// 15 significant digits always read back; others are checked by formatting
// the float64 at the decimal's scale. buf is scratch space.
func decimalFloat(d decimalReader, a arrow.Array, i int, scale int32, buf *[]byte) (float64, bool) {
	if n, ok := d.int64At(a, i); ok && n > -maxExactInt && n < maxExactInt && scale >= 0 && int(scale) < len(pow10) {
		v := float64(n) / pow10[scale]
		if scale == 0 || (n > -1e15 && n < 1e15) {
			return v, false
		}
		*buf = appendDecimal((*buf)[:0], d, a, i, scale)
		return v, !readsBack(v, *buf, scale, buf)
	}
	*buf = appendDecimal((*buf)[:0], d, a, i, scale)
	// ParseFloat does not keep its argument (its errors copy it), so the
	// bytes can be read in place; string(*buf) allocates beyond 32 bytes.
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(*buf), len(*buf)), 64)
	if err != nil {
		return v, true
	}
	return v, !readsBack(v, *buf, scale, buf)
}

// readsBack reports whether v formatted at scale is the decimal text exact.
// It appends to *buf after the text.
func readsBack(v float64, exact []byte, scale int32, buf *[]byte) bool {
	start := len(*buf)
	*buf = strconv.AppendFloat(*buf, v, 'f', int(max(scale, 0)), 64)
	back := (*buf)[start:]
	if len(back) > 1 && back[0] == '-' && len(exact) > 0 && exact[0] != '-' {
		back = back[1:] // -0.00 for a tiny negative value read as 0
	}
	return bytes.Equal(back, exact)
}
