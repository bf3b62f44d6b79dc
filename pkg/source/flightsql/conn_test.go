package flightsql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// oneRowServer serves "SELECT 1" (one int64 row) and a server name.
func oneRowServer(t *testing.T) *memServer {
	srv := newMemServer()
	schema := arrow.NewSchema([]arrow.Field{{Name: "one", Type: arrow.PrimitiveTypes.Int64}}, nil)
	srv.set("SELECT 1", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).Append(1)
	})}}})
	if err := srv.RegisterSqlInfo(flightsql.SqlInfoFlightSqlServerName, "quiver test"); err != nil {
		t.Fatal(err)
	}
	return srv
}

// check runs the health check and a query, which must both succeed.
func check(t *testing.T, s *Source) {
	t.Helper()
	if _, err := s.HealthReport(context.Background()); err != nil {
		t.Fatalf("health: %v", err)
	}
	sink, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if len(sink.frames) != 1 || sink.frames[0].Fields[0].At(0).(int64) != 1 {
		t.Fatalf("query result %v", sink.frames)
	}
}

// fail runs the health check and a query, which must both fail with messages
// holding want and no secret.
func fail(t *testing.T, s *Source, want string, secrets ...string) {
	t.Helper()
	_, err := s.HealthReport(context.Background())
	errs := []error{err}
	_, qerr := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{})
	errs = append(errs, qerr)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d: no error, want %q", i, want)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("call %d: %q does not contain %q", i, err, want)
		}
		if source.KindOf(err) != source.KindUpstream {
			t.Errorf("call %d: kind %d: %v", i, source.KindOf(err), err)
		}
		for _, sec := range secrets {
			if strings.Contains(err.Error(), sec) {
				t.Errorf("call %d: secret in %q", i, err)
			}
		}
	}
}

func TestHealthFallsBackToSelect1(t *testing.T) {
	srv := oneRowServer(t)
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	check(t, s)

	noInfo := newMemServer() // no SqlInfo registered: GetSqlInfo answers NotFound
	noInfo.set("SELECT 1", srv.data["SELECT 1"])
	s = newTestSource(t, baseConfig(startServer(t, noInfo, serverOpts{})))
	check(t, s)

	broken := newMemServer() // neither works: the SELECT 1 failure is reported
	s = newTestSource(t, baseConfig(startServer(t, broken, serverOpts{})))
	if _, err := s.HealthReport(context.Background()); err == nil || !strings.Contains(err.Error(), "health check (SELECT 1)") {
		t.Fatalf("got %v", err)
	}
}

func TestServerDownAndDNS(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	fail(t, newTestSource(t, baseConfig(addr)), fmt.Sprintf("connection refused by %q: check the host and port", addr))

	cfg := baseConfig("no-such-host.invalid:443")
	cfg.Timeout = 5
	fail(t, newTestSource(t, cfg), `cannot resolve the host of "no-such-host.invalid:443" (DNS)`)
}

func TestBearerToken(t *testing.T) {
	const token = "t0k3n-s3cr3t"
	srv := oneRowServer(t)
	addr := startServer(t, srv, serverOpts{token: token})
	cfg := baseConfig(addr)
	cfg.AuthType, cfg.Token = settings.AuthToken, token
	check(t, newTestSource(t, cfg))

	cfg.Token = "wrong-token"
	fail(t, newTestSource(t, cfg), "authentication failed: the server rejected the token", "wrong-token")

	fail(t, newTestSource(t, baseConfig(addr)), `the server requires credentials (set authType to "token" or "password")`)
}

func TestBasicAuthHandshakeAndRefresh(t *testing.T) {
	const pass = "pa55w0rd-s3cr3t"
	srv := oneRowServer(t)
	pw := &passwords{user: "bob", pass: pass}
	addr := startServer(t, srv, serverOpts{auth: pw})
	cfg := baseConfig(addr)
	cfg.AuthType, cfg.Username, cfg.Password = settings.AuthPassword, "bob", pass
	s := newTestSource(t, cfg)
	check(t, s)
	if got := pw.handshakes.Load(); got != 1 {
		t.Fatalf("%d handshakes, want 1 (the token is kept)", got)
	}
	// The server expires the token: the next call authenticates again, once.
	pw.gen.Add(1)
	check(t, s)
	if got := pw.handshakes.Load(); got != 2 {
		t.Fatalf("%d handshakes after expiry, want 2", got)
	}

	cfg.Password = "wrong-s3cr3t"
	fail(t, newTestSource(t, cfg), "authentication failed: the server rejected the configured user name or its password", "wrong-s3cr3t", pass, "bob")
}

// A refused password is sent once for a burst of queries, not once a
// query (an account lockout policy counts each): the others get the same
// refusal. Once the refusal is older than refusedFor, a query tries again.
func TestRefusedPasswordSentOnceForABurst(t *testing.T) {
	pw := &passwords{user: "bob", pass: "right"}
	cfg := baseConfig(startServer(t, oneRowServer(t), serverOpts{auth: pw}))
	cfg.AuthType, cfg.Username, cfg.Password = settings.AuthPassword, "bob", "wrong"
	s := newTestSource(t, cfg)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = runQuery(t, s, "SELECT 1", FormatTable, source.Limits{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rejected the configured user name or its password") {
			t.Errorf("query %d: %v", i, err)
		}
	}
	if got := pw.handshakes.Load(); got != 1 {
		t.Errorf("%d handshakes for a burst of %d queries, want 1", got, len(errs))
	}
	s.conn.auth.mu.Lock()
	s.conn.auth.refusedAt = time.Now().Add(-refusedFor)
	s.conn.auth.mu.Unlock()
	if _, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{}); err == nil {
		t.Fatal("the wrong password passed")
	}
	if got := pw.handshakes.Load(); got != 2 {
		t.Errorf("%d handshakes once the refusal had aged, want 2", got)
	}
}

func TestHeadersReachTheServer(t *testing.T) {
	srv := oneRowServer(t)
	cfg := baseConfig(startServer(t, srv, serverOpts{}))
	cfg.Headers = []settings.Header{{Index: 1, Name: "X-Database", Value: "metrics"}, {Index: 2, Name: "x-tenant", Value: "acme"}}
	check(t, newTestSource(t, cfg))
	mds := srv.seenHeaders()
	if len(mds) == 0 {
		t.Fatal("no calls recorded")
	}
	for _, md := range mds {
		if fmt.Sprint(md.Get("x-database")) != "[metrics]" || fmt.Sprint(md.Get("x-tenant")) != "[acme]" {
			t.Errorf("headers %v", md)
		}
	}
}

func TestTLS(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	srv := oneRowServer(t)
	addr := startServer(t, srv, serverOpts{tls: p.serverTLS(t, false)})
	mtlsAddr := startServer(t, srv, serverOpts{tls: p.serverTLS(t, true)})
	tlsCfg := func(a string) settings.FlightSQL {
		c := baseConfig(a)
		c.TLSEnabled, c.TLSAuthWithCACert, c.TLSCACert = true, true, settings.Secret(p.caPEM)
		return c
	}

	t.Run("ca", func(t *testing.T) { check(t, newTestSource(t, tlsCfg(addr))) })
	t.Run("localhost name", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(addr)
		check(t, newTestSource(t, tlsCfg("localhost:"+port)))
	})
	t.Run("wrong ca", func(t *testing.T) {
		c := tlsCfg(addr)
		c.TLSCACert = settings.Secret(other.caPEM)
		fail(t, newTestSource(t, c), "TLS: the server's certificate is not signed by a trusted CA")
	})
	t.Run("system roots", func(t *testing.T) {
		c := tlsCfg(addr)
		c.TLSAuthWithCACert, c.TLSCACert = false, ""
		fail(t, newTestSource(t, c), "not signed by a trusted CA")
	})
	t.Run("skip verify", func(t *testing.T) {
		c := tlsCfg(addr)
		c.TLSAuthWithCACert, c.TLSCACert, c.TLSSkipVerify = false, "", true
		check(t, newTestSource(t, c))
	})
	t.Run("server name", func(t *testing.T) {
		c := tlsCfg(addr)
		c.TLSServerName = "db.example.com"
		fail(t, newTestSource(t, c), "does not match the host name: fix the address or set tlsServerName")
		c.TLSServerName = "localhost"
		check(t, newTestSource(t, c))
	})
	t.Run("plaintext client, TLS server", func(t *testing.T) {
		fail(t, newTestSource(t, baseConfig(addr)), "if it requires TLS, turn tlsEnabled on")
	})
	t.Run("TLS client, plaintext server", func(t *testing.T) {
		plain := startServer(t, srv, serverOpts{})
		fail(t, newTestSource(t, tlsCfg(plain)), "TLS: the server does not speak TLS: turn tlsEnabled off")
	})
	t.Run("mtls", func(t *testing.T) {
		c := tlsCfg(mtlsAddr)
		c.TLSAuth, c.TLSClientCert, c.TLSClientKey = true, settings.Secret(p.clientCert), settings.Secret(p.clientKey)
		check(t, newTestSource(t, c))
	})
	t.Run("mtls without client certificate", func(t *testing.T) {
		// TLS 1.3 reports the rejection after the handshake: the message
		// says either that the certificate was rejected or that the
		// connection closed, both pointing at the client certificate.
		fail(t, newTestSource(t, tlsCfg(mtlsAddr)), "client certificate")
	})
	t.Run("mtls with an unknown client certificate", func(t *testing.T) {
		c := tlsCfg(mtlsAddr)
		c.TLSAuth, c.TLSClientCert, c.TLSClientKey = true, settings.Secret(other.clientCert), settings.Secret(other.clientKey)
		fail(t, newTestSource(t, c), "client certificate", string(other.clientKey))
	})
}

func TestNewValidates(t *testing.T) {
	cfg := baseConfig("h:1")
	cfg.AuthType = "kerberos"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), `flightsql: settings: authType: "kerberos" is not one of`) {
		t.Fatalf("got %v", err)
	}
}

// slowPasswords holds every handshake at the server until release is closed.
type slowPasswords struct {
	passwords
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (p *slowPasswords) Validate(user, pass string) (string, error) {
	p.once.Do(func() { close(p.entered) })
	<-p.release
	return p.passwords.Validate(user, pass)
}

// A query that waits for another query's password handshake, or for its
// session options, gives up when its own context ends, not when the other
// query's call to a stalled server does.
func TestWaitForAnotherHandshakeEndsWithTheContext(t *testing.T) {
	for _, catalog := range []string{"", "main"} {
		t.Run("catalog="+catalog, func(t *testing.T) {
			pw := &slowPasswords{passwords: passwords{user: "bob", pass: "pw"}, entered: make(chan struct{}), release: make(chan struct{})}
			cfg := baseConfig(startServer(t, oneRowServer(t), serverOpts{auth: pw}))
			cfg.AuthType, cfg.Username, cfg.Password, cfg.Catalog = settings.AuthPassword, "bob", "pw", catalog
			s := newTestSource(t, cfg)

			first := make(chan error, 1)
			go func() {
				_, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{})
				first <- err
			}()
			<-pw.entered
			ctx, cancel := context.WithCancel(context.Background())
			second := make(chan error, 1)
			go func() {
				_, err := runQueryContext(t, ctx, s, "SELECT 1", FormatTable, source.Limits{})
				second <- err
			}()
			time.Sleep(200 * time.Millisecond) // let it reach the wait
			cancel()
			select {
			case err := <-second:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("second query: %v, want its context's end", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("the second query still waits for the first one's handshake after its context ended")
				defer func() { <-second }()
			}
			close(pw.release)
			if err := <-first; err != nil {
				t.Fatalf("first query: %v", err)
			}
		})
	}
}
