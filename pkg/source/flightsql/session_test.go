package flightsql

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/source"
)

// sessionServer records the session options it is sent; refuse names
// options it answers with an error.
type sessionServer struct {
	*memServer
	refuse string

	mu    sync.Mutex
	calls []map[string]string
}

func (s *sessionServer) SetSessionOptions(_ context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	got := map[string]string{}
	res := &flight.SetSessionOptionsResult{}
	for name, v := range req.GetSessionOptions() {
		got[name] = v.GetStringValue()
		if name == s.refuse {
			if res.Errors == nil {
				res.Errors = map[string]*flightgen.SetSessionOptionsResult_Error{}
			}
			res.Errors[name] = &flightgen.SetSessionOptionsResult_Error{Value: flightgen.SetSessionOptionsResult_INVALID_VALUE}
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, got)
	s.mu.Unlock()
	return res, nil
}

func TestDefaultCatalogAndSchemaSentOnce(t *testing.T) {
	srv := &sessionServer{memServer: oneRowServer(t)}
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.Catalog, cfg.Schema = "main", "metrics"
	s := newTestSource(t, cfg)
	for range 3 {
		if _, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.calls) != 1 || srv.calls[0]["catalog"] != "main" || srv.calls[0]["schema"] != "metrics" || len(srv.calls[0]) != 2 {
		t.Fatalf("session options sent: %v, want catalog and schema once", srv.calls)
	}
}

func TestRefusedSessionOptionFailsTheQuery(t *testing.T) {
	srv := &sessionServer{memServer: oneRowServer(t), refuse: "schema"}
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.Schema = "nope"
	_, err := runQuery(t, newTestSource(t, cfg), "SELECT 1", FormatTable, source.Limits{})
	if err == nil || source.KindOf(err) != source.KindUpstream || !strings.Contains(err.Error(), "schema (invalid_value)") {
		t.Fatalf("err = %v, want an upstream error naming the refused option", err)
	}
}

// A server without session options (BaseServer answers Unimplemented) still
// answers queries; the defaults then serve the macros and schema browsing.
func TestServerWithoutSessionOptions(t *testing.T) {
	cfg := baseConfig(startServer(t, oneRowServer(t), serverOpts{}))
	cfg.Catalog = "main"
	s := newTestSource(t, cfg)
	check(t, s)
	check(t, s)
}

// cookieServer sets a session cookie on every statement, as servers that
// keep a session per client do.
type cookieServer struct{ *sessionServer }

func (s *cookieServer) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("set-cookie", "sid=first-user"))
	return s.memServer.GetFlightInfoStatement(ctx, cmd, desc)
}

// With oauthPassThru one connection serves every user: it keeps no cookie
// (a session or auth cookie of one user must not reach the server with
// another's calls) and sends no session options (they would live in such a
// session).
func TestOAuthPassThruKeepsNoSession(t *testing.T) {
	for _, passThru := range []bool{false, true} {
		srv := &cookieServer{&sessionServer{memServer: oneRowServer(t)}}
		cfg := baseConfig(startServer(t, srv, serverOpts{}))
		cfg.Catalog, cfg.OAuthPassThru = "main", passThru
		s := newTestSource(t, cfg)
		for _, user := range []string{"Bearer first-user", "Bearer second-user"} {
			ctx := source.WithForwarded(context.Background(), user, "")
			if _, err := runQueryContext(t, ctx, s, "SELECT 1", FormatTable, source.Limits{}); err != nil {
				t.Fatal(err)
			}
		}
		cookies := 0
		for _, md := range srv.seenHeaders() {
			cookies += len(md.Get("cookie"))
		}
		srv.mu.Lock()
		sessions := len(srv.calls)
		srv.mu.Unlock()
		if passThru && (cookies != 0 || sessions != 0) {
			t.Errorf("oauthPassThru: %d cookies replayed, %d session option calls; want none", cookies, sessions)
		}
		if !passThru && (cookies == 0 || sessions != 1) {
			t.Errorf("without oauthPassThru: %d cookies replayed, %d session option calls; want the session kept", cookies, sessions)
		}
	}
}
