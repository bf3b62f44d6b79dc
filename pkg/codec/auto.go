package codec

import "fmt"

// Auto is not a compressor: it asks the frame encoder (package arrowipc) to
// choose, per record batch, whether to send the batch uncompressed, with
// LZ4 or with zstd at AutoZstdLevel, by the cost model below. A Codec of
// kind Auto has no pool; its Encode copies.
const Auto Kind = Zstd + 1

// The cost model of Auto. For each batch the encoder compresses the buffers
// worth trying with zstd at AutoZstdLevel (skipping those that history says
// cannot pay), then prices each candidate in nanoseconds of CPU:
//
//	none: BytePrice × raw bytes
//	zstd: BytePrice × zstd wire bytes
//	      + D.ZstdBatchNs + D.ZstdNsPerByte × bytes compressed
//	lz4:  BytePrice × (raw − LZ4ShareOfZstdSavings × zstd savings)
//	      + D.LZ4BatchNs
//	      + (LZ4EncodeNsPerByte + D.LZ4NsPerByte) × bytes compressed
//
// (bytes compressed: the raw size of the buffers stored compressed; D the
// Decoder generation of the Grafana the frame is for, see DecoderFor) and
// sends the cheapest, lz4 only after compressing with it and only if its
// real size still makes it the cheapest. The encode CPU already spent on
// the zstd trial is not counted: it is spent whatever is chosen. Where each
// constant was measured is in docs/compression.md.
const (
	// AutoZstdLevel is the zstd level Auto compresses with.
	AutoZstdLevel = ZstdDefaultLevel
	// LZ4EncodeNsPerByte is the plugin's CPU per byte LZ4 compresses.
	LZ4EncodeNsPerByte = 0.35
	// LZ4ShareOfZstdSavings is the share of zstd's savings LZ4 is expected
	// to reach on the same buffers (log lines: 311768 bytes against 373120).
	LZ4ShareOfZstdSavings = 0.85
)

// Preference says what a Grafana values, and so how Auto prices a byte.
type Preference struct {
	// Name is the setting's value: "cpu" or "bytes".
	Name string
	// BytePrice is how many nanoseconds of CPU (the plugin's and Grafana's)
	// one byte on the wire is worth.
	BytePrice float64
}

// Preferences lists the accepted values of the codecPreference setting,
// the default first.
var Preferences = []Preference{
	// cpu: Grafana runs next to the plugin. A byte is priced at 20 ns, the
	// lowest round price at which log frames of 1000 lines or more go as
	// zstd (their break-even is 16–19 ns): zstd's savings over lz4 there,
	// ~30 % of lz4's bytes, then outweigh the ~3 ns a byte Grafana pays to
	// decompress zstd. Time series go as zstd only where it saves ~4 KB a
	// frame or more (1000 points at steps up to ~20 s, break-even 17–20 ns;
	// 500 points at 20 s stay uncompressed); a series that does not compress
	// goes uncompressed at any price.
	// docs/compression.md has the break-even price of each frame.
	{Name: "cpu", BytePrice: 20},
	// bytes: Grafana is far from the plugin or short of memory: a byte
	// weighs like 50 ns of CPU. Text of a few hundred lines goes as zstd
	// too, and so do shorter series whose timestamps zstd shrinks (500
	// points at 20 s save ~1.9 KB).
	{Name: "bytes", BytePrice: 50},
}

// DefaultPreference is the codecPreference of a data source that sets none.
const DefaultPreference = "cpu"

// ParsePreference returns the Preference of a codecPreference value.
func ParsePreference(s string) (Preference, error) {
	for _, p := range Preferences {
		if p.Name == s {
			return p, nil
		}
	}
	return Preference{}, fmt.Errorf("codec: preference %q is not one of %q, %q", s, Preferences[0].Name, Preferences[1].Name)
}
