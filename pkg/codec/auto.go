package codec

import (
	"fmt"
	"slices"
)

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
//	      + ZstdTrialNsPerByte × bytes compressed
//	lz4:  BytePrice × (raw − LZ4ShareOfZstdSavings × zstd savings)
//	      + D.LZ4BatchNs
//	      + (LZ4EncodeNsPerByte + D.LZ4NsPerByte) × bytes compressed
//	      + ZstdTrialNsPerByte × bytes compressed
//
// (bytes compressed: the raw size of the buffers zstd stored compressed,
// for lz4 those lz4 compresses; D the Decoder generation of the Grafana
// the frame is for, see DecoderFor) and sends the cheapest, lz4 only after
// compressing with it and only if its real size still makes it the
// cheapest.
//
// The zstd trial of this batch is spent whatever is chosen, but the choice
// decides whether the next batches of the same slots pay it again: a batch
// sent uncompressed counts as a failed attempt for every buffer zstd
// compressed, so the skip's history stores those slots raw untried for the
// next 1, 2, 4, … 64 batches, while a batch sent compressed (as zstd or as
// lz4, both chosen from the zstd trial) clears their history and the next
// batch tries them again. So each compressed candidate carries the trial
// of its slots in the next batch, ZstdTrialNsPerByte × bytes zstd
// compressed, and none does not; being the same for zstd and lz4, it does
// not move the choice between them. Where each constant was measured is in
// docs/compression.md.
const (
	// AutoZstdLevel is the zstd level Auto compresses with.
	AutoZstdLevel = ZstdDefaultLevel
	// ZstdTrialNsPerByte is the plugin's CPU for the zstd trial at
	// AutoZstdLevel per byte of the buffers it compresses.
	ZstdTrialNsPerByte = 5.0
	// LZ4EncodeNsPerByte is the plugin's CPU per byte LZ4 compresses.
	LZ4EncodeNsPerByte = 0.35
	// LZ4ShareOfZstdSavings is the share of zstd's savings LZ4 is expected
	// to reach on the same buffers.
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
	// zstd: zstd's savings over lz4 there, ~30 % of lz4's bytes, then
	// outweigh the ~3 ns a byte Grafana pays to decompress zstd. Time
	// series whose timestamps zstd shrinks by ~4 KB a frame go uncompressed
	// to the per-batch decoder (its decode and the zstd trial of the next
	// frames outweigh the bytes) and as zstd to the pooled one; a series
	// that does not compress goes uncompressed at any price.
	// docs/compression.md has the break-even price of each frame.
	{Name: "cpu", BytePrice: 20},
	// bytes: Grafana is far from the plugin or short of memory: a byte
	// weighs like 50 ns of CPU. Text of a few hundred lines goes as zstd
	// too, and so do series whose timestamps zstd shrinks by ~1.9 KB or
	// more.
	{Name: "bytes", BytePrice: 50},
}

// DefaultPreference is the codecPreference of a data source that sets none.
const DefaultPreference = "cpu"

// ParsePreference returns the Preference of a codecPreference value.
func ParsePreference(s string) (Preference, error) {
	if i := slices.IndexFunc(Preferences, func(p Preference) bool { return p.Name == s }); i >= 0 {
		return Preferences[i], nil
	}
	return Preference{}, fmt.Errorf("codec: preference %q is not one of %q, %q", s, Preferences[0].Name, Preferences[1].Name)
}
