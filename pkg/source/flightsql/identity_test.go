package flightsql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// passThruConfig is a token-authenticated source at addr with oauthPassThru
// on and noForwardedIdentity set to rule ("" for its default).
func passThruConfig(addr, rule string) settings.FlightSQL {
	cfg := baseConfig(addr)
	cfg.AuthType, cfg.Token, cfg.OAuthPassThru = settings.AuthToken, "configured-service-token", true
	if rule != "" {
		cfg.NoForwardedIdentity = rule
	}
	return cfg
}

// With oauthPassThru on, a call that carries a forwarded user goes out as
// that user under either rule; one without is refused by default (before
// anything reaches the server) and goes out with the configured token only
// when noForwardedIdentity is "configured". The health check says which
// rule applies.
func TestPassThruWithoutForwardedUser(t *testing.T) {
	const user = "Bearer user-access-token"
	for _, rule := range []string{"", settings.NoIdentityRefuse, settings.NoIdentityConfigured} {
		srv := oneRowServer(t)
		addr := startServer(t, srv, serverOpts{})
		s := newTestSource(t, passThruConfig(addr, rule))
		configured := rule == settings.NoIdentityConfigured
		name := rule
		if name == "" {
			name = "default"
		}

		// A forwarded user: their token, whatever the rule.
		fwd := source.WithForwarded(context.Background(), user, "user-id-token")
		if _, err := runQueryContext(t, fwd, s, "SELECT 1", FormatTable, source.Limits{}); err != nil {
			t.Fatalf("%s, forwarded: %v", name, err)
		}
		report, err := s.HealthReport(fwd)
		if err != nil {
			t.Fatalf("%s, forwarded health: %v", name, err)
		}
		wantRule := `calls without a signed-in user are refused (noForwardedIdentity "refuse")`
		if configured {
			wantRule = `calls without a signed-in user are sent with the configured credentials (noForwardedIdentity "configured")`
		}
		if !strings.Contains(report, "oauthPassThru: "+wantRule) {
			t.Errorf("%s: health report %q does not say %q", name, report, wantRule)
		}
		for i, md := range srv.seenHeaders() {
			if got := md.Get("authorization"); len(got) != 1 || got[0] != user {
				t.Errorf("%s, forwarded: call %d went out as %q", name, i, got)
			}
		}
		seen := len(srv.seenHeaders())

		// No forwarded user.
		_, qerr := runQueryContext(t, context.Background(), s, "SELECT 1", FormatTable, source.Limits{})
		_, herr := s.HealthReport(context.Background())
		if configured {
			if qerr != nil || herr != nil {
				t.Fatalf("configured, nothing forwarded: query %v, health %v", qerr, herr)
			}
			for i, md := range srv.seenHeaders()[seen:] {
				if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer configured-service-token" {
					t.Errorf("configured, nothing forwarded: call %d went out as %q", i, got)
				}
			}
			continue
		}
		for what, err := range map[string]error{"query": qerr, "health": herr} {
			mustKind(t, err, source.KindQuery, "flightsql: no signed-in user to forward", `set noForwardedIdentity to "configured"`)
			if !errors.Is(err, ErrNoSignedInUser) {
				t.Errorf("%s, %s: %v is not ErrNoSignedInUser", name, what, err)
			}
			if strings.Contains(err.Error(), "configured-service-token") {
				t.Errorf("%s, %s: the message shows the token: %v", name, what, err)
			}
		}
		if n := len(srv.seenHeaders()); n != seen {
			t.Errorf("%s, nothing forwarded: the server saw %d calls, want none", name, n-seen)
		}
	}
}

// Without oauthPassThru the rule does not apply and the health check does
// not mention it.
func TestNoForwardedIdentityIgnoredWithoutPassThru(t *testing.T) {
	srv := oneRowServer(t)
	cfg := passThruConfig(startServer(t, srv, serverOpts{}), settings.NoIdentityRefuse)
	cfg.OAuthPassThru = false
	s := newTestSource(t, cfg)
	check(t, s)
	if report, err := s.HealthReport(context.Background()); err != nil || strings.Contains(report, "oauthPassThru") {
		t.Errorf("health report %q, %v", report, err)
	}
}

// An endpoint location on another host than the address's ("localhost"
// against "127.0.0.1", the same listener) is refused, naming the host, and
// nothing reaches it, unless allowedLocationHosts lists it; then it gets the
// forwarded user's token like the address does.
func TestLocationOnAnotherHost(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "one", Type: arrow.PrimitiveTypes.Int64}}, nil)
	one := batch(schema, func(b *array.RecordBuilder) { b.Field(0).(*array.Int64Builder).Append(1) })
	t.Cleanup(one.Release)
	srv, other := newMemServer(), newMemServer()
	addr := startServer(t, srv, serverOpts{})
	otherAddr := startServer(t, other, serverOpts{})
	_, port, _ := strings.Cut(otherAddr, ":")
	d := &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{one}, {one}},
		locations: []string{"", "grpc+tcp://LocalHost:" + port}}
	srv.set("q", d)
	other.set("q", d)
	const user = "Bearer user-access-token"
	fwd := source.WithForwarded(context.Background(), user, "")

	for _, allowed := range []string{"", "data.example, 10.0.0.1", "localhost", " data.example,LOCALHOST "} {
		cfg := passThruConfig(addr, "")
		cfg.AllowedLocationHosts = allowed
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		s := newTestSource(t, cfg)
		before := len(other.seenHeaders())
		sink, err := runQueryContext(t, fwd, s, "q", FormatTable, source.Limits{})
		if !strings.Contains(strings.ToLower(allowed), "localhost") {
			mustKind(t, err, source.KindQuery, `host "LocalHost"`, "allowedLocationHosts")
			if !errors.Is(err, ErrLocationHost) {
				t.Errorf("%q: %v is not ErrLocationHost", allowed, err)
			}
			if n := len(other.seenHeaders()) - before; n != 0 {
				t.Errorf("%q: the other host saw %d calls, want none", allowed, n)
			}
			continue
		}
		if err != nil || sink.frames[0].Rows() != 2 {
			t.Fatalf("%q: %v", allowed, err)
		}
		mds := other.seenHeaders()[before:]
		if len(mds) != 1 || len(mds[0].Get("authorization")) != 1 || mds[0].Get("authorization")[0] != user {
			t.Errorf("%q: the other host saw %v", allowed, mds)
		}
	}

	// A host name longer than the quoting rule is cut in the message.
	c := &conn{cfg: settings.FlightSQL{Address: addr}, locationHosts: []string{"127.0.0.1"}}
	long := strings.Repeat("h", 200) + ".example"
	_, err := c.remote("grpc://" + long + ":1")
	if err == nil || strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "(208 bytes)") {
		t.Errorf("long host: %v", err)
	}
}

// With oauthPassThru on, a configured X-Id-Token or Cookie header goes only
// with the calls that forward no user: a user's call carries their own ID
// token (or none), never the service's, and no session of another.
func TestForwardedCallsGoWithoutConfiguredIdentityHeaders(t *testing.T) {
	srv := oneRowServer(t)
	cfg := passThruConfig(startServer(t, srv, serverOpts{}), settings.NoIdentityConfigured)
	cfg.Headers = []settings.Header{{Index: 1, Name: "X-Id-Token", Value: "service-id-token"}, {Index: 2, Name: "Cookie", Value: "session=service"},
		{Index: 3, Name: "x-tenant", Value: "acme"}}
	s := newTestSource(t, cfg)
	for _, tc := range []struct {
		ctx                  context.Context
		idToken, cookie, who string
	}{
		{source.WithForwarded(context.Background(), "Bearer bob", ""), "", "", "bob without an ID token"},
		{source.WithForwarded(context.Background(), "Bearer bob", "bob-id-token"), "bob-id-token", "", "bob"},
		{context.Background(), "service-id-token", "session=service", "no forwarded user"},
	} {
		if _, err := runQueryContext(t, tc.ctx, s, "SELECT 1", FormatTable, source.Limits{}); err != nil {
			t.Fatal(err)
		}
		hs := srv.seenHeaders()
		md := hs[len(hs)-1]
		if got := strings.Join(md.Get("x-id-token"), ","); got != tc.idToken {
			t.Errorf("%s: x-id-token %q, want %q", tc.who, got, tc.idToken)
		}
		if got := strings.Join(md.Get("cookie"), ","); got != tc.cookie {
			t.Errorf("%s: cookie %q, want %q", tc.who, got, tc.cookie)
		}
		if got := strings.Join(md.Get("x-tenant"), ","); got != "acme" {
			t.Errorf("%s: x-tenant %q, want the configured header", tc.who, got)
		}
	}
}

// A forwarded user's token the server refuses is the user's to renew: the
// message says so, whatever credentials are configured, and does not send
// the administrator to settings the call did not use.
func TestForwardedTokenRefusedNamesTheUser(t *testing.T) {
	addr := startServer(t, oneRowServer(t), serverOpts{token: "good-user-token"})
	for _, auth := range []string{settings.AuthNone, settings.AuthToken, settings.AuthPassword} {
		cfg := baseConfig(addr)
		cfg.AuthType, cfg.OAuthPassThru = auth, true
		switch auth {
		case settings.AuthToken:
			cfg.Token = "configured-token"
		case settings.AuthPassword:
			cfg.Username, cfg.Password = "svc", "svc-password"
		}
		s := newTestSource(t, cfg)
		fwd := source.WithForwarded(context.Background(), "Bearer expired-user-token", "")
		_, err := runQueryContext(t, fwd, s, "SELECT 1", FormatTable, source.Limits{})
		if err == nil {
			t.Fatalf("authType %s: the refused user token passed", auth)
		}
		msg := err.Error()
		if !strings.Contains(msg, "the server rejected the signed-in user's forwarded token") || !strings.Contains(msg, "sign in to Grafana again") {
			t.Errorf("authType %s: %q does not name the user's forwarded token", auth, msg)
		}
		for _, wrong := range []string{"set authType", "configured user name", "rejected the token", "expired-user-token"} {
			if strings.Contains(msg, wrong) {
				t.Errorf("authType %s: %q says %q", auth, msg, wrong)
			}
		}
	}
}
