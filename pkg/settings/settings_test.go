package settings

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDefaults(t *testing.T) {
	for _, in := range []string{``, `{}`, `{"upstream":"","codec":null,"level":"","minSavings":null}`} {
		s, err := Parse([]byte(in), nil)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		want := Settings{Upstream: "demo", Codec: "zstd", Level: 3, MinSavings: DefaultMinSavings, MaxSeries: DefaultMaxSeries, MaxPoints: DefaultMaxPoints}
		s.FlightSQL = FlightSQL{}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("%s: got %+v, want %+v", in, s, want)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: defaults do not validate: %v", in, err)
		}
	}
	s, _ := Parse([]byte(`{"codec":"lz4"}`), nil)
	if s.Level != 0 {
		t.Errorf("lz4 default level %d, want 0", s.Level)
	}
	s, _ = Parse([]byte(`{"codec":"zstd","level":"19","minSavings":"0.25","maxSeries":"50","maxPoints":1e6}`), nil)
	if s.Level != 19 || s.MinSavings != 0.25 || s.MaxSeries != 50 || s.MaxPoints != 1e6 {
		t.Errorf("numbers as strings: %+v", s)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for in, key := range map[string]string{
		`[1]`:                   "jsonData",
		`{"level":"three"}`:     "level",
		`{"level":3.5}`:         "level",
		`{"minSavings":"lots"}`: "minSavings",
		`{"maxSeries":true}`:    "maxSeries",
		`{"codec":5}`:           "codec",
		`{"upstream":{"a":1}}`:  "upstream",
	} {
		_, err := Parse([]byte(in), nil)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want one naming %q", in, err, key)
		}
	}
}

func TestValidateNamesKeyAndAcceptedValues(t *testing.T) {
	for in, want := range map[string][]string{
		`{"upstream":"postgres"}`:              {"upstream", `"demo"`, `"flightsql"`},
		`{"codec":"gzip"}`:                     {"codec", `"zstd"`, `"lz4"`, `"none"`},
		`{"codec":"zstd","level":0}`:           {"level", "1 to 22 (zstd levels)"},
		`{"codec":"zstd","level":23}`:          {"level", "1 to 22 (zstd levels)"},
		`{"codec":"lz4","level":10}`:           {"level", "0 to 9 (lz4 levels)"},
		`{"minSavings":0.95}`:                  {"minSavings", "0 to 0.9"},
		`{"minSavings":-1}`:                    {"minSavings"},
		`{"maxSeries":0}`:                      {"maxSeries", "1 to 1000000"},
		`{"maxPoints":99999999999999}`:         {"maxPoints"},
		`{"upstream":"flightsql"}`:             {"address"},
		`{"level":99999999999,"codec":"zstd"}`: {"level"},
	} {
		s, err := Parse([]byte(in), nil)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		err = s.Validate()
		if err == nil {
			t.Errorf("%s: validated", in)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", in, err, w)
			}
		}
	}
	// Several problems are reported together.
	s, _ := Parse([]byte(`{"codec":"gzip","maxSeries":-1}`), nil)
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "codec") || !strings.Contains(err.Error(), "maxSeries") {
		t.Errorf("joined errors: %v", err)
	}
	// codec none ignores the level.
	s, _ = Parse([]byte(`{"codec":"none","level":77}`), nil)
	if err := s.Validate(); err != nil || s.CodecLevel() != 0 {
		t.Errorf("codec none: %v, level %d", err, s.CodecLevel())
	}
}

func TestDemoIgnoresBrokenFlightSQLKeys(t *testing.T) {
	s, err := Parse([]byte(`{"upstream":"demo","timeout":"soon"}`), nil)
	if err != nil || s.Validate() != nil {
		t.Fatalf("demo instance broken by a Flight SQL key: %v", err)
	}
	if _, err := Parse([]byte(`{"upstream":"flightsql","timeout":"soon"}`), nil); err == nil {
		t.Fatal("flightsql instance accepted a bad timeout")
	}
}
