package frame_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

// FuzzAppendFrame: a random frame (field types chosen by a mask, rows, values
// from a seed, free-form strings and labels from the fuzzer's bytes) encoded
// with a codec chosen by the fuzzer must decode through Grafana's decoder to
// exactly the input, or fail to encode with an error.
func FuzzAppendFrame(f *testing.F) {
	f.Add(uint16(0), uint64(1), uint8(0), uint32(0xFFFFFFFF), uint8(0), []byte("héllo\x00wörld"), "lbl")
	f.Add(uint16(1), uint64(2), uint8(3), uint32(1<<9|1<<11), uint8(10), []byte{0xff, 0xfe, '<', '&'}, "\u2028")
	f.Add(uint16(300), uint64(3), uint8(6), uint32(0x5555), uint8(0), []byte(strings.Repeat("x", 200)), "")
	f.Add(uint16(64), uint64(4), uint8(4), uint32(0), uint8(0), []byte(nil), "k")
	f.Fuzz(func(t *testing.T, rows uint16, seed uint64, codecIdx uint8, mask uint32, ms uint8, text []byte, label string) {
		n := int(rows % 257)
		all := frametest.AllTypes(n, seed)
		var fields []*data.Field
		for i, fld := range all.Fields {
			if mask&(1<<(uint(i)%32)) != 0 {
				fields = append(fields, fld)
			}
		}
		// A string field cut from the fuzzer's bytes.
		words := make([]string, n)
		parts := bytes.Split(text, []byte{' '})
		for i := range words {
			words[i] = string(parts[i%len(parts)])
		}
		sf := data.NewField("text", data.Labels{label: string(text)}, words)
		fields = append(fields, sf)
		in := data.NewFrame(label, fields...)
		in.RefID = string(text)
		c := codecs[int(codecIdx)%len(codecs)]
		e := newEncoder(t, c, float64(ms%10)/10)
		b, _, err := e.Append(nil, frame.Input{Frame: in}, nil)
		if err != nil {
			return // encode may refuse a frame; it must not panic or write garbage
		}
		got, err := data.UnmarshalArrowFrame(b)
		if err != nil {
			t.Fatalf("codec %s: encoded frame does not decode: %v", c, err)
		}
		// The oracle is the SDK's own round trip (MarshalArrow, then its
		// decoder): label JSON replaces invalid UTF-8, for the SDK as for us.
		sdkBytes, err := in.MarshalArrow()
		if err != nil {
			t.Fatalf("SDK MarshalArrow refused a frame we encoded: %v", err)
		}
		want, err := data.UnmarshalArrowFrame(sdkBytes)
		if err != nil {
			t.Fatal(err)
		}
		if err := frametest.Equal(want, got); err != nil {
			t.Fatalf("codec %s: %v", c, err)
		}
		// Valid UTF-8 survives exactly: the decoded frame is the input.
		if utf8.ValidString(label) && utf8.Valid(text) {
			if err := frametest.Equal(in, got); err != nil {
				t.Fatalf("codec %s: %v", c, err)
			}
		}
	})
}
