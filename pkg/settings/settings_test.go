package settings

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	for _, in := range []string{``, `{}`, `{"upstream":"","codec":null,"level":"","minSavings":null}`} {
		s, err := Parse([]byte(in), nil)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		want := Settings{Upstream: "demo", Codec: "auto", Level: 0, CodecPreference: "cpu", ReplyFormat: "arrow", MinSavings: DefaultMinSavings, MaxSeries: DefaultMaxSeries, MaxPoints: DefaultMaxPoints}
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
	s, _ = Parse([]byte(`{"codec":"zstd"}`), nil)
	if s.Level != 3 {
		t.Errorf("zstd default level %d, want 3", s.Level)
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
		`{"codec":"gzip"}`:                     {"codec", `"auto"`, `"zstd"`, `"lz4"`, `"none"`},
		`{"codecPreference":"speed"}`:          {"codecPreference", `"cpu"`, `"bytes"`},
		`{"replyFormat":"protobuf"}`:           {"replyFormat", `"arrow"`, `"json"`, `"requested"`},
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
	// codec auto ignores the level, and reads its preference.
	s, _ = Parse([]byte(`{"codec":"auto","level":77,"codecPreference":"bytes"}`), nil)
	if err := s.Validate(); err != nil || s.CodecLevel() != 0 || s.CodecPreference != PreferBytes {
		t.Errorf("codec auto: %v, level %d, preference %q", err, s.CodecLevel(), s.CodecPreference)
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

func TestHugeNumbersReportedAsGiven(t *testing.T) {
	s, err := Parse([]byte(`{"codec":"zstd","level":1099511627776,"maxSeries":1099511627776}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate()
	for _, want := range []string{"level: 1099511627776", "maxSeries: 1099511627776"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
}

func TestLongValuesAreCutInMessages(t *testing.T) {
	long := strings.Repeat("x", 1000<<10)
	if _, err := Parse([]byte(`{"codec":"`+long+long+`"}`), nil); err == nil || !strings.Contains(err.Error(), "jsonData is 2048012 bytes, more than the 1048576 bytes") {
		t.Errorf("2 MB jsonData: %v", err)
	}
	for _, js := range []string{`{"codec":"` + long + `"}`, `{"upstream":"` + long + `"}`, `{"level":"` + long + `"}`} {
		s, err := Parse([]byte(js), nil)
		if err == nil {
			err = s.Validate()
		}
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "1024000 bytes") {
			t.Errorf("%.20s…: error of %d bytes: %.200v", js, len(fmt.Sprint(err)), err)
		}
	}
	// Invalid UTF-8 is escaped, not echoed.
	bad := "\xff\xfe" + strings.Repeat("\x80", 100)
	if q := quote(bad); len(q) > 4*QuoteMax+40 || strings.ContainsRune(q, 0xfffd) {
		t.Errorf("quote of invalid UTF-8: %q", q)
	}
	if q := quote(strings.Repeat("é", 40)); !strings.HasPrefix(q, `"éé`) || strings.Contains(q, `\x`) {
		t.Errorf("quote cut a rune: %s", q)
	}
}

func TestUnknownKeys(t *testing.T) {
	// Warnings come from the one decode Parse does.
	UnknownKeys := func(js []byte, secure map[string]string) []string {
		s, err := Parse(js, secure)
		if err != nil {
			t.Fatal(err)
		}
		return s.Warnings
	}
	got := UnknownKeys([]byte(`{"maxseries":5,"Codec":"lz4","level":3,"headerName1":"x-a","colour":"red","timeInterval":"10s"}`),
		map[string]string{"headerValue1": "v", "headerValue3": "secret-value", "token": "t"})
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		`"maxseries" is not a Quiver setting (did you mean "maxSeries"?)`,
		`"Codec" is not a Quiver setting (did you mean "codec"?)`,
		`"colour" is not a Quiver setting`,
		`"headerValue3" is not sent: headerName3 is not set`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if len(got) != 4 || strings.Contains(joined, "secret-value") {
		t.Errorf("warnings:\n%s", joined)
	}
	if w := UnknownKeys([]byte(`{"codec":"zstd","address":"a:1","headerName2":"x"}`), map[string]string{"headerValue2": "v"}); len(w) != 0 {
		t.Errorf("known keys warned about: %v", w)
	}
	// The header editor's remove button stores the row's value as "": no
	// header is lost, so nothing is said.
	if w := UnknownKeys([]byte(`{"upstream":"flightsql","address":"a:1"}`), map[string]string{"headerValue1": ""}); len(w) != 0 {
		t.Errorf("an emptied header row warned about: %v", w)
	}
	// A value whose name is blank or null is never sent: that is said.
	for _, name := range []string{`"  "`, `null`, `""`} {
		w := UnknownKeys([]byte(`{"upstream":"flightsql","address":"a:1","headerName1":`+name+`}`), map[string]string{"headerValue1": "v"})
		if len(w) != 1 || !strings.Contains(w[0], `"headerValue1" is not sent: headerName1 is not set`) {
			t.Errorf("headerName1 %s with a value: warnings %q", name, w)
		}
	}
}

func TestReadBudget(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		env   func(string) string
		bytes int64
		wait  time.Duration
	}{
		{env(), DefaultBudget, DefaultBudgetWait},
		{env(EnvMemoryBudget, "1GiB", EnvMemoryBudgetWait, "5s"), 1 << 30, 5 * time.Second},
		{env(EnvMemoryBudget, "300MB"), 300e6, DefaultBudgetWait},
		{env(EnvMemoryBudget, "33554432"), 32 << 20, DefaultBudgetWait},
		{env(EnvMemoryBudgetWait, "1s"), DefaultBudget, MinBudgetWait},
		{env(EnvMemoryBudgetWait, "10m"), DefaultBudget, MaxBudgetWait},
	} {
		b, err := ReadBudget(tc.env)
		if err != nil || b.Bytes != tc.bytes || b.Wait != tc.wait || b.From == "" {
			t.Errorf("%+v %v, want %d bytes, wait %s", b, err, tc.bytes, tc.wait)
		}
	}
	for _, bad := range []func(string) string{
		env(EnvMemoryBudget, "lots"), env(EnvMemoryBudget, "1KiB"), env(EnvMemoryBudget, "-5M"), env(EnvMemoryBudget, "25%"),
		env(EnvMemoryBudgetWait, "forever"), env(EnvMemoryBudgetWait, "2h"),
		env(EnvMemoryBudgetWait, "0s"), env(EnvMemoryBudgetWait, "0"), env(EnvMemoryBudgetWait, "999ms"), env(EnvMemoryBudgetWait, "-5s"),
	} {
		_, err := ReadBudget(bad)
		if err == nil || !strings.Contains(err.Error(), "QUIVER_MEMORY_BUDGET") {
			t.Errorf("accepted or unnamed: %v", err)
		}
	}
	// A percentage needed the host's memory, which the plugin no longer
	// reads: the message says what to give instead.
	if _, err := ReadBudget(env(EnvMemoryBudget, "25%")); err == nil || !strings.Contains(err.Error(), `give a size such as "512MiB"`) {
		t.Errorf("percentage: %v", err)
	}
}

// A setting that cannot be used keeps its default; the others still apply.
func TestReadBudgetKeepsTheValidSettings(t *testing.T) {
	b, err := ReadBudget(func(k string) string {
		return map[string]string{EnvMemoryBudget: "1GiB", EnvMemoryBudgetWait: "30", IniGoMemoryLimit: "", GrafanaEnv(IniGoMemoryLimit): "2GiB"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), EnvMemoryBudgetWait) || strings.Contains(err.Error(), EnvMemoryBudget+":") {
		t.Errorf("error %v, want one naming %s alone", err, EnvMemoryBudgetWait)
	}
	if b.Bytes != 1<<30 || b.Wait != DefaultBudgetWait || b.GoLimit != 2<<30 {
		t.Errorf("%+v: want 1 GiB, the default wait and a 2 GiB Go limit", b)
	}
}

// The plugin's grafana.ini section, as Grafana passes it (GF_PLUGIN_ and the
// key in upper case), sets the budget, its wait and the Go memory limit; a
// QUIVER_* variable of the host is read only for a key the section does
// not set, and messages name where the bad value came from.
func TestReadBudgetFromGrafanaIni(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	if got := GrafanaEnv(IniMemoryBudget); got != "GF_PLUGIN_MEMORY_BUDGET" {
		t.Errorf("GrafanaEnv(%q) = %q", IniMemoryBudget, got)
	}
	b, err := ReadBudget(env("GF_PLUGIN_MEMORY_BUDGET", "48MiB", "GF_PLUGIN_MEMORY_BUDGET_WAIT", "45s", "GF_PLUGIN_GO_MEMORY_LIMIT", "1GiB",
		EnvMemoryBudget, "1GiB", EnvMemoryBudgetWait, "5s"))
	if err != nil || b.Bytes != 48<<20 || b.Wait != 45*time.Second || b.GoMemoryLimit() != 1<<30 {
		t.Fatalf("%+v %v: want grafana.ini's 48 MiB, 45 s and a 1 GiB Go limit over the host's variables", b, err)
	}
	if want := "memory_budget in [plugin.quiver-arrow-datasource] = 48MiB"; b.From != want {
		t.Errorf("From %q, want %q", b.From, want)
	}
	b, err = ReadBudget(env("GF_PLUGIN_MEMORY_BUDGET_WAIT", "45s", EnvMemoryBudget, "1GiB", EnvMemoryBudgetWait, "5s"))
	if err != nil || b.Bytes != 1<<30 || b.Wait != 45*time.Second || b.From != "QUIVER_MEMORY_BUDGET = 1GiB" {
		t.Errorf("%+v %v: want the host's 1 GiB where the section sets no budget, the section's wait", b, err)
	}
	if b.GoMemoryLimit() != (1<<30)/2*3+budgetGoLimitHeadroom {
		t.Errorf("default Go limit %d", b.GoMemoryLimit())
	}
	for _, bad := range []struct{ key, v, says string }{
		{"GF_PLUGIN_MEMORY_BUDGET", "lots", "memory_budget in [plugin.quiver-arrow-datasource]"},
		{"GF_PLUGIN_MEMORY_BUDGET_WAIT", "0s", "memory_budget_wait in [plugin.quiver-arrow-datasource]"},
		{"GF_PLUGIN_GO_MEMORY_LIMIT", "1MiB", "go_memory_limit in [plugin.quiver-arrow-datasource]"},
		{"GF_PLUGIN_GO_MEMORY_LIMIT", "plenty", "go_memory_limit in [plugin.quiver-arrow-datasource]"},
	} {
		_, err := ReadBudget(env(bad.key, bad.v))
		if err == nil || !strings.Contains(err.Error(), bad.says) || !strings.Contains(err.Error(), strconv.Quote(bad.v)) {
			t.Errorf("%s=%s: %v, want an error naming %s and the value", bad.key, bad.v, err, bad.says)
		}
	}
}

// A zero wait would fail every query that has to wait for the budget at
// once: it is refused, naming the variable, the value and the range.
func TestReadBudgetRefusesZeroWait(t *testing.T) {
	for _, v := range []string{"0s", "0", "500ms"} {
		_, err := ReadBudget(func(k string) string {
			if k == EnvMemoryBudgetWait {
				return v
			}
			return ""
		})
		if err == nil {
			t.Fatalf("%s=%s accepted", EnvMemoryBudgetWait, v)
		}
		for _, want := range []string{EnvMemoryBudgetWait, strconv.Quote(v), "fail as busy at once", "1s – 10m0s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%s: %q does not say %q", EnvMemoryBudgetWait, v, err, want)
			}
		}
	}
}

// With oauthPassThru on, a configured X-Id-Token or Cookie header is warned
// about: a signed-in user's calls go without it.
func TestIdentityHeadersWarned(t *testing.T) {
	js := `{"upstream":"flightsql","address":"h:1","headerName1":"X-Id-Token","headerName2":"cookie","headerName3":"x-tenant"%s}`
	secure := map[string]string{"headerValue1": "service-id-token", "headerValue2": "session=s", "headerValue3": "acme"}
	for _, passThru := range []bool{false, true} {
		extra := ""
		if passThru {
			extra = `,"oauthPassThru":true`
		}
		s, err := Parse(fmt.Appendf(nil, js, extra), secure)
		if err != nil {
			t.Fatal(err)
		}
		want := []string(nil)
		if passThru {
			want = []string{
				`headerName1: "X-Id-Token" is not sent with a signed-in user's calls (oauthPassThru forwards the user's own identity)`,
				`headerName2: "cookie" is not sent with a signed-in user's calls (oauthPassThru forwards the user's own identity)`,
			}
		}
		if !slices.Equal(s.Warnings, want) {
			t.Errorf("oauthPassThru %v: warnings %q, want %q", passThru, s.Warnings, want)
		}
	}
}

// A token pasted with its scheme is sent as "Bearer Bearer …": the health
// check warns, naming the key and never the value.
func TestTokenWithItsSchemeWarned(t *testing.T) {
	for _, tc := range []struct {
		auth, token string
		warned      bool
	}{
		{AuthToken, "Bearer abc.def", true},
		{AuthToken, "bearer abc", true},
		{AuthToken, "abc.def", false},
		{AuthToken, "Bearerabc", false},
		{AuthPassword, "Bearer abc", false}, // not sent
	} {
		js := fmt.Sprintf(`{"upstream":"flightsql","address":"h:1","authType":%q,"username":"u"}`, tc.auth)
		s, err := Parse([]byte(js), map[string]string{"token": tc.token, "password": "p"})
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, `token: starts with "Bearer "`) })
		if warned != tc.warned {
			t.Errorf("authType %s, token %q: warnings %q", tc.auth, tc.token, s.Warnings)
		}
		for _, w := range s.Warnings {
			if strings.Contains(w, "abc") {
				t.Errorf("a warning shows the token: %q", w)
			}
		}
	}
}
