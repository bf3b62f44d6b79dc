package flightsql

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// dataset is what the in-memory server answers to one SQL text.
type dataset struct {
	schema    *arrow.Schema
	endpoints [][]arrow.RecordBatch // batches of each endpoint
	locations []string              // location URI of each endpoint; "" for none
	failAfter int                   // >0: the first endpoint fails after this many batches
	block     bool                  // after its batches, the stream waits for the client to go away
}

// memServer is a Flight SQL server serving exact Arrow data from memory.
type memServer struct {
	flightsql.BaseServer

	mu       sync.Mutex
	data     map[string]*dataset
	doGets   chan string   // receives the SQL of every DoGet that sent its batches
	streamed atomic.Int32  // DoGet streams that ended because the client went away
	headers  []metadata.MD // incoming metadata of every call
}

func newMemServer() *memServer {
	s := &memServer{data: map[string]*dataset{}, doGets: make(chan string, 100)}
	s.Alloc = memory.DefaultAllocator
	return s
}

func (s *memServer) set(sql string, d *dataset) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[sql] = d
}

func (s *memServer) get(sql string) (*dataset, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.data[sql]
	return d, ok
}

func (s *memServer) seenHeaders() []metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metadata.MD(nil), s.headers...)
}

func (s *memServer) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, md.Copy())
}

func (s *memServer) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	s.record(ctx)
	d, ok := s.get(cmd.GetQuery())
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "syntax error near %q", cmd.GetQuery())
	}
	info := &flight.FlightInfo{FlightDescriptor: desc, TotalRecords: -1, TotalBytes: -1,
		Schema: flight.SerializeSchema(d.schema, memory.DefaultAllocator)}
	for i := range d.endpoints {
		tkt, err := flightsql.CreateStatementQueryTicket([]byte(fmt.Sprintf("%d\x00%s", i, cmd.GetQuery())))
		if err != nil {
			return nil, err
		}
		ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tkt}}
		if i < len(d.locations) && d.locations[i] != "" {
			ep.Location = []*flight.Location{{Uri: d.locations[i]}}
		}
		info.Endpoint = append(info.Endpoint, ep)
	}
	return info, nil
}

func (s *memServer) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	s.record(ctx)
	idx, sql, _ := strings.Cut(string(tkt.GetStatementHandle()), "\x00")
	d, ok := s.get(sql)
	if !ok {
		return nil, nil, status.Error(codes.NotFound, "unknown ticket")
	}
	var ep int
	fmt.Sscan(idx, &ep)
	ch := make(chan flight.StreamChunk)
	go func() {
		defer close(ch)
		for i, b := range d.endpoints[ep] {
			if ep == 0 && d.failAfter > 0 && i == d.failAfter {
				select {
				case ch <- flight.StreamChunk{Err: status.Error(codes.Internal, "disk on fire")}:
				case <-ctx.Done():
				}
				return
			}
			b.Retain()
			select {
			case ch <- flight.StreamChunk{Data: b}:
			case <-ctx.Done():
				b.Release()
				s.streamed.Add(1)
				return
			}
		}
		s.doGets <- sql
		if d.block {
			<-ctx.Done()
			s.streamed.Add(1)
		}
	}()
	return d.schema, ch, nil
}

// serverOpts configure a test server.
type serverOpts struct {
	tls   *tls.Config
	auth  flight.BasicAuthValidator
	token string // a static bearer token the server accepts (without auth)
	// doGet, when set, answers every DoGet by writing its messages as they
	// are, in place of the server's own.
	doGet func(stream flight.FlightService_DoGetServer) error
}

// rawDoGet is a Flight service whose DoGet is serverOpts.doGet.
type rawDoGet struct {
	flight.FlightServer
	send func(stream flight.FlightService_DoGetServer) error
}

func (r rawDoGet) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	return r.send(stream)
}

// startServer serves srv on 127.0.0.1 and returns its address.
func startServer(t testing.TB, srv flightsql.Server, o serverOpts) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mw []flight.ServerMiddleware
	mw = append(mw, flight.ServerMiddleware{Unary: recoverUnary, Stream: recoverStream})
	if o.auth != nil {
		mw = append(mw, flight.CreateServerBasicAuthMiddleware(o.auth))
	}
	if o.token != "" {
		mw = append(mw, staticToken(o.token))
	}
	var gopts []grpc.ServerOption
	if o.tls != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(o.tls)))
	}
	s := flight.NewServerWithMiddleware(mw, gopts...)
	s.InitListener(lis)
	var svc flight.FlightServer = flightsql.NewFlightServer(srv)
	if o.doGet != nil {
		svc = rawDoGet{FlightServer: svc, send: o.doGet}
	}
	s.RegisterFlightService(svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve()
	}()
	t.Cleanup(func() {
		s.Shutdown()
		<-done
	})
	return lis.Addr().String()
}

// The SQLite example server panics on some column types; a panic must fail
// the call, not the test binary.
func recoverUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	return h(ctx, req)
}

func recoverStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	return h(srv, ss)
}

func staticToken(token string) flight.ServerMiddleware {
	check := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get("authorization") {
			if v == "Bearer "+token {
				return nil
			}
		}
		return status.Error(codes.Unauthenticated, "invalid token")
	}
	return flight.ServerMiddleware{
		Unary: func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		},
		Stream: func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		},
	}
}

// passwords is a BasicAuthValidator whose tokens can be revoked.
type passwords struct {
	user, pass string
	gen        atomic.Int32
	handshakes atomic.Int32
}

func (p *passwords) Validate(user, pass string) (string, error) {
	p.handshakes.Add(1)
	if user != p.user || pass != p.pass {
		return "", status.Error(codes.Unauthenticated, "invalid username or password")
	}
	return fmt.Sprintf("tok-%d", p.gen.Load()), nil
}

func (p *passwords) IsValid(token string) (any, error) {
	if token != fmt.Sprintf("tok-%d", p.gen.Load()) {
		return nil, status.Error(codes.Unauthenticated, "token expired")
	}
	return p.user, nil
}

// pki holds a CA, a server certificate for 127.0.0.1/localhost and a client
// certificate, all PEM.
type pki struct {
	caPEM, serverCert, serverKey, clientCert, clientKey []byte
	pool                                                *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	caKey, caCert, caPEM := makeCert(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "test ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	_, _, srvPEM, srvKey := makeLeaf(t, caCert, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "server"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	_, _, cliPEM, cliKey := makeLeaf(t, caCert, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &pki{caPEM: caPEM, serverCert: srvPEM, serverKey: srvKey, clientCert: cliPEM, clientKey: cliKey, pool: pool}
}

func (p *pki) serverTLS(t *testing.T, requireClient bool) *tls.Config {
	cert, err := tls.X509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	return c
}

var serial atomic.Int64

func makeCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func makeLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, []byte, []byte) {
	key, cert, certPEM := makeCert(t, ca, caKey, tmpl)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// frameSink decodes every record through the SDK's reader, the oracle of
// "Grafana can read it", and keeps the frames and the schemas.
type frameSink struct {
	t       testing.TB
	frames  []*data.Frame
	schemas []*arrow.Schema
	err     error // returned by Record when set
}

func (s *frameSink) Frame(ctx context.Context, f *data.Frame) error {
	s.frames = append(s.frames, f)
	return nil
}

func (s *frameSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	if s.err != nil {
		return s.err
	}
	s.t.Helper()
	f, err := frametest.Decode(rec)
	if err != nil {
		s.t.Fatalf("the SDK cannot read the frame: %v\nschema: %s", err, rec.Schema())
	}
	s.frames = append(s.frames, f)
	s.schemas = append(s.schemas, rec.Schema())
	return nil
}

// newTestSource builds a Source with a checked allocator that must be empty
// when the test ends.
func newTestSource(t testing.TB, cfg settings.FlightSQL) *Source {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s, err := New(cfg, WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return s
}

func baseConfig(addr string) settings.FlightSQL {
	s, err := settings.Parse([]byte(fmt.Sprintf(`{"upstream":"flightsql","address":%q}`, addr)), nil)
	if err != nil {
		panic(err)
	}
	return s.FlightSQL
}

func runQuery(t *testing.T, s *Source, sql, format string, limits source.Limits) (*frameSink, error) {
	t.Helper()
	return runQueryContext(t, context.Background(), s, sql, format, limits)
}

// runQueryContext is runQuery under ctx (a forwarded identity, say).
func runQueryContext(t *testing.T, ctx context.Context, s *Source, sql, format string, limits source.Limits) (*frameSink, error) {
	t.Helper()
	sink := &frameSink{t: t}
	js := fmt.Sprintf(`{"rawSql":%q,"format":%q}`, sql, format)
	err := s.Query(ctx, source.Query{RefID: "A", JSON: []byte(js),
		From: time.Unix(1_700_000_000, 0), To: time.Unix(1_700_003_600, 0), Interval: time.Minute, Limits: limits}, sink)
	return sink, err
}

// batch builds a record batch column by column.
func batch(schema *arrow.Schema, fill func(b *array.RecordBuilder)) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	return b.NewRecordBatch()
}

func mustKind(t *testing.T, err error, kind source.Kind, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want kind %d containing %q", kind, contains)
	}
	if got := source.KindOf(err); got != kind {
		t.Errorf("kind %d, want %d: %v", got, kind, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q does not contain %q", err, c)
		}
	}
}

var errSink = errors.New("sink is full")

// wireSink encodes every record with pkg/frame's encoder (no compression),
// as the plugin does, and decodes the bytes with the SDK, as Grafana does.
type wireSink struct {
	t      testing.TB
	enc    *frame.Encoder
	frames []*data.Frame
	bytes  int
}

func newWireSink(t testing.TB) *wireSink {
	t.Helper()
	enc, err := frame.NewEncoder(arrowipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &wireSink{t: t, enc: enc}
}

func (s *wireSink) Frame(ctx context.Context, f *data.Frame) error {
	s.frames = append(s.frames, f)
	return nil
}

func (s *wireSink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	defer rec.Release()
	b, _, err := s.enc.Append(nil, frame.Input{Record: rec}, nil)
	if err != nil {
		s.t.Fatalf("encoding: %v", err)
	}
	s.bytes += len(b)
	f, err := data.UnmarshalArrowFrame(b)
	if err != nil {
		s.t.Fatalf("the SDK cannot read the frame: %v\nschema: %s", err, rec.Schema())
	}
	s.frames = append(s.frames, f)
	return nil
}
