package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// trackingListener remembers every connection it accepted, so a test can
// cut them as a server that dies would.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// TestNoTLSHintAfterTheServerAnswered: a plaintext server that dies in the
// middle of a stream is not told to need TLS; the hint stays for a server
// that closes the connection before any answer (TestTLS).
func TestNoTLSHintAfterTheServerAnswered(t *testing.T) {
	var rows []metricRow
	for i := range 20 {
		rows = append(rows, metricRow{ts: int64(i), host: "a", cpu: 1})
	}
	srv := newMemServer()
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 10)}, block: true})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &trackingListener{Listener: inner}
	fs := flight.NewServerWithMiddleware(nil)
	fs.InitListener(lis)
	fs.RegisterFlightService(flightsql.NewFlightServer(srv))
	done := make(chan struct{})
	go func() { defer close(done); _ = fs.Serve() }()
	t.Cleanup(func() { fs.Shutdown(); <-done })

	s := newTestSource(t, baseConfig(lis.Addr().String()))
	queried := make(chan struct{})
	cutDone := make(chan struct{})
	go func() {
		defer close(cutDone)
		select {
		case <-srv.doGets: // every batch sent; the stream is held open
			lis.cut()
		case <-queried:
		}
	}()
	_, err = runQuery(t, s, "m", FormatTable, source.Limits{})
	close(queried)
	<-cutDone
	mustKind(t, err, source.KindUpstream, "reading endpoint 1 of 1", "closed the connection or became unavailable after answering")
	if strings.Contains(err.Error(), "tlsEnabled") || strings.Contains(err.Error(), "TLS") {
		t.Errorf("a TLS hint after data arrived: %v", err)
	}
}

func TestUpstreamTimeoutKind(t *testing.T) {
	c := &conn{cfg: settings.FlightSQL{Address: "db:1", Timeout: 3}}
	for _, err := range []error{
		status.Error(codes.DeadlineExceeded, "context deadline exceeded"),
		context.DeadlineExceeded,
	} {
		mustKind(t, c.upstream(context.Background(), "executing the query", err), source.KindTimeout, "timed out after 3s", "raise the timeout setting")
	}
	got := c.upstream(context.Background(), "executing the query", status.Error(codes.Internal, "boom"))
	mustKind(t, got, source.KindUpstream, "boom")
	if !errors.Is(c.upstream(context.Background(), "x", context.DeadlineExceeded), context.DeadlineExceeded) {
		t.Error("the timeout error does not wrap the original")
	}
}

// TestNoteResponses: only answers from the server set received.
func TestNoteResponses(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{io.EOF, true},
		{fmt.Errorf("reading: %w", io.EOF), true},
		{status.Error(codes.InvalidArgument, "syntax"), true},
		{status.Error(codes.Unavailable, "connection closed before server preface received"), false},
		{status.Error(codes.DeadlineExceeded, "deadline"), false},
		{status.Error(codes.Canceled, "cancelled"), false},
	} {
		c := &conn{}
		c.note(tc.err)
		if c.received.Load() != tc.want {
			t.Errorf("%v: received %v, want %v", tc.err, c.received.Load(), tc.want)
		}
	}
}

// A call that reaches a closed source (its instance replaced while the call
// was on its way) gets an error that says so, not a nil client.
func TestCallsAfterCloseSayTheSourceIsClosed(t *testing.T) {
	s := newTestSource(t, baseConfig(startServer(t, oneRowServer(t), serverOpts{})))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"query": func() error {
			_, err := runQuery(t, s, "SELECT 1", FormatTable, source.Limits{})
			return err
		},
		"health": func() error {
			_, err := s.HealthReport(context.Background())
			return err
		},
		"tables": func() error {
			w := httptest.NewRecorder()
			s.Resources().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/tables", nil))
			return errors.New(w.Body.String())
		},
	}
	for what, call := range calls {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s after Close panicked: %v", what, p)
				}
			}()
			if err := call(); err == nil || !strings.Contains(err.Error(), "the data source was closed") {
				t.Errorf("%s after Close: %v", what, err)
			}
		}()
	}
}
