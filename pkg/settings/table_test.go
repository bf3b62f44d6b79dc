package settings

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFormatNumberIsJavaScriptsToString(t *testing.T) {
	// Expected values are what Number.prototype.toString prints.
	for v, want := range map[float64]string{
		0: "0", 1: "1", -1: "-1", 0.1: "0.1", 1e6: "1000000",
		17179869184: "17179869184", 1e20: "100000000000000000000", 1e21: "1e+21", 1.5e22: "1.5e+22",
		1e-7: "1e-7", 1.5e-7: "1.5e-7", 2e-6: "0.000002", 1e-6: "0.000001", 9e-7: "9e-7", -1e-9: "-1e-9",
	} {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestTableCoversEverySetting: every json-tagged field of Settings and
// FlightSQL is in the table (a new field cannot skip it), defaults are
// accepted values, and every field pointer has the setting's Go type.
func TestTableCoversEverySetting(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Settings](), reflect.TypeFor[FlightSQL]()} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !slices.ContainsFunc(table, func(st Setting) bool { return st.Key == name }) {
				t.Errorf("%s.%s (json %q) is not in the settings table", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
	var s Settings
	for _, st := range Table() {
		if st.Numbered() {
			continue
		}
		p := st.field(&s)
		want := map[Type][]string{String: {"*string"}, Bool: {"*bool"}, Integer: {"*int", "*int64"}, Number: {"*float64"}, Secure: {"*settings.Secret"}}[st.Type]
		if got := reflect.TypeOf(p).String(); !slices.Contains(want, got) {
			t.Errorf("%s: type %s, field %s", st.Key, st.Type, got)
		}
		if len(st.Values) > 0 && !slices.Contains(st.Values, st.Default.(string)) {
			t.Errorf("%s: default %v is not an accepted value", st.Key, st.Default)
		}
		if st.Max != 0 {
			var d float64
			switch v := st.Default.(type) {
			case int64:
				d = float64(v)
			case float64:
				d = v
			}
			if d < st.Min || d > st.Max {
				t.Errorf("%s: default %v is outside %v to %v", st.Key, st.Default, st.Min, st.Max)
			}
		}
		if st.Help == "" {
			t.Errorf("%s: no help text", st.Key)
		}
	}
	for _, c := range Codecs() {
		if c.Levels && (c.DefaultLevel < c.MinLevel || c.DefaultLevel > c.MaxLevel || len(c.Effective) == 0) {
			t.Errorf("codec %s: %+v", c.Name, c)
		}
	}
}

func TestParseReadsEveryKeyOnceIntoItsField(t *testing.T) {
	s, err := Parse([]byte(`{"upstream":"flightsql","address":" h:1 ","codec":"lz4","timeout":"12","tlsEnabled":true,"dialect":" DuckDB ","colour":1}`),
		map[string]string{"token": "t"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Codec != "lz4" || s.Level != 0 || s.FlightSQL.Address != "h:1" || s.FlightSQL.Timeout != 12 || !s.FlightSQL.TLSEnabled ||
		s.FlightSQL.Dialect != DialectDuckDB || s.FlightSQL.Token.Reveal() != "t" || s.FlightSQL.RowLimit != DefaultFlightSQLRowLimit {
		t.Errorf("parsed %+v", s)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `"colour"`) {
		t.Errorf("warnings %q", s.Warnings)
	}
	// Every problem of the values is reported, each naming its key.
	_, err = Parse([]byte(`{"level":"x","maxSeries":1.5,"codec":7}`), nil)
	for _, key := range []string{"settings: level:", "settings: maxSeries: 1.5 is not a whole number", "settings: codec: \"7\" is not a string"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("err %v lacks %q", err, key)
		}
	}
}
