package settings

import "errors"

// Settings of one data-source instance. Table describes every key: its
// default, range or accepted values, and what it does.
type Settings struct {
	Upstream string `json:"upstream"`
	Codec    string `json:"codec"`
	Level    int64  `json:"level"`
	// CodecPreference is what codec auto values: "cpu" or "bytes".
	CodecPreference string `json:"codecPreference"`
	// ReplyFormat is the format of unary replies: "arrow", "json" or
	// "requested".
	ReplyFormat string  `json:"replyFormat"`
	MinSavings  float64 `json:"minSavings"`
	MaxSeries   int64   `json:"maxSeries"`
	MaxPoints   int64   `json:"maxPoints"`

	// FlightSQL holds the connection settings; read when Upstream is
	// "flightsql".
	FlightSQL FlightSQL `json:"-"`

	// Warnings name, sorted, the jsonData keys Quiver does not read (a
	// misspelled key is otherwise silently ignored) and the secureJsonData
	// keys it does not use, with a suggestion when a known key is close;
	// then a token set with its "Bearer " scheme, and the headers a
	// forwarded user's calls go without (Header.CarriesIdentity). They name
	// keys and header names only, never a value.
	Warnings []string `json:"-"`
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
// lz4, 0 for none and auto (whose level is ignored). Call it on valid
// settings.
func (s Settings) CodecLevel() int {
	if s.Codec == CodecNone || s.Codec == CodecAuto {
		return 0
	}
	return int(s.Level)
}
