package flightsql

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// locationServer answers every query with one endpoint whose locations
// locs makes from the authorization the call carried (a server that signs
// its data nodes' URIs with the caller's credentials).
type locationServer struct {
	flightsql.BaseServer
	locs func(authz string) []string
}

func (s *locationServer) GetFlightInfoStatement(ctx context.Context, _ flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: []byte("t")}}
	for _, u := range s.locs(strings.Join(md.Get("authorization"), "")) {
		ep.Location = append(ep.Location, &flight.Location{Uri: u})
	}
	return &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{ep}}, nil
}

// An endpoint location is named by its scheme and host only: the token a
// server put in its query string is not shown, whole or cut by quoting,
// alone or beside a location refused for its host.
func TestEndpointLocationShowsNoSecret(t *testing.T) {
	token := "cfg-token-" + strings.Repeat("7f3a9", 10)
	for name, locs := range map[string]func(string) []string{
		"one location": func(a string) []string { return []string{"grpc+tls://127.0.0.1:1/?a=" + url.QueryEscape(a)} },
		"beside a host not allowed": func(a string) []string {
			return []string{"grpc+tcp://evil.example:1", "grpc+tls://127.0.0.1:1/?a=" + url.QueryEscape(a)}
		},
		"in the user information": func(a string) []string { return []string{"grpc+tls://" + url.QueryEscape(a) + "@127.0.0.1:1"} },
	} {
		cfg := baseConfig(startServer(t, &locationServer{locs: locs}, serverOpts{token: token}))
		cfg.AuthType, cfg.Token = settings.AuthToken, settings.Secret(token)
		_, err := runQuery(t, newTestSource(t, cfg), "SELECT 1", FormatTable, source.Limits{})
		if err == nil || strings.Contains(err.Error(), token[:16]) || !strings.Contains(err.Error(), `"grpc+tls://127.0.0.1:1" needs TLS`) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "TLS handshake failed") {
			t.Errorf("%s: a refused location is not a TLS handshake: %v", name, err)
		}
	}
}

// sessionEchoServer refuses the session options, naming them with the
// authorization the call carried.
type sessionEchoServer struct{ *memServer }

func (s *sessionEchoServer) SetSessionOptions(ctx context.Context, _ *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return &flight.SetSessionOptionsResult{Errors: map[string]*flight.SetSessionOptionsResultError{
		"catalog (sent with " + strings.Join(md.Get("authorization"), "") + ")": {Value: flight.SetSessionOptionsResultErrorInvalidValue},
	}}, nil
}

func TestSessionOptionErrorShowsNoSecret(t *testing.T) {
	const token = "cfg-token-5a1e0c7d9b"
	cfg := baseConfig(startServer(t, &sessionEchoServer{oneRowServer(t)}, serverOpts{token: token}))
	cfg.AuthType, cfg.Token, cfg.Catalog = settings.AuthToken, token, "c"
	_, err := runQuery(t, newTestSource(t, cfg), "SELECT 1", FormatTable, source.Limits{})
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "refused the session options catalog (sent with Bearer [redacted])") {
		t.Errorf("got %v", err)
	}
}

// A short header value is replaced only where it stands alone: the
// address in the message stays readable, and does not show which
// characters the value is.
func TestShortSecretKeepsTheMessage(t *testing.T) {
	cfg := baseConfig("127.0.0.1:1")
	cfg.Headers = []settings.Header{{Index: 1, Name: "x-shard", Value: "1"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := newTestSource(t, cfg)
	err := s.conn.upstream(context.Background(), "executing the query", fmt.Errorf("dial 127.0.0.1:1: refused for tenant 1, shard=1"))
	if got, want := err.Error(), "flightsql: executing the query: dial 127.0.0.1:1: refused for tenant [redacted], shard=[redacted]"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, tc := range []struct{ msg, secret, want string }{
		{"user ab rejected (ab)", "ab", "user [redacted] rejected ([redacted])"},
		{"abc abcd xabc abc", "abc", "[redacted] abcd xabc [redacted]"},
		{"token-123 and 123", "123", "token-123 and [redacted]"},
		{"a long one: secret-secret-1", "secret-secret-1", "a long one: [redacted]"},
		{"inside: xsecret-secret-1x", "secret-secret-1", "inside: x[redacted]x"},
	} {
		if got := replaceSecret(tc.msg, tc.secret); got != tc.want {
			t.Errorf("%q in %q: %q, want %q", tc.secret, tc.msg, got, tc.want)
		}
	}
}

// A server's own status (a syntax error echoing the SQL) gets no transport
// or TLS hint, whatever its text.
func TestHintsOnlyForTheTransport(t *testing.T) {
	s := newTestSource(t, baseConfig("127.0.0.1:1"))
	for _, detail := range []string{"syntax error near 'x509: oops'", "syntax error near 'connection refused'", "no such host 'tls: x'"} {
		if h := s.conn.hint(fmt.Errorf("%s", detail), 3 /* InvalidArgument */, detail); h != "" {
			t.Errorf("%s: hint %q", detail, h)
		}
		if h := s.conn.hint(fmt.Errorf("%s", detail), 14 /* Unavailable */, detail); h == "" {
			t.Errorf("%s, Unavailable: no hint", detail)
		}
	}
}

// refusingRedis answers every command with an error naming its arguments
// (a proxy that echoes the AUTH it refused).
func refusingRedis(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					var n int
					if _, err := fmt.Sscanf(line, "*%d", &n); err != nil {
						continue
					}
					var args []string
					for range n {
						_, _ = r.ReadString('\n') // $len
						a, _ := r.ReadString('\n')
						args = append(args, strings.TrimSpace(a))
					}
					_, _ = c.Write([]byte("-WRONGPASS refused " + strings.Join(args, " ") + "\r\n"))
				}
			}(c)
		}
	}()
	return lis.Addr().String()
}

// A Redis that echoes the password it refused does not put it in a query's
// stats, which every Viewer of the panel reads.
func TestRedisErrorShowsNoPassword(t *testing.T) {
	const pw = "redis-pw-4c8e2a6f1b"
	_, addr := startSQLiteDB(t)
	cfg := baseConfig(addr)
	cfg.RedisAddress, cfg.RedisPassword = refusingRedis(t), pw
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]string{"rawSql": "SELECT time, host, value FROM metrics WHERE $__unixEpochMsFilter(time)", "format": FormatTimeSeries})
	base := time.UnixMilli(1_700_000_000_000)
	sink := &frameSink{t: t}
	if err := newTestSource(t, cfg).Query(context.Background(), source.Query{RefID: "A", JSON: js, From: base, To: base.Add(10 * time.Minute),
		Interval: time.Minute, MaxDataPoints: 1000, Scope: "tenant"}, sink); err != nil {
		t.Fatal(err)
	}
	why := fullWhy(statsOf(sink.frames))
	if !strings.HasPrefix(why, whyStore) || strings.Contains(why, pw) || !strings.Contains(why, "[redacted]") {
		t.Errorf("stats say %q", why)
	}
}

// manyLocations names a new location (another path on an allowed host,
// then another port) for every query.
type manyLocations struct {
	*memServer
	host string
	n    atomic.Int64
}

func (s *manyLocations) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	info, err := s.memServer.GetFlightInfoStatement(ctx, cmd, desc)
	if err != nil {
		return nil, err
	}
	for _, ep := range info.Endpoint {
		ep.Location = []*flight.Location{{Uri: fmt.Sprintf("grpc+tcp://%s/query/%d", s.host, s.n.Add(1))}}
	}
	return info, nil
}

// The clients kept for endpoint locations are one per scheme and host, and
// at most maxRemotes: a server cannot make the plugin keep a connection per
// query.
func TestRemoteClientsBounded(t *testing.T) {
	mem := oneRowServer(t)
	go func() {
		for range mem.doGets {
		}
	}()
	srv := &manyLocations{memServer: mem}
	addr := startServer(t, srv, serverOpts{})
	_, port, _ := strings.Cut(addr, ":")
	srv.host = "localhost:" + port
	cfg := baseConfig(addr)
	cfg.AllowedLocationHosts = "localhost"
	s := newTestSource(t, cfg)
	for range 20 {
		if _, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.conn.remotes); n != 1 {
		t.Fatalf("%d clients for one host after 20 queries, want 1", n)
	}
	for i := range maxRemotes - 1 {
		s.conn.remotes[fmt.Sprint("grpc+tcp://localhost:", 60000+i)] = s.conn.main
	}
	srv.host = "localhost:1"
	_, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`endpoint location "grpc+tcp://localhost:1": the server has named %d other locations`, maxRemotes)) {
		t.Fatalf("past maxRemotes: %v", err)
	}
	for k := range s.conn.remotes {
		if s.conn.remotes[k] == s.conn.main {
			delete(s.conn.remotes, k) // main is closed once, by the source
		}
	}
}

// A server that puts the token it was sent into an endpoint location's
// host or scheme: a message names such text whole, so that redaction finds
// the token, or, past what a message quotes, only its length; it had cut
// it to 64 bytes, and a cut token escaped redaction.
func TestLocationTextShowsNoSecret(t *testing.T) {
	for _, token := range []string{strings.Repeat("a1b2c3d4e5", 10), strings.Repeat("f6g7h8", 5)} { // 100 and 30 bytes
		for name, loc := range map[string]func(string) string{
			"host not allowed": func(tok string) string { return "grpc+tcp://" + tok + ":1" },
			"bad scheme":       func(tok string) string { return tok + "://127.0.0.1:1" },
		} {
			cfg := baseConfig(startServer(t, &locationServer{locs: func(a string) []string {
				return []string{loc(strings.TrimPrefix(a, "Bearer "))}
			}}, serverOpts{token: token}))
			cfg.AuthType, cfg.Token = settings.AuthToken, settings.Secret(token)
			_, err := runQuery(t, newTestSource(t, cfg), "SELECT 1", FormatTable, source.Limits{})
			if err == nil || strings.Contains(err.Error(), token[:16]) || !strings.Contains(err.Error(), "[redacted]") && !strings.Contains(err.Error(), "(100 bytes)") {
				t.Errorf("%s, a %d-byte token: %v, want it redacted or measured", name, len(token), err)
			}
		}
	}
}

// An endpoint naming thousands of locations, none usable, fails with a
// message naming a few of them, not every one.
func TestManyRefusedLocationsMakeAShortMessage(t *testing.T) {
	cfg := baseConfig(startServer(t, &locationServer{locs: func(string) []string {
		locs := make([]string, 50000)
		for i := range locs {
			locs[i] = fmt.Sprintf("grpc+tcp://h%d.example:1", i)
		}
		return locs
	}}, serverOpts{}))
	_, err := runQuery(t, newTestSource(t, cfg), "SELECT 1", FormatTable, source.Limits{})
	if err == nil || len(err.Error()) > 2048 || !strings.Contains(err.Error(), "and 49997 more locations") {
		t.Errorf("%d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
