package flightsql

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

func TestDetectDialect(t *testing.T) {
	for _, tc := range []struct {
		name, version, want string
		ok                  bool
	}{
		{"DuckDB", "v1.4.1", settings.DialectDuckDB, true},
		{"duckdb-flight-sql", "v1.1.3", settings.DialectDuckDB, true},
		{"gizmosql", "duckdb v1.2.0", settings.DialectDuckDB, true},
		{"gizmosql", "sqlite 3.45.0", settings.DialectANSI, true},
		{"InfluxDB IOx", "2", settings.DialectDataFusion, true},
		{"InfluxDB 3 Core", "3.0.1", settings.DialectDataFusion, true},
		{"GreptimeDB", "0.9", settings.DialectDataFusion, true},
		{"Seafowl Flight SQL Server", "0.5", settings.DialectDataFusion, true},
		{"Apache DataFusion", "44", settings.DialectDataFusion, true},
		{"Dremio Server", "25.0", settings.DialectDremio, true},
		{"PostgreSQL", "16.2", settings.DialectPostgres, true},
		{"Apache Doris", "2.1", settings.DialectMySQL, true},
		{"StarRocks", "3.5", settings.DialectMySQL, true},
		{"db_name", "sqlite 3", settings.DialectANSI, true}, // arrow-go's SQLite example
		{"quiver test", "", settings.DialectANSI, false},
		{"", "", settings.DialectANSI, false},
	} {
		got, ok := detectDialect(tc.name, tc.version)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q %q: %s %v, want %s %v", tc.name, tc.version, got, ok, tc.want, tc.ok)
		}
	}
}

// infoServer is a memServer that counts its GetSqlInfo calls.
type infoServer struct {
	*memServer
	infoCalls atomic.Int32
}

func (s *infoServer) GetFlightInfoSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	s.infoCalls.Add(1)
	return s.memServer.GetFlightInfoSqlInfo(ctx, cmd, desc)
}

// namedServer answers GetSqlInfo with name and version (none when name is
// ""), and the given statements with one timestamp row each.
func namedServer(t *testing.T, name, version string, statements ...string) *infoServer {
	srv := &infoServer{memServer: newMemServer()}
	if name != "" {
		for k, v := range map[flightsql.SqlInfo]string{flightsql.SqlInfoFlightSqlServerName: name, flightsql.SqlInfoFlightSqlServerVersion: version} {
			if err := srv.RegisterSqlInfo(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "one", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, sql := range append(statements, "SELECT 1") {
		srv.set(sql, &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{batch(schema, func(b *array.RecordBuilder) {
			b.Field(0).(*array.Int64Builder).Append(1)
		})}}})
	}
	return srv
}

func healthReport(t *testing.T, s *Source) string {
	t.Helper()
	msg, err := s.HealthReport(context.Background())
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	return msg
}

// TestDialectAuto: auto asks the server once per connection, renders in the
// dialect its name calls for, and the health check says which it chose.
func TestDialectAuto(t *testing.T) {
	const query = "SELECT $__timeGroup(ts, $__interval) FROM t WHERE $__timeFilter(ts)"
	sent := "SELECT time_bucket(INTERVAL '60 seconds', ts) FROM t WHERE (ts >= '2023-11-14 22:13:20.000+00' AND ts <= '2023-11-14 23:13:20.000+00')"
	srv := namedServer(t, "DuckDB", "v1.4.1", sent)
	addr := startServer(t, srv, serverOpts{})
	s := newTestSource(t, baseConfig(addr))
	for range 3 {
		if _, err := runQuery(t, s, query, FormatTable, source.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.infoCalls.Load(); n != 1 {
		t.Fatalf("%d GetSqlInfo calls for three queries, want 1", n)
	}
	// A query without dialect-dependent macros does not ask either.
	s2 := newTestSource(t, baseConfig(addr))
	if _, err := runQuery(t, s2, "SELECT 1", FormatTable, source.Limits{}); err != nil {
		t.Fatal(err)
	}
	if n := srv.infoCalls.Load(); n != 1 {
		t.Fatalf("%d GetSqlInfo calls, want still 1", n)
	}
	if got, want := healthReport(t, s), fmt.Sprintf("Connected to DuckDB v1.4.1 at %s; SQL dialect duckdb (auto)", addr); got != want {
		t.Fatalf("health %q, want %q", got, want)
	}
	if _, err := s.HealthReport(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDialectSetting(t *testing.T) {
	sent := "SELECT to_timestamp(floor(extract(epoch from ts) / 60) * 60)"
	srv := namedServer(t, "DuckDB", "v1.4.1", sent)
	addr := startServer(t, srv, serverOpts{})
	cfg := baseConfig(addr)
	cfg.Dialect = settings.DialectPostgres
	s := newTestSource(t, cfg)
	if _, err := runQuery(t, s, "SELECT $__timeGroup(ts, 1m)", FormatTable, source.Limits{}); err != nil {
		t.Fatal(err)
	}
	if n := srv.infoCalls.Load(); n != 0 {
		t.Fatalf("%d GetSqlInfo calls with an explicit dialect", n)
	}
	if got, want := healthReport(t, s), fmt.Sprintf("Connected to DuckDB v1.4.1 at %s; SQL dialect postgres (dialect setting)", addr); got != want {
		t.Fatalf("health %q, want %q", got, want)
	}
}

// TestDialectFallback: a server without GetSqlInfo, or with a name no rule
// knows, gets ansi; the health check says why and what to do, and a macro
// ansi cannot write fails the query naming macro and dialect.
func TestDialectFallback(t *testing.T) {
	for _, tc := range []struct{ name, health string }{
		{"", "SQL dialect ansi (auto: the server does not tell its name (GetSqlInfo): times are written as UTC literals and $__timeGroup and $__timeEpoch are not available; set the dialect setting to datafusion, duckdb, postgres, dremio or mysql, whichever the server speaks)"},
		{"quiver test", `SQL dialect ansi (auto: server name "quiver test" not recognised: times are written as UTC literals and $__timeGroup and $__timeEpoch are not available; set the dialect setting to datafusion, duckdb, postgres, dremio or mysql, whichever the server speaks)`},
	} {
		srv := namedServer(t, tc.name, "", "SELECT (ts >= '2023-11-14 22:13:20.000+00:00' AND ts <= '2023-11-14 23:13:20.000+00:00')")
		addr := startServer(t, srv, serverOpts{})
		s := newTestSource(t, baseConfig(addr))
		if _, err := runQuery(t, s, "SELECT $__timeFilter(ts)", FormatTable, source.Limits{}); err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		_, err := runQuery(t, s, "SELECT $__timeGroup(ts, 1m)", FormatTable, source.Limits{})
		mustKind(t, err, source.KindQuery, "flightsql: $__timeGroup: no rendering in the ansi SQL dialect")
		if n := srv.infoCalls.Load(); n != 1 {
			t.Fatalf("%q: %d GetSqlInfo calls, want 1", tc.name, n)
		}
		got := healthReport(t, s)
		if !strings.HasPrefix(got, "Connected to ") || !strings.HasSuffix(got, tc.health) {
			t.Fatalf("%q: health %q, want it to end in %q", tc.name, got, tc.health)
		}
	}
}

// A server's name and version are shown as they are when short and
// printable, else quoted and cut: a server cannot fill the health message
// or add lines to it.
func TestHealthShowsAServerNameBounded(t *testing.T) {
	long := strings.Repeat("n", 5000) + "\nConnected to something else"
	s := newTestSource(t, baseConfig(startServer(t, namedServer(t, long, long, "SELECT 1"), serverOpts{})))
	got := healthReport(t, s)
	if strings.Contains(got, "\n") || len(got) > 1000 || !strings.Contains(got, "(5028 bytes)") {
		t.Errorf("health of %d bytes: %.300q", len(got), got)
	}
}

// A server that puts the token it was sent into its name or version has
// it redacted in the health message, as in any error.
func TestHealthShowsNoSecretInTheServerName(t *testing.T) {
	const token = "tok-3f9a1c77e2"
	addr := startServer(t, namedServer(t, "Engine "+token, "v1-"+token, "SELECT 1"), serverOpts{token: token})
	cfg := baseConfig(addr)
	cfg.AuthType, cfg.Token = settings.AuthToken, token
	got := healthReport(t, newTestSource(t, cfg))
	if strings.Contains(got, token) || !strings.Contains(got, "[redacted]") {
		t.Errorf("health %q", got)
	}
}

// TestDialectSQLite: arrow-go's SQLite example names itself "db_name",
// version "sqlite 3": auto picks ansi, and its integer macros still work.
func TestDialectSQLite(t *testing.T) {
	addr := startSQLite(t)
	s := newTestSource(t, baseConfig(addr))
	if got, want := healthReport(t, s), fmt.Sprintf("Connected to db_name sqlite 3 at %s; SQL dialect ansi (auto)", addr); got != want {
		t.Fatalf("health %q, want %q", got, want)
	}
}

// TestDialectUnreachable: when the server cannot be reached, a query that
// needs the dialect fails as upstream, and nothing is remembered.
func TestDialectUnreachable(t *testing.T) {
	srv := namedServer(t, "DuckDB", "v1", "SELECT time_bucket(INTERVAL '60 seconds', ts)")
	addr := startServer(t, &failingInfo{infoServer: srv}, serverOpts{})
	s := newTestSource(t, baseConfig(addr))
	_, err := runQuery(t, s, "SELECT $__timeGroup(ts, 1m)", FormatTable, source.Limits{})
	mustKind(t, err, source.KindUpstream, "reading the server's name for the dialect setting (auto)")
	if s.conn.dialect.d != nil {
		t.Fatal("a failed lookup was remembered")
	}
}

// failingInfo answers GetSqlInfo Unavailable.
type failingInfo struct{ *infoServer }

func (s *failingInfo) GetFlightInfoSqlInfo(context.Context, flightsql.GetSqlInfo, *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, status.Error(codes.Unavailable, "overloaded")
}

// docMacros are the examples of docs/dialects.md, expanded in docEnv.
var docMacros = []string{
	"$__timeFilter(ts)", "$__timeFrom()", "$__timeTo()",
	"$__timeGroup(ts, 5m)", "$__timeGroup(ts, 7m)", "$__timeGroup(ts, 500ms)",
	"$__timeGroupAlias(ts, 1h)", "$__unixEpochGroup(t, 5m)", "$__unixEpochGroupAlias(t, 5m)",
	"$__time(ts)", "$__timeEpoch(ts)",
}

func docEnv(name string) macroEnv {
	return macroEnv{from: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), to: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC),
		interval: time.Minute, dialect: func() (*dialect, error) { return dialects[name], nil }}
}

// code writes s as a Markdown code span.
func code(s string) string {
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// TestDialectsDoc: docs/dialects.md shows exactly what each dialect writes
// (or the error it gives) for every example macro.
func TestDialectsDoc(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/dialects.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range settings.Dialects[1:] {
		i := strings.Index(string(doc), "\n## "+name+"\n")
		if i < 0 {
			t.Fatalf("docs/dialects.md has no section %q", name)
		}
		section := string(doc[i+1:])
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
		for _, m := range docMacros {
			out, err := expandMacros(context.Background(), m, docEnv(name))
			want := ""
			if err != nil {
				want = "| " + code(m) + " | error: " + strings.TrimPrefix(err.Error(), "flightsql: ") + " |"
			} else {
				want = "| " + code(m) + " | " + code(out.SQL) + " |"
			}
			if !strings.Contains(section, want+"\n") {
				t.Errorf("docs/dialects.md, section %s, lacks the line\n%s", name, want)
			}
		}
	}
}

// TestDialectRelearn: a later health check replaces what auto found.
func TestDialectRelearn(t *testing.T) {
	st := newDialectState("")
	_, how := st.learn(serverInfo{name: "mystery"}, nil, true)
	if st.d.name != settings.DialectANSI || !strings.HasPrefix(how, "auto: ") {
		t.Fatalf("unknown server: %s %q", st.d.name, how)
	}
	_, how = st.learn(serverInfo{name: "DuckDB", version: "v1.4.1"}, nil, true)
	if st.d.name != settings.DialectDuckDB || how != "auto" {
		t.Fatalf("after DuckDB answered: %s %q", st.d.name, how)
	}
}

// userInfoServer answers GetSqlInfo with its name to the data source's own
// token only; a forwarded user's call is refused as unimplemented, which
// auto reads as a server that does not tell its name.
type userInfoServer struct{ *infoServer }

func (s *userInfoServer) GetFlightInfoSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if auth := md.Get("authorization"); len(auth) == 0 || auth[0] != "Bearer configured" {
		s.infoCalls.Add(1)
		return nil, status.Error(codes.Unimplemented, "not for you")
	}
	return s.infoServer.GetFlightInfoSqlInfo(ctx, cmd, desc)
}

// TestDialectNotLearntFromAForwardedUser: with oauthPassThru, a user's call
// (a query or a health check) whose GetSqlInfo answer is theirs alone
// renders in what it got and keeps nothing, so the next user asks again; a
// call with the data source's own credentials is kept for everyone.
func TestDialectNotLearntFromAForwardedUser(t *testing.T) {
	const query = "SELECT $__timeGroup(ts, $__interval) FROM t WHERE $__timeFilter(ts)"
	duck := "SELECT time_bucket(INTERVAL '60 seconds', ts) FROM t WHERE (ts >= '2023-11-14 22:13:20.000+00' AND ts <= '2023-11-14 23:13:20.000+00')"
	srv := &userInfoServer{namedServer(t, "DuckDB", "v1.4.1", duck)}
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.AuthType, cfg.Token, cfg.OAuthPassThru = settings.AuthToken, "configured", true
	// A call without a forwarded user goes out with the data source's own
	// credentials (by default it would be refused, and learn nothing).
	cfg.NoForwardedIdentity = settings.NoIdentityConfigured
	user := source.WithForwarded(context.Background(), "Bearer someone", "")
	for _, learn := range []func(s *Source){
		func(s *Source) {
			_, _ = runQueryContext(t, context.Background(), s, query, FormatTable, source.Limits{})
		},
		func(s *Source) { _ = healthReport(t, s) },
	} {
		s := newTestSource(t, cfg)
		for range 2 {
			// ansi has no $__timeGroup: the user's query fails, its answer
			// kept for nobody.
			if _, err := runQueryContext(t, user, s, query, FormatTable, source.Limits{}); err == nil || !strings.Contains(err.Error(), "standard SQL has no time bucketing") {
				t.Fatalf("a user told nothing: %v", err)
			}
		}
		// A health check run by a user (Save & test, the advisor) is
		// their call too: it says what it got, and keeps nothing.
		if msg, err := s.HealthReport(user); err != nil || !strings.Contains(msg, "SQL dialect ansi") {
			t.Fatalf("a user's health check: %q, %v", msg, err)
		}
		if st := s.conn.dialect; st.d != nil {
			t.Fatalf("learnt %s from a forwarded user's call", st.d.name)
		}
		learn(s)
		if _, err := runQueryContext(t, user, s, query, FormatTable, source.Limits{}); err != nil {
			t.Fatalf("after learning with the data source's credentials: %v", err)
		}
	}
}

// TestUnixEpochGroupExpression: $__unixEpochGroup of an expression rounds
// the whole expression, in every dialect: unparenthesised, "%" bound to its
// last term ("tms + 30 % 60"), which rounds times before 1970 the wrong way.
// A column name is written as it is.
func TestUnixEpochGroupExpression(t *testing.T) {
	const mod, modFunc = "((tms + 30) - (((tms + 30) % 60) + 60) % 60)", "((tms + 30) - MOD(MOD((tms + 30), 60) + 60, 60))"
	for _, name := range settings.Dialects[1:] {
		want := mod
		if name == settings.DialectDremio {
			want = modFunc
		}
		for in, want := range map[string]string{
			"$__unixEpochGroup(tms + 30, 1m)":    want,
			"$__unixEpochGroup( tms+30 , 1m)":    strings.ReplaceAll(want, "tms + 30", "tms+30"),
			"$__unixEpochGroup(m.tms, 1m)":       strings.ReplaceAll(want, "(tms + 30)", "m.tms"),
			"$__unixEpochGroup(-tms, 1m)":        strings.ReplaceAll(want, "tms + 30", "-tms"),
			`$__unixEpochGroup("t" - 1, 1m)`:     strings.ReplaceAll(want, "tms + 30", `"t" - 1`),
			"$__unixEpochGroup(tms % 7 + 1, 1m)": strings.ReplaceAll(want, "tms + 30", "tms % 7 + 1"),
		} {
			got, err := expand(t, in, testEnv(name))
			if err != nil || got.SQL != want {
				t.Errorf("%s: %s:\n got %s (%v)\nwant %s", name, in, got.SQL, err, want)
			}
		}
	}
}

// TestSQLiteTimeFilterISOText pins what docs/dialects.md (ansi) says of
// times stored as ISO 8601 text with the T separator: compared as text
// with the ansi literal ('2023-11-14 22:13:20.000+00:00'), "T" sorts after
// the space, so no row of the range's day is selected, without an error;
// rewritten in the literal's form with strftime, each is compared as its
// instant, at the bounds and with an offset too. The range is 2023-11-14
// 22:13:20Z – 23:13:20Z.
func TestSQLiteTimeFilterISOText(t *testing.T) {
	s := newTestSource(t, baseConfig(startSQLite(t)))
	const rows = `SELECT '2023-11-14T22:00:00Z' AS at UNION ALL SELECT '2023-11-14T22:13:20Z' UNION ALL SELECT '2023-11-14T22:30:00.250Z'
		UNION ALL SELECT '2023-11-15T00:10:00+02:00' UNION ALL SELECT '2023-11-14T23:13:20Z' UNION ALL SELECT '2023-11-14T23:50:00Z'`
	for filter, want := range map[string][]string{
		"$__timeFilter(at)": nil,
		"$__timeFilter(strftime('%Y-%m-%d %H:%M:%f+00:00', at))": {"2023-11-14T22:13:20Z", "2023-11-14T22:30:00.250Z", "2023-11-14T23:13:20Z"},
	} {
		sink, err := runQuery(t, s, "SELECT at FROM ("+rows+") WHERE "+filter+" ORDER BY at", FormatTable, source.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := firstColumn(sink); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s selected %q, want %q", filter, got, want)
		}
	}
}
