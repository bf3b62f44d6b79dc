package plugin

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/settings"
)

// lingeringServer answers every statement with one row of v, then keeps
// the stream open for linger (or until the call ends) before closing it.
type lingeringServer struct {
	flightsql.BaseServer
	linger time.Duration
	first  chan struct{} // gets a value once the first row is on its way
	open   atomic.Int32  // streams not yet ended
}

var lingerSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

func (s *lingeringServer) GetFlightInfoStatement(_ context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	tkt, err := flightsql.CreateStatementQueryTicket([]byte(cmd.GetQuery()))
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{FlightDescriptor: desc, TotalRecords: -1, TotalBytes: -1,
		Schema:   flight.SerializeSchema(lingerSchema, memory.DefaultAllocator),
		Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}}}, nil
}

func (s *lingeringServer) DoGetStatement(ctx context.Context, _ flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, lingerSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	s.open.Add(1)
	go func() {
		defer close(ch)
		defer s.open.Add(-1) // before the stream ends
		select {
		case s.first <- struct{}{}:
		default:
		}
		select {
		case <-time.After(s.linger):
		case <-ctx.Done():
		}
	}()
	return lingerSchema, ch, nil
}

func startLingering(t *testing.T, linger time.Duration) (string, *lingeringServer) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &lingeringServer{linger: linger, first: make(chan struct{}, 1)}
	srv.Alloc = memory.DefaultAllocator
	fs := flight.NewServerWithMiddleware(nil)
	fs.InitListener(lis)
	fs.RegisterFlightService(flightsql.NewFlightServer(srv))
	go func() { _ = fs.Serve() }()
	t.Cleanup(fs.Shutdown)
	return lis.Addr().String(), srv
}

// Grafana disposes of a data source's instance a few seconds after its
// settings were saved, whatever still runs on it. A request that holds the
// instance is answered in full, each of its queries (more than run at once)
// on the connection it began with, and the instance is closed after it.
func TestDisposeWaitsForTheRequestsHoldingTheInstance(t *testing.T) {
	addr, srv := startLingering(t, time.Second)
	s := NewService(Options{Budget: settings.Budget{Bytes: 1 << 30}})
	t.Cleanup(s.Close)
	pc := pluginContext(fmt.Sprintf(`{"upstream":"flightsql","address":%q,"timeout":60}`, addr))
	var qs []*pluginv2.DataQuery
	for _, r := range "ABCDE" { // one more than parallelQueries
		qs = append(qs, query(string(r), `{"rawSql":"SELECT v","format":"table"}`))
	}
	answered := make(chan *pluginv2.QueryDataResponse, 1)
	go func() {
		resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: qs})
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	<-srv.first
	inst, err := s.instance(context.Background(), backend.FromProto().PluginContext(pc))
	if err != nil {
		t.Fatal(err)
	}
	disposed := make(chan struct{})
	go func() {
		inst.Dispose()
		close(disposed)
	}()
	select {
	case <-disposed:
		if n := srv.open.Load(); n != 0 {
			t.Errorf("Dispose returned with %d streams of the request still open", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Dispose did not return once the request had ended")
	}
	resp := <-answered
	for _, r := range "ABCDE" {
		if dr := resp.Responses[string(r)]; dr.Error != "" || len(dr.Frames) != 1 {
			t.Errorf("query %c: status %d, %d frames, error %q", r, dr.Status, len(dr.Frames), dr.Error)
		}
	}
	if inst.hold() {
		t.Error("a disposed instance can still be held")
	}
	if used, _, _, _ := s.pipeline.Stats(); used != 0 {
		t.Errorf("the budget still holds %d bytes", used)
	}
}
