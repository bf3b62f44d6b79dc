package codec

import (
	"slices"
	"strconv"
	"strings"
)

// Decoder is a generation of Grafana's Arrow decoder: the SDK's
// data.UnmarshalArrowFrame over the arrow-go a Grafana build links, whose
// ipc reader decompresses body buffers. Its figures are what that decoder
// pays, in nanoseconds of CPU, beyond reading the same batch uncompressed;
// Auto's model (see Auto) prices a frame by the decoder of the Grafana that
// asked for it. Where each figure was measured is in docs/compression.md.
type Decoder struct {
	// Name names the generation in stats and messages.
	Name string
	// ArrowGo says which arrow-go versions decode this way.
	ArrowGo string
	// FirstGrafana is the first Grafana release known to link such an
	// arrow-go, "" when none is known: DecoderFor then never returns this
	// generation for a version (but for the oldest, the fallback).
	FirstGrafana string
	// ZstdBatchNs is paid per batch that declares zstd (the decoder's
	// setup), ZstdNsPerByte per byte a zstd buffer decompresses to.
	ZstdBatchNs, ZstdNsPerByte float64
	// LZ4BatchNs and LZ4NsPerByte are the same for LZ4_FRAME.
	LZ4BatchNs, LZ4NsPerByte float64
}

// Decoders lists the generations, oldest first: one entry each. The first
// is the fallback for a Grafana whose version is unknown or older than any
// listed, and the default of a Decoder left unset.
var Decoders = []*Decoder{
	// arrow-go before v18.9.0 builds a zstd decoder (klauspost
	// zstd.NewReader) for every compressed record batch and reads each
	// buffer through it as a stream: every Grafana released up to 13.2.x.
	{
		Name: "per-batch", ArrowGo: "< v18.9.0", FirstGrafana: "0.0.0",
		ZstdBatchNs: 50_000, ZstdNsPerByte: 3.0,
		LZ4BatchNs: 1_200, LZ4NsPerByte: 0.9,
	},
	// arrow-go v18.9.0 (2026-11-13) pools zstd decoders and decodes each
	// buffer in one call (arrow-go PR #1331). No Grafana release links it
	// yet: set FirstGrafana when one does.
	{
		Name: "pooled", ArrowGo: ">= v18.9.0",
		ZstdBatchNs: 6_000, ZstdNsPerByte: 1.7,
		LZ4BatchNs: 1_200, LZ4NsPerByte: 0.45,
	},
}

// DecoderFor returns the generation of the decoder a Grafana of the given
// version links: the newest generation whose FirstGrafana is at or below
// version. A version that does not start with major.minor.patch (an empty
// one: Grafana before 10.2 sends no user agent) gets the oldest, the most
// expensive, which is every Grafana released so far. It does not allocate.
func DecoderFor(version string) *Decoder {
	v, ok := parseVersion(version)
	if !ok {
		return Decoders[0]
	}
	for i := len(Decoders) - 1; i > 0; i-- {
		if first, ok := parseVersion(Decoders[i].FirstGrafana); ok && slices.Compare(v[:], first[:]) >= 0 {
			return Decoders[i]
		}
	}
	return Decoders[0]
}

// ParseDecoder returns the generation named name, nil if none is.
func ParseDecoder(name string) *Decoder {
	if i := slices.IndexFunc(Decoders, func(d *Decoder) bool { return d.Name == name }); i >= 0 {
		return Decoders[i]
	}
	return nil
}

type version [3]int

// parseVersion reads the major.minor.patch a version starts with, each
// number of at most 6 digits; what follows (-pre, +security-01, -12345) is
// ignored.
func parseVersion(s string) (version, bool) {
	var v version
	for i := range v {
		rest := strings.TrimLeft(s, "0123456789")
		digits := len(s) - len(rest)
		if digits == 0 || digits > 6 {
			return version{}, false
		}
		v[i], _ = strconv.Atoi(s[:digits])
		s = rest
		if i < 2 {
			var dot bool
			if s, dot = strings.CutPrefix(s, "."); !dot {
				return version{}, false
			}
		}
	}
	return v, true
}
