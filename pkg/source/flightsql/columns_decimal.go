// Decimals of every width as their exact text.

package flightsql

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// decimalReader reads the unscaled values of one decimal width.
type decimalReader struct {
	// int64At returns a[i]'s unscaled value when it fits in an int64.
	int64At func(a arrow.Array, i int) (int64, bool)
	// appendDigits appends a[i]'s unscaled value in base 10.
	appendDigits func(dst []byte, a arrow.Array, i int) []byte
}

var decimals = map[arrow.Type]decimalReader{
	arrow.DECIMAL32: {
		int64At: func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Decimal32).Value(i)), true },
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendInt(dst, int64(a.(*array.Decimal32).Value(i)), 10)
		},
	},
	arrow.DECIMAL64: {
		int64At: func(a arrow.Array, i int) (int64, bool) { return int64(a.(*array.Decimal64).Value(i)), true },
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendInt(dst, int64(a.(*array.Decimal64).Value(i)), 10)
		},
	},
	arrow.DECIMAL128: {
		int64At: func(a arrow.Array, i int) (int64, bool) {
			n := a.(*array.Decimal128).Value(i)
			lo := n.LowBits()
			return int64(lo), n.HighBits() == int64(lo)>>63
		},
		appendDigits: func(dst []byte, a arrow.Array, i int) []byte {
			n := a.(*array.Decimal128).Value(i)
			return appendInt128(dst, uint64(n.HighBits()), n.LowBits())
		},
	},
	arrow.DECIMAL256: {
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
	at := len(dst) - int(scale)
	dst = append(dst, 0)
	copy(dst[at+1:], dst[at:len(dst)-1])
	dst[at] = '.'
	return dst
}

func decimalText(dst []byte, a arrow.Array, i int) []byte {
	return appendDecimal(dst, decimals[a.DataType().ID()], a, i, a.DataType().(arrow.DecimalType).GetScale())
}
