package flightsql

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// An HTTP/1.1 server on the port is named as such, not taken for a TLS
// server: "turn tlsEnabled on" only leads to "turn tlsEnabled off".
func TestHealthHTTP1Server(t *testing.T) {
	h1 := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(h1.Close)
	s := newTestSource(t, baseConfig(h1.Listener.Addr().String()))
	_, err := s.HealthReport(context.Background())
	mustKind(t, err, source.KindUpstream, "answered in HTTP/1.1, not gRPC", "check the port")
	if strings.Contains(err.Error(), "turn tlsEnabled on") {
		t.Errorf("TLS advice for an HTTP/1.1 server: %v", err)
	}
}

// A gRPC server that does not serve Arrow Flight is named as such.
func TestHealthGRPCWithoutFlight(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	cfg := baseConfig(lis.Addr().String())
	for _, auth := range []string{settings.AuthNone, settings.AuthPassword} {
		cfg.AuthType, cfg.Username, cfg.Password = auth, "bob", "pw-s3cr3t-123"
		_, err := newTestSource(t, cfg).HealthReport(context.Background())
		mustKind(t, err, source.KindUpstream, "speaks gRPC but does not serve Arrow Flight", "check the address and port")
	}
}

// A server that accepts TCP and never answers: the health check ends at
// the timeout, says so, and points at the address, not at a query.
func TestHealthSilentServer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	for _, tlsOn := range []bool{false, true} {
		cfg := baseConfig(lis.Addr().String())
		cfg.Timeout, cfg.TLSEnabled = 1, tlsOn
		start := time.Now()
		_, err := newTestSource(t, cfg).HealthReport(context.Background())
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("tls %v: the health check took %v with a timeout of 1s", tlsOn, d)
		}
		mustKind(t, err, source.KindTimeout, "timed out after 1s", "no connection to "+`"`+lis.Addr().String()+`"`, "check the address and port")
		if strings.Contains(err.Error(), "narrow the query") {
			t.Errorf("tls %v: query advice for a connection never made: %v", tlsOn, err)
		}
	}
}

// A TLS endpoint that does not negotiate HTTP/2 (ALPN "h2"), which gRPC
// needs: an HTTPS server that is not gRPC, or a proxy without ALPN.
func TestHealthTLSWithoutH2(t *testing.T) {
	p := newPKI(t)
	cert, err := tls.X509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	// An HTTPS server that offers only HTTP/1.1.
	h1 := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	h1.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	h1.StartTLS()
	t.Cleanup(h1.Close)
	// A Flight SQL server behind TLS that negotiates no ALPN at all.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := flight.NewServerWithMiddleware(nil)
	fs.InitListener(tls.NewListener(inner, &tls.Config{Certificates: []tls.Certificate{cert}}))
	fs.RegisterFlightService(flightsql.NewFlightServer(oneRowServer(t)))
	done := make(chan struct{})
	go func() { defer close(done); _ = fs.Serve() }()
	t.Cleanup(func() { fs.Shutdown(); <-done })

	for _, addr := range []string{h1.Listener.Addr().String(), inner.Addr().String()} {
		cfg := baseConfig(addr)
		cfg.TLSEnabled, cfg.TLSAuthWithCACert, cfg.TLSCACert = true, true, settings.Secret(p.caPEM)
		_, err := newTestSource(t, cfg).HealthReport(context.Background())
		mustKind(t, err, source.KindUpstream, `HTTP/2 (ALPN "h2")`)
		if strings.Contains(err.Error(), "is unavailable") {
			t.Errorf("%s: reported unavailable: %v", addr, err)
		}
	}
}

// deniedInfo refuses GetSqlInfo and answers queries.
type deniedInfo struct{ *memServer }

func (deniedInfo) GetFlightInfoSqlInfo(context.Context, flightsql.GetSqlInfo, *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, status.Error(codes.PermissionDenied, "GetSqlInfo is for administrators")
}

// A server that refuses GetSqlInfo but answers queries works: the health
// check passes on SELECT 1, and auto falls back to ansi, for the health
// check and for a query with a dialect macro alike.
func TestHealthGetSqlInfoDenied(t *testing.T) {
	srv := deniedInfo{oneRowServer(t)}
	srv.set("SELECT '2023-11-14 22:13:20.000+00:00'", srv.data["SELECT 1"])
	addr := startServer(t, srv, serverOpts{})
	if _, err := runQuery(t, newTestSource(t, baseConfig(addr)), "SELECT $__timeFrom()", FormatTable, source.Limits{}); err != nil {
		t.Errorf("query: %v", err)
	}
	msg, err := newTestSource(t, baseConfig(addr)).HealthReport(context.Background())
	if err != nil || !strings.Contains(msg, "SQL dialect ansi (auto: the server does not tell its name (GetSqlInfo)") {
		t.Errorf("health %q, %v", msg, err)
	}
}
