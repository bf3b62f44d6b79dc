package settings

import (
	"strings"
	"testing"
)

func TestParseFlightSQLOAuthPassThru(t *testing.T) {
	for js, want := range map[string]bool{
		`{}`:                      false,
		`{"oauthPassThru":false}`: false,
		`{"oauthPassThru":true}`:  true,
	} {
		f, err := ParseFlightSQL([]byte(js), nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.OAuthPassThru != want {
			t.Errorf("%s: oauthPassThru %t, want %t", js, f.OAuthPassThru, want)
		}
	}
	if _, err := ParseFlightSQL([]byte(`{"oauthPassThru":"yes"}`), nil); err == nil || !strings.Contains(err.Error(), "oauthPassThru") {
		t.Errorf(`oauthPassThru "yes": %v`, err)
	}
}
