package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// spans records every span of the process. The SDK's default tracer (which
// the query chain uses) delegates to the first global provider set, so it is
// set once.
var spans = sync.OnceValue(func() *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	return rec
})

// spansOf returns the ended spans of the trace that contains a span named
// root with attribute datasource_uid = uid.
func spansOf(t *testing.T, root, uid string) (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	t.Helper()
	var req sdktrace.ReadOnlySpan
	for _, s := range spans().Ended() {
		if s.Name() == root && attr(s, "datasource_uid") == uid {
			req = s
		}
	}
	if req == nil {
		t.Fatalf("no %s span for data source %s", root, uid)
	}
	var queries []sdktrace.ReadOnlySpan
	for _, s := range spans().Ended() {
		if s.Name() == "quiver.query" && s.Parent().SpanID() == req.SpanContext().SpanID() {
			queries = append(queries, s)
		}
	}
	return req, queries
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func tenantContext(tenant string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs("tenantID", tenant))
}

func TestSpanPerRequestAndPerQuery(t *testing.T) {
	spans()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := newTestService(t, fakeSource{mem: mem, frames: 3, rows: 10}, 2)
	pc := pluginContext(`{}`)
	_, err := s.QueryData(tenantContext("t-span"), &pluginv2.QueryDataRequest{
		PluginContext: pc,
		Queries:       []*pluginv2.DataQuery{query("A", `"ok"`), query("F", `"fail"`), query("D", `"frames"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, queries := spansOf(t, "sdk.queryData", pc.DataSourceInstanceSettings.Uid)
	for key, want := range map[string]string{
		"plugin_id": PluginID, "org_id": "1", "request_status": "error", "status_source": "downstream", "tenant_id": "t-span",
	} {
		if got := attr(req, key); got != want {
			t.Errorf("request span: %s = %q, want %q", key, got, want)
		}
	}
	if len(queries) != 3 {
		t.Fatalf("%d query spans under the request span, want 3", len(queries))
	}
	byRef := map[string]sdktrace.ReadOnlySpan{}
	for _, q := range queries {
		byRef[attr(q, "ref_id")] = q
		if attr(q, "tenant_id") != "t-span" || attr(q, "to_ms") != "3600000" {
			t.Errorf("query span %s: attributes %v", attr(q, "ref_id"), q.Attributes())
		}
	}
	for _, ref := range []string{"A", "D"} {
		if q := byRef[ref]; q == nil || q.Status().Code == codes.Error {
			t.Errorf("query span %s: missing or failed", ref)
		}
	}
	if q := byRef["F"]; q == nil || q.Status().Code != codes.Error || q.Status().Description != "server went away" || attr(q, "status_source") != "downstream" || attr(q, "status") != "502" {
		t.Errorf("query span F: %+v", q)
	}
}

// fakeStream is the server side of a QueryChunkedData stream.
type fakeStream struct {
	grpc.ServerStream
	ctx    context.Context
	chunks []*pluginv2.QueryChunkedDataResponse
}

func (f *fakeStream) Context() context.Context { return f.ctx }
func (f *fakeStream) Send(c *pluginv2.QueryChunkedDataResponse) error {
	f.chunks = append(f.chunks, c)
	return nil
}

func TestChunkedRequestsRunThroughTheChain(t *testing.T) {
	spans()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := newTestService(t, fakeSource{mem: mem, frames: 4, rows: 10}, 2)
	pc := pluginContext(`{}`)
	stream := &fakeStream{ctx: tenantContext("t-chunk")}
	err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{
		PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", `"ok"`), query("P", `"panic"`)},
	}, stream)
	if err != nil {
		t.Fatal(err)
	}
	if len(stream.chunks) != 5 {
		t.Errorf("%d chunks, want 4 frames of A and the error of P", len(stream.chunks))
	}
	req, queries := spansOf(t, "sdk.queryChunkedData", pc.DataSourceInstanceSettings.Uid)
	if attr(req, "request_status") != "error" || attr(req, "status_source") != "plugin" || attr(req, "tenant_id") != "t-chunk" {
		t.Errorf("request span: %v", req.Attributes())
	}
	if len(queries) < 2 {
		t.Errorf("%d query spans, want one per query", len(queries))
	}
}

// identitySource records the identity forwarded to it and fails with a
// message that echoes it, as a careless server might.
type identitySource struct {
	mu   sync.Mutex
	seen []source.Forwarded
}

func (s *identitySource) Query(ctx context.Context, _ source.Query, _ source.Sink) error {
	fw, ok := source.ForwardedFrom(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		return errors.New("no identity")
	}
	s.seen = append(s.seen, fw)
	return source.Upstream(errors.New("token " + fw.Authorization() + " and id " + fw.IDToken() + " rejected"))
}

func TestForwardedIdentityReachesTheSourceAndNoMessage(t *testing.T) {
	src := &identitySource{}
	s := newTestService(t, src, 1)
	headers := map[string]string{"Authorization": "Bearer user-access-token", "X-Id-Token": "user-id-token"}
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{
		PluginContext: pluginContext(`{}`), Headers: headers, Queries: []*pluginv2.DataQuery{query("A", `"ok"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.seen) != 1 || src.seen[0].Authorization() != "Bearer user-access-token" || src.seen[0].IDToken() != "user-id-token" {
		t.Fatalf("the source saw %d identities", len(src.seen))
	}
	msg := resp.Responses["A"].Error
	if strings.Contains(msg, "user-access-token") || strings.Contains(msg, "user-id-token") || !strings.Contains(msg, "[redacted]") {
		t.Errorf("message %q", msg)
	}
	if s := fmt.Sprintf("%v %+v %#v %s %q", src.seen[0], src.seen[0], src.seen[0], src.seen[0], src.seen[0]); strings.Contains(s, "token") {
		t.Errorf("a Forwarded prints %q", s)
	}

	// Without forwarded headers, no identity.
	resp, err = s.QueryData(context.Background(), &pluginv2.QueryDataRequest{
		PluginContext: pluginContext(`{}`), Queries: []*pluginv2.DataQuery{query("A", `"ok"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Responses["A"].Error; got != "no identity" {
		t.Errorf("without headers: %q", got)
	}
}

// blockingSource waits until its query is cancelled.
type blockingSource struct{ started chan struct{} }

func (s blockingSource) Query(ctx context.Context, _ source.Query, _ source.Sink) error {
	close(s.started)
	<-ctx.Done()
	return ctx.Err()
}

// requestCount reads grafana_plugin_request_total from the default registry.
func requestCount(t *testing.T, endpoint, status, src string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "grafana_plugin_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["endpoint"] == endpoint && labels["status"] == status && labels["status_source"] == src {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestRequestMetricsCountCancelledRequests(t *testing.T) {
	src := blockingSource{started: make(chan struct{})}
	s := newTestService(t, src, 1)
	before := requestCount(t, "queryData", "cancelled", "downstream")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-src.started; cancel() }()
	resp, err := s.QueryData(ctx, &pluginv2.QueryDataRequest{PluginContext: pluginContext(`{}`), Queries: []*pluginv2.DataQuery{query("A", `"ok"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if dr := resp.Responses["A"]; !strings.HasPrefix(dr.Error, "query cancelled") {
		t.Fatalf("A: %q", dr.Error)
	}
	if got := requestCount(t, "queryData", "cancelled", "downstream") - before; got != 1 {
		t.Errorf("cancelled requests counted %v times, want 1", got)
	}
}

// The cost of the query chain per request, against the same request
// answered without it (one query, one 10-row frame).
func BenchmarkQueryChain(b *testing.B) {
	s := NewService(Options{
		Sources: func(context.Context, settings.Settings) (source.Source, error) {
			return fakeSource{mem: memory.NewGoAllocator(), frames: 1, rows: 10}, nil
		},
		EncodeWorkers: 1,
	})
	defer s.Close()
	preq := &pluginv2.QueryDataRequest{PluginContext: pluginContext(`{"codec":"none"}`), Queries: []*pluginv2.DataQuery{query("A", `"ok"`)}}
	ctx := tenantContext("bench")
	b.Run("path=chain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.QueryData(ctx, preq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req := backend.FromProto().QueryDataRequest(preq)
			r := s.queryData(backend.WithTenant(ctx, "bench"), preq, req)
			joinPieced(r.msg, r.rest.take()) // what gRPC's write would release, as QueryData does
			runAfterWrite(r.written)
		}
	})
}

// echoResources is a source whose resources fail with a message that
// echoes the forwarded identity.
type echoResources struct{ identitySource }

func (s *echoResources) Resources() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fw, _ := source.ForwardedFrom(r.Context())
		http.Error(w, "server says: token "+fw.Authorization()+" and id "+fw.IDToken()+" rejected", http.StatusBadGateway)
	})
}

func TestForwardedIdentityLeavesNoResourceBody(t *testing.T) {
	s := newTestService(t, &echoResources{}, 1)
	ctx := source.WithForwarded(context.Background(), "Bearer user-access-token", "user-id-token")
	pc := backend.FromProto().PluginContext(pluginContext(`{}`))
	var got []*backend.CallResourceResponse
	err := s.CallResource(ctx, &backend.CallResourceRequest{PluginContext: pc, Path: "tables", Method: "GET", URL: "tables"},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = append(got, r); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Status != http.StatusBadGateway {
		t.Fatalf("responses %+v", got)
	}
	if body := string(got[0].Body); strings.Contains(body, "user-access-token") || strings.Contains(body, "user-id-token") || !strings.Contains(body, "[redacted]") {
		t.Errorf("resource body %q", body)
	}
}

// TestMiddlewaresComparedWithSDK: the mirrored middlewares (middleware.go)
// were compared with the SDK release go.mod requires. On an SDK upgrade,
// compare them with the new release's backend/serve.go
// (defaultHandlerMiddlewares), handler_middleware.go (setupContext) and the
// middlewares mirrored, then update middlewaresComparedWith.
func TestMiddlewaresComparedWithSDK(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	const sdk = "github.com/grafana/grafana-plugin-sdk-go "
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sdk); ok {
			if v = strings.Fields(v)[0]; v != middlewaresComparedWith {
				t.Fatalf("go.mod requires the SDK %s; middleware.go mirrors the middlewares of %s: compare them again", v, middlewaresComparedWith)
			}
			return
		}
	}
	t.Fatal("go.mod names no grafana-plugin-sdk-go")
}
