package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Upstreams accepted in jsonData.upstream.
const (
	UpstreamDemo      = "demo"
	UpstreamFlightSQL = "flightsql"
)

// Codecs accepted in jsonData.codec; package codec's Names and DefaultKind
// say the same (a test in package plugin checks it). CodecAuto, the
// default, chooses per frame (codec.Auto) and takes no level.
const (
	CodecAuto    = "auto"
	CodecZstd    = "zstd"
	CodecLZ4     = "lz4"
	CodecNone    = "none"
	DefaultCodec = CodecAuto
)

// Values of jsonData.codecPreference, what codec auto optimises for; package
// codec's Preferences and DefaultPreference say the same.
const (
	PreferCPU         = "cpu"
	PreferBytes       = "bytes"
	DefaultPreference = PreferCPU
)

// Defaults and ranges. The codec level ranges are the codec package's; a
// test in package plugin checks that both agree.
const (
	ZstdMinLevel, ZstdMaxLevel, ZstdDefaultLevel = 1, 22, 3
	LZ4MinLevel, LZ4MaxLevel, LZ4DefaultLevel    = 0, 9, 0

	// DefaultMinSavings: a body buffer is stored raw unless compression
	// saves at least 10% of it. Below that the bytes saved on the wire do
	// not pay for Grafana's decompression of the buffer: a float column that
	// saves 3% under zstd costs Grafana's decoder 8% more CPU for its frame
	// (docs/benchmarks.md, BenchmarkDecode).
	DefaultMinSavings = 0.1
	MaxMinSavings     = 0.9

	// MaxJSONData bounds the jsonData Quiver parses: its settings take a
	// few hundred bytes.
	MaxJSONData = 1 << 20

	DefaultMaxSeries = 10_000
	MaxMaxSeries     = 1_000_000
	DefaultMaxPoints = 10_000_000
	MaxMaxPoints     = 1_000_000_000
)

// Settings of one data-source instance.
type Settings struct {
	Upstream string `json:"upstream"`
	Codec    string `json:"codec"`
	Level    int64  `json:"level"`
	// CodecPreference is what codec auto values: "cpu" or "bytes".
	CodecPreference string  `json:"codecPreference"`
	MinSavings      float64 `json:"minSavings"`
	MaxSeries       int64   `json:"maxSeries"`
	MaxPoints       int64   `json:"maxPoints"`

	// FlightSQL holds the connection settings; used when Upstream is
	// "flightsql".
	FlightSQL FlightSQL `json:"-"`
}

// Parse reads an instance's jsonData and decrypted secureJsonData and
// applies defaults: absent keys, null and "" mean the default, and numbers
// may arrive as JSON numbers or as strings (text inputs store those). It
// fails only on JSON it cannot read, naming the key; call Validate for the
// checks of the values.
func Parse(jsonData []byte, secure map[string]string) (Settings, error) {
	if len(jsonData) > MaxJSONData {
		return Settings{}, fmt.Errorf("settings: jsonData is %d bytes, more than the %d bytes (1 MiB) Quiver reads", len(jsonData), MaxJSONData)
	}
	var keys map[string]json.RawMessage
	if len(bytes.TrimSpace(jsonData)) > 0 {
		if err := json.Unmarshal(jsonData, &keys); err != nil {
			return Settings{}, fmt.Errorf("settings: jsonData is not a JSON object: %w", err)
		}
	}
	var (
		upstream, codec, preference string
		level, maxSeries, maxPoints jsonInt64
		minSavings                  jsonFloat64
	)
	for key, dst := range map[string]json.Unmarshaler{
		"upstream": (*jsonString)(&upstream), "codec": (*jsonString)(&codec), "codecPreference": (*jsonString)(&preference),
		"level": &level, "minSavings": &minSavings, "maxSeries": &maxSeries, "maxPoints": &maxPoints,
	} {
		if v, ok := keys[key]; ok {
			if err := dst.UnmarshalJSON(v); err != nil {
				return Settings{}, fmt.Errorf("settings: %s: %w", key, err)
			}
		}
	}
	s := Settings{
		Upstream:        strings.TrimSpace(upstream),
		Codec:           strings.TrimSpace(codec),
		CodecPreference: strings.TrimSpace(preference),
		MinSavings:      DefaultMinSavings,
		MaxSeries:       orDefault(&maxSeries, DefaultMaxSeries),
		MaxPoints:       orDefault(&maxPoints, DefaultMaxPoints),
	}
	if s.Upstream == "" {
		s.Upstream = UpstreamDemo
	}
	if s.Codec == "" {
		s.Codec = DefaultCodec
	}
	if s.CodecPreference == "" {
		s.CodecPreference = DefaultPreference
	}
	switch {
	case level.set:
		s.Level = level.v
	case s.Codec == CodecZstd:
		s.Level = ZstdDefaultLevel
	default:
		s.Level = LZ4DefaultLevel
	}
	if minSavings.set {
		s.MinSavings = minSavings.v
	}

	fs, err := ParseFlightSQL(jsonData, secure)
	if err != nil {
		if s.Upstream == UpstreamFlightSQL {
			return Settings{}, err
		}
		// A demo instance does not read the Flight SQL keys: leftovers of an
		// earlier configuration must not break it.
		fs = FlightSQL{}
	}
	s.FlightSQL = fs
	return s, nil
}

// Validate checks every setting and returns all problems at once, each
// naming its JSON key and the accepted values.
func (s Settings) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("settings: "+format, args...)) }

	switch s.Upstream {
	case UpstreamDemo, UpstreamFlightSQL:
	default:
		add("upstream: %s is not one of %q, %q", quote(s.Upstream), UpstreamDemo, UpstreamFlightSQL)
	}
	switch s.Codec {
	case CodecZstd:
		if s.Level < ZstdMinLevel || s.Level > ZstdMaxLevel {
			add("level: %d is not a zstd level (%d to %d)", s.Level, ZstdMinLevel, ZstdMaxLevel)
		}
	case CodecLZ4:
		if s.Level < LZ4MinLevel || s.Level > LZ4MaxLevel {
			add("level: %d is not an lz4 level (%d to %d)", s.Level, LZ4MinLevel, LZ4MaxLevel)
		}
	case CodecNone, CodecAuto:
	default:
		add("codec: %s is not one of %q, %q, %q, %q", quote(s.Codec), CodecAuto, CodecZstd, CodecLZ4, CodecNone)
	}
	switch s.CodecPreference {
	case PreferCPU, PreferBytes:
	default:
		add("codecPreference: %s is not one of %q, %q", quote(s.CodecPreference), PreferCPU, PreferBytes)
	}
	if math.IsNaN(s.MinSavings) || s.MinSavings < 0 || s.MinSavings > MaxMinSavings {
		add("minSavings: %v is not within 0 to %v", s.MinSavings, MaxMinSavings)
	}
	if s.MaxSeries < 1 || s.MaxSeries > MaxMaxSeries {
		add("maxSeries: %d is not within 1 to %d", s.MaxSeries, MaxMaxSeries)
	}
	if s.MaxPoints < 1 || s.MaxPoints > MaxMaxPoints {
		add("maxPoints: %d is not within 1 to %d", s.MaxPoints, MaxMaxPoints)
	}
	if s.Upstream == UpstreamFlightSQL {
		if err := s.FlightSQL.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CodecLevel returns the level to build the codec with: Level for zstd and
// lz4, 0 for none and auto (whose level is ignored). Call it on valid
// settings.
func (s Settings) CodecLevel() int {
	if s.Codec == CodecNone || s.Codec == CodecAuto {
		return 0
	}
	return int(s.Level)
}

// MaxBytes is the Arrow body bytes a query may produce: MaxPoints ×
// PointBytes (16, a timestamp and a float64), so that a query of heavier
// rows (log lines, wide tables) gets fewer of them. It saturates instead of
// overflowing.
func (s Settings) MaxBytes() int64 {
	if s.MaxPoints <= 0 {
		return 0
	}
	if s.MaxPoints > math.MaxInt64/PointBytes {
		return math.MaxInt64
	}
	return s.MaxPoints * PointBytes
}

// PointBytes is what one time-series point weighs in a frame body; package
// source's PointBytes is the same (a test in package plugin checks it).
const PointBytes = 16
