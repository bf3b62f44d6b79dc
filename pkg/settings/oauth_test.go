package settings

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseFlightSQLOAuthPassThru(t *testing.T) {
	for js, want := range map[string]bool{
		`{}`:                      false,
		`{"oauthPassThru":false}`: false,
		`{"oauthPassThru":true}`:  true,
	} {
		f, err := parseFlightSQL([]byte(js), nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.OAuthPassThru != want {
			t.Errorf("%s: oauthPassThru %t, want %t", js, f.OAuthPassThru, want)
		}
	}
	if _, err := parseFlightSQL([]byte(`{"oauthPassThru":"yes"}`), nil); err == nil || !strings.Contains(err.Error(), "oauthPassThru") {
		t.Errorf(`oauthPassThru "yes": %v`, err)
	}
}

func TestNoForwardedIdentity(t *testing.T) {
	for js, want := range map[string]string{
		`{}`:                                     NoIdentityRefuse,
		`{"noForwardedIdentity":""}`:             NoIdentityRefuse,
		`{"noForwardedIdentity":" Configured "}`: NoIdentityConfigured,
		`{"noForwardedIdentity":"refuse"}`:       NoIdentityRefuse,
	} {
		f, err := parseFlightSQL([]byte(js), nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.NoForwardedIdentity != want {
			t.Errorf("%s: noForwardedIdentity %q, want %q", js, f.NoForwardedIdentity, want)
		}
	}
	f, err := parseFlightSQL([]byte(`{"address":"h:1","noForwardedIdentity":"service"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), `noForwardedIdentity: "service" is not one of "refuse", "configured"`) {
		t.Errorf("noForwardedIdentity service: %v", err)
	}
}

func TestAllowedLocationHosts(t *testing.T) {
	f, err := parseFlightSQL([]byte(`{"address":"Main.example:31337","allowedLocationHosts":" Data1.example, 10.0.0.7 ,,[::1], fe80::1 "}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.LocationHosts(), " "), "main.example data1.example 10.0.0.7 ::1 fe80::1"; got != want {
		t.Errorf("LocationHosts %q, want %q", got, want)
	}
	if f.AllowedLocationHosts = ""; strings.Join(f.LocationHosts(), " ") != "main.example" {
		t.Errorf("empty allowedLocationHosts: %q, want the address's host alone", f.LocationHosts())
	}
	long := strings.Repeat("a", 300)
	for entry, want := range map[string]string{
		"grpc://data1:1": "drop the scheme",
		"data1:31337":    "drop the port",
		"data 1":         "not a host name",
		"data1/x":        "not a host name",
		long:             "not a host name",
	} {
		f.AllowedLocationHosts = "ok.example," + entry
		err := f.Validate()
		if err == nil || !strings.Contains(err.Error(), "allowedLocationHosts: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want %q", entry, err, want)
		}
		if err != nil && strings.Contains(err.Error(), long) {
			t.Errorf("the message echoes the whole entry: %v", err)
		}
	}
}

// parseFlightSQL parses jsonData as the settings of a Flight SQL instance
// (jsonData's upstream set to flightsql when it is an object).
func parseFlightSQL(jsonData []byte, secure map[string]string) (FlightSQL, error) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(jsonData, &keys) == nil && keys != nil {
		keys["upstream"] = json.RawMessage(`"flightsql"`)
		jsonData, _ = json.Marshal(keys)
	}
	s, err := Parse(jsonData, secure)
	return s.FlightSQL, err
}
