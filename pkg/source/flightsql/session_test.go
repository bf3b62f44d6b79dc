package flightsql

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"

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
