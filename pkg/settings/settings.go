package settings

import (
	"errors"
)

// Settings of one data-source instance. Table describes every key: its
// default, range or accepted values, and what it does.
type Settings struct {
	Upstream   string  `json:"upstream"`
	Codec      string  `json:"codec"`
	Level      int     `json:"level"`
	MinSavings float64 `json:"minSavings"`
	MaxSeries  int     `json:"maxSeries"`
	MaxPoints  int64   `json:"maxPoints"`

	// FlightSQL holds the connection settings; read when Upstream is
	// "flightsql".
	FlightSQL FlightSQL `json:"-"`

	// Unknown lists, sorted, the jsonData keys Quiver does not read.
	Unknown []string `json:"-"`
}

// Validate checks every setting and returns all problems at once, each
// naming its JSON key and the accepted values.
func (s Settings) Validate() error {
	errs := s.check("")
	if s.Upstream == UpstreamFlightSQL {
		if err := s.FlightSQL.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CodecLevel returns the level to build the codec with: Level for zstd and
// lz4, 0 for none (whose level is ignored).
func (s Settings) CodecLevel() int {
	if s.Codec == CodecNone {
		return 0
	}
	return s.Level
}
